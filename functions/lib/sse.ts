import { PassThrough } from "node:stream";
import { encode, encodeComment } from "eventsource-encoder";

/**
 * How often buffered `token` text is flushed as one event, ms (spec 02 Stream format: tokens batched every 50 ms):
 * token events are at least this far apart, unless another event sends the text before it.
 */
export const TOKEN_BATCH_MS = 50;
/** A comment line keeps proxies and load balancers from closing an idle stream (DESIGN.md 6.1), ms. */
export const HEARTBEAT_MS = 15_000;

/**
 * The one SSE writer (DESIGN.md 6.1): each event is `event: <name>` + `data: <json>` + a blank line (encoded by
 * `eventsource-encoder`), `token` text is sent at most every 50 ms (a leading-edge throttle: text that comes 50 ms or
 * more after the last token event, the answer's first text above all, goes out at once; text within 50 ms of it
 * waits for the rest of the window), a `: heartbeat` comment goes out every 15 s. `body` is the stream the response
 * carries; when the client goes away (the runtime destroys it), `signal` aborts so the agent loop and the model call
 * stop.
 */
export class SseWriter {
  readonly body = new PassThrough();
  private readonly controller = new AbortController();
  private tokens = "";
  private flushTimer: NodeJS.Timeout | undefined;
  /** When the last `token` event went out (performance.now() ms). */
  private lastTokenAt = Number.NEGATIVE_INFINITY;
  private readonly heartbeat: NodeJS.Timeout;
  private closed = false;

  constructor() {
    this.heartbeat = setInterval(() => this.write(encodeComment("heartbeat")), HEARTBEAT_MS);
    this.heartbeat.unref();
    // 'close' before we ended: the client disconnected (the runtime's pipeline destroyed the body).
    this.body.on("close", () => {
      if (!this.closed) this.controller.abort(new Error("client disconnected"));
      this.stopTimers();
    });
    this.body.on("error", () => undefined);
  }

  /** Aborted when the client disconnects. */
  get signal(): AbortSignal {
    return this.controller.signal;
  }

  /** True once the client has gone or the stream was ended. */
  get isClosed(): boolean {
    return this.closed || this.body.destroyed;
  }

  /**
   * Send token text: at once when the last `token` event is 50 ms old or more (the time to first token is what a
   * reader waits on), else buffered and sent as one event when its 50 ms are up.
   */
  token(text: string): void {
    if (!text || this.isClosed) return;
    this.tokens += text;
    if (this.flushTimer) return;
    const wait = this.lastTokenAt + TOKEN_BATCH_MS - performance.now();
    if (wait <= 0) this.flushTokens();
    else this.flushTimer = setTimeout(() => this.flushTokens(), wait);
  }

  /** Send a named event now (any buffered tokens go first, so order is kept). */
  send(event: string, data: unknown): void {
    this.flushTokens();
    this.write(encode({ event, data: JSON.stringify(data) }));
  }

  /** Flush and end the stream. */
  end(): void {
    if (this.closed) return;
    this.flushTokens();
    this.closed = true;
    this.stopTimers();
    if (!this.body.destroyed) this.body.end();
  }

  private flushTokens(): void {
    if (this.flushTimer) clearTimeout(this.flushTimer);
    this.flushTimer = undefined;
    if (!this.tokens) return;
    const content = this.tokens;
    this.tokens = "";
    this.lastTokenAt = performance.now();
    this.write(encode({ event: "token", data: JSON.stringify({ content }) }));
  }

  private write(chunk: string): void {
    if (this.closed || this.body.destroyed) return;
    this.body.write(chunk);
  }

  private stopTimers(): void {
    clearInterval(this.heartbeat);
    if (this.flushTimer) clearTimeout(this.flushTimer);
    this.flushTimer = undefined;
  }
}
