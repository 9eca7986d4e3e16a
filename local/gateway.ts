import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { dispatch } from "./apigw";

async function readBody(req: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
  const url = new URL(req.url ?? "/", "http://localhost");
  const headers: Record<string, string> = {};
  for (const [k, v] of Object.entries(req.headers)) if (v !== undefined) headers[k] = Array.isArray(v) ? v.join(",") : v;
  const request = {
    method: req.method ?? "GET",
    path: url.pathname,
    rawQuery: url.search.slice(1),
    headers,
    body: await readBody(req),
  };
  // SSE routes stream as they produce, like a Function URL in RESPONSE_STREAM mode; the rest answer at once.
  const result = await dispatch(request, {
    sink: {
      onHead: (p) => res.writeHead(p.statusCode ?? 200, p.headers ?? {}),
      onData: (chunk) => res.write(chunk),
      onEnd: () => res.end(),
    },
    onStream: (destroy) => res.on("close", () => { if (!res.writableFinished) destroy(); }),
  });
  if (!result) return;
  const body = result.body === undefined ? undefined : Buffer.from(result.body, result.isBase64Encoded ? "base64" : "utf8");
  res.writeHead(result.statusCode ?? 200, { ...(result.headers as Record<string, string>), ...(body ? { "content-length": body.length } : {}) });
  res.end(body);
}

/**
 * The local gateway: a Node HTTP server that turns requests into API Gateway v2 events and calls the same
 * group handlers, routed by the same route table as the stacks (DESIGN.md section 2).
 */
export function startGateway(port: number, host = "127.0.0.1"): Promise<Server> {
  const server = createServer((req, res) => {
    handle(req, res).catch((err: unknown) => {
      console.error(err);
      if (!res.headersSent) res.writeHead(500, { "content-type": "application/json" });
      res.end(JSON.stringify({ detail: "Gateway error", code: "INTERNAL", request_id: "gateway" }));
    });
  });
  return new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, host, () => resolve(server));
  });
}
