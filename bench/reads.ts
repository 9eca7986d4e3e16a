/**
 * Reads benchmark (issue #24 point 2, docs/decisions.md "Reads in one round trip"): for every route kind of a
 * workspace resource (GET by id with the workspace in the path, GET by id through the id index cold and warm, list,
 * create, update, delete) the DynamoDB calls one request makes and how many of them are sequential round trips, before
 * (from the code before the change, commit 61b5824) and now (counted), and the request's latency p50 beside its floor.
 *
 *   npm run bench -- reads
 *
 * Calls are counted on the handlers' own DynamoDB client (a middleware on its stack, as bench/foundation.ts does),
 * only those made inside the request (an AsyncLocalStorage context), so background work is not counted. A round trip
 * is a wave of calls: a call that starts while another of the request is in flight shares its round trip.
 * Requests go through the real route table and group handlers in this process (local/apigw.ts `dispatch`, the API
 * Gateway event the local gateway builds; no socket, so the figure is the handler's own). The floor replays the very
 * calls the request made (inputs captured after marshalling, same waves in parallel) with the low-level client: a
 * replayed conditional write whose condition no longer holds (a create's put, a delete) answers with a condition
 * failure, which costs DynamoDB Local a round trip like the write.
 */
import { AsyncLocalStorage } from "node:async_hooks";
import { randomUUID } from "node:crypto";
import {
  BatchGetItemCommand,
  BatchWriteItemCommand,
  DeleteItemCommand,
  DynamoDBClient,
  GetItemCommand,
  PutItemCommand,
  QueryCommand,
  TransactGetItemsCommand,
  TransactWriteItemsCommand,
  UpdateItemCommand,
} from "@aws-sdk/client-dynamodb";
import { startBenchRuntime, type BenchRuntime } from "./lib/runtime";
import { LoopbackClient } from "./lib/http";
import { Recorder, fmtMs, printTable, since } from "./lib/stats";
import { busyWarning, machineLine } from "./lib/machine";
import { simulatePaidUpgrade } from "./lib/billing";
import { sized, sizeNote } from "./lib/size";

const N = sized(200, 5);
const WARMUP = sized(30, 2);
/** Insights in the listed workspace (the list reads them all, as the route does, and answers a page of 20). */
const LISTED = sized(100, 10);
/** Hard bound on any one measured loop. */
const LOOP_DEADLINE_MS = 60_000;
/** Target of issue #24: a warm GET by id is one DynamoDB round trip. */
const TARGET_ROUND_TRIPS = 1;

/** One DynamoDB call of a request: the low-level operation, its wave (round trip) and its marshalled input. */
interface Call {
  name: string;
  wave: number;
  input: Record<string, unknown>;
}
interface Trace {
  calls: Call[];
  inflight: number;
  waves: number;
  /** Set when the response is out: calls after it (work the request left running) are counted apart. */
  answered: boolean;
  after: string[];
}
const tracing = new AsyncLocalStorage<Trace>();

/** Low-level commands by operation, for the floor's replay. */
const COMMANDS: Record<string, new (input: never) => unknown> = {
  GetItem: GetItemCommand,
  BatchGetItem: BatchGetItemCommand,
  Query: QueryCommand,
  PutItem: PutItemCommand,
  UpdateItem: UpdateItemCommand,
  DeleteItem: DeleteItemCommand,
  BatchWriteItem: BatchWriteItemCommand,
  TransactWriteItems: TransactWriteItemsCommand,
  TransactGetItems: TransactGetItemsCommand,
};
/** The DocumentClient's command names that stand for a low-level operation of another name. */
const lowLevel = (name: string) => (/^(Get|Put|Update|Delete|BatchGet|BatchWrite)$/.test(name) ? `${name}Item` : /^Transact(Get|Write)$/.test(name) ? `${name}Items` : name);

/**
 * What each route kind read BEFORE the change (commit 61b5824), from the code: the auth middleware's user GetItem
 * (User.fromClaims), requireMember / requireResourceMember's membership GetItem, then the item, one after the other; a
 * by-id route first queried the id index (gsi1) for the workspace. Everything after those reads (a route's own writes
 * and reads) is unchanged, so before = now + `calls` more calls in `trips` more round trips: e.g. a warm GET by id
 * was 4 calls in 4 round trips (user, gsi1 Query, membership, item) and is 1 BatchGetItem now (3 fewer of each).
 */
const BEFORE: Record<string, { reads: string; calls: number; trips: number }> = {
  wsGet: { reads: "user, membership, workspace: 3 GetItem", calls: 2, trips: 2 },
  cold: { reads: "user GetItem, gsi1 Query, membership, insight GetItem", calls: 2, trips: 2 },
  warm: { reads: "user GetItem, gsi1 Query, membership, insight GetItem", calls: 3, trips: 3 },
  list: { reads: "user, membership GetItem, partition Query", calls: 1, trips: 1 },
  create: { reads: "user, membership GetItem, then the create's", calls: 1, trips: 1 },
  update: { reads: "user GetItem, gsi1 Query, membership, insight GetItem", calls: 3, trips: 3 },
  delete: { reads: "user GetItem, gsi1 Query, membership, insight GetItem", calls: 3, trips: 3 },
};

export default async function reads(): Promise<void> {
  console.log("== reads: DynamoDB calls and round trips per request, by route kind, and latency beside the floor ==");
  console.log(machineLine());
  if (sizeNote()) console.log(sizeNote());
  const t0 = performance.now();
  const rt = await startBenchRuntime({ tableName: "r2d-bench-reads" });
  console.log(`runtime up in ${fmtMs(since(t0))} ms (DynamoDB Local ${rt.dynamoEndpoint}, in memory)`);
  const http = new LoopbackClient(rt.base);
  const raw = new DynamoDBClient({ endpoint: rt.dynamoEndpoint, region: "us-east-1", credentials: { accessKeyId: "local", secretAccessKey: "local" } });
  try {
    await run(rt, http, raw);
    console.log(`\nat the end: ${machineLine()}`);
    const warning = busyWarning();
    if (warning) console.log(warning);
  } finally {
    raw.destroy();
    await http.close().catch(() => undefined);
    await rt.stop();
  }
}

async function run(rt: BenchRuntime, http: LoopbackClient, raw: DynamoDBClient): Promise<void> {
  // The same module instances the handlers use (the gateway loaded them in this process).
  const { dynamoClient } = await import("../core/db/client");
  const { dispatch } = await import("../local/apigw");
  const { forgetLocations } = await import("../core/workspace");

  // After marshalling (build step): the input is the low-level one, and the command name the low-level operation's.
  dynamoClient().middlewareStack.add(
    (next, context) => async (args) => {
      const trace = tracing.getStore();
      if (!trace) return next(args);
      if (trace.answered) {
        trace.after.push(lowLevel(String(context.commandName ?? "?").replace(/Command$/, "")));
        return next(args);
      }
      const wave = trace.inflight === 0 ? ++trace.waves : trace.waves;
      trace.calls.push({ name: lowLevel(String(context.commandName ?? "?").replace(/Command$/, "")), wave, input: structuredClone(args.input as Record<string, unknown>) });
      trace.inflight++;
      try {
        return await next(args);
      } finally {
        trace.inflight--;
      }
    },
    { step: "build", name: "benchReadsTracer" },
  );

  const token = await rt.idp.sign({ email: "bench-reads@example.com", name: "Bench" });
  await http.json("GET", "/api/auth/me", 200, { token });
  const ws = await http.json<{ id: string }>("POST", "/api/workspaces", 201, { token, json: { name: "Reads bench" } });
  // Hundreds of insights: more than a trial allows; upgrade as a customer would (bench/README.md).
  const upgraded = await simulatePaidUpgrade(rt, { token, workspaceId: ws.id, plan: "power" });
  console.log(`plan: ${upgraded.plan} (${upgraded.status}) through the simulated paid upgrade`);

  /** One request through the route table and handlers, traced; throws unless it answers `expect`. */
  const request = async (method: string, path: string, expect: number, body?: unknown, query = ""): Promise<{ trace: Trace; body: string }> => {
    const trace: Trace = { calls: [], inflight: 0, waves: 0, answered: false, after: [] };
    const headers: Record<string, string> = { authorization: `Bearer ${token}`, host: "127.0.0.1", accept: "application/json" };
    if (body !== undefined) headers["content-type"] = "application/json";
    const res = await tracing.run(trace, () =>
      dispatch({ method, path, rawQuery: query, headers, body: body === undefined ? undefined : Buffer.from(JSON.stringify(body)) }),
    );
    trace.answered = true;
    const text = res.body === undefined ? "" : Buffer.from(res.body, res.isBase64Encoded ? "base64" : "utf8").toString("utf8");
    if (res.statusCode !== expect) throw new Error(`${method} ${path}: expected ${expect}, got ${res.statusCode}: ${text.slice(0, 300)}`);
    return { trace, body: text };
  };
  const insightBody = () => ({ workspace_id: ws.id, insight_type: "pain_point", title: `Bench insight ${randomUUID().slice(0, 8)}`, description: "Users cannot find the export button" });
  const newInsight = async () => JSON.parse((await request("POST", "/api/insights", 201, insightBody())).body).id as string;

  // --- data: the listed insights, one to read and update, and one per delete
  const listed: string[] = [];
  for (let i = 0; i < LISTED; i++) listed.push(await newInsight());
  const target = listed[0]!;
  const doomed: string[] = [];
  for (let i = 0; i < N + WARMUP + 1; i++) doomed.push(await newInsight());
  let doomedNext = 0;
  let severity = 0;

  interface Kind {
    key: keyof typeof BEFORE;
    label: string;
    send: () => Promise<Trace>;
    prepare?: () => Promise<void>;
  }
  const kinds: Kind[] = [
    { key: "wsGet", label: "GET /api/workspaces/{id}", send: async () => (await request("GET", `/api/workspaces/${ws.id}`, 200)).trace },
    {
      key: "cold",
      label: "GET /api/insights/{id}, id new to the container",
      send: async () => {
        forgetLocations();
        return (await request("GET", `/api/insights/${target}`, 200)).trace;
      },
    },
    { key: "warm", label: "GET /api/insights/{id}, warm", send: async () => (await request("GET", `/api/insights/${target}`, 200)).trace },
    { key: "list", label: `GET /api/insights?workspace_id= (${LISTED}+ items, page 20)`, send: async () => (await request("GET", "/api/insights", 200, undefined, `workspace_id=${ws.id}&limit=20`)).trace },
    { key: "create", label: "POST /api/insights", send: async () => (await request("POST", "/api/insights", 201, insightBody())).trace },
    {
      key: "update",
      label: "PATCH /api/insights/{id} (severity)",
      send: async () => (await request("PATCH", `/api/insights/${target}`, 200, { severity: ["low", "high"][severity++ % 2] })).trace,
    },
    {
      key: "delete",
      label: "DELETE /api/insights/{id}",
      send: async () => (await request("DELETE", `/api/insights/${doomed[doomedNext++]!}`, 204)).trace,
      // A delete follows a read of the item in the client (the view it is deleted from): its location is warm.
      prepare: async () => {
        for (const id of doomed) await request("GET", `/api/insights/${id}`, 200);
      },
    },
  ];

  /** Replay a request's calls with the low-level client, wave by wave (a wave's calls in parallel). */
  const replay = async (calls: Call[]) => {
    const waves = new Map<number, Call[]>();
    for (const c of calls) waves.set(c.wave, [...(waves.get(c.wave) ?? []), c]);
    for (const wave of [...waves.keys()].sort((a, b) => a - b)) {
      await Promise.all(
        waves.get(wave)!.map(async (c) => {
          const Command = COMMANDS[c.name];
          if (!Command) throw new Error(`floor: no low-level command for ${c.name}`);
          try {
            await raw.send(new Command(c.input as never) as never);
          } catch (err) {
            // The condition held when the handler wrote; on the replay it may not (the item exists, or is gone).
            if (!/ConditionalCheckFailed|TransactionCanceled/.test((err as Error).name)) throw err;
          }
        }),
      );
    }
  };

  const rows: (string | number)[][] = [];
  const latency: (string | number)[][] = [];
  for (const kind of kinds) {
    await kind.prepare?.();
    for (let i = 0; i < WARMUP; i++) await kind.send();
    const rec = new Recorder();
    const floor = new Recorder();
    let counted: Trace | undefined;
    let last: Trace | undefined;
    const deadline = performance.now() + LOOP_DEADLINE_MS;
    let done = 0;
    for (let i = 0; i < N; i++) {
      if (performance.now() > deadline) {
        console.warn(`  (${kind.label}: loop stopped at its ${LOOP_DEADLINE_MS / 1000} s bound after ${i} of ${N})`);
        break;
      }
      // Alternate which runs first (the floor replays the previous request's calls on odd iterations), so drift
      // (DynamoDB Local's JIT, GC, other load) hits both alike.
      const timeFloor = async (calls: Call[]) => {
        const t = performance.now();
        await replay(calls);
        floor.record(since(t));
      };
      if (i % 2 === 1 && counted) await timeFloor(last!.calls);
      const t = performance.now();
      last = await kind.send();
      rec.record(since(t));
      counted ??= last;
      if (i % 2 === 0) await timeFloor(last.calls);
      done++;
    }
    const trace = counted!;
    const before = BEFORE[kind.key]!;
    const names = trace.calls.map((c) => c.name);
    const isGetById = kind.key === "warm" || kind.key === "wsGet";
    rows.push([
      kind.label,
      before.reads,
      names.length + before.calls,
      trace.waves + before.trips,
      names.join(", "),
      names.length,
      trace.waves,
      trace.after.length ? trace.after.join(", ") : "-",
      isGetById ? `<= ${TARGET_ROUND_TRIPS}: ${trace.waves <= TARGET_ROUND_TRIPS ? "met" : "NOT met"}` : "-",
    ]);
    const h = rec.summary();
    const f = floor.summary();
    latency.push([kind.label, done, fmtMs(h.p50), fmtMs(h.p90), fmtMs(f.p50), fmtMs(f.p90), `${(h.p50 / f.p50).toFixed(2)}x`]);
  }

  console.log("\nDynamoDB calls per request (the user is warm: read by an earlier request of this container within 30 s):");
  printTable(["route", "before: reads (61b5824)", "before: calls", "before: round trips", "now: calls", "now: n", "now: round trips", "left running after the answer", "target"], rows);
  console.log("A request of a user not seen for 30 s adds one GetItem (the user) in its own round trip; a pending user always does.");
  console.log(`\nLatency (ms), ${N} sequential requests per route through the in-process handlers, beside the floor (the same calls, low-level client):`);
  printTable(["route", "n", "p50", "p90", "floor p50", "floor p90", "p50/floor p50"], latency);
}
