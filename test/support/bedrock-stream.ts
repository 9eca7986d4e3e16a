/**
 * A fake Bedrock Runtime at the HTTP layer (DESIGN.md 6.1): each ConverseStream answer is framed with
 * @smithy/eventstream-codec and returned by a smithy HttpHandler, so the SDK's own serializer, signer, event-stream
 * decoder and error deserializers all run. Streams are recorded-shaped frames (test/fixtures/bedrock-stream).
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { Readable } from "node:stream";
import { BedrockRuntimeClient } from "@aws-sdk/client-bedrock-runtime";
import { EventStreamCodec } from "@smithy/eventstream-codec";
import { HttpResponse, type HttpHandler, type HttpRequest } from "@smithy/protocol-http";
import { fromUtf8, toUtf8 } from "@smithy/util-utf8";
import { BedrockStreamingModel } from "../../core/ai/bedrock-stream";

/** One recorded stream event: `:event-type` (or `:exception-type`) and its JSON payload. */
export interface Frame {
  type: string;
  messageType?: "event" | "exception";
  body: unknown;
}

/** What the handler answers to one request. */
export type Reply =
  /** 200 with these frames; with `holdAfter`, the body stays open after that many frames until the call aborts. */
  | { frames: Frame[]; holdAfter?: number }
  /** An HTTP error status with a JSON error body, as Bedrock sends before any stream opens. */
  | { status: number; errorType: string; message: string }
  /** The connection dropped before any answer (the error Node's HTTP handler raises, e.g. code ECONNRESET). */
  | { dropped: string };

const FIXTURE_DIR = join(import.meta.dirname, "../fixtures/bedrock-stream");
export const stream = (name: string): Frame[] => JSON.parse(readFileSync(join(FIXTURE_DIR, name), "utf8")) as Frame[];

/** A public recording of a real ConverseStream response (test/fixtures/bedrock-recorded, its README says whose). */
export interface Recording {
  source: { repository: string; path: string; commit?: string; license: string; note?: string };
  request: unknown;
  frames: Frame[];
}

/** A recording as frames: each recorded event `{member: body}` becomes the frame of that `:event-type`. */
export function recorded(name: string): Recording {
  const raw = JSON.parse(readFileSync(join(import.meta.dirname, "../fixtures/bedrock-recorded", name), "utf8")) as {
    source: Recording["source"];
    request: unknown;
    events: Record<string, unknown>[];
  };
  const frames = raw.events.map((ev) => {
    const [type, body] = Object.entries(ev)[0]!;
    return { type, body };
  });
  return { source: raw.source, request: raw.request, frames };
}

const codec = new EventStreamCodec(toUtf8, fromUtf8);

/**
 * A ConverseStream turn that calls one tool and stops for its result, framed as the recorded Claude tool turns are
 * (test/fixtures/bedrock-recorded), with the given usage in its metadata frame.
 */
export function toolCallTurn(toolUseId: string, name: string, input: Record<string, unknown>, usage: { inputTokens: number; outputTokens: number }): Frame[] {
  return [
    { type: "messageStart", body: { role: "assistant" } },
    { type: "contentBlockStart", body: { contentBlockIndex: 0, start: { toolUse: { toolUseId, name } } } },
    { type: "contentBlockDelta", body: { contentBlockIndex: 0, delta: { toolUse: { input: JSON.stringify(input) } } } },
    { type: "contentBlockStop", body: { contentBlockIndex: 0 } },
    { type: "messageStop", body: { stopReason: "tool_use" } },
    { type: "metadata", body: { usage: { ...usage, totalTokens: usage.inputTokens + usage.outputTokens }, metrics: { latencyMs: 800 } } },
  ];
}

/** A ConverseStream refused in its stream by a ValidationException (not transient: the SDK does not retry it). */
export const refusedTurn = (message = "Input is too long for requested model."): Frame[] => [
  { type: "messageStart", body: { role: "assistant" } },
  { type: "validationException", messageType: "exception", body: { message } },
];

export function encode(frame: Frame): Uint8Array {
  const messageType = frame.messageType ?? "event";
  return codec.encode({
    headers: {
      ":message-type": { type: "string", value: messageType },
      [messageType === "exception" ? ":exception-type" : ":event-type"]: { type: "string", value: frame.type },
      ":content-type": { type: "string", value: "application/json" },
    },
    body: fromUtf8(JSON.stringify(frame.body)),
  });
}

/** Frames as the network delivers them: one byte stream cut into chunks that ignore frame boundaries. */
export function chunked(frames: Frame[], size = 37): Buffer[] {
  const bytes = Buffer.concat(frames.map((f) => Buffer.from(encode(f))));
  const chunks: Buffer[] = [];
  for (let i = 0; i < bytes.length; i += size) chunks.push(bytes.subarray(i, i + size));
  return chunks;
}

function abortError(): Error {
  const err = new Error("Request aborted");
  err.name = "AbortError";
  return err;
}

/** A smithy HttpHandler that answers each ConverseStream request with the next reply and records the request. */
export class RecordedBedrock implements HttpHandler {
  readonly requests: { path: string; body: any }[] = [];
  constructor(private readonly replies: Reply[]) {}

  async handle(request: HttpRequest, opts?: Parameters<HttpHandler["handle"]>[1]): Promise<{ response: HttpResponse }> {
    const raw = typeof request.body === "string" ? request.body : toUtf8(request.body as Uint8Array);
    this.requests.push({ path: decodeURIComponent(request.path), body: JSON.parse(raw) });
    const reply = this.replies.shift();
    if (!reply) throw new Error(`unexpected request #${this.requests.length}`);
    // smithy types its own minimal AbortSignal; the SDK hands over the caller's DOM one.
    const signal = opts?.abortSignal as AbortSignal | undefined;
    if (signal?.aborted) throw abortError();
    if ("dropped" in reply) throw Object.assign(new Error(reply.dropped === "ECONNRESET" ? "socket hang up" : reply.dropped), { code: reply.dropped });
    if ("status" in reply) {
      return {
        response: new HttpResponse({
          statusCode: reply.status,
          headers: { "content-type": "application/json", "x-amzn-errortype": reply.errorType },
          body: Readable.from([Buffer.from(JSON.stringify({ message: reply.message }))]),
        }),
      };
    }
    const chunks = reply.holdAfter === undefined ? chunked(reply.frames) : chunked(reply.frames.slice(0, reply.holdAfter));
    const body = new Readable({ read() {} });
    for (const c of chunks) body.push(c);
    if (reply.holdAfter === undefined) body.push(null);
    // As the Node handler does: an abort tears the connection down under the open body.
    signal?.addEventListener("abort", () => body.destroy(abortError()), { once: true });
    return {
      response: new HttpResponse({
        statusCode: 200,
        headers: { "content-type": "application/vnd.amazon.eventstream", "x-amzn-requestid": "test" },
        body,
      }),
    };
  }

  updateHttpClientConfig(): void {}
  httpHandlerConfigs(): Record<string, never> {
    return {};
  }
}

export function setup(replies: Reply[], retry = { retries: 3, minTimeoutMs: 1, maxTimeoutMs: 5 }) {
  const http = new RecordedBedrock(replies);
  const client = new BedrockRuntimeClient({
    region: "us-east-1",
    credentials: { accessKeyId: "AKIDEXAMPLE", secretAccessKey: "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY" },
    maxAttempts: 1,
    requestHandler: http,
  });
  return { http, client, model: new BedrockStreamingModel({ client, retry }) };
}

