import { Worker } from "node:worker_threads";

/** One request as the client thread saw it; times are ms on the caller's `performance.now()` clock. */
export interface ClientResult {
  status: number;
  /** When the request was sent. */
  sentAt: number;
  firstByteAt?: number;
  /** When the first `token` event was parsed (streams only). */
  firstTokenAt?: number;
  endAt: number;
  /** The stream's events, data parsed (streams only). */
  events: { event: string; data: any }[];
  /** The body of an answer that was not a 2xx stream, or the error that stopped the request. */
  body?: string;
}

/**
 * A load generator on a thread of its own (bench/lib/stream-client-worker.mjs): many requests started at once, read
 * to their end with fetch (and eventsource-parser for SSE), off the event loop of the server under test. A client in
 * the server's own thread parses every stream's events on the loop the server needs: under load, its reads queue
 * behind the server's work and its parsing is counted as the server's. Real clients are other machines; on one
 * machine the honest stand-in is another thread (the cores are still shared). Results come back when all are done.
 */
export class StreamClient {
  private readonly worker = new Worker(new URL("./stream-client-worker.mjs", import.meta.url));
  private next = 0;
  private readonly waiting = new Map<number, { resolve: (r: ClientResult[]) => void; reject: (err: unknown) => void }>();

  constructor() {
    this.worker.on("message", ({ id, results }: { id: number; results: ClientResult[] }) => {
      // Epoch ms from the worker to this thread's clock.
      const local = (t: number | undefined) => (t === undefined ? undefined : t - performance.timeOrigin);
      const mapped = results.map((r) => ({ ...r, sentAt: local(r.sentAt)!, firstByteAt: local(r.firstByteAt), firstTokenAt: local(r.firstTokenAt), endAt: local(r.endAt)! }));
      this.waiting.get(id)?.resolve(mapped);
      this.waiting.delete(id);
    });
    this.worker.on("error", (err) => {
      for (const w of this.waiting.values()) w.reject(err);
      this.waiting.clear();
    });
    this.worker.unref();
  }

  private send(kind: "stream" | "get", requests: object[]): Promise<ClientResult[]> {
    const id = this.next++;
    return new Promise((resolve, reject) => {
      this.waiting.set(id, { resolve, reject });
      this.worker.postMessage({ id, kind, requests });
    });
  }

  /** POST every stream at once (JSON body, `accept: text/event-stream`) and read each to its end. */
  streams(requests: { url: string; token: string; body: unknown; timeoutMs: number }[]): Promise<ClientResult[]> {
    return this.send("stream", requests);
  }

  /** GET every URL at once with its bearer token and read each body. */
  gets(requests: { url: string; token: string }[]): Promise<ClientResult[]> {
    return this.send("get", requests);
  }

  async close(): Promise<void> {
    await this.worker.terminate();
  }
}
