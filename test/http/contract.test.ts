/**
 * The HTTP contract at its edges (issue #10 points 5 and 12): a body over the route's limit is refused with 413 before
 * it is read (the local gateway, over a real socket) and again by the handler (AWS: API Gateway only caps at 10 MB);
 * the gateway's own 404, 405 and 431 answers are the envelope with the handlers' security headers; the OpenAPI
 * document lists every operation's error responses and its servers, and its request schemas refuse what the server's
 * validators refuse; authenticated JSON responses are never cached.
 */
import { once } from "node:events";
import { readFile } from "node:fs/promises";
import { connect, type Socket } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import * as z from "zod";
import { BLOCK_CONTENT_SCHEMAS, BLOCK_TYPES, validateBlockContent } from "../../core/document/blocks";
import { groups, routes } from "../../functions/http/routes";
import type { RouteSpec } from "../../functions/lib/route";
import { call, newUser } from "../support/api";
import { liveGateway } from "../support/sse";
import { expectEnvelope, headersOf } from "./_helpers";

type Json = Record<string, any>;
const table = Object.entries(routes) as [string, RouteSpec][];

let gateway: Awaited<ReturnType<typeof liveGateway>>;
let port: number;
let token: string;

beforeAll(async () => {
  gateway = await liveGateway();
  port = Number(new URL(gateway.base).port);
  token = (await newUser()).token;
});
const sockets: Socket[] = [];
afterAll(async () => {
  // A socket the server failed to close would hold the server open.
  for (const socket of sockets) socket.destroy();
  await gateway.close();
});

interface RawResponse {
  status: number;
  headers: Record<string, string>;
  body: Json;
  /** Resolves when the server has closed the connection. */
  closed: Promise<void>;
}

/**
 * Speak HTTP/1.1 on a raw socket: send `head` and then `body` chunks (as given: nothing is added, so a request can
 * announce more than it sends, or leave a chunked body open), and read the first response. Rejects after `ms`.
 */
async function raw(head: string, body: Buffer[] = [], ms = 5_000): Promise<RawResponse & { socket: Socket; sent: number }> {
  const socket = connect(port, "127.0.0.1");
  sockets.push(socket);
  socket.on("error", () => undefined);
  const closed = once(socket, "close").then(() => undefined);
  await once(socket, "connect");
  let received = Buffer.alloc(0);
  let sent = 0;
  const response = new Promise<RawResponse>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no response within ${ms} ms (${sent} body bytes sent)`)), ms);
    const tryParse = () => {
      const end = received.indexOf("\r\n\r\n");
      if (end < 0) return;
      const [statusLine, ...lines] = received.subarray(0, end).toString("latin1").split("\r\n");
      const headers = Object.fromEntries(lines.map((l) => [l.slice(0, l.indexOf(":")).toLowerCase(), l.slice(l.indexOf(":") + 1).trim()]));
      const length = Number(headers["content-length"] ?? 0);
      if (received.length < end + 4 + length) return;
      clearTimeout(timer);
      resolve({ status: Number(statusLine!.split(" ")[1]), headers, body: JSON.parse(received.subarray(end + 4, end + 4 + length).toString("utf8") || "{}"), closed });
    };
    socket.on("data", (chunk: Buffer) => {
      received = Buffer.concat([received, chunk]);
      tryParse();
    });
    socket.on("close", () => {
      tryParse();
      reject(new Error(`connection closed without a response (${sent} body bytes sent)`));
    });
  });
  socket.write(head);
  void (async () => {
    for (const chunk of body) {
      if (socket.destroyed || socket.writableEnded) return;
      sent += chunk.length;
      if (!socket.write(chunk)) await Promise.race([once(socket, "drain"), closed]);
    }
  })();
  return { ...(await response), socket, sent };
}

const MB = 1024 * 1024;
/** A chunk of a chunked transfer-encoded body. */
const chunk = (data: Buffer) => Buffer.concat([Buffer.from(`${data.length.toString(16)}\r\n`), data, Buffer.from("\r\n")]);
const SECURITY_HEADERS = [
  "strict-transport-security", "x-content-type-options", "referrer-policy", "x-dns-prefetch-control",
  "x-download-options", "x-permitted-cross-domain-policies", "origin-agent-cluster",
];

/** The envelope, the request id in both places, and exactly the security headers a handler's answer carries. */
async function expectGatewayEnvelope(res: RawResponse, status: number, code: string) {
  expect(res.status).toBe(status);
  expect(res.headers["content-type"]).toMatch(/^application\/json/);
  expect(res.body).toMatchObject({ code, detail: expect.any(String), request_id: expect.any(String) });
  expect(res.headers["x-request-id"]).toBe(res.body.request_id);
  const handlerMade = headersOf(await call("GET", "/api/auth/me"));
  for (const name of SECURITY_HEADERS) {
    expect(handlerMade[name], `the handlers send ${name}`).toBeTruthy();
    expect(res.headers[name], name).toBe(handlerMade[name]);
  }
}

describe("body limits: 413 before the body is read", () => {
  it("a Content-Length over the route's limit is answered at once, without waiting for the body, and the connection closes", async () => {
    const res = await raw(
      `POST /api/workspaces HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer ${token}\r\nContent-Type: application/json\r\nContent-Length: ${64 * MB}\r\n\r\n`,
    );

    await expectGatewayEnvelope(res, 413, "PAYLOAD_TOO_LARGE");
    expect(res.sent).toBe(0);
    expect(res.headers.connection).toBe("close");
    await res.closed;
  });

  it("a chunked body (no Content-Length) is counted as it streams: 413 once it passes the limit, while the body is still open", async () => {
    const data = Buffer.alloc(64 * 1024, "a");
    // The webhook route takes small bodies; 2 MB is far past its limit, and the body is never terminated.
    const res = await raw(
      "POST /api/webhooks/idp HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n",
      Array.from({ length: 32 }, () => chunk(data)),
    );

    await expectGatewayEnvelope(res, 413, "PAYLOAD_TOO_LARGE");
    expect(res.headers.connection).toBe("close");
    await res.closed;
  });

  it("a chunked body within the limit still reaches the handler", async () => {
    const json = Buffer.from(JSON.stringify({ name: "Chunked" }));
    const res = await raw(
      `POST /api/workspaces HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer ${token}\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n`,
      [chunk(json.subarray(0, 5)), chunk(json.subarray(5)), Buffer.from("0\r\n\r\n")],
    );

    expect(res.status, JSON.stringify(res.body)).toBe(201);
    expect(res.body.name).toBe("Chunked");
  });

  it("the handler refuses an over-limit body too (in AWS only API Gateway's 10 MB cap comes before it)", async () => {
    const hook = await call("POST", "/api/webhooks/idp", { raw: { data: "x".repeat(MB), contentType: "application/json" } });
    expectEnvelope(hook, 413, "PAYLOAD_TOO_LARGE");
    const json = await call("POST", "/api/workspaces", { token, raw: { data: JSON.stringify({ name: "x".repeat(10 * MB) }), contentType: "application/json" } });
    expectEnvelope(json, 413, "PAYLOAD_TOO_LARGE");
  });
});

describe("the local gateway's own answers", () => {
  it("an unknown path is a 404 envelope with the handlers' security headers", async () => {
    const res = await raw("GET /api/no-such-route HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n");
    await expectGatewayEnvelope(res, 404, "NOT_FOUND");
  });

  it("a known path under another method is a 405 envelope naming the allowed methods", async () => {
    const res = await raw("DELETE /api/auth/me HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n");
    await expectGatewayEnvelope(res, 405, "METHOD_NOT_ALLOWED");
    expect(res.headers.allow).toBe("GET");
  });

  it("headers too large are a 431 envelope, and the connection closes", async () => {
    const res = await raw(`GET /api/auth/me HTTP/1.1\r\nHost: localhost\r\nX-Big: ${"b".repeat(64 * 1024)}\r\n\r\n`);
    await expectGatewayEnvelope(res, 431, "REQUEST_HEADERS_TOO_LARGE");
    await res.closed;
  });
});

describe("the OpenAPI document", () => {
  let doc: Json;
  beforeAll(async () => {
    doc = (await call("GET", "/api/openapi.json")).body;
  });
  const op = (r: RouteSpec) => doc.paths[r.path][r.method.toLowerCase()] as Json;
  const resolve = (s: Json): Json => (s?.$ref ? doc.components.schemas[String(s.$ref).split("/").pop()!] : s);

  it("names its servers", () => {
    expect(Array.isArray(doc.servers) && doc.servers.length > 0).toBe(true);
    for (const server of doc.servers) expect(typeof server.url).toBe("string");
  });

  it.each(table)("%s lists the errors its access, parameters and body can cause, each as the one envelope", (_id, r) => {
    const responses = op(r).responses as Record<string, Json>;
    const expected = new Set<number>();
    if (r.access === "user" || r.access === "admin") expected.add(401);
    // Suspended accounts are refused everywhere but their own profile.
    if (r.access === "admin" || (r.access === "user" && !r.allowSuspended) || r.workspaceScope) expected.add(403);
    if (r.access === "webhook") expected.add(400);
    if (r.params) [404, 422].forEach((s) => expected.add(s));
    if (r.query) expected.add(422);
    if (r.body) expected.add(413);
    // A signed webhook's payload is checked after its signature: a bad one is a 400, not a 422.
    if (r.body && r.bodyType !== "raw") expected.add(422);
    for (const status of expected) expect(responses[status], `${status}`).toBeDefined();
    for (const [status, res] of Object.entries(responses).filter(([s]) => Number(s) >= 400)) {
      expect(res.content["application/json"].schema, status).toEqual({ $ref: "#/components/schemas/ErrorEnvelope" });
    }
  });

  it("lists the plan, conflict and rate-limit errors of the routes that have them; 429 carries Retry-After", () => {
    const statuses = (id: keyof typeof routes) => Object.keys(op(routes[id]).responses).map(Number);
    expect(statuses("synthesis.synthesize")).toEqual(expect.arrayContaining([402, 409, 429]));
    expect(statuses("research.upload")).toEqual(expect.arrayContaining([400, 402, 413, 415]));
    expect(statuses("pending-actions.approve")).toEqual(expect.arrayContaining([404, 409]));
    expect(statuses("recommendations.status")).toEqual(expect.arrayContaining([422, 409]));
    for (const id of ["synthesis.synthesize", "stream.chat"] as const) {
      expect(op(routes[id]).responses["429"].headers["Retry-After"].schema.type, id).toBe("integer");
    }
    expect(statuses("auth.me")).not.toContain(404);
  });

  it("rate limits are declared on the route table, never counted in an implementation, and every one's 429 is documented", async () => {
    const counting: string[] = [];
    for (const group of groups()) {
      const source = await readFile(new URL(`../../functions/http/${group}.ts`, import.meta.url), "utf8");
      if (/\blimitUser\(/.test(source)) counting.push(group);
    }
    expect(counting, "declare `rateLimit` on the route instead of calling limitUser in its implementation").toEqual([]);
    const limited = table.filter(([, r]) => r.rateLimit);
    const adminGrowth = ["growth.approve", "growth.codes", "growth.generateCodes", "growth.revokeAccess", "growth.stats", "growth.syncSheets", "growth.waitlist"];
    // Admin observability shares the admin window of 60 a minute (spec 02 Limits).
    const adminObservability = ["observability.agentRunStats", "observability.agentRuns", "observability.entropy", "observability.entropyIssues", "observability.entropyScan", "observability.feedback", "observability.rqs"];
    expect(limited.map(([id]) => id).sort()).toEqual(["auth.redeemCode", "blocks.intent", "generation.draft", "generation.recommendations", ...adminGrowth, "insights.search", ...adminObservability].sort());
    for (const [id, r] of limited) expect(Object.keys(op(r).responses).map(Number), id).toContain(429);
  });

  it("request bodies refuse {} exactly when the server's validator does (\"at least one field\")", () => {
    const disagree: string[] = [];
    for (const [id, r] of table.filter(([, r]) => r.body && r.bodyType !== "multipart")) {
      const documented = resolve(op(r).requestBody.content["application/json"].schema);
      const docRefuses = (documented.required?.length ?? 0) > 0 || (documented.minProperties ?? 0) > 0;
      if (docRefuses !== !r.body!.safeParse({}).success) disagree.push(id);
    }
    expect(disagree).toEqual([]);
  });

  it("query and path parameters are never null, and one documented as any string is any string to the server", () => {
    const disagree: string[] = [];
    for (const [id, r] of table) {
      for (const p of (op(r).parameters ?? []) as Json[]) {
        const s = resolve(p.schema);
        if ([s.type].flat().includes("null")) disagree.push(`${id} ${p.name}: nullable`);
        // A header (Idempotency-Key) is not read from the route's query or path schema.
        const source = p.in === "query" ? r.query : p.in === "path" ? r.params : undefined;
        const field = (source as unknown as z.ZodObject | undefined)?.shape?.[p.name] as z.ZodType | undefined;
        const unconstrained = s.type === "string" && !s.enum && !s.format && !s.pattern && !s.minLength && !s.maxLength;
        if (field && unconstrained && !field.safeParse("maybe").success) disagree.push(`${id} ${p.name}: documented as any string`);
      }
    }
    expect(disagree).toEqual([]);
  });

  it("block content is documented per block_type, as the server checks it: blocks.create's members and blocks.update's content name each type's component", () => {
    const refOf = (s: Json | undefined): string | undefined => s?.$ref ?? s?.allOf?.find((x: Json) => x.$ref)?.$ref;
    const create = resolve(op(routes["blocks.create"]).requestBody.content["application/json"].schema);
    const members = ((create.oneOf ?? []) as Json[]).map(resolve);
    const updateContent = resolve(op(routes["blocks.update"]).requestBody.content["application/json"].schema).properties.content as Json;
    const updateRefs = ((updateContent.oneOf ?? []) as Json[]).map(refOf);
    for (const type of BLOCK_TYPES) {
      const component = BLOCK_CONTENT_SCHEMAS[type].meta()?.id;
      expect(component, type).toMatch(/BlockContent$/);
      expect(doc.components.schemas[component!], component).toBeDefined();
      const member = members.filter((m) => m.properties?.block_type?.const === type || m.properties?.block_type?.enum?.includes(type));
      expect(member, `one blocks.create member for ${type}`).toHaveLength(1);
      expect(member[0]!.additionalProperties, type).toBe(false);
      expect(refOf(member[0]!.properties.content), type).toBe(`#/components/schemas/${component}`);
      expect(updateRefs, type).toContain(`#/components/schemas/${component}`);
      // A content the type's contract refuses (an unknown field) is refused by the documented body as by the server.
      const unknownField = { block_type: type, content: { not_a_field: true } };
      expect(() => validateBlockContent(type, unknownField.content), type).toThrow();
      expect(routes["blocks.create"].body!.safeParse(unknownField).success, type).toBe(false);
    }
    const wrongType = { block_type: "problem", content: { statement: 5 } };
    expect(() => validateBlockContent("problem", wrongType.content)).toThrow();
    const parsed = routes["blocks.create"].body!.safeParse(wrongType);
    expect(parsed.success).toBe(false);
    expect(parsed.error?.issues.map((i) => i.path.join("."))).toEqual(["content.statement"]);
  });
});

describe("Cache-Control", () => {
  it("every JSON answer of an authenticated route is no-store: successes and errors", async () => {
    const answers = [
      await call("GET", "/api/workspaces", { token }),
      await call("GET", "/api/auth/me"),
      await call("GET", "/api/workspaces/00000000-0000-4000-8000-000000000000", { token }),
      await call("POST", "/api/workspaces", { token, body: {} }),
    ];
    for (const res of answers) expect(headersOf(res)["cache-control"], `${res.status} ${res.text}`).toBe("no-store");
  });

  it("public documentation stays cacheable", async () => {
    expect(headersOf(await call("GET", "/api/openapi.json"))["cache-control"]).not.toBe("no-store");
  });
});
