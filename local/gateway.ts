import type { ErrorCode } from "../core/error";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { Duplex } from "node:stream";
import type { APIGatewayProxyStructuredResultV2 } from "aws-lambda";
import { bodyLimitOf } from "../functions/lib/route";
import { payloadTooLarge } from "../functions/lib/http";
import { bodyLimitSpec, dispatch, gatewayAnswer } from "./apigw";

/**
 * Request line plus headers, as API Gateway HTTP APIs cap them (10 KB; 431 above). Node counts header names too, so
 * the local cap is a little stricter: what passes here passes in AWS.
 */
export const MAX_HEADER_BYTES = 10 * 1024;

/** The request announces (Content-Length) a body over `limit`. */
const declaredOver = (req: IncomingMessage, limit: number) => {
  const declared = Number(req.headers["content-length"]);
  return Number.isFinite(declared) && declared > limit;
};

/** The client went away while its body was being read: nothing is left to answer. */
class ClientGone extends Error {}

/**
 * The request body, or `undefined` once it is over `limit`: a Content-Length above the limit is refused before a byte
 * is read, and a body without one (chunked) is counted as it streams and dropped as soon as it passes the limit, so a
 * large upload never sits in memory.
 */
function readBody(req: IncomingMessage, limit: number): Promise<Buffer | undefined> {
  if (declaredOver(req, limit)) return Promise.resolve(undefined);
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const done = (settle: () => void) => {
      req.off("data", onData).off("end", onEnd).off("error", onGone).off("close", onClose);
      settle();
    };
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size > limit) return done(() => resolve(undefined));
      chunks.push(chunk);
    };
    const onEnd = () => done(() => resolve(Buffer.concat(chunks)));
    const onGone = () => done(() => reject(new ClientGone()));
    const onClose = () => {
      if (!req.complete) onGone();
    };
    req.on("data", onData).on("end", onEnd).on("error", onGone).on("close", onClose);
  });
}

/**
 * Send an answer of the gateway's own and close the connection. A refused body may still be arriving: the answer is
 * written first and the socket then closed (Connection: close), so the client reads a 413 rather than waiting on an
 * upload nobody reads; what it still sends is discarded, not buffered.
 */
function sendAndClose(req: IncomingMessage, res: ServerResponse, answer: APIGatewayProxyStructuredResultV2 & { body: string }): void {
  const body = Buffer.from(answer.body);
  res.writeHead(answer.statusCode ?? 500, { ...(answer.headers as Record<string, string>), connection: "close", "content-length": body.length });
  res.end(body);
  // Pulled off the wire and dropped until Node closes the socket after the answer, so the client is not stalled.
  req.resume();
}

async function handle(req: IncomingMessage, res: ServerResponse, continueAsked = false): Promise<void> {
  const url = new URL(req.url ?? "/", "http://localhost");
  const method = req.method ?? "GET";
  const spec = bodyLimitSpec(method, url.pathname);
  // A client that asks first (Expect: 100-continue, as curl does for large bodies) is told to go on only when its
  // body may come; otherwise it gets the 413 before sending a byte.
  if (continueAsked && !declaredOver(req, bodyLimitOf(spec))) res.writeContinue();
  const body = await readBody(req, bodyLimitOf(spec));
  if (!body) {
    const refused = payloadTooLarge(spec);
    sendAndClose(req, res, await gatewayAnswer(refused.status, refused.code, refused.message, { extra: refused.extra }));
    return;
  }
  const headers: Record<string, string> = {};
  for (const [k, v] of Object.entries(req.headers)) if (v !== undefined) headers[k] = Array.isArray(v) ? v.join(",") : v;
  const request = { method, path: url.pathname, rawQuery: url.search.slice(1), headers, body };
  // SSE routes stream as they produce, like a Function URL in RESPONSE_STREAM mode; the rest answer at once.
  const result = await dispatch(request, {
    sink: {
      onHead: (p) => res.writeHead(p.statusCode ?? 200, p.headers ?? {}),
      onData: (chunk) => res.write(chunk),
      onEnd: () => res.end(),
    },
    // A client that left while the handler was loading (a group's first request) left before this listener: its
    // socket is gone already, and the run must stop as it would for a later disconnect.
    onStream: (destroy) => {
      if (res.destroyed || !res.socket || res.socket.destroyed) destroy();
      else res.on("close", () => { if (!res.writableFinished) destroy(); });
    },
  });
  if (!result) return;
  const out = result.body === undefined ? undefined : Buffer.from(result.body, result.isBase64Encoded ? "base64" : "utf8");
  res.writeHead(result.statusCode ?? 200, { ...(result.headers as Record<string, string>), ...(out ? { "content-length": out.length } : {}) });
  res.end(out);
}

/** Node's parse errors, as its default `clientError` handler answers them, in the envelope. */
const CLIENT_ERRORS: Record<string, [number, ErrorCode, string]> = {
  HPE_HEADER_OVERFLOW: [431, "REQUEST_HEADERS_TOO_LARGE", `Request line and headers over ${MAX_HEADER_BYTES} bytes`],
  HPE_CHUNK_EXTENSIONS_OVERFLOW: [413, "PAYLOAD_TOO_LARGE", "Chunk extensions too large"],
  ERR_HTTP_REQUEST_TIMEOUT: [408, "REQUEST_TIMEOUT", "The request took too long to arrive"],
};

/**
 * A request Node could not parse (headers too large, malformed HTTP): there is no request object, so the answer is
 * written to the socket as raw HTTP, in the envelope with the security headers, and the connection closed.
 */
async function answerClientError(err: NodeJS.ErrnoException, socket: Duplex): Promise<void> {
  if (err.code === "ECONNRESET" || !socket.writable) {
    socket.destroy();
    return;
  }
  const [status, code, detail] = CLIENT_ERRORS[err.code ?? ""] ?? [400, "BAD_REQUEST", "Malformed HTTP request"];
  const answer = await gatewayAnswer(status, code, detail);
  const body = Buffer.from(answer.body);
  const head = [`HTTP/1.1 ${status} ${STATUS_TEXT[status] ?? "Bad Request"}`, ...Object.entries({ ...answer.headers, connection: "close", "content-length": String(body.length) }).map(([k, v]) => `${k}: ${v}`)];
  if (socket.writable) socket.end(Buffer.concat([Buffer.from(`${head.join("\r\n")}\r\n\r\n`, "latin1"), body]));
  else socket.destroy();
}

const STATUS_TEXT: Record<number, string> = { 400: "Bad Request", 408: "Request Timeout", 413: "Payload Too Large", 431: "Request Header Fields Too Large" };

/**
 * The local gateway: a Node HTTP server that turns requests into API Gateway v2 events and calls the same
 * group handlers, routed by the same route table as the stacks (DESIGN.md section 2). Like API Gateway it caps
 * headers (431) and bodies (413, per route: `bodyLimitOf`) before a handler runs.
 */
export function startGateway(port: number, host = "127.0.0.1"): Promise<Server> {
  const serve = (continueAsked: boolean) => (req: IncomingMessage, res: ServerResponse) => {
    handle(req, res, continueAsked).catch(async (err: unknown) => {
      if (err instanceof ClientGone) return;
      console.error(err);
      const answer = await gatewayAnswer(500, "INTERNAL", "Gateway error; quote the request id when reporting it");
      if (!res.headersSent) res.writeHead(500, answer.headers);
      res.end(answer.body);
    });
  };
  const server = createServer({ maxHeaderSize: MAX_HEADER_BYTES }, serve(false));
  server.on("checkContinue", serve(true));
  server.on("clientError", (err: NodeJS.ErrnoException, socket: Duplex) => {
    answerClientError(err, socket).catch(() => socket.destroy());
  });
  return new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, host, () => resolve(server));
  });
}
