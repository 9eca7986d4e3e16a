/**
 * Foundation benchmark: request latency of the workspace endpoints through the local gateway, against the floor
 * of the same DynamoDB Local calls made directly with the AWS SDK.
 *
 *   npm run bench -- foundation
 *
 * One process: DynamoDB Local (in memory), the object store (temp dir), an ephemeral identity provider and the
 * local gateway on a free 127.0.0.1 port. The benchmark's user creates hundreds of workspaces, more than a trial
 * allows (3), so after the first it upgrades to the Power plan (unlimited workspaces) through the simulated paid
 * upgrade (bench/lib/billing.ts), as a customer would. Requests are sequential over one keep-alive connection. Each
 * iteration runs, in rotating order, the HTTP request, the floor, and the breakdown pieces (handler in-process, core
 * calls, JWT check), so drift (DynamoDB Local's JIT, GC, other load) hits all alike. Prints a latency table, where
 * the time goes, and a CPU profile of this process by package.
 */
import { randomUUID } from "node:crypto";
import {
  BatchGetItemCommand,
  DynamoDBClient,
  GetItemCommand,
  PutItemCommand,
  TransactWriteItemsCommand,
  type GetItemCommandInput,
  type PutItemCommandInput,
  type TransactWriteItemsCommandInput,
} from "@aws-sdk/client-dynamodb";
import { marshall } from "@aws-sdk/util-dynamodb";
import { startBenchRuntime, type BenchRuntime } from "./lib/runtime";
import { LoopbackClient } from "./lib/http";
import { Recorder, fmtMs, printTable, since, type Summary } from "./lib/stats";
import { cpuProfile, selfTimeByCategory } from "./lib/profile";
import { busyWarning, machineLine } from "./lib/machine";
import { simulatePaidUpgrade } from "./lib/billing";
import { dynamoCallsOf } from "./lib/dynamo-calls";
import { sized, sizeNote } from "./lib/size";

const GET_N = sized(500, 20);
const CREATE_N = sized(300, 10);
const GET_WARMUP = sized(200, 5);
const CREATE_WARMUP = sized(50, 3);
/** Requests profiled per operation for the CPU attribution. */
const PROFILE_N = sized(150, 5);
/** Hard bound on any one measured loop. */
const LOOP_DEADLINE_MS = 60_000;
const TARGET_RATIO = 2;

interface Me {
  id: string;
  access_status: string;
}
interface WorkspaceView {
  id: string;
}

/** One thing to time: called once per iteration, its latency recorded. */
interface Piece {
  fn: (i: number) => Promise<void>;
  rec: Recorder;
}

/**
 * Run `n` iterations; each iteration calls every piece once, in an order that rotates per iteration, so all pieces
 * see the same conditions (JIT, GC, DynamoDB Local's JVM, other load on the machine). Stops at the loop bound.
 * @returns the number of iterations completed.
 */
async function interleaved(n: number, pieces: Piece[]): Promise<number> {
  const deadline = performance.now() + LOOP_DEADLINE_MS;
  for (let i = 0; i < n; i++) {
    if (performance.now() > deadline) {
      console.warn(`  (loop stopped at its ${LOOP_DEADLINE_MS / 1000} s bound after ${i} of ${n} iterations)`);
      return i;
    }
    for (let k = 0; k < pieces.length; k++) {
      const piece = pieces[(i + k) % pieces.length]!;
      const t0 = performance.now();
      await piece.fn(i);
      piece.rec.record(since(t0));
    }
  }
  return n;
}

type TransactInput = { TransactItems?: Record<string, Record<string, unknown>>[] } & Record<string, unknown>;

/** ElectroDB's document-shaped params to the low-level client's attribute-value shape (done before timing). */
function toLowLevelGet(p: { TableName: string; Key: Record<string, unknown>; ConsistentRead?: boolean }): GetItemCommandInput {
  return { TableName: p.TableName, Key: marshall(p.Key), ...(p.ConsistentRead ? { ConsistentRead: true } : {}) };
}

function toLowLevelTransact(p: TransactInput): TransactWriteItemsCommandInput {
  const items = (p.TransactItems ?? []).map((entry) => {
    const [kind, op] = Object.entries(entry)[0] as [string, Record<string, unknown>];
    const out: Record<string, unknown> = { ...op };
    for (const field of ["Item", "Key", "ExpressionAttributeValues"]) {
      if (op[field]) out[field] = marshall(op[field] as Record<string, unknown>, { removeUndefinedValues: true });
    }
    return { [kind]: out };
  });
  return { ...p, TransactItems: items } as TransactWriteItemsCommandInput;
}

export default async function foundation(): Promise<void> {
  console.log("== foundation: workspace endpoints through the local gateway vs the DynamoDB floor ==");
  console.log(machineLine());
  if (sizeNote()) console.log(sizeNote());
  const t0 = performance.now();
  const rt = await startBenchRuntime();
  console.log(`runtime up in ${fmtMs(since(t0))} ms (gateway ${rt.base}, DynamoDB Local ${rt.dynamoEndpoint}, in memory)`);
  const http = new LoopbackClient(rt.base);
  const raw = new DynamoDBClient({
    endpoint: rt.dynamoEndpoint,
    region: "us-east-1",
    credentials: { accessKeyId: "local", secretAccessKey: "local" },
  });
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
  // Modules shared with the handler the gateway loaded (same files, same instances).
  const { db } = await import("../core/db/service");
  const User = await import("../core/user");
  const Workspace = await import("../core/workspace");
  const { verifyBearer } = await import("../functions/lib/auth");
  const { requireUsage } = await import("../core/billing/gates");
  const { groupHandler, toApiGatewayEvent, lambdaContext } = await import("../local/apigw");
  const { dynamoClient } = await import("../core/db/client");


  // --- a user and a workspace
  const token = await rt.idp.sign({ email: "bench-foundation@example.com", name: "Bench" });
  const me = await http.json<Me>("GET", "/api/auth/me", 200, { token });
  if (me.access_status !== "active") throw new Error(`bench user is ${me.access_status}, expected active (ACCESS_GATING=false)`);
  const createBody = { name: "Bench workspace", product_name: "Bench product" };
  const ws = await http.json<WorkspaceView>("POST", "/api/workspaces", 201, { token, json: createBody });
  const getPath = `/api/workspaces/${ws.id}`;
  // The timed loops create hundreds of workspaces; a trial owns at most 3: upgrade as a customer would.
  const upgraded = await simulatePaidUpgrade(rt, { token, workspaceId: ws.id, plan: "power" });
  console.log(`plan: ${upgraded.plan} (${upgraded.status}) through the simulated paid upgrade (a signed Stripe webhook event), unlimited workspaces`);

  // --- the operations
  const httpGet = async () => {
    const res = await http.request("GET", getPath, { token });
    if (res.status !== 200) throw new Error(`GET ${getPath}: ${res.status} ${res.body.slice(0, 200)}`);
  };
  const httpCreate = async () => {
    const res = await http.request("POST", "/api/workspaces", { token, json: createBody });
    if (res.status !== 201) throw new Error(`POST /api/workspaces: ${res.status} ${res.body.slice(0, 200)}`);
  };

  // Floor: the DynamoDB calls the handler makes, with the exact keys and items ElectroDB produces (params built
  // before timing), sent with the low-level client. GET: User.fromClaims serves the user from the container's cache
  // (core/user, 30 s; the loops read it far more often than that); Workspace.get -> readAsMember: ONE strongly
  // consistent BatchGetItem of the membership and the workspace (docs/decisions.md "Reads in one round trip").
  const memberGet = toLowLevelGet(db().entities.membership.get({ workspace_id: ws.id, user_id: me.id }).params({ consistent: true }));
  const workspaceGet = toLowLevelGet(db().entities.workspace.get({ id: ws.id }).params({ consistent: true }));
  const batchGet = { RequestItems: { [memberGet.TableName!]: { Keys: [memberGet.Key!, workspaceGet.Key!], ConsistentRead: true } } };
  const floorGet = async () => {
    const out = await raw.send(new BatchGetItemCommand(batchGet));
    if ((out.Responses?.[memberGet.TableName!] ?? []).length !== 2) throw new Error("floor BatchGetItem did not find the membership and the workspace");
  };
  // Create: the user comes from the container's cache (as for the GET); the caller's billing account is read three
  // times (GetItem each: the route's `workspaces` usage gate, core/billing/gates.ts; Workspace.create's limitsOfUser
  // and accountOf; on the Power plan the limit is unlimited, so nothing is counted); Workspace.create's 11-item
  // TransactWriteItems (the owner's user item checked; workspace, owner membership, settings: conditional Puts; the
  // seats counter; the five list indexes' marks (documents, tasks, pending actions, agent runs, answers); the owner's
  // workspaces_owned counter, unconditioned under an
  // unlimited plan); the conditional PutItem of its empty search
  // snapshot head (core/insight/search-index.ts startEmptySnapshot); the read-back GetItem of the workspace.
  // The reads mirror core/billing/gates.ts usageOf and core/workspace/index.ts create(); keep in step with them.
  const accountGet = toLowLevelGet(db().entities.billingAccount.get({ user_id: me.id }).params({ consistent: true }));
  const buildCreate = () => {
    const id = randomUUID();
    // The create's own transaction (core/workspace createTransaction): the Power plan is unlimited, the counter exists.
    const params = Workspace.createTransaction({ id, ownerId: me.id, input: createBody, owned: 0, limit: null, counted: true })
      .params() as unknown as TransactInput;
    return {
      transact: toLowLevelTransact(params),
      readBack: toLowLevelGet(db().entities.workspace.get({ id }).params({ consistent: true })),
    };
  };
  if (buildCreate().transact.TransactItems?.length !== 11) throw new Error("floor transaction does not have 11 items");
  // Self-check: the floor must make the calls the handler makes; say so loudly when the handler has changed.
  const floorCalls = { get: ["BatchGetItem(2)"], create: ["GetItem", "GetItem", "GetItem", "TransactWriteItems(11)", "PutItem", "GetItem"] };
  const handlerCalls = { get: await dynamoCallsOf(httpGet), create: await dynamoCallsOf(httpCreate) };
  for (const op of ["get", "create"] as const) {
    const actual = handlerCalls[op].join(", ");
    if (actual !== floorCalls[op].join(", ")) {
      console.warn(`warning: the ${op} handler now makes [${actual}] but the floor makes [${floorCalls[op].join(", ")}]; update bench/foundation.ts`);
    }
  }
  console.log(`DynamoDB calls per request made by the handler: GET [${handlerCalls.get.join(", ")}]; POST [${handlerCalls.create.join(", ")}]`);
  let creates: ReturnType<typeof buildCreate>[] = [];
  /** The new workspace's empty search snapshot head, as startEmptySnapshot writes it (same partition as its item). */
  const headPut = (readBack: GetItemCommandInput): PutItemCommandInput => ({
    TableName: readBack.TableName,
    Item: { pk: readBack.Key!.pk!, sk: { S: "searchix#head" }, version: { N: "0" }, built: { BOOL: true }, unembedded: { N: "0" } },
    ConditionExpression: "attribute_not_exists(pk)",
  });
  const floorCreate = async (i: number) => {
    const { transact, readBack } = creates[i]!;
    for (let read = 0; read < 3; read++) {
      const account = await raw.send(new GetItemCommand(accountGet));
      if (!account.Item) throw new Error("floor: billing account missing");
    }
    await raw.send(new TransactWriteItemsCommand(transact));
    await raw.send(new PutItemCommand(headPut(readBack)));
    const back = await raw.send(new GetItemCommand(readBack));
    if (!back.Item) throw new Error("floor: read-back found nothing");
  };

  // The pieces of the breakdown, timed alongside: the group handler invoked in-process with the API Gateway
  // event the gateway would build (no HTTP), the core calls alone (ElectroDB + DocumentClient + DynamoDB), and
  // the JWT check alone.
  const claims = await verifyBearer(`Bearer ${token}`);
  const handler = await groupHandler("workspaces");
  const invoke = async (method: "GET" | "POST", path: string, routeKey: string, pathParameters: Record<string, string>, body?: unknown) => {
    const headers: Record<string, string> = { authorization: `Bearer ${token}`, host: "127.0.0.1", accept: "application/json" };
    if (body !== undefined) headers["content-type"] = "application/json";
    const event = toApiGatewayEvent(
      { method, path, headers, body: body === undefined ? undefined : Buffer.from(JSON.stringify(body)) },
      pathParameters,
      routeKey,
    );
    const result = await handler(event, lambdaContext("http-workspaces"));
    const status = typeof result === "string" ? 200 : result.statusCode;
    if (status !== (method === "POST" ? 201 : 200)) throw new Error(`direct ${method} ${path}: ${status}`);
  };
  const handlerGet = () => invoke("GET", getPath, "GET /api/workspaces/{workspace_id}", { workspace_id: ws.id });
  const handlerCreate = () => invoke("POST", "/api/workspaces", "POST /api/workspaces", {}, createBody);
  const coreGet = async () => void (await Workspace.get((await User.fromClaims(claims)).id, ws.id));
  const coreCreate = async () => {
    const user = await User.fromClaims(claims);
    await requireUsage({ userId: user.id }, "workspaces");
    await Workspace.create(user, createBody);
  };
  const jwt = async () => void (await verifyBearer(`Bearer ${token}`));

  const recorders = () => ({ http: new Recorder(), floor: new Recorder(), handler: new Recorder(), core: new Recorder(), jwt: new Recorder() });
  const getRec = recorders();
  const createRec = recorders();
  const getPieces = (r: ReturnType<typeof recorders>): Piece[] => [
    { fn: httpGet, rec: r.http },
    { fn: floorGet, rec: r.floor },
    { fn: handlerGet, rec: r.handler },
    { fn: coreGet, rec: r.core },
    { fn: jwt, rec: r.jwt },
  ];
  const createPieces = (r: ReturnType<typeof recorders>): Piece[] => [
    { fn: httpCreate, rec: r.http },
    { fn: floorCreate, rec: r.floor },
    { fn: handlerCreate, rec: r.handler },
    { fn: coreCreate, rec: r.core },
  ];

  // --- warm-up (every path: Node JIT, connection pools, DynamoDB Local's JVM), then the measured runs
  let t = performance.now();
  await interleaved(GET_WARMUP, getPieces(recorders()));
  creates = Array.from({ length: CREATE_WARMUP }, buildCreate);
  await interleaved(CREATE_WARMUP, createPieces(recorders()));
  console.log(`warm-up: ${GET_WARMUP} GET + ${CREATE_WARMUP} POST iterations in ${fmtMs(since(t))} ms`);
  t = performance.now();
  const getDone = await interleaved(GET_N, getPieces(getRec));
  creates = Array.from({ length: CREATE_N }, buildCreate);
  const createDone = await interleaved(CREATE_N, createPieces(createRec));
  console.log(`measured: ${getDone} GET + ${createDone} POST iterations in ${fmtMs(since(t))} ms (each iteration runs every piece once)`);

  const g = { http: getRec.http.summary(), floor: getRec.floor.summary(), handler: getRec.handler.summary(), core: getRec.core.summary(), jwt: getRec.jwt.summary() };
  const c = { http: createRec.http.summary(), floor: createRec.floor.summary(), handler: createRec.handler.summary(), core: createRec.core.summary() };
  console.log("\nLatency (ms), sequential requests over one keep-alive connection to 127.0.0.1:");
  printTable(
    ["operation", "n", "p50", "p90", "p99", "floor p50", "floor p90", "floor p99", "p50/floor p50", `target <= ${TARGET_RATIO}x`],
    (
      [
        ["GET /api/workspaces/{id}", g.http, g.floor],
        ["POST /api/workspaces", c.http, c.floor],
      ] as const
    ).map(([op, h, f]) => {
      const ratio = h.p50 / f.p50;
      return [op, h.n, fmtMs(h.p50), fmtMs(h.p90), fmtMs(h.p99), fmtMs(f.p50), fmtMs(f.p90), fmtMs(f.p99), `${ratio.toFixed(2)}x`, ratio <= TARGET_RATIO ? "met" : "NOT met"];
    }),
  );
  console.log("floor = the same DynamoDB Local calls with the low-level AWS SDK client (GET: 1 BatchGetItem; POST: 3 GetItem + 11-item TransactWriteItems + PutItem (search head) + GetItem)");

  // --- where the time goes: p50 of each piece, all timed in the same interleaved loop
  const line = (label: string, get: number, create: number) => [label, fmtMs(get), fmtMs(create)];
  console.log(`\nWhere the time goes (p50 ms of each piece, timed in the same interleaved loop; "=>" rows are differences of p50s):`);
  printTable(
    ["piece", "GET", "POST"],
    [
      line("HTTP end to end (client -> gateway -> handler)", g.http.p50, c.http.p50),
      line("handler invoked in-process (event in, result out)", g.handler.p50, c.handler.p50),
      line("=> local gateway + loopback HTTP + client", g.http.p50 - g.handler.p50, c.http.p50 - c.handler.p50),
      line("JWT verify alone (aws-jwt-verify RS256, cached JWKS)", g.jwt.p50, g.jwt.p50),
      line("core calls alone (User.fromClaims [+ plan gate] + Workspace op, ElectroDB)", g.core.p50, c.core.p50),
      line("DynamoDB floor (low-level client, same calls)", g.floor.p50, c.floor.p50),
      line("=> ElectroDB + DocumentClient over the floor", g.core.p50 - g.floor.p50, c.core.p50 - c.floor.p50),
      line("=> middy stack + router + zod + JSON + JWT", g.handler.p50 - g.core.p50, c.handler.p50 - c.core.p50),
    ],
  );

  // --- CPU attribution: sample this process while it serves HTTP requests (client, gateway and handler all run
  // here; DynamoDB Local is another process, so waiting on it shows as idle).
  const attribution = new Map<string, { get: number; create: number }>();
  creates = [];
  for (const [key, fn] of [
    ["get", httpGet],
    ["create", httpCreate],
  ] as const) {
    const { profile } = await cpuProfile(() => interleaved(PROFILE_N, [{ fn, rec: new Recorder() }]));
    for (const [label, ms] of selfTimeByCategory(profile)) {
      const row = attribution.get(label) ?? { get: 0, create: 0 };
      row[key] += ms / PROFILE_N;
      attribution.set(label, row);
    }
  }
  attribution.delete("(root)");
  attribution.delete("(profiler itself)");
  const sorted = [...attribution.entries()].sort((a, b) => b[1].get + b[1].create - (a[1].get + a[1].create));
  const total = sorted.reduce((acc, [, v]) => ({ get: acc.get + v.get, create: acc.create + v.create }), { get: 0, create: 0 });
  const pct = (v: number, of: number) => `${((100 * v) / of).toFixed(0)}%`;
  console.log(`\nCPU profile of this process over ${PROFILE_N} HTTP requests per operation (self time per request; the profiler slows everything):`);
  printTable(
    ["category", "GET ms", "GET %", "POST ms", "POST %"],
    [
      ...sorted
        .filter(([, v]) => v.get + v.create >= 0.02)
        .map(([label, v]) => [label, fmtMs(v.get), pct(v.get, total.get), fmtMs(v.create), pct(v.create, total.create)]),
      ["total (wall per request, profiled)", fmtMs(total.get), "100%", fmtMs(total.create), "100%"],
    ],
  );
}
