/**
 * Exactly-once execution of every gated tool, and how an execution's failures end (DESIGN.md 6.2; spec 01 Pending
 * action status: approved → executed | failed). Rows are made as the agent loop makes them (`createPending` with the
 * registry's tools), approved over HTTP, and executed by calling the executor directly (no stream reader runs in
 * this file), so each step is the test's to take:
 * - per tool: the tool's writes, the action id on every item written, and the flip to executed go in ONE request;
 * - a run that lost its lease before its commit writes nothing (generate_recommendations: no recommendation of it is
 *   left behind), and the replay writes exactly its own set;
 * - the workspace's synthesis lock: held by a run of the same action it is taken over; held by another run it defers
 *   the row (approved again, with a retry time) — three run_synthesis approved in one batch all execute, in turn;
 * - a transient failure is retried with backoff and then succeeds; a decided one fails at once;
 * - MAX_ATTEMPTS counts interrupted executions only, MAX_RETRIES bounds the retries.
 */
import { randomUUID } from "node:crypto";
import { afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import type { GenerateRecommendationsInput, GenerateRecommendationsResult, RecommendationEngine } from "../../core/recommendation/engine";

// The recommendation engine can be replaced for one test (a model whose second answer differs from its first).
const engine = vi.hoisted(() => ({ generate: null as null | ((input: GenerateRecommendationsInput) => Promise<GenerateRecommendationsResult>), calls: 0 }));
vi.mock("../../core/recommendation/engine", async (importOriginal) => {
  const real = await importOriginal<typeof import("../../core/recommendation/engine")>();
  return {
    ...real,
    recommendationEngine: (m: Parameters<typeof real.recommendationEngine>[0]): RecommendationEngine => {
      const replace = engine.generate;
      if (!replace) return real.recommendationEngine(m);
      return { kind: "local", generate: async (input) => ({ result: await replace(input), usage: null }) };
    },
  };
});

import { db } from "../../core/db/service";
import { dynamoClient } from "../../core/db/client";
import { idFor } from "../../core/db/agent-write";
import { gatedTool } from "../../core/agent/tools";
import { createPending, type PendingActionItem } from "../../core/pending-action";
import { executeAction, MAX_ATTEMPTS, MAX_RETRIES, RETRY_BASE_MS } from "../../core/pending-action/executor";
import { handler as sweeperHandler } from "../../functions/events/pending-action-sweeper";
import { call, newUser, newWorkspace } from "../support/api";
import { topUp } from "../support/billing";
import { realFile, uploadResearch, waitFor } from "../support/multipart";
import { TOOL_CASES, toolCase, type CaseEnv } from "../support/gated-tool-cases";

let owner: { id: string; token: string };
let workspaceId: string;
let env: CaseEnv;
/** Three completed sources of the workspace (one interview each). */
let sources: string[];

const SOURCE_FILES = [
  "va-mobile-app/interview-notes/2023-07-retention-study-participant-10.md",
  "va-mobile-app/interview-notes/2023-07-retention-study-participant-11.md",
  "jupyter/surveys/2015-notebook-ux-survey-README.md",
];

const rowOf = async (id: string) => (await db().entities.pendingAction.get({ workspace_id: workspaceId, id }).go({ consistent: true })).data!;

/** A pending action of `tool` made as the agent loop makes it, approved over HTTP. */
async function approved(tool: string, input: Record<string, unknown>, missionId: string = randomUUID()): Promise<string> {
  const ctx = { userId: owner.id, workspaceId, missionId, sessionId: null, attachmentIds: [] };
  const { id } = await createPending(ctx, gatedTool(tool)!, input);
  const res = await call("POST", `/api/pending-actions/${id}/approve`, { token: owner.token, body: {} });
  expect(res.status, res.text).toBe(200);
  return id;
}

/** Let time pass for a deferred row: its retry time (and its place in the sweeper's index) is now. */
async function makeDue(id: string): Promise<void> {
  const past = new Date(Date.now() - 1_000).toISOString();
  await db().entities.pendingAction.patch({ workspace_id: workspaceId, id }).set({ status: "approved", sweep: "due", retry_at: past, due_at: past }).go();
}

/** Hold the workspace's synthesis lock as `owner` (a running synthesis) for 5 minutes. @returns its release. */
async function holdSynthesisLock(lockOwner: string): Promise<() => Promise<unknown>> {
  const key = { scope: `ws#${workspaceId}`, name: "synthesis" };
  await db().entities.guard.put({ ...key, owner: lockOwner, ttl: Math.floor(Date.now() / 1000) + 300 }).go();
  return () => db().entities.guard.delete(key).go();
}

/** Every DynamoDB request the process sends while recording, with its input (as our code hands it to the SDK). */
function recordRequests() {
  const seen: { command: string; json: string; input: any }[] = [];
  const stack = dynamoClient().middlewareStack;
  const name = `record-${randomUUID()}`;
  stack.add((next, context) => async (args) => {
    seen.push({ command: String(context.commandName), json: JSON.stringify(args.input), input: args.input });
    return next(args);
  }, { step: "initialize", name });
  return { seen, stop: () => stack.remove(name) };
}
const isWrite = (command: string) => /^(Put|Update|Delete|BatchWrite|TransactWrite)/.test(command);

/** Make the `n`-th (1-based) transaction whose request names `marker` fail as a throttled table would. */
function throttleTransaction(marker: string, n = 1) {
  const stack = dynamoClient().middlewareStack;
  const name = `throttle-${randomUUID()}`;
  let seen = 0;
  stack.add((next, context) => async (args) => {
    if (String(context.commandName).startsWith("TransactWrite") && JSON.stringify(args.input).includes(marker) && ++seen === n) {
      throw Object.assign(new Error("Throughput exceeds the current capacity of your table"), { name: "ProvisionedThroughputExceededException", $metadata: {} });
    }
    return next(args);
  }, { step: "initialize", name });
  return () => stack.remove(name);
}

async function completedSource(path: string): Promise<string> {
  const file = await realFile(path);
  const res = await uploadResearch(owner.token, workspaceId, file, "text/markdown");
  expect(res.status, res.text).toBe(201);
  const id = res.body.id as string;
  await waitFor(async () => {
    const got = await call("GET", `/api/research/sources/${id}`, { token: owner.token });
    if (got.body.processing_status === "failed") throw new Error(`source ${id} failed: ${got.body.processing_error}`);
    return got.body.processing_status === "completed";
  }, 90_000);
  return id;
}

beforeAll(async () => {
  const made = await newWorkspace("Exactly once");
  owner = made.owner;
  workspaceId = made.workspace.id;
  // Every AI run here is charged: enough credits that none is refused.
  await topUp(owner.id, 500);
  sources = await Promise.all(SOURCE_FILES.map(completedSource));
  env = {
    api: async (method, path, body) => {
      const res = await call(method, path, { token: owner.token, body });
      return { status: res.status, body: res.body };
    },
    workspaceId,
    sourceId: sources[0],
  };
}, 180_000);

afterEach(() => {
  engine.generate = null;
});

describe("each gated tool writes exactly once: its writes, the action id on each item and the flip in one request", () => {
  it.each(TOOL_CASES.map((c) => [c.tool, c] as const))("%s", async (_tool, c) => {
    const prepared = await c.setup(env);
    const id = await approved(c.tool, prepared.input);
    const requests = recordRequests();
    let outcome;
    try {
      outcome = await executeAction(workspaceId, id);
    } finally {
      requests.stop();
    }
    expect(outcome).toMatchObject({ outcome: "executed", status: "executed" });
    const row = await rowOf(id);
    expect(row).toMatchObject({ status: "executed", attempts: 1, retries: 0 });
    await c.verify(env, id, row, prepared);

    // The one transaction that finishes the row carries every item the tool wrote, each tagged with the action.
    const paKey = `pa#${id}`;
    const writes = requests.seen.filter((r) => isWrite(r.command));
    const commits = writes.filter((r) => r.command.startsWith("TransactWrite") && r.json.includes(paKey));
    expect(commits, "one transaction carries the flip").toHaveLength(1);
    const items = (commits[0]!.input.TransactItems as unknown[]).map((i) => JSON.stringify(i));
    const flip = items.filter((i) => i.includes(paKey));
    expect(flip).toHaveLength(1);
    expect(flip[0]).toContain('"executed"');
    // The workspace's usage counter (documents a month, counted in the create's transaction) is bookkeeping of the
    // plan limit, not an item the tool wrote: it carries no action id.
    const isCounter = (i: string) => /"sk":(?:\{"S":)?"usage"/.test(i);
    // A condition check writes nothing (a synthesis checks it still holds the workspace's lock).
    const isCheck = (i: string) => i.startsWith('{"ConditionCheck"');
    const written = items.filter((i) => !i.includes(paKey) && !isCounter(i) && !isCheck(i));
    expect(written.length, "the tool wrote at least one item").toBeGreaterThan(0);
    for (const item of written) {
      expect(item).toContain("pending_action_id");
      expect(item).toContain(id);
    }
    // No other request wrote those items (no tag patched on afterwards), nor flipped the row on its own.
    const skOf = (item: string) => /"sk":(?:\{"S":)?"([^"]+)"/.exec(item)![1]!;
    const others = writes.filter((r) => r !== commits[0]);
    for (const item of written) expect(others.filter((r) => r.json.includes(`"${skOf(item)}"`)).map((r) => r.command)).toEqual([]);
    expect(others.filter((r) => r.json.includes(paKey) && r.json.includes('"executed"'))).toEqual([]);
  }, 60_000);
});

describe("a run that lost the row before its commit writes nothing; the replay writes exactly its own set", () => {
  const drafts = (n: number, insightIds: string[], round: number) => ({
    recommendations: Array.from({ length: n }, (_, i) => ({
      title: `Round ${round} recommendation ${i + 1}`,
      description: "Make sign-in faster.",
      addresses_insight_ids: insightIds,
      effort_estimate: "small" as const,
      impact_score: 0.5,
    })),
    prioritization_summary: `Round ${round}: ${n} recommendations by impact.`,
  });

  it("generate_recommendations: the model answers 5, the lease is lost, the replay's model answers 3 → 3 stored, not 5", async () => {
    const { input } = await toolCase("generate_recommendations").setup(env);
    const id = await approved("generate_recommendations", input);
    engine.calls = 0;
    engine.generate = async () => {
      engine.calls++;
      if (engine.calls === 1) {
        // While the first run waits for its model, its lease expires and another executor takes the row over.
        await db().entities.pendingAction.patch({ workspace_id: workspaceId, id }).set({ lease_owner: "successor", lease_expires_at: Date.now() + 60_000 }).go();
        return drafts(5, input.insight_ids as string[], 1);
      }
      return drafts(3, input.insight_ids as string[], 2);
    };
    const tagged = async () =>
      (await db().entities.recommendation.query.byWorkspace({ workspace_id: workspaceId }).go({ pages: "all", consistent: true })).data.filter((r) => r.pending_action_id === id);

    expect(await executeAction(workspaceId, id)).toMatchObject({ outcome: "skipped", reason: "lease lost" });
    expect(await tagged(), "the run that lost the row stored none of its 5").toHaveLength(0);

    // The successor died too: its lease expires, and the next executor runs the action again.
    await db().entities.pendingAction.patch({ workspace_id: workspaceId, id }).set({ lease_expires_at: Date.now() - 1_000 }).go();
    expect(await executeAction(workspaceId, id)).toMatchObject({ outcome: "executed" });
    expect(engine.calls).toBe(2);
    const row = await rowOf(id);
    expect(row.result).toMatchObject({ count: 3, prioritization_summary: "Round 2: 3 recommendations by impact." });
    await toolCase("generate_recommendations").verify(env, id, row, { input });
    const stored = await tagged();
    expect(stored.map((r) => r.title).sort()).toEqual(["Round 2 recommendation 1", "Round 2 recommendation 2", "Round 2 recommendation 3"]);
  });

  it("generate_recommendations run twice outside the executor: the second answers the first's set without a model call", async () => {
    const { input } = await toolCase("generate_recommendations").setup(env);
    const actionId = randomUUID();
    engine.calls = 0;
    engine.generate = async () => {
      engine.calls++;
      return drafts(engine.calls === 1 ? 5 : 3, input.insight_ids as string[], engine.calls);
    };
    const tool = gatedTool("generate_recommendations")!;
    const first = await tool.execute({ userId: owner.id, workspaceId, actionId }, input);
    const again = await tool.execute({ userId: owner.id, workspaceId, actionId }, input);
    expect(engine.calls).toBe(1);
    expect(first).toMatchObject({ count: 5 });
    expect(again.recommendation_ids).toEqual(first.recommendation_ids);
  });
});

describe("the synthesis lock", () => {
  it("held by an interrupted run of the same action is taken over: the replay executes at once", async () => {
    const id = await approved("run_synthesis", { source_ids: [sources[1]] });
    // A run of this action that died holding the lock (it would expire only in 5 minutes).
    await holdSynthesisLock(`pending-action#${id}#${randomUUID()}`);
    expect(await executeAction(workspaceId, id)).toMatchObject({ outcome: "executed" });
    const row = await rowOf(id);
    expect(row.retries).toBe(0);
    await toolCase("run_synthesis").verify({ ...env, sourceId: sources[1] }, id, row, { input: {} });
  });

  it("held by another action defers the row (approved, retry time, not failed); once free it executes", async () => {
    const id = await approved("run_synthesis", { source_ids: [sources[2]] });
    const release = await holdSynthesisLock(`pending-action#${randomUUID()}#${randomUUID()}`);
    const before = Date.now();
    const first = await executeAction(workspaceId, id);
    expect(first).toMatchObject({ outcome: "deferred", status: "approved", reason: expect.stringMatching(/synthesis is already running/) });
    let row = await rowOf(id);
    expect(row).toMatchObject({ status: "approved", attempts: 1, retries: 1, last_error: first.reason });
    expect(row.error).toBeUndefined();
    expect(Date.parse(row.retry_at!)).toBeGreaterThanOrEqual(before + RETRY_BASE_MS / 2);
    expect(row.due_at).toBe(row.retry_at);
    const shown = await call("GET", `/api/pending-actions/${id}`, { token: owner.token });
    expect(shown.body).toMatchObject({ status: "approved", error: null, result: null });
    // Not before its retry time, whoever asks.
    expect(await executeAction(workspaceId, id)).toMatchObject({ outcome: "skipped", reason: expect.stringMatching(/^retry due at/) });

    await release();
    await makeDue(id);
    expect(await executeAction(workspaceId, id)).toMatchObject({ outcome: "executed" });
    row = await rowOf(id);
    expect(row).toMatchObject({ status: "executed", attempts: 2, retries: 1 });
    expect(row.retry_at).toBeUndefined();
    await toolCase("run_synthesis").verify({ ...env, sourceId: sources[2] }, id, row, { input: {} });
  });

  it("three run_synthesis of one workspace approved in one batch all execute, one after another", async () => {
    const missionId = randomUUID();
    const ctx = { userId: owner.id, workspaceId, missionId, sessionId: null, attachmentIds: [] };
    const ids: string[] = [];
    for (const source of sources) ids.push((await createPending(ctx, gatedTool("run_synthesis")!, { source_ids: [source] })).id);
    // Approved by a member of their own, whose synthesis rate limit (10 a minute, every attempt counts) is all theirs.
    const approver = await newUser();
    const added = await call("POST", `/api/workspaces/${workspaceId}/members`, { token: owner.token, body: { email: approver.email, role: "member" } });
    expect(added.status, added.text).toBe(201);
    const res = await call("POST", `/api/pending-actions/batch/${missionId}:run_synthesis/approve`, {
      token: approver.token,
      body: { items: ids.map((pendingActionId) => ({ pendingActionId })) },
    });
    expect(res.body).toMatchObject({ approved: 3, rejected: 0, skipped: 0 });

    // A synthesis requested over HTTP holds the lock while the three are first tried: all three wait.
    const release = await holdSynthesisLock(randomUUID());
    const firstRound = await Promise.all(ids.map((id) => executeAction(workspaceId, id)));
    expect(firstRound.map((o) => o.outcome)).toEqual(["deferred", "deferred", "deferred"]);
    await release();

    // Then, as the sweeper does whenever they are due, the waiting ones are tried together, round after round.
    for (let round = 0; round < 6; round++) {
      const waiting = [];
      for (const id of ids) if ((await rowOf(id)).status === "approved") waiting.push(id);
      if (waiting.length === 0) break;
      for (const id of waiting) await makeDue(id);
      const outcomes = await Promise.all(waiting.map((id) => executeAction(workspaceId, id)));
      for (const o of outcomes) {
        expect(o.outcome).not.toBe("failed");
        if (o.outcome === "deferred") expect(o.reason).toMatch(/synthesis is already running/);
      }
    }
    const rows = await Promise.all(ids.map(rowOf));
    expect(rows.map((r) => r.status)).toEqual(["executed", "executed", "executed"]);
    for (const [i, row] of rows.entries()) {
      expect(row.retries).toBeGreaterThanOrEqual(1);
      await toolCase("run_synthesis").verify({ ...env, sourceId: sources[i] }, row.id, row, { input: {} });
    }
    // One after another: the three synthesis runs (their agent runs, ids derived from the actions) never overlap.
    const runIds = new Set(ids.map((id) => idFor(id, "agent-run")));
    const { data: runs } = await db().entities.agentRun.query.byWorkspace({ workspace_id: workspaceId }).go({ pages: "all", consistent: true });
    const spans = runs
      .filter((r) => runIds.has(r.id) && r.status === "success")
      .map((r) => ({ end: Date.parse(r.executed_at), start: Date.parse(r.executed_at) - r.latency_ms }))
      .sort((a, b) => a.start - b.start);
    expect(spans).toHaveLength(3);
    for (let i = 1; i < spans.length; i++) expect(spans[i]!.start).toBeGreaterThanOrEqual(spans[i - 1]!.end);
  }, 120_000);
});

describe("failures: transient ones are retried with backoff, decided ones fail at once", () => {
  it("a throttled write defers the row; retried when due, it executes once", async () => {
    const { input } = await toolCase("create_insight").setup(env);
    const id = await approved("create_insight", input);
    const stop = throttleTransaction(`pa#${id}`);
    let first;
    try {
      first = await executeAction(workspaceId, id);
    } finally {
      stop();
    }
    expect(first).toMatchObject({ outcome: "deferred", reason: expect.stringMatching(/^ProvisionedThroughputExceededException/) });
    expect(await rowOf(id)).toMatchObject({ status: "approved", attempts: 1, retries: 1 });
    expect((await db().entities.insight.get({ workspace_id: workspaceId, id: idFor(id, "insight") }).go({ consistent: true })).data).toBeNull();

    await makeDue(id);
    expect(await executeAction(workspaceId, id)).toMatchObject({ outcome: "executed" });
    const row = await rowOf(id);
    expect(row).toMatchObject({ status: "executed", attempts: 2, retries: 1 });
    await toolCase("create_insight").verify(env, id, row, { input });
  });

  it("run_synthesis whose commit is throttled after its engine ran: deferred without a settle or a record; the retry's one settle and record are the run's", async () => {
    const id = await approved("run_synthesis", { source_ids: [sources[0]] });
    const runId = idFor(id, "agent-run");
    const ledger = async () => (await db().entities.creditLedger.query.byUser({ user_id: owner.id }).go({ consistent: true, pages: "all" })).data.filter((l) => l.run_id === runId);
    const records = async () => (await db().entities.agentRun.query.byWorkspace({ workspace_id: workspaceId }).go({ pages: "all", consistent: true })).data.filter((r) => r.id === runId);
    const stop = throttleTransaction(`pa#${id}`);
    try {
      expect(await executeAction(workspaceId, id)).toMatchObject({ outcome: "deferred", reason: expect.stringMatching(/^ProvisionedThroughputExceededException/) });
    } finally {
      stop();
    }
    // The run settles after its commit: the failed commit left the run's hold for the retry, unsettled and unrecorded.
    expect((await ledger()).map((e) => e.kind)).toEqual(["reserve"]);
    expect(await records()).toEqual([]);

    await makeDue(id);
    expect(await executeAction(workspaceId, id)).toMatchObject({ outcome: "executed" });
    // One settle (the local engine's success minimum, 0.5) and one record of the run, a success.
    const entries = await ledger();
    expect(entries.map((e) => e.kind).sort()).toEqual(["reserve", "settle"]);
    expect(entries.find((e) => e.kind === "settle")).toMatchObject({ credits: 0.5, charged: 0.5 });
    expect((await records()).map((r) => ({ status: r.status, credits_charged: r.credits_charged }))).toEqual([{ status: "success", credits_charged: 0.5 }]);
    await toolCase("run_synthesis").verify(env, id, await rowOf(id), { input: {} });
  }, 60_000);

  it("an invalid transition fails at once: no retry, nothing written", async () => {
    const { input } = await toolCase("update_recommendation_status").setup(env);
    const id = await approved("update_recommendation_status", { ...input, status: "implemented" });
    const done = await executeAction(workspaceId, id);
    expect(done).toMatchObject({ outcome: "failed", status: "failed", reason: expect.stringMatching(/suggested/) });
    const row = await rowOf(id);
    expect(row).toMatchObject({ status: "failed", attempts: 1, retries: 0, error: done.reason });
    expect(row.retry_at).toBeUndefined();
    const { data: rec } = await db().entities.recommendation.get({ workspace_id: workspaceId, id: input.recommendation_id as string }).go({ consistent: true });
    expect(rec).toMatchObject({ status: "suggested" });
    expect(rec!.pending_action_id).toBeUndefined();
    expect(await executeAction(workspaceId, id)).toMatchObject({ outcome: "skipped", status: "failed" });
  });

  it("a target deleted after approval fails at once (not found)", async () => {
    const { input } = await toolCase("update_insight").setup(env);
    const id = await approved("update_insight", input);
    expect((await call("DELETE", `/api/insights/${input.insight_id}`, { token: owner.token })).status).toBe(204);
    expect(await executeAction(workspaceId, id)).toMatchObject({ outcome: "failed", reason: "Insight not found" });
    expect(await rowOf(id)).toMatchObject({ status: "failed", retries: 0, error: "Insight not found" });
  });

  it(`deferrals are not interruptions: a row deferred ${MAX_ATTEMPTS + 2} times still runs`, async () => {
    const { input } = await toolCase("create_insight").setup(env);
    const id = await approved("create_insight", input);
    const n = MAX_ATTEMPTS + 2;
    await db().entities.pendingAction.patch({ workspace_id: workspaceId, id }).set({ attempts: n, retries: n }).go();
    expect(await executeAction(workspaceId, id)).toMatchObject({ outcome: "executed" });
    await toolCase("create_insight").verify(env, id, await rowOf(id), { input });
  });

  it(`gives up after ${MAX_RETRIES} retries: failed with the last transient error`, async () => {
    const { input } = await toolCase("create_insight").setup(env);
    const id = await approved("create_insight", input);
    await db().entities.pendingAction.patch({ workspace_id: workspaceId, id }).set({ attempts: MAX_RETRIES, retries: MAX_RETRIES }).go();
    const stop = throttleTransaction(`pa#${id}`);
    let done;
    try {
      done = await executeAction(workspaceId, id);
    } finally {
      stop();
    }
    expect(done).toMatchObject({ outcome: "failed", reason: expect.stringMatching(new RegExp(`^gave up after ${MAX_RETRIES} retries: ProvisionedThroughputExceededException`)) });
    const row: PendingActionItem = await rowOf(id);
    expect(row).toMatchObject({ status: "failed" });
    expect(row.sweep).toBeUndefined();
    expect((await db().entities.insight.get({ workspace_id: workspaceId, id: idFor(id, "insight") }).go({ consistent: true })).data).toBeNull();
  });
});

describe("the sweeper Lambda and its time left", () => {
  it("claims no row once less than a row's budget is left (a killed run would count as an interruption); with time, it runs the row", async () => {
    const { input } = await toolCase("create_insight").setup(env);
    const id = await approved("create_insight", input);
    await makeDue(id);
    // 5 s left of the Lambda's time: far under any row's budget (sweepRowBudgetMs, at least 2 minutes).
    const short = await sweeperHandler(undefined, { getRemainingTimeInMillis: () => 5_000 });
    expect(await rowOf(id)).toMatchObject({ status: "approved", attempts: 0 });
    expect(short.left).toBeGreaterThanOrEqual(1);
    // With time left, and with no context (the embedded runtime's schedule calls it so, local/streams.ts: no
    // deadline). Rows of other tests may be due before this one, so the sweep is asked until it took the row.
    let calls = 0;
    await waitFor(async () => {
      await (calls++ % 2 ? sweeperHandler() : sweeperHandler(undefined, { getRemainingTimeInMillis: () => 10 * 60_000 }));
      return (await rowOf(id)).status === "executed" || null;
    }, 30_000, 100);
    await toolCase("create_insight").verify(env, id, await rowOf(id), { input });
  });
});
