/**
 * Cold starts per HTTP group (issue #24 point 3): process start to first response of every endpoint group's Lambda
 * (functions/http/<group>.ts, the stream handlers included), bundled as the stacks bundle them.
 *
 *   npm run bench -- cold                      # every group
 *   COLD_GROUPS=workspaces,stream npm run bench -- cold
 *   COLD_PROFILE=workspaces npm run bench -- cold   # also one profiled cold start of that group
 *   COLD_KEEP=1 ...                            # keep the builds, events and the .cpuprofile (path printed)
 *   COLD_COMPILE_CACHE=1 ...                   # every child with Node's compile cache (V8 code cache) of this run
 *
 * Each group is built with esbuild exactly as bench/bundle.ts builds the workspaces group with the stacks' settings
 * (stacks/defaults.ts FUNCTION_DEFAULTS.nodejs: minified, split, the SDK code a Lambda never runs left external).
 * Then, per group, fresh processes of the pinned Node 22 each import the bundle and send one cheap request of the
 * group through its handler against DynamoDB Local (a read where the group has one), twice: cold, then warm. A
 * response-streaming group answers when its status and headers go out (the prelude a Function URL sends first); the
 * child then exits. Two floors, bundled and invoked the same way in the same conditions: an empty Lambda handler (Node
 * and the Lambda shape alone), and the stack floor, one ElectroDB `get` through the project's own db client and
 * service (what the mandated stack, Node 22 + the SDK's DynamoDB client + ElectroDB, costs before any code of ours).
 * Each group's p50 minus the stack floor's is what our code adds.
 * Target: process start to first response p50 < 120 ms for every group.
 *
 * With COLD_COMPILE_CACHE=1 every child runs with `NODE_COMPILE_CACHE` pointing at a directory of this run, which
 * the unrecorded run of each bundle fills: the figures are what a function whose package ships the V8 code cache of
 * its own bundle would start in. Node 22 keys that cache by the module's absolute path, so it cannot be built before
 * deployment for /var/task (the portable cache, `NODE_COMPILE_CACHE_PORTABLE`, needs Node 24.12); see
 * docs/decisions.md "Cold starts: the V8 compile cache, measured and not shipped".
 */
import { build, type Metafile } from "esbuild";
import { mkdir, mkdtemp, readdir, readFile, rm, symlink, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { Recorder, fmtMs, printTable } from "./lib/stats";
import { busyWarning, machineLine } from "./lib/machine";
import { bundleProfileByContributor, printContributors } from "./lib/profile";
import { startBenchRuntime, type BenchRuntime } from "./lib/runtime";
import { sized, sizeNote } from "./lib/size";
import { coldPath, contributors, runChild, sstOptions } from "./bundle";
import { simulatePaidUpgrade } from "./lib/billing";
import { AWS_ENGINES, FUNCTION_DEFAULTS } from "../stacks/defaults";
import { lambdaContext, toApiGatewayEvent } from "../local/apigw";
import { groups, routes } from "../functions/http/routes";

const ROOT = resolve(fileURLToPath(new URL("..", import.meta.url)));
const RUNS = sized(7, 1);
/** One unrecorded run per group first (OS file cache, DynamoDB Local warm-up); none at the smoke size. */
const UNRECORDED_RUNS = sized(1, 0);
const TARGET_MS = 120;
/** The smoke size: one ordinary group and one response-streaming group. */
const SMOKE_GROUPS = ["auth", "task-progress"];

/** The settings a deployed function gets that the handlers read (the rest of the child's environment is empty). */
const ENV_KEYS = ["STAGE", "AWS_REGION", "TABLE_NAME", "BUCKET_NAME", "DYNAMODB_ENDPOINT", "S3_ENDPOINT", "JWT_ISSUER", "JWT_AUDIENCE", "JWT_JWKS", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "ACCESS_GATING", "LOG_LEVEL", "POWERTOOLS_LOG_LEVEL", "ADMIN_EMAILS"];

/**
 * The child: Lambda's `awslambda` global (the Node runtime installs it in every function), import the handler, send
 * the event twice, report ms since process start. For a streaming handler the first response is its prelude (status
 * and headers); then the child exits without waiting for the stream. CPU = user + system of the process so far.
 */
const PROBE = `
import { readFileSync } from "node:fs";
import { Writable } from "node:stream";
const { event, context, streaming } = JSON.parse(readFileSync(process.argv[3], "utf8"));
context.getRemainingTimeInMillis = () => 30000;
let onHead;
globalThis.awslambda = {
  streamifyResponse: (fn) => fn,
  HttpResponseStream: { from: (stream, prelude) => { onHead?.(prelude); return stream; } },
};
let firstBody = "";
const sink = () => new Writable({ write(c, _e, done) { if (firstBody.length < 300) firstBody += String(c); done(); } });
async function send(handler, id) {
  const ev = { ...event, requestContext: { ...event.requestContext, requestId: id } };
  const ctx = { ...context, awsRequestId: id };
  if (!streaming) {
    const res = await handler(ev, ctx);
    firstBody ||= String(res.body ?? "").slice(0, 300);
    return res.statusCode;
  }
  return await new Promise((resolve, reject) => {
    onHead = (prelude) => resolve(prelude.statusCode ?? 200);
    handler(ev, sink(), ctx).catch(reject);
  });
}
const t0 = performance.now();
const { handler } = await import(process.argv[2]);
const t1 = performance.now();
const status = await send(handler, "cold");
const t2 = performance.now();
const cpu = process.cpuUsage();
const warmStatus = await send(handler, "warm");
const t3 = performance.now();
process.stdout.write(JSON.stringify({ importMs: t1 - t0, firstMs: t2 - t1, warmMs: t3 - t2, startToFirstMs: t2, cpuMs: (cpu.user + cpu.system) / 1000, status, warmStatus, firstBody }));
process.exit(0);
`;

interface ColdRun {
  importMs: number;
  firstMs: number;
  warmMs: number;
  startToFirstMs: number;
  cpuMs: number;
  status: number;
  warmStatus: number;
  /** The start of the first answer's body, to say what went wrong when the status is not the expected one. */
  firstBody: string;
}

/** What a group's cold request sends: one route of the group with its path filled in. */
interface ColdRequest {
  routeId: keyof typeof routes;
  path: string;
  params?: Record<string, string>;
  query?: string;
  body?: unknown;
  as: "user" | "admin" | "none";
  /**
   * Sent by a member of the workspace who changes every run: the route has a per-user limit the runs would reach
   * (synthesis: 10 a minute, spec 01, not a setting; streams: 3 open per user), and each user stays under it.
   */
  rotateUsers?: boolean;
  /** The status a correct answer has (a refusal where the group's cheap request is one, e.g. an unsigned webhook). */
  expect: number;
}

/** Ids made through the gateway before the runs. */
interface Fixture {
  workspaceId: string;
  documentId: string;
  taskId: string;
  /** Tokens of members of the workspace, for the requests that rotate users. */
  memberTokens: string[];
}

/**
 * Members for rotated requests, one per run (1 unrecorded + 7): each sends the run's 2 requests and no more, under
 * synthesis's 10 a minute and the copilot's 3 open streams per user (a stream child exits with its streams open; their
 * slots expire on their own).
 */
const ROTATED_MEMBERS = 8;

const UNKNOWN_ID = "00000000-0000-4000-8000-000000000000";

/**
 * The cheap request of each group: a list or status read where the group has one; the AI groups (synthesis,
 * generation) get a request for an unknown id, answered 404 by their core code after the membership check, since
 * their real work is seconds of model time, not a cold start; the webhooks group an unsigned event (400).
 */
function requestOf(group: string, f: Fixture): ColdRequest {
  const ws = `workspace_id=${f.workspaceId}`;
  const table: Record<string, ColdRequest> = {
    auth: { routeId: "auth.me", path: "/api/auth/me", as: "user", expect: 200 },
    workspaces: { routeId: "workspaces.get", path: `/api/workspaces/${f.workspaceId}`, params: { workspace_id: f.workspaceId }, as: "user", expect: 200 },
    research: { routeId: "research.list", path: "/api/research/sources", query: ws, as: "user", expect: 200 },
    insights: { routeId: "insights.list", path: "/api/insights", query: ws, as: "user", expect: 200 },
    synthesis: { routeId: "synthesis.synthesize", path: "/api/research/synthesize", body: { workspace_id: f.workspaceId, source_ids: [UNKNOWN_ID] }, as: "user", rotateUsers: true, expect: 404 },
    recommendations: { routeId: "recommendations.list", path: "/api/recommendations", query: ws, as: "user", expect: 200 },
    generation: { routeId: "generation.expand", path: `/api/blocks/${UNKNOWN_ID}/expand`, params: { block_id: UNKNOWN_ID }, as: "user", expect: 404 },
    documents: { routeId: "documents.list", path: "/api/documents", query: ws, as: "user", expect: 200 },
    blocks: { routeId: "blocks.list", path: `/api/documents/${f.documentId}/blocks`, params: { document_id: f.documentId }, as: "user", expect: 200 },
    webhooks: { routeId: "webhooks.payments", path: "/api/webhooks/payments", body: { id: "evt_cold", type: "ping" }, as: "none", expect: 400 },
    docs: { routeId: "docs.openapi", path: "/api/openapi.json", as: "none", expect: 200 },
    "pending-actions": { routeId: "pending-actions.list", path: "/api/pending-actions", query: ws, as: "user", expect: 200 },
    chat: { routeId: "chat.list", path: "/api/chat/conversations", query: ws, as: "user", expect: 200 },
    stream: { routeId: "stream.chat", path: "/api/stream/chat", body: { workspace_id: f.workspaceId, prompt: "What do users struggle with?" }, as: "user", rotateUsers: true, expect: 200 },
    billing: { routeId: "billing.plans", path: "/api/billing/plans", as: "user", expect: 200 },
    codehost: { routeId: "codehost.status", path: "/api/integrations/codehost/status", query: ws, as: "user", expect: 200 },
    tickets: { routeId: "tickets.list", path: `/api/execution/${f.documentId}/tickets`, params: { document_id: f.documentId }, as: "user", expect: 200 },
    planner: { routeId: "planner.status", path: "/api/integrations/planner/status", query: ws, as: "user", expect: 200 },
    growth: { routeId: "growth.stats", path: "/api/admin/plg/stats", as: "admin", expect: 200 },
    tickettool: { routeId: "tickettool.status", path: "/api/integrations/tickets/status", query: ws, as: "user", expect: 200 },
    filestore: { routeId: "filestore.status", path: "/api/integrations/filestore/status", query: ws, as: "user", expect: 200 },
    memory: { routeId: "memory.list", path: "/api/memory", query: ws, as: "user", expect: 200 },
    skills: { routeId: "skills.library", path: "/api/skills/library", query: ws, as: "user", expect: 200 },
    tasks: { routeId: "tasks.list", path: "/api/tasks", query: ws, as: "user", expect: 200 },
    "task-progress": { routeId: "task-progress.stream", path: `/api/tasks/${f.taskId}/progress`, params: { task_id: f.taskId }, as: "user", expect: 200 },
    observability: { routeId: "observability.agentRuns", path: "/api/admin/agent-runs", query: ws, as: "admin", expect: 200 },
  };
  const req = table[group];
  if (!req) throw new Error(`bench/cold.ts has no cold request for group ${group}: add one to requestOf`);
  if (routes[req.routeId].group !== group) throw new Error(`${req.routeId} is not a route of group ${group}`);
  return req;
}

/** A user (who is also an admin through ADMIN_EMAILS) on Power, with a workspace, a document and a cancelled task. */
async function makeFixture(rt: BenchRuntime, token: string, members: number): Promise<Fixture> {
  const call = async (method: string, path: string, body?: unknown, expect = 201, as = token) => {
    const res = await fetch(`${rt.base}${path}`, {
      method,
      headers: { authorization: `Bearer ${as}`, "content-type": "application/json" },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    if (res.status !== expect) throw new Error(`${method} ${path}: ${res.status} ${await res.text()}`);
    return (await res.json()) as { id: string };
  };
  const { id: workspaceId } = await call("POST", "/api/workspaces", { name: "Cold starts" });
  // Every stream's child exits after the prelude, leaving its credit hold until it expires: two per process, more
  // than a trial's credits carry, so the user buys Power the way a customer does (bench/README.md).
  await simulatePaidUpgrade(rt, { token, workspaceId, plan: "power" });
  const { id: documentId } = await call("POST", "/api/documents", { workspace_id: workspaceId, document_type: "prd", title: "Cold", content: "# Cold\n\nA short PRD." });
  const { id: conversationId } = await call("POST", "/api/chat/conversations", { workspace_id: workspaceId });
  const { id: taskId } = await call("POST", "/api/tasks/spawn", { workspace_id: workspaceId, conversation_id: conversationId, task_type: "validation_kit", prompt: "Validate the sign-in fix" });
  // Cancelled at once: its progress stream sends the final state and closes, and nothing runs in the background.
  await call("POST", `/api/tasks/${taskId}/cancel`, undefined, 200);
  const memberTokens: string[] = [];
  for (let i = 0; i < members; i++) {
    const email = `cold-member-${i}@example.com`;
    const memberToken = await rt.idp.sign({ email, name: `Member ${i}` });
    await call("GET", "/api/auth/me", undefined, 200, memberToken);
    await call("POST", `/api/workspaces/${workspaceId}/members`, { email, role: "member" });
    memberTokens.push(memberToken);
  }
  return { workspaceId, documentId, taskId, memberTokens };
}

/** The floor: an empty Lambda handler, bundled and invoked as the groups are. */
const EMPTY_HANDLER = `export const handler = async () => ({ statusCode: 200, headers: { "content-type": "application/json" }, body: "{}" });\n`;

/**
 * The stack floor: the project's DynamoDB client and ElectroDB service (core/db/service.ts, every entity registered,
 * each built on first use) and one `get` of a user by an unknown id, answered `{}`. No middleware, no auth, no route:
 * what any group that reads the table through ElectroDB pays before its own code.
 */
const STACK_FLOOR_HANDLER = `import { db } from ${JSON.stringify(join(ROOT, "core/db/service.ts"))};
export const handler = async () => {
  const { data } = await db().entities.user.get({ id: ${JSON.stringify(UNKNOWN_ID)} }).go();
  return { statusCode: 200, headers: { "content-type": "application/json" }, body: JSON.stringify(data ?? {}) };
};
`;

interface Built {
  entryFile: string;
  /** The entry and the chunks it imports statically: what the import loads. */
  coldBytes: number;
  totalBytes: number;
  metafile: Metafile;
  /** The output files the import loads (`coldPath`). */
  loaded: string[];
}

const stacksBuild = (outdir: string, entry: string) =>
  sstOptions(outdir, {
    entry,
    minify: FUNCTION_DEFAULTS.nodejs.minify,
    // NEVER_ON_LAMBDA (stacks/defaults.ts); `sharp` and `pg-native` are added by sstOptions.
    external: FUNCTION_DEFAULTS.nodejs.esbuild.external.filter((e) => e !== "sharp"),
    splitting: FUNCTION_DEFAULTS.nodejs.splitting,
    plugins: FUNCTION_DEFAULTS.nodejs.esbuild.plugins,
  });

async function buildEntry(outdir: string, entryAbs: string, entryRel: string): Promise<Built> {
  await mkdir(outdir, { recursive: true });
  const result = await build(stacksBuild(outdir, entryAbs));
  const cp = coldPath(result.metafile!, entryRel);
  return { entryFile: resolve(ROOT, cp.entry), coldBytes: cp.coldBytes, totalBytes: cp.totalBytes, metafile: result.metafile!, loaded: cp.loaded };
}

interface GroupResult {
  group: string;
  request: ColdRequest;
  built: Built;
  runs: ColdRun[];
  /** Set when an answer had another status than expected: the figures are not of the request meant. */
  wrong?: string;
}

function summary(runs: ColdRun[], pick: (r: ColdRun) => number) {
  const rec = new Recorder();
  for (const r of runs) rec.record(pick(r));
  return rec.summary();
}

export default async function cold(): Promise<void> {
  console.log("== cold: process start to first response of every HTTP group, bundled as the stacks bundle them ==");
  console.log(machineLine());
  if (sizeNote()) console.log(sizeNote());
  const all = groups();
  const chosen = process.env.COLD_GROUPS?.trim() ? process.env.COLD_GROUPS.split(",").map((g) => g.trim()) : sized(all, SMOKE_GROUPS);
  for (const g of chosen) if (!all.includes(g)) throw new Error(`COLD_GROUPS: no group ${g} (groups: ${all.join(", ")})`);
  const adminEmail = "cold-admin@example.com";
  process.env.ADMIN_EMAILS = adminEmail;
  const dir = await mkdtemp(join(tmpdir(), "r2d-cold-"));
  const rt = await startBenchRuntime({ tableName: "r2d-bench-cold", bucketName: "r2d-bench-cold" });
  try {
    const userToken = await rt.idp.sign({ email: adminEmail, name: "Cold Start" });
    // Members only when a chosen group rotates its users (the smoke size has none).
    const rotates = chosen.some((g) => requestOf(g, { workspaceId: UNKNOWN_ID, documentId: UNKNOWN_ID, taskId: UNKNOWN_ID, memberTokens: [] }).rotateUsers);
    const fixture = await makeFixture(rt, userToken, rotates ? ROTATED_MEMBERS : 0);
    const probe = join(dir, "probe.mjs");
    await writeFile(probe, PROBE);
    const env: Record<string, string> = { PATH: process.env.PATH ?? "/usr/bin:/bin", LANG: "en_US.UTF-8", TZ: ":UTC" };
    for (const k of ENV_KEYS) if (process.env[k] !== undefined) env[k] = process.env[k]!;
    // The engines a deployed function runs (the stream group's copilot on Bedrock). No model call is measured: a
    // streaming group's child exits after its prelude, and Bedrock is a closed loopback port, so nothing leaves.
    Object.assign(env, AWS_ENGINES, { AWS_ENDPOINT_URL_BEDROCK_RUNTIME: "http://127.0.0.1:9" });
    if (process.env.COLD_COMPILE_CACHE === "1") {
      env.NODE_COMPILE_CACHE = join(dir, "node-compile-cache");
      console.log(`COLD_COMPILE_CACHE=1: every child runs with Node's compile cache in ${env.NODE_COMPILE_CACHE}, filled by each bundle's first run (${UNRECORDED_RUNS ? "the unrecorded one" : "at the smoke size, the one recorded run, which then measures a cold cache"})`);
    }

    /** The runs of a group; stops at the first answer with another status than expected (reported after the table). */
    const runGroup = async (name: string, built: Built, req: ColdRequest, streaming: boolean): Promise<{ runs: ColdRun[]; wrong?: string }> => {
      const spec = routes[req.routeId];
      const eventFor = async (token: string) => {
        const headers: Record<string, string> = {};
        if (req.as !== "none") headers.authorization = `Bearer ${token}`;
        if (req.body !== undefined) headers["content-type"] = "application/json";
        const event = toApiGatewayEvent(
          { method: spec.method, path: req.path, rawQuery: req.query, headers, body: req.body === undefined ? undefined : Buffer.from(JSON.stringify(req.body)) },
          req.params ?? {},
          `${spec.method} ${spec.path}`,
        );
        const eventFile = join(dir, `${name}.event.json`);
        await writeFile(eventFile, JSON.stringify({ event, context: lambdaContext(name), streaming }));
        return eventFile;
      };
      const runs: ColdRun[] = [];
      for (let r = 0; r < UNRECORDED_RUNS + RUNS; r++) {
        const token = req.rotateUsers ? fixture.memberTokens[r % fixture.memberTokens.length]! : userToken;
        const run = await runChild<ColdRun>([probe, pathToFileURL(built.entryFile).href, await eventFor(token)], env);
        if (run.status !== req.expect || run.warmStatus !== req.expect) {
          return { runs: [run], wrong: `${name}: ${req.routeId} answered ${run.status} cold and ${run.warmStatus} warm, expected ${req.expect}: ${run.firstBody.slice(0, 300)}` };
        }
        if (r >= UNRECORDED_RUNS) runs.push(run);
      }
      return { runs };
    };

    /** A floor's handler, written to a folder of its own in the temp dir and built as the groups are. */
    const buildFloor = async (name: string, source: string): Promise<Built> => {
      const src = join(dir, `${name}-src`);
      await mkdir(src);
      await writeFile(join(src, `${name}.ts`), source);
      const result = await build({ ...stacksBuild(join(dir, name), join(src, `${name}.ts`)), absWorkingDir: src });
      const cp = coldPath(result.metafile!, `${name}.ts`);
      return { entryFile: resolve(src, cp.entry), coldBytes: cp.coldBytes, totalBytes: cp.totalBytes, metafile: result.metafile!, loaded: cp.loaded };
    };
    // The floors ignore the event; the request only gives them the same environment and event size as a group.
    const floorReq: ColdRequest = { routeId: "auth.me", path: "/api/auth/me", as: "user", expect: 200 };
    const floorBuilt = await buildFloor("empty-handler", EMPTY_HANDLER);
    const floorRun = await runGroup("floor", floorBuilt, floorReq, false);
    if (floorRun.wrong) throw new Error(floorRun.wrong);
    const floorRuns = floorRun.runs;
    const stackBuilt = await buildFloor("stack-floor", STACK_FLOOR_HANDLER);
    const stackRun = await runGroup("stack-floor", stackBuilt, floorReq, false);
    if (stackRun.wrong) throw new Error(stackRun.wrong);
    if (stackRun.runs.some((r) => r.firstBody !== "{}")) throw new Error(`stack floor: expected {} for an unknown user, got ${stackRun.runs[0]!.firstBody}`);
    const stackRuns = stackRun.runs;

    const results: GroupResult[] = [];
    for (const group of chosen) {
      const request = requestOf(group, fixture);
      const t0 = performance.now();
      const built = await buildEntry(join(dir, group), join(ROOT, `functions/http/${group}.ts`), `functions/http/${group}.ts`);
      const buildMs = performance.now() - t0;
      const streaming = Object.values(routes).some((r) => r.group === group && "streaming" in r && r.streaming);
      const { runs, wrong } = await runGroup(group, built, request, streaming);
      results.push({ group, request, built, runs, wrong });
      console.log(`${group}: built in ${fmtMs(buildMs)} ms, ${built.totalBytes} bytes, ${built.coldBytes} loaded at import; ${RUNS} cold start(s)`);
    }

    const floor = { start: summary(floorRuns, (r) => r.startToFirstMs), cpu: summary(floorRuns, (r) => r.cpuMs) };
    const stack = { start: summary(stackRuns, (r) => r.startToFirstMs), cpu: summary(stackRuns, (r) => r.cpuMs) };
    /** A difference to the stack floor's p50, signed: what our code adds over the stack alone. */
    const over = (ms: number, base: number) => `${ms - base >= 0 ? "+" : ""}${fmtMs(ms - base)}`;
    /** The measured cells of a row (bytes, times, the ratio to the empty floor), the same for groups and floors. */
    const measured = (built: Built, runs: ColdRun[]) => {
      const start = summary(runs, (r) => r.startToFirstMs);
      const cpu = summary(runs, (r) => r.cpuMs);
      const cells = [
        (built.coldBytes / 1000).toFixed(0),
        fmtMs(summary(runs, (r) => r.importMs).p50),
        fmtMs(summary(runs, (r) => r.firstMs).p50),
        fmtMs(summary(runs, (r) => r.importMs + r.firstMs).p50),
        fmtMs(summary(runs, (r) => r.warmMs).p50),
        fmtMs(start.p50),
        fmtMs(start.min),
        fmtMs(cpu.p50),
        `${(start.p50 / floor.start.p50).toFixed(2)}x`,
      ];
      return { start, cpu, cells };
    };
    const floorRow = (name: string, built: Built, runs: ColdRun[]) => {
      const { start, cpu, cells } = measured(built, runs);
      const isStack = runs === stackRuns;
      return [name, "", 200, ...cells, isStack ? "" : over(start.p50, stack.start.p50), isStack ? "" : over(cpu.p50, stack.cpu.p50), ""];
    };
    console.log(
      `\nProcess start to first response per group (${RUNS} fresh processes each; ms, p50 unless named). Two floors, bundled and run the same way:\n` +
        "the empty handler (Node and the Lambda shape alone) and the stack floor (one ElectroDB get through core/db: the mandated stack alone);\n" +
        "\"over stack floor\" is a group's p50 minus the stack floor's: what our code adds to the stack.",
    );
    printTable(
      ["group", "request", "status", "KB at import", "import", "first request", "import + first", "warm", "start -> first", "min", "CPU to first", "/ empty floor", "over stack floor", "CPU over stack", `< ${TARGET_MS} ms`],
      [
        ...results.map((r) => {
          const { start, cpu, cells } = measured(r.built, r.runs);
          const route = routes[r.request.routeId];
          return [
            r.group,
            `${route.method} ${route.path}`,
            r.wrong ? `${r.runs[0]!.status}!` : r.request.expect,
            ...cells,
            over(start.p50, stack.start.p50),
            over(cpu.p50, stack.cpu.p50),
            start.p50 < TARGET_MS ? "met" : "NOT met",
          ];
        }),
        floorRow("floor: one ElectroDB get (the stack alone)", stackBuilt, stackRuns),
        floorRow("floor: empty handler", floorBuilt, floorRuns),
      ],
    );
    const met = results.filter(({ runs }) => summary(runs, (r) => r.startToFirstMs).p50 < TARGET_MS).length;
    console.log(
      `${met} of ${results.length} groups met the target. start -> first = performance.now() in the child when the first answer is ready (Node's own start-up\n` +
        "included); CPU to first = user + system CPU of the child until then (steadier than wall time on a busy machine); a streaming group's first\n" +
        "answer is its prelude (status and headers). The first request pays what is deferred from import: the route's core module (a chunk loaded\n" +
        "when the route is first reached), ElectroDB entities built on first use, the SDK client and its first connection to DynamoDB Local.\n" +
        `The stack floor is ${fmtMs(stack.start.p50)} ms (${fmtMs(stack.start.p50 - floor.start.p50)} ms over the empty handler): ${stack.start.p50 < TARGET_MS ? "under" : "NOT under"} the ${TARGET_MS} ms target before any code of ours; ` +
        `a group that reads the table through ElectroDB cannot start faster than it.`,
    );

    const wrong = results.flatMap((r) => (r.wrong ? [r.wrong] : []));
    if (wrong.length > 0) throw new Error(`answers with another status than expected (marked ! above):\n  ${wrong.join("\n  ")}`);

    const heaviest = [...results].sort((a, b) => b.built.coldBytes - a.built.coldBytes).slice(0, 3);
    for (const r of heaviest) {
      // Bytes the import loads by contributor: the first-party folders named as they are.
      const list = contributors(r.built.metafile, r.built.loaded, "").slice(0, 6);
      console.log(`  loaded at import by ${r.group}: ${list.map((c) => `${c.name} ${(c.bytes / 1000).toFixed(0)} KB`).join(", ")}`);
    }

    const profiled = process.env.COLD_PROFILE?.trim();
    if (profiled) {
      // The stack floor can be profiled too: what the mandated stack itself spends its cold start on.
      const entry = profiled === "stack-floor" ? join(dir, "stack-floor-src", "stack-floor.ts") : results.some((x) => x.group === profiled) ? join(ROOT, `functions/http/${profiled}.ts`) : undefined;
      if (!entry) throw new Error(`COLD_PROFILE=${profiled}: that group was not measured in this run (stack-floor is also accepted)`);
      await profileGroup(dir, profiled, entry, probe, env);
    }
  } finally {
    await rt.stop();
    if (process.env.COLD_KEEP === "1") console.log(`kept the builds, events and profiles in ${dir} (COLD_KEEP=1)`);
    else await rm(dir, { recursive: true, force: true });
    const warning = busyWarning();
    console.log(`\nat the end: ${machineLine()}`);
    if (warning) console.log(warning);
  }
}

/**
 * One cold start (import and first request) of a group under the CPU profiler: the group built unminified into one
 * file (esbuild's `// <path>` markers name each module), self time attributed to the package or folder it falls in.
 * The externals resolve from the project's node_modules (a one-file build imports them at its top).
 */
async function profileGroup(dir: string, name: string, entry: string, probe: string, env: Record<string, string>): Promise<void> {
  const out = join(dir, `profile-${name}`);
  await mkdir(out);
  await symlink(join(ROOT, "node_modules"), join(out, "node_modules"), "dir");
  await build({ ...stacksBuild(out, entry), minify: false, splitting: false, outdir: undefined, outExtension: undefined, outfile: join(out, `${name}.mjs`), metafile: false });
  const file = join(out, `${name}.mjs`);
  await runChild<ColdRun>(["--cpu-prof", "--cpu-prof-interval", "100", "--cpu-prof-dir", out, probe, pathToFileURL(file).href, join(dir, `${name}.event.json`)], env);
  const prof = (await readdir(out)).find((f) => f.endsWith(".cpuprofile"));
  if (!prof) return;
  const byContributor = bundleProfileByContributor(JSON.parse(await readFile(join(out, prof), "utf8")), await readFile(file, "utf8"), pathToFileURL(file).href);
  printContributors(`\nOne cold start of ${name} (import + first request, unminified one-file build) under the CPU profiler (self time, ms):`, byContributor, 18);
}
