/**
 * Admin observability (spec 02 "Admin observability (workspace membership required)", "Agent run (admin)", Limits;
 * issue #21; docs/decisions.md "Admin observability") through the real route table and handlers on DynamoDB Local.
 * Agent runs, message feedback and entropy inputs are seeded directly (the harness and the copilot write them in the
 * product); every dashboard figure below is computed by hand from those seeds.
 *
 * Workspaces: the owner is a member of Alpha and Beta; Gamma belongs to someone else (its figures must never reach
 * the owner's lists); `member` belongs to Alpha only.
 */
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DeleteCommand, GetCommand, UpdateCommand } from "@aws-sdk/lib-dynamodb";
import { db } from "../../core/db/service";
import { dynamoClient } from "../../core/db/client";
import { Config } from "../../core/config";
import * as Chat from "../../core/chat";
import { scanWorkspace } from "../../core/entropy";
import { tryLock } from "../../core/agent";
import { call, newUser, newWorkspace } from "../support/api";
import { expectEnvelope, headersOf, withEnv } from "./_helpers";
import { withholdBatchKeys } from "../support/throttle";
import { readsDuring } from "../support/read-units";
import { PLANTED, REAL } from "../unit/entropy/realdata-insights";

type User = Awaited<ReturnType<typeof newUser>>;

/** A workspace and its owner membership, as workspace creation writes them; `members` join as members. */
async function seedWorkspace(name: string, owner: User, members: User[] = []): Promise<string> {
  const id = randomUUID();
  await db().entities.workspace.create({ id, name, owner_id: owner.id }).go();
  await db().entities.membership.create({ workspace_id: id, user_id: owner.id, role: "owner" }).go();
  for (const m of members) await db().entities.membership.create({ workspace_id: id, user_id: m.id, role: "member" }).go();
  return id;
}

/** An ISO instant `daysBack` UTC days before today, at `hour`:00 UTC (its date is that day whatever the time now). */
const at = (daysBack: number, hour = 12) => {
  const d = new Date();
  return new Date(Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate() - daysBack, hour)).toISOString();
};
const dateOf = (daysBack: number) => at(daysBack).slice(0, 10);

interface RunSeed {
  agent_type: "synthesis" | "recommendation" | "drafting" | "chat" | "block_action" | "embedding";
  status: "success" | "failed" | "partial";
  tool_name: string;
  executed_at: string;
  cost_usd?: number;
  rqs?: number;
  contract_passed?: boolean;
  verifier_passed?: boolean;
  error_message?: string;
}

async function seedRun(workspaceId: string, r: RunSeed & { user_id?: string; input_data?: Record<string, unknown> }): Promise<string> {
  const id = randomUUID();
  await db().entities.agentRun.create({
    id, workspace_id: workspaceId, user_id: r.user_id ?? randomUUID(), engine: "local", latency_ms: 1234, tokens_used: 321, input_data: { prompt: "p" }, output_data: { ok: true },
    cost_usd: 0, ...r,
    ...(r.rqs !== undefined ? { quality: { workflow_type: r.agent_type, contract: { score: r.rqs, issues: [] }, verifier: { score: r.rqs, issues: [] }, grounding: 1, retries: 0, degraded: false, mission_id: null } } : {}),
  }).go();
  return id;
}

/** An assistant (or user) message of a conversation, and optionally its feedback. */
async function seedMessage(workspaceId: string, userId: string, createdAt: string, feedback?: { rating: "positive" | "negative"; tags: string[]; at: string }, role: "assistant" | "user" = "assistant") {
  const conversationId = randomUUID();
  const id = randomUUID();
  await db().entities.message.create({ id, conversation_id: conversationId, workspace_id: workspaceId, user_id: userId, role, content: "An answer.", content_lc: "an answer.", created_at: createdAt }).go();
  if (feedback) {
    await db().entities.messageFeedback.create({
      id: randomUUID(), workspace_id: workspaceId, conversation_id: conversationId, message_id: id, user_id: userId, rating: feedback.rating, tags: feedback.tags, created_at: feedback.at,
    }).go();
  }
}

let owner: User;
let member: User;
let outsider: User;
let stranger: User;
let alpha: string;
let beta: string;
let gamma: string;
const run: Record<string, string> = {};
const saved = process.env.RATE_LIMIT_ADMIN_PLG;

beforeAll(async () => {
  // Every admin route counts against one window per user (checked on its own below with the default of 60).
  process.env.RATE_LIMIT_ADMIN_PLG = "100000/60";
  [owner, member, outsider, stranger] = await Promise.all([newUser(), newUser(), newUser(), newUser()]);
  alpha = await seedWorkspace("Alpha", owner, [member]);
  beta = await seedWorkspace("Beta", owner);
  gamma = await seedWorkspace("Gamma", stranger);

  run.r1 = await seedRun(alpha, { agent_type: "chat", status: "success", tool_name: "chat", executed_at: at(0, 12), cost_usd: 0.01, rqs: 80, contract_passed: true, verifier_passed: true });
  run.r5 = await seedRun(alpha, { agent_type: "embedding", status: "success", tool_name: "embed_mentions", executed_at: at(0, 11), cost_usd: 0.001 });
  run.r2 = await seedRun(alpha, { agent_type: "synthesis", status: "success", tool_name: "synthesize", executed_at: at(1), cost_usd: 0.02, rqs: 60, contract_passed: false, verifier_passed: true });
  run.r3 = await seedRun(alpha, { agent_type: "drafting", status: "failed", tool_name: "draft_document", executed_at: at(10), rqs: 40, contract_passed: false, verifier_passed: false, error_message: "The draft broke its contract" });
  run.r4 = await seedRun(alpha, { agent_type: "synthesis", status: "partial", tool_name: "synthesize", executed_at: at(40), cost_usd: 0.005, rqs: 20, contract_passed: true, verifier_passed: false });
  await seedRun(beta, { agent_type: "chat", status: "success", tool_name: "chat", executed_at: at(2), rqs: 70, contract_passed: true, verifier_passed: true });
  await seedRun(beta, { agent_type: "recommendation", status: "success", tool_name: "generate_recommendations", executed_at: at(3), rqs: 30, contract_passed: true, verifier_passed: false });
  await seedRun(gamma, { agent_type: "chat", status: "success", tool_name: "chat", executed_at: at(0), rqs: 10, contract_passed: false, verifier_passed: false });

  await seedMessage(alpha, owner.id, at(0, 1), { rating: "positive", tags: ["Accurate", "cited sources"], at: at(0, 2) });
  await seedMessage(alpha, owner.id, at(1, 1), { rating: "positive", tags: ["accurate"], at: at(1, 2) });
  await seedMessage(alpha, member.id, at(0, 3), { rating: "negative", tags: ["slow", "Wrong numbers"], at: at(0, 4) });
  await seedMessage(alpha, owner.id, at(5));
  await seedMessage(alpha, member.id, at(6));
  await seedMessage(alpha, owner.id, at(6), undefined, "user"); // a user's own message is never rated
  await seedMessage(alpha, owner.id, at(40, 1), { rating: "negative", tags: ["slow"], at: at(40, 2) });
  await seedMessage(beta, owner.id, at(2, 1), { rating: "negative", tags: ["off topic"], at: at(2, 2) });
  await seedMessage(gamma, stranger.id, at(0, 1), { rating: "negative", tags: ["bad"], at: at(0, 2) });
});
afterAll(() => {
  if (saved === undefined) delete process.env.RATE_LIMIT_ADMIN_PLG;
  else process.env.RATE_LIMIT_ADMIN_PLG = saved;
});

const get = (path: string, token: string, query: Record<string, string | number>) => call("GET", path, { token, query });
const runs = (query: Record<string, string | number>, token = owner.token) => get("/api/admin/agent-runs", token, { workspace_id: alpha, ...query });

describe("GET /api/admin/agent-runs", () => {
  it("lists the workspace's runs newest first with exactly spec 02's Agent run fields", async () => {
    const res = await runs({});
    expect(res.status, res.text).toBe(200);
    expect(res.body).toMatchObject({ total: 5, limit: 50, offset: 0 });
    expect(res.body.runs.map((r: { id: string }) => r.id)).toEqual([run.r1, run.r5, run.r2, run.r3, run.r4]);
    for (const r of res.body.runs) {
      expect(Object.keys(r).sort()).toEqual(
        ["agent_type", "cost_usd", "error_message", "executed_at", "id", "input_data", "latency_ms", "output_data", "status", "tokens_used", "tool_name", "workspace_id"],
      );
    }
    expect(res.body.runs[3]).toEqual({
      id: run.r3, workspace_id: alpha, agent_type: "drafting", tool_name: "draft_document", input_data: { prompt: "p" }, output_data: { ok: true },
      latency_ms: 1234, tokens_used: 321, cost_usd: 0, status: "failed", error_message: "The draft broke its contract", executed_at: at(10),
    });
    expect(res.body.runs[0].error_message).toBeNull();
  });

  it.each([
    [{ agent_type: "synthesis" }, ["r2", "r4"]],
    [{ status: "failed" }, ["r3"]],
    [{ tool_name: "embed_mentions" }, ["r5"]],
    [{ agent_type: "synthesis", status: "partial" }, ["r4"]],
    [{ agent_type: "synthesis", tool_name: "synthesize", status: "success" }, ["r2"]],
    [{ agent_type: "block_action" }, []],
  ])("filters by %o", async (query, expected) => {
    const res = await runs(query);
    expect(res.status, res.text).toBe(200);
    expect(res.body.runs.map((r: { id: string }) => r.id)).toEqual(expected.map((k) => run[k]));
    expect(res.body.total).toBe(expected.length);
  });

  it("a page read by DynamoDB under throttling (a key left unprocessed) still lists every run, in order", async () => {
    const throttled = withholdBatchKeys(alpha, 1);
    let res;
    try {
      res = await runs({});
    } finally {
      throttled.remove();
    }
    expect(throttled.withheld()).toBe(1);
    expect(res.status, res.text).toBe(200);
    expect(res.body.runs.map((r: { id: string }) => r.id)).toEqual([run.r1, run.r5, run.r2, run.r3, run.r4]);
  });

  it("pages with limit and offset; total counts every match", async () => {
    const page = await runs({ limit: 2, offset: 1 });
    expect(page.body).toMatchObject({ total: 5, limit: 2, offset: 1 });
    expect(page.body.runs.map((r: { id: string }) => r.id)).toEqual([run.r5, run.r2]);
    const past = await runs({ offset: 10 });
    expect(past.body).toMatchObject({ runs: [], total: 5, offset: 10 });
    expect((await runs({ limit: 100 })).body.runs).toHaveLength(5);
  });

  it.each([
    [{ limit: 0 }, "limit"],
    [{ limit: 101 }, "limit"],
    [{ limit: "ten" }, "limit"],
    [{ offset: -1 }, "offset"],
    [{ agent_type: "bogus" }, "agent_type"],
    [{ status: "ok" }, "status"],
    [{ workspace_id: "not-a-uuid" }, "workspace_id"],
  ])("refuses %o with 422 naming %s", async (query, field) => {
    const res = await runs(query);
    expectEnvelope(res, 422, "VALIDATION_ERROR");
    expect(res.body.errors.map((e: { loc: string[] }) => e.loc.join("."))).toContain(`query.${field}`);
  });

  it("refuses a request without workspace_id (422)", async () => {
    expectEnvelope(await call("GET", "/api/admin/agent-runs", { token: owner.token }), 422, "VALIDATION_ERROR");
  });

  it("a copilot run another member started shows no input: its prompt is of a conversation only its owner may read", async () => {
    const delta = await seedWorkspace("Delta", owner, [member]);
    const mine = await seedRun(delta, { agent_type: "chat", status: "success", tool_name: "agent_loop", executed_at: at(0, 9), user_id: owner.id, input_data: { prompt: "The owner's own question", conversation_id: randomUUID() } });
    const theirs = await seedRun(delta, { agent_type: "chat", status: "success", tool_name: "agent_loop", executed_at: at(0, 8), user_id: member.id, input_data: { prompt: "A member's private question", conversation_id: randomUUID() } });
    const synthesis = await seedRun(delta, { agent_type: "synthesis", status: "success", tool_name: "synthesize", executed_at: at(0, 7), user_id: member.id, input_data: { source_ids: ["s1"] } });
    const inputs = async (token: string) =>
      Object.fromEntries(((await get("/api/admin/agent-runs", token, { workspace_id: delta })).body.runs as { id: string; input_data: unknown }[]).map((r) => [r.id, r.input_data]));
    expect(await inputs(owner.token)).toEqual({ [mine]: expect.objectContaining({ prompt: "The owner's own question" }), [theirs]: null, [synthesis]: { source_ids: ["s1"] } });
    expect(await inputs(member.token)).toEqual({ [mine]: null, [theirs]: expect.objectContaining({ prompt: "A member's private question" }), [synthesis]: { source_ids: ["s1"] } });
  });

  it("a page of heavy runs is cut before 6 MB on the wire; total counts every run", async () => {
    const heavy = await seedWorkspace("Heavy runs", owner);
    // 100 runs whose output is 20,000 quote characters (the stored clip): 4 bytes each on the wire, 8 MB in all.
    await Promise.all(Array.from({ length: 100 }, (_, i) =>
      db().entities.agentRun.create({ id: randomUUID(), workspace_id: heavy, user_id: owner.id, engine: "local", agent_type: "block_action", tool_name: "summarize", status: "success", latency_ms: 1, tokens_used: 1, cost_usd: 0, input_data: {}, output_data: { text: '"'.repeat(20_000) }, executed_at: at(0, 1 + (i % 20)) }).go(),
    ));
    const page = await get("/api/admin/agent-runs", owner.token, { workspace_id: heavy, limit: 100 });
    expect(page.status, page.text.slice(0, 300)).toBe(200);
    expect(page.body.total).toBe(100);
    expect(page.body.runs.length).toBeGreaterThan(0);
    expect(page.body.runs.length).toBeLessThan(100);
    expect(Buffer.byteLength(JSON.stringify({ statusCode: 200, body: page.text }))).toBeLessThan(6 * 1024 * 1024);
  });
});

describe("GET /api/admin/agent-runs/stats", () => {
  it("counts every run of the workspace by type and status, with the total cost", async () => {
    const res = await get("/api/admin/agent-runs/stats", owner.token, { workspace_id: alpha });
    expect(res.status, res.text).toBe(200);
    expect(res.body).toEqual({
      total_runs: 5,
      total_cost_usd: 0.036,
      runs_by_type: { chat: 1, embedding: 1, synthesis: 2, drafting: 1 },
      runs_by_status: { success: 3, failed: 1, partial: 1 },
    });
  });

  it("is zero for a workspace without runs", async () => {
    const empty = await seedWorkspace("Empty", owner);
    expect((await get("/api/admin/agent-runs/stats", owner.token, { workspace_id: empty })).body).toEqual({ total_runs: 0, total_cost_usd: 0, runs_by_type: {}, runs_by_status: {} });
  });
});

describe("GET /api/admin/quality/rqs", () => {
  it("averages the judged runs of the last 30 days by default, with pass rates, a daily trend and per type", async () => {
    const res = await get("/api/admin/quality/rqs", owner.token, { workspace_id: alpha });
    expect(res.status, res.text).toBe(200);
    // r1 80 (contract ✓ verifier ✓), r2 60 (✗ ✓), r3 40 (✗ ✗); r4 is 40 days old, r5 was not judged.
    expect(res.body).toMatchObject({ avg_rqs: 60, contract_pass_rate: 0.3333, verifier_pass_rate: 0.6667 });
    expect(res.body.by_agent_type).toEqual([
      { agent_type: "chat", avg_rqs: 80 },
      { agent_type: "drafting", avg_rqs: 40 },
      { agent_type: "synthesis", avg_rqs: 60 },
    ]);
    const trend = res.body.daily_trend as { date: string }[];
    expect(trend).toHaveLength(30);
    expect(trend[0]!.date).toBe(dateOf(29));
    expect(trend[29]).toEqual({ date: dateOf(0), avg_rqs: 80, contract_pass_pct: 100, verifier_pass_pct: 100 });
    expect(trend[28]).toEqual({ date: dateOf(1), avg_rqs: 60, contract_pass_pct: 0, verifier_pass_pct: 100 });
    expect(trend[19]).toEqual({ date: dateOf(10), avg_rqs: 40, contract_pass_pct: 0, verifier_pass_pct: 0 });
    expect(trend[27]).toEqual({ date: dateOf(2), avg_rqs: null, contract_pass_pct: null, verifier_pass_pct: null });
  });

  it("ranks the caller's workspaces, lowest average first, and never another team's", async () => {
    const res = await get("/api/admin/quality/rqs", owner.token, { workspace_id: alpha });
    // Beta: 70 and 30 (one verifier failure); Alpha: 80, 60, 40 (one); Gamma (10) is not the owner's.
    expect(res.body.worst_workspaces).toEqual([
      { workspace_id: beta, workspace_name: "Beta", avg_rqs: 50, run_count: 2, verifier_fail_count: 1 },
      { workspace_id: alpha, workspace_name: "Alpha", avg_rqs: 60, run_count: 3, verifier_fail_count: 1 },
    ]);
    const asMember = await get("/api/admin/quality/rqs", member.token, { workspace_id: alpha });
    expect(asMember.body.worst_workspaces.map((w: { workspace_name: string }) => w.workspace_name)).toEqual(["Alpha"]);
    expect(asMember.body.avg_rqs).toBe(60);
  });

  it("ranks every workspace when DynamoDB leaves a workspace's key unprocessed (one dropped out of the ranking)", async () => {
    const throttled = withholdBatchKeys(beta, 1);
    let res;
    try {
      res = await get("/api/admin/quality/rqs", owner.token, { workspace_id: alpha });
    } finally {
      throttled.remove();
    }
    expect(throttled.withheld()).toBe(1);
    expect(res.body.worst_workspaces.map((w: { workspace_name: string }) => w.workspace_name)).toEqual(["Beta", "Alpha"]);
  });

  it("takes 7 and 90 days", async () => {
    const week = await get("/api/admin/quality/rqs", owner.token, { workspace_id: alpha, days: 7 });
    expect(week.body).toMatchObject({ avg_rqs: 70, contract_pass_rate: 0.5, verifier_pass_rate: 1 });
    expect(week.body.daily_trend).toHaveLength(7);
    const quarter = await get("/api/admin/quality/rqs", owner.token, { workspace_id: alpha, days: 90 });
    expect(quarter.body).toMatchObject({ avg_rqs: 50, contract_pass_rate: 0.5, verifier_pass_rate: 0.5 });
    expect(quarter.body.by_agent_type).toContainEqual({ agent_type: "synthesis", avg_rqs: 40 });
    expect(quarter.body.daily_trend).toHaveLength(90);
  });

  it("answers nulls and empty lists where nothing was judged", async () => {
    const empty = await seedWorkspace("Quiet", outsider);
    const res = await get("/api/admin/quality/rqs", outsider.token, { workspace_id: empty, days: 7 });
    expect(res.body).toMatchObject({ avg_rqs: null, contract_pass_rate: null, verifier_pass_rate: null, by_agent_type: [], worst_workspaces: [] });
    expect(res.body.daily_trend.every((d: { avg_rqs: unknown }) => d.avg_rqs === null)).toBe(true);
  });

  it.each([14, 0, "month"])("refuses days=%s with 422", async (days) => {
    const res = await get("/api/admin/quality/rqs", owner.token, { workspace_id: alpha, days });
    expectEnvelope(res, 422, "VALIDATION_ERROR");
    expect(res.body.errors[0].loc).toEqual(["query", "days"]);
  });
});

describe("GET /api/admin/quality/feedback", () => {
  it("rates the window's feedback: rates, unrated answers, trend and tags", async () => {
    const res = await get("/api/admin/quality/feedback", owner.token, { workspace_id: alpha });
    expect(res.status, res.text).toBe(200);
    // In 30 days: 2 positive, 1 negative; 5 assistant answers written, 2 of them unrated. The 40-day-old one is out.
    expect(res.body).toMatchObject({ positive_rate: 0.6667, avg_rating: 0.333, rated_count: 3, unrated_count: 2 });
    expect(res.body.top_positive_tags).toEqual([{ tag: "accurate", count: 2 }, { tag: "cited sources", count: 1 }]);
    expect(res.body.top_negative_tags).toEqual([{ tag: "slow", count: 1 }, { tag: "wrong numbers", count: 1 }]);
    const trend = res.body.daily_trend as { date: string }[];
    expect(trend).toHaveLength(30);
    expect(trend[29]).toEqual({ date: dateOf(0), positive_count: 1, negative_count: 1 });
    expect(trend[28]).toEqual({ date: dateOf(1), positive_count: 1, negative_count: 0 });
    expect(trend[20]).toEqual({ date: dateOf(9), positive_count: 0, negative_count: 0 });
  });

  it("over 90 days includes the older rating; worst workspaces are the caller's, lowest positive rate first", async () => {
    const res = await get("/api/admin/quality/feedback", owner.token, { workspace_id: alpha, days: 90 });
    expect(res.body).toMatchObject({ positive_rate: 0.5, avg_rating: 0, rated_count: 4, unrated_count: 2 });
    expect(res.body.top_negative_tags).toEqual([{ tag: "slow", count: 2 }, { tag: "wrong numbers", count: 1 }]);
    expect(res.body.worst_workspaces).toEqual([
      { workspace_id: beta, workspace_name: "Beta", positive_rate: 0, total_rated: 1 },
      { workspace_id: alpha, workspace_name: "Alpha", positive_rate: 0.5, total_rated: 4 },
    ]);
  });

  it("answers nulls without feedback and refuses days outside 7, 30, 90 (422)", async () => {
    const empty = await seedWorkspace("Silent", outsider);
    expect((await get("/api/admin/quality/feedback", outsider.token, { workspace_id: empty })).body).toMatchObject({
      positive_rate: null, avg_rating: null, rated_count: 0, unrated_count: 0, top_positive_tags: [], top_negative_tags: [], worst_workspaces: [],
    });
    expectEnvelope(await get("/api/admin/quality/feedback", owner.token, { workspace_id: alpha, days: 60 }), 422, "VALIDATION_ERROR");
  });
});

/**
 * The DynamoDB reads `fn` makes on one workspace (inputs naming its id): each command's name, index, the read units
 * DynamoDB says it consumed (ReturnConsumedCapacity TOTAL, set here on every read) and the bytes of what it returned.
 */
const readsOn = readsDuring;

/** The raw index mark `sk` of a workspace (core/db/slim-index.ts), strongly consistent; undefined when absent. */
const markOf = async (workspaceId: string, sk: string) =>
  (await dynamoClient().send(new GetCommand({ TableName: Config.tableName(), Key: { pk: `ws#${workspaceId}`, sk }, ConsistentRead: true }))).Item;

describe("GET /api/admin/quality/feedback counts answers on their slim index, not the messages", () => {
  /** About 330 KB per answer (content, its lower-cased copy, thinking): the count must not pay for them. */
  const CONTENT = "a".repeat(90_000);
  const THINKING = [{ type: "thinking", content: "t".repeat(150_000) }];
  const ANSWERS = 12;
  let ws: Awaited<ReturnType<typeof newWorkspace>>;
  const answerIds: string[] = [];

  beforeAll(async () => {
    ws = await newWorkspace("Long answers");
    // Through the copilot's own write path (a transaction of the conversation and the message).
    const conv = await Chat.openConversation(ws.owner.id, ws.workspace.id, undefined, "Tell me everything");
    for (let i = 0; i < ANSWERS; i++) {
      await Chat.appendMessage(conv, { role: "user", content: `Question ${i}` }, { historyDays: 30 });
      answerIds.push((await Chat.appendMessage(conv, { role: "assistant", content: CONTENT, thinking_blocks: THINKING }, { historyDays: 30 })).id);
    }
    for (const [k, rating] of (["positive", "negative", "positive"] as const).entries()) {
      const res = await call("POST", `/api/chat/messages/${answerIds[k]}/feedback`, { token: ws.owner.token, body: { rating, tags: ["long"] } });
      expect(res.status, res.text).toBe(200);
    }
  }, 120_000);

  it("a workspace created now carries its task and answer index marks, so nothing is ever backfilled", async () => {
    expect(await markOf(ws.workspace.id, "answerindex")).toMatchObject({ backfilled: 0 });
    expect(await markOf(ws.workspace.id, "taskindex")).toMatchObject({ backfilled: 0 });
  });

  it("reads a few units whatever the answers weigh, with the right figures", async () => {
    const { result: res, reads } = await readsOn(ws.workspace.id, () => get("/api/admin/quality/feedback", ws.owner.token, { workspace_id: ws.workspace.id }));
    expect(res.status, res.text).toBe(200);
    expect(res.body).toMatchObject({ rated_count: 3, unrated_count: ANSWERS - 3, positive_rate: 0.6667, avg_rating: 0.333 });
    expect(res.body.top_positive_tags).toEqual([{ tag: "long", count: 2 }]);
    const units = reads.reduce((n, r) => n + r.units, 0);
    console.info(`GET /api/admin/quality/feedback over ${ANSWERS} answers of ~330 KB: ${units} RCU in all; reads ${JSON.stringify(reads)}`);
    // The old count filtered the workspace partition: every message read whole, ~4 MB here, hundreds of units.
    expect(reads.filter((r) => r.partitionRead)).toEqual([]);
    expect(reads.filter((r) => r.index === "gsi4").length).toBeGreaterThan(0);
    expect(units).toBeLessThan(5);
  });
});

describe("GET /api/admin/agent-runs and its stats read the runs' slim index (gsi5), not the runs", () => {
  /** Each run holds ~40 KB of input and output: the count, the filters and the stats must not pay for them. */
  const HEAVY = { prompt: "p".repeat(20_000) };
  const RUNS = 30;
  let ws: Awaited<ReturnType<typeof newWorkspace>>;

  beforeAll(async () => {
    ws = await newWorkspace("Heavy runs");
    for (let i = 0; i < RUNS; i++) {
      await seedRun(ws.workspace.id, {
        agent_type: i % 3 === 0 ? "synthesis" : "chat", status: i % 5 === 0 ? "failed" : "success", tool_name: i % 3 === 0 ? "synthesize" : "agent_loop",
        executed_at: new Date(Date.parse("2026-05-01T00:00:00.000Z") + i * 60_000).toISOString(), cost_usd: 0.01, input_data: HEAVY, user_id: ws.owner.id,
      });
    }
  }, 120_000);

  it("a workspace created now carries its runs' index mark, so nothing is ever backfilled", async () => {
    expect(await markOf(ws.workspace.id, "runindex")).toMatchObject({ backfilled: 0 });
  });

  it("lists and filters from a few read units, reading whole only the page's runs", async () => {
    const { result: res, reads } = await readsOn(ws.workspace.id, () => get("/api/admin/agent-runs", ws.owner.token, { workspace_id: ws.workspace.id, agent_type: "synthesis", status: "success", limit: 2 }));
    expect(res.status, res.text).toBe(200);
    // i % 3 === 0 and i % 5 !== 0: 3, 6, 9, 12, 18, 21, 24, 27 (8 runs), newest first.
    expect(res.body.total).toBe(8);
    expect(res.body.runs.map((r: { executed_at: string }) => r.executed_at)).toEqual([27, 24].map((i) => new Date(Date.parse("2026-05-01T00:00:00.000Z") + i * 60_000).toISOString()));
    expect(res.body.runs[0].input_data).toEqual(HEAVY);
    expect(reads.filter((r) => r.partitionRead)).toEqual([]);
    const queries = reads.filter((r) => /Query/.test(r.command));
    for (const q of queries) expect(q.index).toBe("gsi5");
    // The partition holds ~1.2 MB of runs: reading them to count is hundreds of units.
    expect(queries.reduce((n, r) => n + r.units, 0)).toBeLessThan(5);
  });

  it("counts the stats from the index alone", async () => {
    const { result: res, reads } = await readsOn(ws.workspace.id, () => get("/api/admin/agent-runs/stats", ws.owner.token, { workspace_id: ws.workspace.id }));
    expect(res.status, res.text).toBe(200);
    expect(res.body).toEqual({ total_runs: RUNS, total_cost_usd: 0.3, runs_by_type: { synthesis: 10, chat: 20 }, runs_by_status: { failed: 6, success: 24 } });
    expect(reads.filter((r) => r.partitionRead)).toEqual([]);
    expect(reads.filter((r) => /Query/.test(r.command)).reduce((n, r) => n + r.units, 0)).toBeLessThan(5);
  });
});

describe("GET /api/admin/agent-runs on a workspace older than the runs' index", () => {
  it("backfills its runs once, answers right, then reads the index only", async () => {
    const { owner: o, workspace } = await newWorkspace("Older runs");
    const wsId = workspace.id;
    const runs: { id: string; executed_at: string }[] = [];
    for (let i = 0; i < 4; i++) {
      const executed_at = new Date(Date.parse("2026-04-01T00:00:00.000Z") + i * 60_000).toISOString();
      const id = await seedRun(wsId, { agent_type: i === 0 ? "drafting" : "chat", status: "success", tool_name: "agent_loop", executed_at, cost_usd: 0.5 });
      // As the old code wrote it: no gsi5 keys.
      await dynamoClient().send(new UpdateCommand({ TableName: Config.tableName(), Key: { pk: `ws#${wsId}`, sk: `agentrun#${executed_at}#${id}` }, UpdateExpression: "REMOVE gsi5pk, gsi5sk", ConditionExpression: "attribute_exists(pk)" }));
      runs.push({ id, executed_at });
    }
    await dynamoClient().send(new DeleteCommand({ TableName: Config.tableName(), Key: { pk: `ws#${wsId}`, sk: "runindex" } }));

    const first = await readsOn(wsId, () => get("/api/admin/agent-runs", o.token, { workspace_id: wsId, agent_type: "chat" }));
    expect(first.result.status, first.result.text).toBe(200);
    expect(first.result.body.total).toBe(3);
    expect(first.result.body.runs.map((r: { id: string }) => r.id)).toEqual([runs[3]!.id, runs[2]!.id, runs[1]!.id]);
    expect(first.reads.filter((r) => r.partitionRead).length).toBeGreaterThan(0);
    expect(await markOf(wsId, "runindex")).toMatchObject({ backfilled: 4 });

    const later = await readsOn(wsId, () => get("/api/admin/agent-runs/stats", o.token, { workspace_id: wsId }));
    expect(later.result.body).toEqual({ total_runs: 4, total_cost_usd: 2, runs_by_type: { drafting: 1, chat: 3 }, runs_by_status: { success: 4 } });
    expect(later.reads.filter((r) => r.partitionRead)).toEqual([]);
  });
});

describe("GET /api/admin/quality/feedback on a workspace older than the answers' index", () => {
  it("backfills its answers once (user messages stay out), counts them right, then reads the index only", async () => {
    const { owner: o, workspace } = await newWorkspace("Older answers");
    const wsId = workspace.id;
    const conversationId = randomUUID();
    /** A message as the old code wrote it: no gsi4 keys (ElectroDB writes them today; removed here). */
    const oldMessage = async (createdAt: string, role: "assistant" | "user", rating?: "positive" | "negative") => {
      const id = randomUUID();
      await db().entities.message.create({ id, conversation_id: conversationId, workspace_id: wsId, user_id: o.id, role, content: "An answer.", content_lc: "an answer.", created_at: createdAt }).go();
      await dynamoClient().send(new UpdateCommand({ TableName: Config.tableName(), Key: { pk: `ws#${wsId}`, sk: `conversation#${conversationId}#msg#${createdAt}#${id}` }, UpdateExpression: "REMOVE gsi4pk, gsi4sk", ConditionExpression: "attribute_exists(pk)" }));
      if (rating) {
        await db().entities.messageFeedback.create({ id: randomUUID(), workspace_id: wsId, conversation_id: conversationId, message_id: id, user_id: o.id, rating, tags: [], created_at: createdAt }).go();
      }
      return { id, sk: `conversation#${conversationId}#msg#${createdAt}#${id}` };
    };
    await oldMessage(at(0, 1), "assistant", "positive");
    await oldMessage(at(1, 1), "assistant");
    await oldMessage(at(2, 1), "assistant");
    const question = await oldMessage(at(2, 2), "user");
    await oldMessage(at(40, 1), "assistant"); // out of the 30-day window, in the 90-day one
    // The old code wrote no mark at the workspace's create.
    await dynamoClient().send(new DeleteCommand({ TableName: Config.tableName(), Key: { pk: `ws#${wsId}`, sk: "answerindex" } }));
    expect(await markOf(wsId, "answerindex")).toBeUndefined();

    const dashboard = (days?: number) => get("/api/admin/quality/feedback", o.token, { workspace_id: wsId, ...(days ? { days } : {}) });
    // The first read answers from the partition, gives the four answers their keys and writes the mark.
    const first = await readsOn(wsId, () => dashboard());
    expect(first.result.status, first.result.text).toBe(200);
    expect(first.result.body).toMatchObject({ rated_count: 1, unrated_count: 2, positive_rate: 1 });
    expect(first.reads.filter((r) => r.partitionRead).length).toBeGreaterThan(0);
    expect(await markOf(wsId, "answerindex")).toMatchObject({ backfilled: 4 });
    const raw = await dynamoClient().send(new GetCommand({ TableName: Config.tableName(), Key: { pk: `ws#${wsId}`, sk: question.sk }, ConsistentRead: true }));
    expect(raw.Item).toMatchObject({ id: question.id, role: "user" });
    expect(raw.Item!.gsi4pk).toBeUndefined();

    // From then on the index alone answers, with the older answers and one written since (through the write path).
    const conv = await Chat.openConversation(o.id, wsId, undefined, "Later");
    await Chat.appendMessage(conv, { role: "assistant", content: "A newer answer." }, { historyDays: 30 });
    const later = await readsOn(wsId, () => dashboard());
    expect(later.result.body).toMatchObject({ rated_count: 1, unrated_count: 3 });
    expect(later.reads.filter((r) => r.partitionRead)).toEqual([]);
    expect((await dashboard(90)).body).toMatchObject({ rated_count: 1, unrated_count: 4 });
    expect((await dashboard(7)).body).toMatchObject({ rated_count: 1, unrated_count: 3 });
  });
});

describe("entropy: scan on demand, active issues, dashboard", () => {
  let alphaScan: { id: string; scanned_at: string };
  const sources: Record<string, string> = {};
  const insights: Record<string, string> = {};

  async function seedSource(workspaceId: string, title: string, ageDays: number): Promise<string> {
    const id = randomUUID();
    await db().entities.researchSource.create({
      id, workspace_id: workspaceId, source_type: "interview", title, file_name: "notes.md", file_key: `workspaces/${workspaceId}/sources/${id}/original/notes.md`,
      file_type: "text/markdown", file_kind: "markdown", file_size_bytes: 100, upload_method: "multipart", processing_status: "completed", created_by: owner.id,
      created_at: at(ageDays),
    }).go();
    return id;
  }
  async function seedInsight(workspaceId: string, key: string, sourceIds: string[]) {
    const s = [...REAL, ...PLANTED].find((x) => x.key === key)!;
    insights[key] = randomUUID();
    await db().entities.insight.create({
      id: insights[key], workspace_id: workspaceId, insight_type: "pain_point", title: s.title, description: s.description, source_ids: sourceIds, severity: s.severity, origin: "synthesis",
    }).go();
  }

  beforeAll(async () => {
    sources.fresh = await seedSource(alpha, "Accessibility results 2023", 10);
    sources.old = await seedSource(alpha, "Contrast notes 2019", 200);
    await seedInsight(alpha, "contrast-ok", [sources.fresh]);
    await seedInsight(alpha, "contrast-block", [sources.old]);
    await seedInsight(alpha, "toc-useful", [sources.fresh]);
    await seedInsight(alpha, "themes-cared", [sources.fresh]);
    const betaSource = await seedSource(beta, "Fresh interview", 3);
    await seedInsight(beta, "headings", [betaSource]);
    const gammaSource = await seedSource(gamma, "Old notes", 400);
    await seedInsight(gamma, "dark", [gammaSource]);
    await scanWorkspace(gamma); // another team's scan, with a stale source: never in the owner's figures
  });

  it("shows nothing before the first scan", async () => {
    const res = await get("/api/admin/quality/entropy", owner.token, { workspace_id: alpha });
    expect(res.status, res.text).toBe(200);
    expect(res.body).toEqual({ total_active_issues: 0, high_severity_count: 0, affected_workspaces: 0, by_type: [], worst_workspaces: [], recent_scans: [] });
    expect((await get("/api/admin/quality/entropy/issues", owner.token, { workspace_id: alpha })).body).toEqual({ scan: null, issues: [], total: 0 });
  });

  it("POST .../entropy/scan finds the planted contradiction and the planted stale source, and stores the scan", async () => {
    const res = await call("POST", "/api/admin/quality/entropy/scan", { token: member.token, body: { workspace_id: alpha } });
    expect(res.status, res.text).toBe(200);
    alphaScan = res.body.scan;
    expect(res.body.scan).toMatchObject({ workspace_id: alpha, trigger: "on_demand", insight_count: 4, source_count: 2, issue_count: 2, high_severity_count: 2 });
    expect(res.body.issues.map((i: { issue_type: string; severity: string; source_id: string | null; insight_ids: string[] }) => [i.issue_type, i.severity, i.source_id, i.insight_ids])).toEqual([
      ["stale_source", "high", sources.old, [insights["contrast-block"]]],
      ["contradictory_insights", "high", null, [insights["contrast-ok"]!, insights["contrast-block"]!].sort()],
    ]);
    const beta_ = await call("POST", "/api/admin/quality/entropy/scan", { token: owner.token, body: { workspace_id: beta } });
    expect(beta_.body.scan).toMatchObject({ issue_count: 0, high_severity_count: 0, by_type: [] });
  });

  it("GET .../entropy/issues lists the latest scan's issues, filtered by type or severity", async () => {
    const all = await get("/api/admin/quality/entropy/issues", owner.token, { workspace_id: alpha });
    expect(all.status, all.text).toBe(200);
    expect(all.body.scan.id).toBe(alphaScan.id);
    expect(all.body.total).toBe(2);
    const stale = await get("/api/admin/quality/entropy/issues", owner.token, { workspace_id: alpha, issue_type: "stale_source" });
    expect(stale.body.issues.map((i: { source_id: string }) => i.source_id)).toEqual([sources.old]);
    expect((await get("/api/admin/quality/entropy/issues", owner.token, { workspace_id: alpha, severity: "low" })).body.total).toBe(0);
    expectEnvelope(await get("/api/admin/quality/entropy/issues", owner.token, { workspace_id: alpha, severity: "critical" }), 422, "VALIDATION_ERROR");
  });

  it("the dashboard counts the workspace's active issues and ranks the caller's workspaces", async () => {
    const res = await get("/api/admin/quality/entropy", owner.token, { workspace_id: alpha });
    expect(res.status, res.text).toBe(200);
    const betaScans = (await get("/api/admin/quality/entropy/issues", owner.token, { workspace_id: beta })).body.scan;
    expect(res.body).toEqual({
      total_active_issues: 2,
      high_severity_count: 2,
      affected_workspaces: 1,
      by_type: [
        { issue_type: "stale_source", severity: "high", count: 1 },
        { issue_type: "contradictory_insights", severity: "high", count: 1 },
      ],
      worst_workspaces: [{ workspace_id: alpha, workspace_name: "Alpha", high_count: 2, medium_count: 0, low_count: 0, last_scanned_at: alphaScan.scanned_at }],
      recent_scans: [
        { workspace_id: beta, workspace_name: "Beta", scanned_at: betaScans.scanned_at, issue_count: 0, high_severity_count: 0 },
        { workspace_id: alpha, workspace_name: "Alpha", scanned_at: alphaScan.scanned_at, issue_count: 2, high_severity_count: 2 },
      ],
    });
    // Beta's own figures are its latest scan's: clean.
    expect((await get("/api/admin/quality/entropy", owner.token, { workspace_id: beta })).body).toMatchObject({ total_active_issues: 0, affected_workspaces: 1 });
  });

  it("answers 409 while another scan of the workspace runs", async () => {
    const release = (await tryLock(`entropy#${alpha}`, "scan", 60))!;
    try {
      expectEnvelope(await call("POST", "/api/admin/quality/entropy/scan", { token: owner.token, body: { workspace_id: alpha } }), 409, "CONFLICT");
    } finally {
      await release();
    }
  });

  it("refuses a malformed scan body with 422", async () => {
    expectEnvelope(await call("POST", "/api/admin/quality/entropy/scan", { token: owner.token, body: { workspace_id: "nope" } }), 422, "VALIDATION_ERROR");
    expectEnvelope(await call("POST", "/api/admin/quality/entropy/scan", { token: owner.token, body: { workspace_id: alpha, extra: 1 } }), 422, "VALIDATION_ERROR");
  });
});

/** One valid request per route, for the access checks. */
const REQUESTS: [string, string, (ws: string) => { query?: Record<string, string>; body?: unknown }][] = [
  ["GET", "/api/admin/agent-runs", (ws) => ({ query: { workspace_id: ws } })],
  ["GET", "/api/admin/agent-runs/stats", (ws) => ({ query: { workspace_id: ws } })],
  ["GET", "/api/admin/quality/rqs", (ws) => ({ query: { workspace_id: ws, days: "7" } })],
  ["GET", "/api/admin/quality/feedback", (ws) => ({ query: { workspace_id: ws } })],
  ["GET", "/api/admin/quality/entropy", (ws) => ({ query: { workspace_id: ws } })],
  ["GET", "/api/admin/quality/entropy/issues", (ws) => ({ query: { workspace_id: ws } })],
  ["POST", "/api/admin/quality/entropy/scan", (ws) => ({ body: { workspace_id: ws } })],
];

describe("access", () => {
  it.each(REQUESTS)("%s %s: 403 for a non-member (also for a workspace that does not exist), 401 without a token", async (method, path, req) => {
    expectEnvelope(await call(method, path, { token: outsider.token, ...req(alpha) }), 403, "FORBIDDEN");
    expectEnvelope(await call(method, path, { token: outsider.token, ...req(randomUUID()) }), 403, "FORBIDDEN");
    expectEnvelope(await call(method, path, req(alpha)), 401, "UNAUTHORIZED");
  });

  it("a member may call every route (no admin group needed)", async () => {
    for (const [method, path, req] of REQUESTS.filter(([m]) => m === "GET")) {
      const res = await call(method, path, { token: member.token, ...req(alpha) });
      expect(res.status, `${path}: ${res.text}`).toBe(200);
    }
  });

  it("allows 60 requests a minute per user across the admin routes, then 429 with Retry-After", async () => {
    await withEnv({ RATE_LIMIT_ADMIN_PLG: undefined }, async () => {
      // A fixed window of 60 s: if it turns over mid-way, the next attempt starts at a fresh window's beginning.
      for (let attempt = 0; attempt < 2; attempt++) {
        const user = await newUser();
        await db().entities.membership.create({ workspace_id: alpha, user_id: user.id, role: "member" }).go();
        const window = Math.floor(Date.now() / 60_000);
        const statuses: number[] = [];
        for (let i = 0; i < 60; i++) {
          const [method, path, req] = REQUESTS[i % 2 === 0 ? 1 : 4]!;
          statuses.push((await call(method, path, { token: user.token, ...req(alpha) })).status);
        }
        const limited = await call("GET", "/api/admin/quality/entropy", { token: user.token, query: { workspace_id: alpha } });
        if (Math.floor(Date.now() / 60_000) !== window) continue;
        expect(statuses.every((s) => s === 200), statuses.join(",")).toBe(true);
        expectEnvelope(limited, 429, "RATE_LIMITED");
        expect(Number(headersOf(limited)["retry-after"])).toBeGreaterThanOrEqual(1);
        return;
      }
      throw new Error("the rate-limit window turned over twice during one test");
    });
  });
});
