/**
 * A stand-in Bedrock Runtime on a loopback port, for tests that run the whole service on the Bedrock engine: the
 * SDK's client reaches it through `AWS_ENDPOINT_URL_BEDROCK_RUNTIME` (the SDK's own per-service endpoint setting), so
 * the real HTTP/2 handler, signer, event-stream decoder and abort path all run over a socket. Each ConverseStream
 * request gets the next reply: recorded frames (test/fixtures/bedrock-recorded), optionally held open after some
 * frames until the client goes away, which the server notes (`closed`): that is how a test sees a model call stop.
 */
import { createServer, type Http2Server, type Http2ServerRequest } from "node:http2";
import type { AddressInfo } from "node:net";
import { encode, type Frame } from "./bedrock-stream";

/** What the stand-in answers to one ConverseStream request. */
export interface ServerReply {
  frames: Frame[];
  /** Send this many frames, then keep the response open until the client closes it. */
  holdAfter?: number;
}

/** One request as the stand-in saw it. */
export interface SeenRequest {
  modelId: string;
  body: any;
  /** Resolves when the client closed the connection before the reply ended (an aborted model call). */
  closed: Promise<void>;
  wasClosedEarly(): boolean;
}

export interface BedrockServer {
  /** The endpoint to put in AWS_ENDPOINT_URL_BEDROCK_RUNTIME. */
  url: string;
  requests: SeenRequest[];
  /** Queue replies for the next requests, in order. */
  reply(...replies: ServerReply[]): void;
  close(): Promise<void>;
}

const readBody = (req: Http2ServerRequest) =>
  new Promise<string>((resolve, reject) => {
    const parts: Buffer[] = [];
    req.on("data", (c: Buffer) => parts.push(c));
    req.on("end", () => resolve(Buffer.concat(parts).toString("utf8")));
    req.on("error", reject);
  });

/** Start the stand-in on a free loopback port. */
export async function startBedrockServer(): Promise<BedrockServer> {
  const queue: ServerReply[] = [];
  const requests: SeenRequest[] = [];
  // HTTP/2 without TLS (prior knowledge), as the Bedrock Runtime client speaks it: its default handler is HTTP/2.
  const server: Http2Server = createServer(async (req, res) => {
    const match = /^\/model\/([^/]+)\/converse-stream$/.exec(req.url ?? "");
    const body = await readBody(req);
    if (req.method !== "POST" || !match) {
      res.writeHead(404, { "content-type": "application/json", "x-amzn-errortype": "ResourceNotFoundException" });
      res.end(JSON.stringify({ message: `No stand-in for ${req.method} ${req.url}` }));
      return;
    }
    let early = false;
    let onClose!: () => void;
    const closed = new Promise<void>((r) => (onClose = r));
    res.on("close", () => {
      if (!res.writableEnded) {
        early = true;
        onClose();
      }
    });
    requests.push({ modelId: decodeURIComponent(match[1]!), body: JSON.parse(body), closed, wasClosedEarly: () => early });
    const reply = queue.shift();
    if (!reply) {
      res.writeHead(500, { "content-type": "application/json", "x-amzn-errortype": "InternalServerException" });
      res.end(JSON.stringify({ message: `unexpected request #${requests.length}` }));
      return;
    }
    res.writeHead(200, { "content-type": "application/vnd.amazon.eventstream", "x-amzn-requestid": `stand-in-${requests.length}` });
    const frames = reply.holdAfter === undefined ? reply.frames : reply.frames.slice(0, reply.holdAfter);
    for (const f of frames) res.write(Buffer.from(encode(f)));
    if (reply.holdAfter === undefined) res.end();
  });
  const sessions = new Set<import("node:http2").ServerHttp2Session>();
  server.on("session", (s) => {
    sessions.add(s);
    s.on("close", () => sessions.delete(s));
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    reply: (...r) => queue.push(...r),
    close: () =>
      new Promise((r) => {
        server.close(() => r());
        for (const s of sessions) s.destroy();
      }),
  };
}
