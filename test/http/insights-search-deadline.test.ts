/**
 * Insight search when the query's embedding hangs (a throttled Titan waits out its retry backoff, ~16–24 s, while the
 * insights function has API Gateway's 29 s): the search answers with spec 01's text fallback once its deadline for the
 * embedding (QUERY_EMBED_DEADLINE_MS) passes, not when the embedding ends. A stand-in Bedrock Runtime on a loopback
 * port embeds the insights' texts at once but holds the query's InvokeModel for a minute; the embedder is chosen once
 * per process, hence this file of its own.
 */
import { createServer, type Http2Server, type ServerHttp2Session } from "node:http2";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { call, newWorkspace } from "../support/api";

const QUERY = "password reset";
/** Longer than any test timeout here: without the deadline the search would wait for it. */
const HANG_MS = 60_000;

let server: Http2Server;
const sessions = new Set<ServerHttp2Session>();
let queryRequests = 0;
/** Query embeddings the client gave up on (the stream was reset before an answer). */
let queryCancelled = 0;
let otherRequests = 0;

/** A unit vector of Titan's 1,024 dimensions that depends on the text (any will do: the ranking is not under test). */
function vectorOf(text: string): number[] {
  const v = Array.from({ length: 1024 }, (_, i) => Math.sin((i + 1) * (text.length + 1) + text.charCodeAt(i % text.length || 0)));
  const norm = Math.hypot(...v);
  return v.map((x) => x / norm);
}

const saved = { AI_ENGINE: process.env.AI_ENGINE, AWS_ENDPOINT_URL_BEDROCK_RUNTIME: process.env.AWS_ENDPOINT_URL_BEDROCK_RUNTIME };

beforeAll(async () => {
  // HTTP/2 without TLS (prior knowledge), as the Bedrock Runtime client speaks it.
  server = createServer((req, res) => {
    const parts: Buffer[] = [];
    req.on("data", (c: Buffer) => parts.push(c));
    req.on("end", () => {
      const { inputText } = JSON.parse(Buffer.concat(parts).toString("utf8") || "{}") as { inputText?: string };
      if (inputText === QUERY) {
        queryRequests++;
        // Held as a throttled model's retries would hold it, then refused as throttled.
        const timer = setTimeout(() => {
          if (res.writableEnded || res.destroyed) return;
          res.writeHead(429, { "content-type": "application/json", "x-amzn-errortype": "ThrottlingException" });
          res.end(JSON.stringify({ message: "Too many requests" }));
        }, HANG_MS);
        timer.unref();
        res.on("close", () => {
          if (!res.writableEnded) queryCancelled++;
        });
        return;
      }
      otherRequests++;
      const embedding = vectorOf(inputText ?? "");
      res.writeHead(200, { "content-type": "application/json" });
      res.end(JSON.stringify({ embedding, inputTextTokenCount: 5 }));
    });
  });
  server.on("session", (s) => {
    sessions.add(s);
    s.on("close", () => sessions.delete(s));
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  process.env.AI_ENGINE = "bedrock";
  process.env.AWS_ENDPOINT_URL_BEDROCK_RUNTIME = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  for (const [k, v] of Object.entries(saved)) {
    if (v === undefined) delete process.env[k];
    else process.env[k] = v;
  }
  await new Promise<void>((r) => {
    server.close(() => r());
    for (const s of sessions) s.destroy();
  });
});

describe("POST /api/insights/search when the query's embedding hangs", () => {
  it("answers with the text fallback once the embedding's deadline passes, not when the embedding ends", { timeout: 15_000 }, async () => {
    const { owner, workspace } = await newWorkspace("Deadline");
    const ids: Record<string, string> = {};
    const specs: [string, Record<string, unknown>][] = [
      ["titleHit", { title: "Password RESET emails arrive late", description: "Users wait ten minutes." }],
      ["descHit", { title: "Support tickets pile up", description: "Most tickets are about a password reset that never arrives." }],
      ["paraphrase", { title: "Users cannot get back into their account", description: "Recovering access takes too long." }],
    ];
    for (const [name, body] of specs) {
      const res = await call("POST", "/api/insights", { token: owner.token, body: { workspace_id: workspace.id, insight_type: "pain_point", ...body } });
      expect(res.status, res.text).toBe(201);
      ids[name] = res.body.id;
    }

    // The insights have vectors of this embedder: only the query's late embedding stands between this and "semantic".
    expect(otherRequests).toBeGreaterThanOrEqual(specs.length);
    const res = await call("POST", "/api/insights/search", { token: owner.token, body: { workspace_id: workspace.id, query: QUERY } });
    expect(res.status, res.text).toBe(200);
    expect(queryRequests).toBe(1);
    expect(res.body.mode).toBe("text");
    // Title matches rank above description matches; the paraphrase has no literal match.
    expect(res.body.insights.map((i: { id: string }) => i.id)).toEqual([ids.titleHit, ids.descHit]);
    expect(res.body.total).toBe(2);
    // The late embedding was cancelled at the deadline (its request aborted, no retry), not left to run on.
    await vi.waitFor(() => expect(queryCancelled).toBe(1), { timeout: 2_000, interval: 20 });
    expect(queryRequests).toBe(1);
  });
});
