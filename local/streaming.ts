import { Writable } from "node:stream";
import type { APIGatewayProxyEventV2, Context } from "aws-lambda";

/** The status and headers a streaming Lambda sends before its body (Lambda's HTTP response stream "prelude"). */
export interface Prelude {
  statusCode?: number;
  headers?: Record<string, string>;
}

/** Where a streaming handler's response goes: the live socket (the gateway) or a buffer (`dispatch` in tests). */
export interface StreamSink {
  onHead(prelude: Prelude): void;
  onData(chunk: Buffer): void;
  onEnd(): void;
}

/**
 * The response stream a streaming handler writes to, on the embedded runtime: the same role as Lambda's
 * `responseStream` behind a Function URL. `awslambda.HttpResponseStream.from` hands it the prelude; `onHead` gets
 * the prelude once, before the first body byte (or at the end of an empty body), and `onData` every chunk.
 */
export class LocalResponseStream extends Writable {
  private prelude: Prelude = {};
  private headSent = false;
  constructor(private readonly sink: StreamSink) {
    super();
  }
  setPrelude(prelude: Prelude): void {
    this.prelude = prelude;
  }
  private head(): void {
    if (this.headSent) return;
    this.headSent = true;
    this.sink.onHead(this.prelude);
  }
  override _write(chunk: Buffer | string, _enc: BufferEncoding, done: (err?: Error | null) => void): void {
    this.head();
    this.sink.onData(Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk));
    done();
  }
  override _final(done: (err?: Error | null) => void): void {
    this.head();
    this.sink.onEnd();
    done();
  }
}

const STREAMING = Symbol.for("r2d.lambda.streaming");
export type StreamingHandler = (event: APIGatewayProxyEventV2, stream: Writable, context: Context) => Promise<void>;

/**
 * Install the `awslambda` global that Lambda's Node runtime provides to response-streaming functions
 * (`streamifyResponse`, `HttpResponseStream.from`), so middy's streaming mode runs unchanged on the embedded runtime
 * (DESIGN.md 2, SSE row). Must run before a streaming group module is imported; does nothing inside Lambda.
 */
export function installAwsLambdaShim(): void {
  const g = globalThis as { awslambda?: { streamifyResponse?: unknown; HttpResponseStream?: unknown } };
  // Inside Lambda the runtime's own object is there; anything else of that name is not it.
  if (typeof g.awslambda?.streamifyResponse === "function") return;
  g.awslambda = {
    streamifyResponse: (fn: StreamingHandler) => Object.assign(fn, { [STREAMING]: true }),
    HttpResponseStream: {
      from: (stream: LocalResponseStream, prelude: Prelude) => {
        stream.setPrelude(prelude);
        return stream;
      },
    },
  };
}

/** True for a handler wrapped by `awslambda.streamifyResponse`. */
export const isStreamingHandler = (fn: unknown): fn is StreamingHandler =>
  typeof fn === "function" && (fn as unknown as Record<symbol, unknown>)[STREAMING] === true;
