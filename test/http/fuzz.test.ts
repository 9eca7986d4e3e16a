/**
 * Route fuzz (issue #10): every route of the route table gets bounded malformed input through the real local
 * gateway dispatch and group handlers — wrong types, missing and extra fields, 20 KB strings, deep nesting (bounded),
 * numbers DynamoDB cannot store, invalid JSON, wrong content types, bad query parameters, path ids that are not
 * uuids, bad tokens and wrong methods. Inputs are generated from each route's own zod schemas with a seeded PRNG
 * (pure-rand, already a dependency; FUZZ_SEED picks another seed), so a failure reproduces. Nothing may answer 5xx,
 * crash the process (an uncaught exception kills a Lambda runtime and the local gateway) or leave a request
 * unanswered (a Lambda timeout); every error is the one envelope (DESIGN.md section 5) with the status of its code,
 * and every status an operation answers is one its OpenAPI operation documents.
 */
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startStripeFake } from "../support/stripe-fake";
import * as z from "zod";
import { uniformInt } from "pure-rand/distribution/uniformInt";
import { xoroshiro128plus } from "pure-rand/generator/xoroshiro128plus";
import { matchRoute, routes } from "../../functions/http/routes";
import type { RouteSpec } from "../../functions/lib/route";
import { openApiDocument } from "../../functions/lib/openapi";
import { ERROR_STATUS } from "../../core/error";
import { gatedTool } from "../../core/agent/tools";
import { createPending } from "../../core/pending-action";
import { appendMessage } from "../../core/chat";
import { dispatch } from "../../local/apigw";
import { call, newWorkspace } from "../support/api";
import { multipart, uploadResearch, waitFor } from "../support/multipart";

const SEED = Number(process.env.FUZZ_SEED ?? 1010);
const HUGE = "x".repeat(20 * 1024);
const deepObject = (depth: number): unknown => (depth === 0 ? "leaf" : { a: deepObject(depth - 1) });
const deepArray = (depth: number): unknown => (depth === 0 ? 1 : [deepArray(depth - 1)]);

/** Values of the wrong kind (or of the right kind but hostile) for any one field. Raw JSON text, so 1e400 survives. */
const WRONG_VALUES: string[] = [
  "123", "-1", "1.5", "1e308", "1e400", "-0", "\"str\"", "\"\"", "true", "null", "[]", "{}", "[null]",
  JSON.stringify(HUGE), JSON.stringify(deepObject(40)), JSON.stringify(deepArray(40)), "\"\\ud800\"", "\"\\u0000\"",
  "\"../../etc/passwd\"", "{\"__proto__\":{\"polluted\":true}}",
];
const BAD_IDS = [
  "not-a-uuid", "0", "-1", "null", "undefined", "%00", "%2e%2e", "..", "a".repeat(1000), "00000000-0000-0000-0000-000000000000",
  "%F0%9F%99%82", "%E0%A4%A", "%25", "'%20OR%201=1--", "{id}",
];
const BAD_QUERY_VALUES = ["", "abc", "-1", "1e309", "99999999999999999999999", "1.5", "true", "null", "%", "[]", HUGE, "\u0000"];
/** Content types a JSON body is sent with: wrong ones, and one right one in capitals. */
const TYPES = ["text/plain", "application/x-www-form-urlencoded", "application/xml", "multipart/form-data; boundary=x", "APPLICATION/JSON"];

interface Case {
  route: string;
  label: string;
  method: string;
  path: string;
  rawQuery?: string;
  headers: Record<string, string>;
  body?: Buffer;
}
interface Finding {
  route: string;
  label: string;
  status: number;
  problem: string;
  body: string;
}

type Fixtures = Awaited<ReturnType<typeof fixtures>>;
let fx: Fixtures;
let doc: { paths: Record<string, Record<string, { responses: Record<string, unknown> }>> };

/** Real resources for the ids a route needs, so inputs reach past the 404s. */
async function fixtures() {
  const { owner, workspace } = await newWorkspace("Fuzz");
  const token = owner.token;
  const ws = workspace.id;
  const created = async (path: string, body: unknown) => {
    const res = await call("POST", path, { token, body });
    if (res.status !== 201) throw new Error(`${path}: ${res.status} ${res.text}`);
    return res.body as { id: string };
  };
  const document = await created("/api/documents", { workspace_id: ws, document_type: "prd", title: "Fuzz", content: "# Fuzz\n\n## Problem\nUsers churn.\n" });
  const block = await created(`/api/documents/${document.id}/blocks`, { block_type: "free_text", title: "Notes", content: { markdown: "x" } });
  const annotation = await created(`/api/documents/${document.id}/blocks/${block.id}/annotations`, { body: "A note" });
  const revisions = await call("GET", `/api/documents/${document.id}/versions`, { token });
  const insight = await created("/api/insights", { workspace_id: ws, insight_type: "pain_point", title: "Export", description: "Export is hidden" });
  const recommendation = await created("/api/recommendations", { workspace_id: ws, title: "Show export", description: "Put export in the toolbar" });
  const conversation = await created("/api/chat/conversations", { workspace_id: ws });
  const message = await appendMessage({ id: conversation.id, workspace_id: ws, user_id: owner.id }, { role: "assistant", content: "Hello" });
  const upload = await uploadResearch(token, ws, { name: "notes.txt", data: Buffer.from("Users say export is hard to find.") }, "text/plain");
  if (upload.status !== 201) throw new Error(`upload: ${upload.status} ${upload.text}`);
  // Its extraction finishes first: reprocess and delete then meet a settled source.
  await waitFor(async () => (await call("GET", `/api/research/sources/${upload.body.id}`, { token })).body.processing_status !== "pending", 30_000);
  const missionId = randomUUID();
  const pending = await createPending(
    { userId: owner.id, workspaceId: ws, missionId, sessionId: null, attachmentIds: [] },
    gatedTool("create_insight")!,
    { insight_type: "pain_point", title: "Pending", description: "Waiting for approval", severity: "high" },
  );
  const ids: Record<string, string> = {
    workspace_id: ws,
    user_id: owner.id,
    document_id: document.id,
    block_id: block.id,
    annotation_id: annotation.id,
    revision_id: revisions.body.revisions[0].id,
    insight_id: insight.id,
    recommendation_id: recommendation.id,
    conversation_id: conversation.id,
    resumed_from: conversation.id,
    message_id: message.id,
    source_id: upload.body.id,
    attachment_id: upload.body.id,
    pa_id: pending.id,
    batch_id: `${missionId}:create_insight`,
    asset: "swagger-ui.css",
  };
  return { token, ws, ids };
}

/** A seeded PRNG: picks which hostile values go where, the same ones on every run of a seed. */
function prng(seed: number) {
  const rng = xoroshiro128plus(seed);
  const int = (max: number) => uniformInt(rng, 0, max - 1);
  return { int, pick: <T>(xs: readonly T[], n: number): T[] => [...new Set(Array.from({ length: n }, () => xs[int(xs.length)]!))] };
}

type Json = Record<string, any>;

/**
 * JSON Schema (input side) of a zod schema, its root resolved (a schema with an id comes out as a $ref into $defs);
 * preprocessed schemas fall back to their output side.
 */
function jsonSchemaOf(schema: z.ZodType): Json {
  const resolved = (js: Json): Json => (js.$ref ? { ...js.$defs[String(js.$ref).split("/").pop()!], $defs: js.$defs } : js);
  const input = resolved(z.toJSONSchema(schema, { io: "input", unrepresentable: "any" }) as Json);
  if (input.type || input.properties || input.anyOf || input.oneOf) return input;
  return resolved(z.toJSONSchema(schema, { io: "output", unrepresentable: "any" }) as Json);
}

/** A value that fits `s` (ids of the fixtures where a key names one), for mutating one field at a time. */
function sample(s: Json, root: Json, key = ""): unknown {
  if (s.$ref) return sample(root.$defs?.[String(s.$ref).split("/").pop()!] ?? {}, root, key);
  if (s.const !== undefined) return s.const;
  if (s.enum) return s.enum[0];
  const alt = s.anyOf ?? s.oneOf ?? s.allOf;
  if (alt) return sample(alt.find((a: Json) => a.type !== "null") ?? alt[0], root, key);
  const type = Array.isArray(s.type) ? s.type.find((t: string) => t !== "null") : s.type;
  const idKey = key.replace(/s$/, "");
  switch (type) {
    case "string":
      if (s.format === "uuid") return fx.ids[idKey] ?? fx.ids[key] ?? randomUUID();
      if (s.format === "email") return "someone@example.com";
      if (s.format === "date-time") return new Date().toISOString();
      if (s.format === "date") return "2030-01-01";
      return "x".repeat(Math.max(1, s.minLength ?? 1));
    case "integer":
    case "number":
      return Math.min(Math.max(s.minimum ?? 1, 1), s.maximum ?? Number.MAX_SAFE_INTEGER);
    case "boolean":
      return false;
    case "array":
      return Array.from({ length: s.minItems ?? 0 }, () => sample(s.items ?? {}, root, idKey));
    case "object": {
      const out: Json = {};
      for (const k of s.required ?? []) out[k] = sample(s.properties?.[k] ?? {}, root, k);
      return out;
    }
    default:
      return {};
  }
}

/** A field that takes any JSON (records, unknown): everything hostile goes in, so every value is tried there. */
const permissive = (s: Json): boolean =>
  !s.type || (s.type === "object" && !s.properties && (s.additionalProperties === undefined || Object.keys(s.additionalProperties).length === 0));

/** Raw JSON text of `base` with one property's value replaced by raw JSON text (so 1e400 reaches the parser). */
const withRaw = (base: Json, key: string, raw: string) => {
  const rest = { ...base };
  delete rest[key];
  const body = JSON.stringify(rest);
  return body === "{}" ? `{${JSON.stringify(key)}:${raw}}` : `${body.slice(0, -1)},${JSON.stringify(key)}:${raw}}`;
};

const fillPath = (path: string, params: Record<string, string> = {}) =>
  path.replace(/\{([^/}]+)\}/g, (_, name: string) => params[name] ?? fx.ids[name] ?? randomUUID());

/** Every malformed request this route gets. */
function casesFor(id: string, spec: RouteSpec, seed: number): Case[] {
  const r = prng(seed);
  const cases: Case[] = [];
  const auth = { authorization: `Bearer ${fx.token}` };
  const path = fillPath(spec.path);
  const base = (label: string, over: Partial<Case> = {}): Case => ({ route: id, label, method: spec.method, path, headers: { ...auth }, ...over });
  const json = (label: string, text: string, contentType = "application/json", extra: Partial<Case> = {}) =>
    cases.push(base(label, { headers: { ...auth, "content-type": contentType }, body: Buffer.from(text), ...extra }));

  // Credentials: none, garbage, the wrong scheme.
  cases.push(base("no token", { headers: {} }));
  cases.push(base("garbage token", { headers: { authorization: "Bearer not.a.jwt" } }));
  cases.push(base("basic auth", { headers: { authorization: "Basic dXNlcjpwYXNz" } }));

  // Path ids that are not ids, one parameter at a time (the others real), plus an unknown uuid.
  for (const name of [...spec.path.matchAll(/\{([^/}]+)\}/g)].map((m) => m[1]!)) {
    for (const bad of [...r.pick(BAD_IDS, 6), randomUUID()]) cases.push(base(`path ${name}=${bad.slice(0, 40)}`, { path: fillPath(spec.path, { [name]: bad }) }));
  }

  // Query parameters: none, unknown, and hostile values one key at a time (repeated keys join with commas).
  const queryRoot = spec.query ? jsonSchemaOf(spec.query) : undefined;
  const validQuery: Record<string, string> = {};
  for (const k of queryRoot?.required ?? []) validQuery[k] = String(sample(queryRoot!.properties[k], queryRoot!, k));
  const qs = (q: Record<string, string>) => new URLSearchParams(q).toString();
  cases.push(base("no query"));
  cases.push(base("unknown query keys", { rawQuery: qs({ ...validQuery, __proto__x: "1", limit: "-5", constructor: "x" }) }));
  for (const k of Object.keys(queryRoot?.properties ?? {})) {
    for (const v of r.pick(BAD_QUERY_VALUES, 4)) cases.push(base(`query ${k}=${v.slice(0, 20)}`, { rawQuery: qs({ ...validQuery, [k]: v }) }));
    cases.push(base(`query ${k} repeated`, { rawQuery: `${qs(validQuery)}&${k}=1&${k}=2` }));
  }

  if (spec.bodyType === "multipart") return [...cases, ...multipartCases(id, spec, path)];
  if (spec.bodyType === "raw") return [...cases, ...webhookCases(id, spec, path)];
  const bodyRoot = spec.body ? jsonSchemaOf(spec.body) : { type: "object" };
  const valid = (spec.body ? sample(bodyRoot, bodyRoot) : {}) as Json;
  const q = spec.query ? { rawQuery: qs(validQuery) } : {};
  // Whole-body malformations.
  for (const [label, text] of [
    ["empty object", "{}"], ["array", "[]"], ["null", "null"], ["number", "0"], ["string", "\"str\""], ["bool", "true"],
    ["truncated JSON", "{"], ["bad JSON value", "{\"a\":}"], ["single quotes", "{'a':1}"], ["trailing brace", "{\"a\":1}}"], ["NUL", "\u0000"],
    ["BOM", `\ufeff${JSON.stringify(valid)}`], ["deep object", JSON.stringify(deepObject(300))], ["deep array", JSON.stringify(deepArray(300))],
    ["extra field", JSON.stringify({ ...valid, unexpected_field: 1 })], ["__proto__ key", withRaw(valid, "__proto__", "{\"polluted\":true}")],
    ["constructor key", JSON.stringify({ ...valid, constructor: { prototype: { polluted: true } } })],
  ] as const) json(`body ${label}`, text, "application/json", q);
  for (const type of TYPES) json(`content-type ${type}`, JSON.stringify(valid), type, q);
  cases.push(base("no content-type", { body: Buffer.from(JSON.stringify(valid)), ...q }));
  cases.push(base("binary body", { headers: { ...auth, "content-type": "application/octet-stream" }, body: Buffer.from([0xff, 0xfe, 0x00, 0x01]), ...q }));
  json("form-encoded", "a=1&b=%ZZ", "application/x-www-form-urlencoded", q);
  // One field at a time: the wrong kind of value, or missing when required.
  const props = Object.keys(bodyRoot.properties ?? {});
  for (const k of props.slice(0, 14)) for (const raw of permissive(bodyRoot.properties[k]) ? WRONG_VALUES : r.pick(WRONG_VALUES, 4)) json(`body ${k}=${raw.slice(0, 24)}`, withRaw(valid, k, raw), "application/json", q);
  // One level down: a field of an object (or of an array's object items) gets the wrong kind of value.
  const deref = (js: Json): Json => (js.$ref ? (bodyRoot.$defs?.[String(js.$ref).split("/").pop()!] ?? {}) : js);
  for (const k of props) {
    const outer = deref(bodyRoot.properties[k]);
    const inner = outer.type === "array" ? deref(outer.items ?? {}) : outer;
    if (inner.type !== "object" || !inner.properties) continue;
    const innerValid = sample(inner, bodyRoot) as Json;
    for (const ik of Object.keys(inner.properties).slice(0, 6)) {
      for (const raw of r.pick(WRONG_VALUES, 2)) {
        const text = withRaw(innerValid, ik, raw);
        json(`body ${k}.${ik}=${raw.slice(0, 16)}`, withRaw(valid, k, outer.type === "array" ? `[${text}]` : text), "application/json", q);
      }
    }
  }
  for (const k of bodyRoot.required ?? []) {
    const rest = { ...valid };
    delete rest[k];
    json(`body without ${k}`, JSON.stringify(rest), "application/json", q);
  }
  const stringy = Object.fromEntries(props.filter((k) => bodyRoot.properties[k]?.type === "string").map((k) => [k, HUGE]));
  if (Object.keys(stringy).length) json("every string field 20 KB", JSON.stringify({ ...valid, ...stringy }), "application/json", q);
  return cases;
}

/** Multipart bodies that are broken as multipart (the well-formed ones with bad fields are built in `buildMultipart`). */
function multipartCases(id: string, spec: RouteSpec, path: string): Case[] {
  const auth = { authorization: `Bearer ${fx.token}` };
  const mk = (label: string, contentType: string, body: string): Case => ({ route: id, label, method: spec.method, path, headers: { ...auth, "content-type": contentType }, body: Buffer.from(body) });
  return [
    mk("multipart without boundary", "multipart/form-data", "--x\r\n\r\n"),
    mk("multipart garbage", "multipart/form-data; boundary=zzz", "not a multipart body at all"),
    mk("multipart truncated", "multipart/form-data; boundary=zzz", "--zzz\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a.txt\"\r\n\r\nabc"),
    mk("multipart part headers never end", "multipart/form-data; boundary=zzz", "--zzz\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a.txt\"\r\n--zzz--"),
    mk("multipart LF line ends", "multipart/form-data; boundary=zzz", "--zzz\nContent-Disposition: form-data; name=\"title\"\n\nx\n--zzz--"),
    mk("JSON instead of multipart", "application/json", JSON.stringify({ workspace_id: fx.ws, source_type: "interview", title: "Fuzz" })),
    mk("text instead of multipart", "text/plain", "hello"),
  ];
}

/** Multipart requests need async encoding: built once in beforeAll. */
const multipartBuilt: Case[] = [];
async function buildMultipart(id: string, spec: RouteSpec) {
  const auth = { authorization: `Bearer ${fx.token}` };
  const fields = { workspace_id: fx.ws, source_type: "interview", title: "Fuzz" };
  const file = { name: "a.txt", type: "text/plain", data: Buffer.from("hello") };
  const variants: [string, Record<string, string>, typeof file | undefined][] = [
    ["no file", fields, undefined],
    ["empty file", fields, { ...file, data: Buffer.alloc(0) }],
    ["workspace not a uuid", { ...fields, workspace_id: "nope" }, file],
    ["unknown workspace", { ...fields, workspace_id: randomUUID() }, file],
    ["bad source_type", { ...fields, source_type: "podcast" }, file],
    ["20 KB title", { ...fields, title: HUGE }, file],
    ["extra field", { ...fields, unexpected: "1" }, file],
    ["path traversal filename", fields, { ...file, name: "../../etc/passwd" }],
    ["long filename", fields, { ...file, name: `${"n".repeat(2000)}.txt` }],
    ["executable", fields, { name: "a.exe", type: "application/octet-stream", data: Buffer.from("MZ\x90\x00\x03") }],
  ];
  for (const [label, f, fl] of variants) {
    const body = await multipart(f, fl);
    multipartBuilt.push({ route: id, label: `multipart ${label}`, method: spec.method, path: spec.path, headers: { ...auth, "content-type": body.contentType }, body: body.data });
  }
}

function webhookCases(id: string, spec: RouteSpec, path: string): Case[] {
  const mk = (label: string, headers: Record<string, string>, body: string): Case => ({ route: id, label, method: spec.method, path, headers: { "content-type": "application/json", ...headers }, body: Buffer.from(body) });
  const now = String(Math.floor(Date.now() / 1000));
  return [
    mk("unsigned", {}, "{}"),
    mk("garbage signature", { "webhook-id": "msg_1", "webhook-timestamp": now, "webhook-signature": "v1,bm90IGEgc2ln" }, "{\"type\":\"user.created\"}"),
    mk("non-numeric timestamp", { "webhook-id": "msg_1", "webhook-timestamp": "abc", "webhook-signature": "v1,xxx" }, "{}"),
    mk("huge timestamp", { "webhook-id": "msg_1", "webhook-timestamp": "99999999999999999999", "webhook-signature": "v1,xxx" }, "{}"),
    mk("signature not base64", { "webhook-id": "msg_1", "webhook-timestamp": now, "webhook-signature": "v1,%%%" }, "not json"),
    mk("binary body", { "content-type": "application/octet-stream", "webhook-id": "x", "webhook-timestamp": now, "webhook-signature": "v1,a" }, "\u0000\u00ff"),
    mk("20 KB body", {}, JSON.stringify({ data: HUGE })),
  ];
}

/** What is wrong with one answer, if anything; `spec` is the route that answered (none for the gateway's 404/405). */
function problemsOf(status: number, headers: Record<string, string>, text: string, spec: RouteSpec | undefined): string[] {
  const out: string[] = [];
  if (status >= 500) out.push(`${status}`);
  if (status >= 400) {
    let body: Json | undefined;
    try {
      body = JSON.parse(text) as Json;
    } catch {
      out.push("error body is not JSON");
    }
    if (body) {
      if (typeof body.detail !== "string" || body.detail === "") out.push("no detail");
      if (typeof body.code !== "string" || !(body.code in ERROR_STATUS)) out.push(`unknown code ${body.code}`);
      else if (ERROR_STATUS[body.code as keyof typeof ERROR_STATUS] !== status) out.push(`code ${body.code} with status ${status}`);
      if (typeof body.request_id !== "string") out.push("no request_id");
      else if (headers["x-request-id"] !== body.request_id) out.push("x-request-id differs from request_id");
    }
    if (!/application\/json/.test(headers["content-type"] ?? "")) out.push(`error content-type ${headers["content-type"]}`);
  }
  if (spec) {
    const op = doc.paths[spec.path]?.[spec.method.toLowerCase()];
    if (!op?.responses[String(status)]) out.push(`status ${status} not in the OpenAPI operation`);
  }
  return out;
}

const statuses = new Map<string, number>();
/** A request that gets no answer is a Lambda timeout (a 5xx) in AWS and a hung socket locally. */
const ANSWER_WITHIN_MS = 10_000;

async function run(c: Case): Promise<Finding[]> {
  let timer: NodeJS.Timeout | undefined;
  const res = await Promise.race([
    dispatch({ method: c.method, path: c.path, rawQuery: c.rawQuery ?? "", headers: c.headers, body: c.body }),
    new Promise<undefined>((resolve) => (timer = setTimeout(() => resolve(undefined), ANSWER_WITHIN_MS))),
  ]).finally(() => clearTimeout(timer));
  if (!res) return [{ route: c.route, label: c.label, status: 504, problem: `no answer within ${ANSWER_WITHIN_MS} ms`, body: "" }];
  const status = res.statusCode ?? 200;
  statuses.set(`${c.route} ${status}`, (statuses.get(`${c.route} ${status}`) ?? 0) + 1);
  if (process.env.FUZZ_ROUTE) console.info(`${c.label} -> ${status} ${String(res.body ?? "").slice(0, 160)}`);
  const headers = Object.fromEntries(Object.entries(res.headers ?? {}).map(([k, v]) => [k.toLowerCase(), String(v)]));
  const text = res.body === undefined ? "" : Buffer.from(res.body, res.isBase64Encoded ? "base64" : "utf8").toString("utf8");
  const match = matchRoute(c.method, c.path);
  return problemsOf(status, headers, text, match && match !== "methodMismatch" ? match.spec : undefined)
    .map((problem) => ({ route: c.route, label: c.label, status, problem, body: text.slice(0, 300) }));
}

/** Run cases a few at a time (the handlers wait on DynamoDB Local, so overlap is most of the speed). */
async function runAll(cases: Case[], width = 8): Promise<Finding[]> {
  const findings: Finding[] = [];
  let next = 0;
  await Promise.all(Array.from({ length: width }, async () => {
    while (next < cases.length) findings.push(...(await run(cases[next++]!)));
  }));
  return findings;
}

// FUZZ_ROUTE=<route id> fuzzes one route and prints every answer (for reproducing a finding).
const table = (Object.entries(routes) as [string, RouteSpec][]).filter(([id]) => !process.env.FUZZ_ROUTE || id === process.env.FUZZ_ROUTE);
const seedOf = (id: string) => [...id].reduce((h, ch) => (h * 31 + ch.charCodeAt(0)) | 0, SEED);
// Destructive routes run after the others, and the workspace's own delete last, so the others keep their fixtures.
const destructive = (id: string, spec: RouteSpec) => spec.method === "DELETE";
const byDeleteLast = (a: [string, RouteSpec], b: [string, RouteSpec]) => Number(a[0] === "workspaces.delete") - Number(b[0] === "workspaces.delete");

/** Every case of a route, plus another method on its path (the gateway's 405) when one is free. */
function allCasesOf(id: string, spec: RouteSpec): Case[] {
  const cases = [...casesFor(id, spec, seedOf(id)), ...multipartBuilt.filter((c) => c.route === id)];
  const path = fillPath(spec.path);
  const other = (["GET", "POST", "PUT", "PATCH", "DELETE"] as const).find((m) => matchRoute(m, path) === "methodMismatch");
  if (other) cases.push({ route: id, label: `method ${other}`, method: other, path, headers: { authorization: `Bearer ${fx.token}` } });
  return cases;
}

/** Fuzz the routes (in the given order when `ordered`) and report what went wrong. */
async function fuzz(list: [string, RouteSpec][], ordered = false) {
  const started = Date.now();
  const crashes: string[] = [];
  // An exception nobody catches kills a Lambda runtime (502) and the local gateway's process.
  const onCrash = (err: unknown) => crashes.push(`uncaught: ${(err as Error)?.message ?? String(err)}`);
  process.on("uncaughtException", onCrash);
  process.on("unhandledRejection", onCrash);
  const findings: Finding[] = [];
  let sent = 0;
  try {
    // Routes whose order matters (the deletes) go one after another; the rest share one pool.
    for (const group of ordered ? list.map((r) => [r]) : [list]) {
      const cases = group.flatMap(([id, spec]) => allCasesOf(id, spec));
      sent += cases.length;
      findings.push(...(await runAll(cases, ordered ? 8 : 16)));
    }
    await new Promise((r) => setTimeout(r, 100));
  } finally {
    process.off("uncaughtException", onCrash);
    process.off("unhandledRejection", onCrash);
  }
  const fivexx = new Set(findings.filter((f) => f.status >= 500).map((f) => `${f.route} ${f.label}`)).size + crashes.length;
  console.info(`route fuzz (seed ${SEED}): ${sent} requests over ${list.length} routes in ${Date.now() - started} ms; ${fivexx} 5xx or crashes, ${findings.length + crashes.length} findings`);
  // FUZZ_VERBOSE=1 shows how far the inputs got: the statuses each route answered.
  if (process.env.FUZZ_VERBOSE) console.info([...statuses].sort(([a], [b]) => a.localeCompare(b)).map(([k, n]) => `${k} x${n}`).join("\n"));
  return [...crashes, ...findings.map((f) => `${f.route} [${f.label}] ${f.status}: ${f.problem}${f.status >= 500 ? ` ${f.body}` : ""}`)];
}

beforeAll(async () => {
  // Billing's Stripe routes talk to a Stripe fake (the real SDK over HTTP), so a valid checkout is a 200, not the
  // 503 "not configured" of a service without STRIPE_SECRET_KEY (that answer is billing-checkout.test.ts's).
  const stripe = await startStripeFake();
  afterAll(() => stripe.close());
  Object.assign(process.env, {
    STRIPE_SECRET_KEY: "sk_test_fuzz_fake",
    STRIPE_API_BASE: stripe.base,
    STRIPE_PRICE_PRO_MONTHLY: "price_pro_monthly",
    STRIPE_PRICE_PRO_YEARLY: "price_pro_yearly",
    STRIPE_PRICE_GROWTH_MONTHLY: "price_growth_monthly",
    STRIPE_PRICE_GROWTH_YEARLY: "price_growth_yearly",
    // Connecting an integration only builds the provider's URL and a state: with credentials set it is a 200.
    GITHUB_CLIENT_ID: "fuzz-client-id",
    GITHUB_CLIENT_SECRET: "fuzz-client-secret",
    LINEAR_CLIENT_ID: "fuzz-client-id",
    LINEAR_CLIENT_SECRET: "fuzz-client-secret",
    ATLASSIAN_CLIENT_ID: "fuzz-client-id",
    ATLASSIAN_CLIENT_SECRET: "fuzz-client-secret",
    GOOGLE_CLIENT_ID: "fuzz-client-id",
    GOOGLE_CLIENT_SECRET: "fuzz-client-secret",
  });
  fx = await fixtures();
  doc = openApiDocument() as unknown as typeof doc;
  for (const [id, spec] of table) if (spec.bodyType === "multipart") await buildMultipart(id, spec);
}, 60_000);

describe("route fuzz", () => {
  it("every route but the deletes: no 5xx, no crash, every error in the envelope with a documented status", async () => {
    const findings = await fuzz(table.filter(([id, spec]) => !destructive(id, spec)));
    expect(findings, JSON.stringify(findings, null, 1).slice(0, 4000)).toEqual([]);
  }, 240_000);

  it("the delete routes, after the uploads' extractions settle: the same", async () => {
    // A source deleted while its extraction runs is another matter (the pipeline's): let them finish first.
    await waitFor(async () => {
      const res = await call("GET", "/api/research/sources", { token: fx.token, query: { workspace_id: fx.ws } });
      return res.status === 200 && res.body.sources.every((s: { processing_status: string }) => s.processing_status !== "pending");
    }, 60_000);
    const findings = await fuzz(table.filter(([id, spec]) => destructive(id, spec)).sort(byDeleteLast), true);
    expect(findings, JSON.stringify(findings, null, 1).slice(0, 4000)).toEqual([]);
  }, 240_000);
});
