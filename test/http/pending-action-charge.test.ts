/**
 * The charge of an approved pending action's run is durable with its work (DESIGN.md 6.2, 6.3). draft_document
 * commits its document together with the action's flip to executed INSIDE its charged run, and the ledger's settle
 * follows: a process that dies between the two must not leave work delivered and never charged. The flip records
 * what the run owes (`charge` on the row, the same `creditsFor` figure the settle charges) and the hold names the
 * action, so the credit sweeper settles such a stale hold for that amount instead of releasing it, and writes the
 * run's agent-run record and trial milestone as the run would have after its settle (one record, keyed at the time
 * the charge fixed, whichever of the sweeper and the run writes it first). A hold whose action may still be executed
 * is left open, so a later attempt of the same run (which reserves nothing of its own) still has it to be charged
 * against after a double crash.
 *
 * Actions are made as the agent loop makes them, approved over HTTP and executed by calling the executor, against
 * DynamoDB Local. The crash hook (core/crash-point.ts `before-settle`) is replaced here by one that stops the run for
 * good (a process that died: nothing after the point ever runs) or until the test lets it go (a slow settle racing
 * the sweeper). The document engine reports a model cost (0.17 USD: 2.5 credits, not what the run reserved), so a
 * settle for the held amount, a release, or a second charge all show; the recommendation engine
 * (generate_recommendations, which also commits inside its run) does likewise, and a test can hold a model call and
 * give it a use of its own (`calls`). Retried attempts are charged once for their whole use: a failed commit, an attempt that dies after its
 * model call (its use is kept on the row as the call ends), and a stale attempt that lost its lease without knowing it.
 */
import { randomUUID } from "node:crypto";
import { beforeAll, describe, expect, it, vi } from "vitest";

/** The test's crash hook: the point it is armed at, and what a run reaching it waits for (never: a crash). */
const hook = vi.hoisted(() => ({ at: null as string | null, gate: null as Promise<void> | null, reached: null as null | (() => void) }));
vi.mock("../../core/crash-point", async (importOriginal) => {
  const real = await importOriginal<typeof import("../../core/crash-point")>();
  return {
    ...real,
    crashPointReached: async (point: string) => {
      if (hook.at !== point) return real.crashPointReached(point as never);
      hook.at = null;
      hook.reached?.();
      await hook.gate;
    },
  };
});

/** A model's usage of one draft: 0.17 USD is 2.5 credits (rounded up to 0.5), above the local minimum of 0.5. */
const USAGE = { modelId: "test-model", tier: "mid" as const, inputTokens: 12_000, outputTokens: 3_000, costUsd: 0.17, latencyMs: 5, attempts: 1 };
/**
 * What the next model calls do, in order (either engine's): answer only once `answer` resolves (after telling
 * `called`), with their own use instead of USAGE. A call with nothing queued answers at once with USAGE.
 */
const calls = vi.hoisted(() => ({ next: [] as { usage?: { inputTokens: number; outputTokens: number; costUsd: number }; called?: () => void; answer?: Promise<void> }[] }));
const modelCall = async () => {
  const plan = calls.next.shift();
  plan?.called?.();
  await plan?.answer;
  return { ...USAGE, ...plan?.usage };
};
vi.mock("../../core/document/engine", async (importOriginal) => {
  const real = await importOriginal<typeof import("../../core/document/engine")>();
  // A model engine (it reserves a model run's envelope) whose draft is the local template's, with a cost.
  const engine = { ...real.localDocumentEngine, kind: "model" as const, draft: async (input: Parameters<typeof real.draftDocument>[0]) => ({ result: real.draftDocument(input), usage: await modelCall() }) };
  return { ...real, documentEngine: () => engine };
});
vi.mock("../../core/recommendation/engine", async (importOriginal) => {
  const real = await importOriginal<typeof import("../../core/recommendation/engine")>();
  // Likewise for generate_recommendations: the local engine's set, with a model's cost.
  const engine = { kind: "model" as const, generate: async (input: Parameters<typeof real.generateRecommendations>[0]) => ({ result: real.generateRecommendations(input), usage: await modelCall() }) };
  return { ...real, recommendationEngine: () => engine };
});

import { db } from "../../core/db/service";
import { dynamoClient } from "../../core/db/client";
import { idFor } from "../../core/db/agent-write";
import { gatedTool } from "../../core/agent/tools";
import { balanceOf } from "../../core/billing/ledger";
import { MAX_HOLD_WAIT_MS, sweepStaleHolds, STALE_HOLD_MS } from "../../core/billing/sweeper";
import { createPending } from "../../core/pending-action";
import { executeAction, MAX_ATTEMPTS, type ExecutionOutcome } from "../../core/pending-action/executor";
import { call, newWorkspace } from "../support/api";
import { setAccount, topUp } from "../support/billing";
import { toolCase, type CaseEnv } from "../support/gated-tool-cases";
import { documentCreateFailsOnce } from "../support/store-faults";

const ledgerOf = async (userId: string, runId: string) =>
  (await db().entities.creditLedger.query.byUser({ user_id: userId }).go({ consistent: true, pages: "all" })).data.filter((l) => l.run_id === runId);
const holdsOf = async (userId: string) => (await db().entities.creditHold.query.byUser({ user_id: userId }).go({ consistent: true, pages: "all" })).data;
const accountOf = async (userId: string) => (await db().entities.billingAccount.get({ user_id: userId }).go({ consistent: true })).data!;

/** The stale-hold sweep as the scheduled one runs it, past the hold's 20 minutes (only this account's holds). */
const sweepLater = (userId: string) => sweepStaleHolds({ now: new Date(Date.now() + STALE_HOLD_MS + 60_000), userId });

/**
 * One workspace and account per test: its ledger and balance are the test's alone. Power by default; a `trial`
 * account (as a new user's) earns the first_run milestone with its workspace's first successful run.
 */
async function account(plan: "power" | "trial" = "power") {
  const { owner, workspace } = await newWorkspace("Charged actions");
  if (plan === "power") await setAccount(owner.id, { plan: "power", status: "active" });
  await topUp(owner.id, 200);
  const env: CaseEnv = {
    api: async (method, path, body) => {
      const res = await call(method, path, { token: owner.token, body });
      return { status: res.status, body: res.body };
    },
    workspaceId: workspace.id,
  };
  return { owner, env };
}

/**
 * An approved draft_document action, made as the agent loop makes it; its run's id as the executor derives it.
 * `edit` changes the case's input before the action is made.
 */
const approvedDraft = (owner: { id: string; token: string }, env: CaseEnv, edit?: InputEdit) => approvedAction("draft_document", owner, env, edit);

/** A change to a tool case's input before its action is made. */
type InputEdit = (input: Record<string, unknown>) => Promise<Record<string, unknown>>;

/**
 * A draft_document input that names its insights itself (`insight_ids`, as a caller may): the insights its
 * recommendation addresses. Unlike ids the draft takes from the recommendation (skipped once deleted), ids the caller
 * names must all exist: one deleted meanwhile is a 422 at body.insight_ids.
 */
const namingItsInsights = (env: CaseEnv): InputEdit => async (input) => {
  const { data: rec } = await db().entities.recommendation.get({ workspace_id: env.workspaceId, id: input.recommendation_id as string }).go({ consistent: true });
  expect(rec!.addresses_insight_ids?.length).toBeGreaterThan(0);
  return { ...input, insight_ids: rec!.addresses_insight_ids };
};

/** An approved action of `tool` (its case's target and input, changed by `edit`), made as the agent loop makes it; its run's id. */
async function approvedAction(tool: string, owner: { id: string; token: string }, env: CaseEnv, edit?: InputEdit): Promise<{ id: string; runId: string; input: Record<string, unknown> }> {
  const setup = (await toolCase(tool).setup(env)).input;
  const input = edit ? await edit(setup) : setup;
  const ctx = { userId: owner.id, workspaceId: env.workspaceId, missionId: randomUUID(), sessionId: null, attachmentIds: [] };
  const { id } = await createPending(ctx, gatedTool(tool)!, input);
  const res = await call("POST", `/api/pending-actions/${id}/approve`, { token: owner.token, body: {} });
  expect(res.status, res.text).toBe(200);
  return { id, runId: idFor(id, "agent-run"), input };
}

/**
 * Hold back the first write of `runId`'s agent-run record until the returned function is called (or for good).
 * `recordRun` starts that write beside its settle, so a run stopped at `before-settle` by the test's hook would
 * still write it, where a process that died there (SIGKILL) never sends it.
 */
function holdRunRecord(runId: string): () => void {
  const stack = dynamoClient().middlewareStack;
  const name = `hold-record-${randomUUID()}`;
  let open!: () => void;
  const gate = new Promise<void>((resolve) => (open = resolve));
  let held = false;
  stack.add((next, context) => async (args) => {
    const input = JSON.stringify(args.input);
    if (held || !String(context.commandName).startsWith("Put") || !input.includes("agentrun#") || !input.includes(runId)) return next(args);
    held = true;
    await gate;
    return next(args);
  }, { step: "initialize", name });
  return () => {
    open();
    stack.remove(name);
  };
}

/**
 * Execute `id`, stopping at `point` (default `before-settle`): the returned promise is the execution, `reached`
 * resolves when it stands at the point. With `resume` the test lets it go on later; without, it never does (the
 * process died there). Stopped at `before-settle`, the run's record (written beside the settle) waits with it.
 */
function executeStoppingBeforeSettle(workspaceId: string, id: string, point: "before-settle" | "before-commit" = "before-settle") {
  let open!: () => void;
  let reachedIt!: () => void;
  hook.gate = new Promise<void>((resolve) => (open = resolve));
  const reached = new Promise<void>((resolve) => (reachedIt = resolve));
  hook.reached = reachedIt;
  hook.at = point;
  const releaseRecord = point === "before-settle" ? holdRunRecord(idFor(id, "agent-run")) : () => undefined;
  const execution: Promise<ExecutionOutcome> = executeAction(workspaceId, id);
  execution.catch(() => undefined);
  return {
    execution,
    reached,
    resume: () => {
      releaseRecord();
      open();
    },
  };
}

/** The sweep 20 minutes on settles exactly one stale hold, for `credits`, without errors. */
async function sweepSettlesOnce(userId: string, credits: number) {
  const swept = await sweepLater(userId);
  expect(swept.errors).toEqual([]);
  expect(swept).toMatchObject({ stale: 1, released: 0, settled: 1, credits_charged: credits });
}

/**
 * The sweep settles the run's one stale hold as a failed run of a single model call (0.17 USD, 15,000 tokens): 2.5
 * credits, one reserve and one settle, no hold left.
 */
async function expectSweptAsOneFailedCall(userId: string, runId: string) {
  await sweepSettlesOnce(userId, 2.5);
  expect(await chargeOf(userId, runId)).toMatchObject({ kinds: ["reserve", "settle"], settle: { credits: 2.5, tokens: 15_000, cost_usd: 0.17 } });
  expect(await holdsOf(userId)).toEqual([]);
}

/** Charged exactly as the uncrashed reference draft: one reserve and one settle of its figures, no hold left, the same account change. */
async function expectChargedAsReference(userId: string, runId: string, before: Awaited<ReturnType<typeof figures>>) {
  expect(await chargeOf(userId, runId)).toEqual(reference.charge);
  expect(await holdsOf(userId)).toEqual([]);
  expect(diff(before, await figures(userId))).toEqual(reference.change);
}

/** What the ledger and the account say about one run's charge. */
async function chargeOf(userId: string, runId: string) {
  const entries = await ledgerOf(userId, runId);
  const settles = entries.filter((l) => l.kind === "settle");
  return {
    kinds: entries.map((l) => l.kind).sort(),
    settle: settles[0] && { credits: settles[0].credits, held: settles[0].held, charged: settles[0].charged, shortfall: settles[0].shortfall, delta: settles[0].delta, tokens: settles[0].tokens, cost_usd: settles[0].cost_usd },
  };
}

/** The agent-run records of one run (what `GET /api/admin/agent-runs` lists), with the fields a charge determines. */
async function recordsOf(workspaceId: string, runId: string) {
  const { data } = await db().entities.agentRun.query.byWorkspace({ workspace_id: workspaceId }).go({ consistent: true, pages: "all" });
  return data
    .filter((r) => r.id === runId)
    .map((r) => ({ id: r.id, user_id: r.user_id, agent_type: r.agent_type, tool_name: r.tool_name, engine: r.engine, model_id: r.model_id, status: r.status, tokens_used: r.tokens_used, cost_usd: r.cost_usd, credits_charged: r.credits_charged }));
}
/** What the uncrashed run's record says (the local template's draft priced as the mocked model's use). */
const recordOf = (owner: { id: string }, runId: string) => ({
  id: runId, user_id: owner.id, agent_type: "drafting", tool_name: "draft_document", engine: "model", model_id: "test-model", status: "success", tokens_used: 15_000, cost_usd: 0.17, credits_charged: 2.5,
});
/** The workspace's trial milestone grants in the payer's ledger (spec 02 Trial milestones), as `name: credits`. */
async function milestonesOf(userId: string, workspaceId: string) {
  const { data } = await db().entities.creditLedger.query.byUser({ user_id: userId }).go({ consistent: true, pages: "all" });
  return data.filter((l) => l.kind === "grant" && l.source.startsWith("milestone#") && l.source.endsWith(`#${workspaceId}`)).map((l) => `${l.source.split("#")[1]}: ${l.credits}`).sort();
}
/** The runs `GET /api/admin/agent-runs` lists for the workspace, by id. */
async function listedRuns(owner: { token: string }, workspaceId: string, runId: string) {
  const res = await call("GET", "/api/admin/agent-runs", { token: owner.token, query: { workspace_id: workspaceId } });
  expect(res.status, res.text).toBe(200);
  return (res.body.runs as { id: string; status: string; tokens_used: number; cost_usd: number }[]).filter((r) => r.id === runId).map((r) => ({ status: r.status, tokens_used: r.tokens_used, cost_usd: r.cost_usd }));
}

/** The account's figures a settle changes, to compare before and after. */
async function figures(userId: string) {
  const [balance, acct] = await Promise.all([balanceOf(userId), accountOf(userId)]);
  return { total_used: balance.total_used, reserved: balance.reserved, charged: acct.charged, shortfall: acct.shortfall, tokens_used: acct.tokens_used, cost_usd: acct.cost_usd };
}
const diff = (a: Awaited<ReturnType<typeof figures>>, b: Awaited<ReturnType<typeof figures>>) =>
  Object.fromEntries(Object.keys(a).map((k) => [k, Math.round(((b as any)[k] - (a as any)[k]) * 1e6) / 1e6]));

/** The uncrashed path's charge of one draft action, as the reference every other case is compared with. */
let reference: { charge: Awaited<ReturnType<typeof chargeOf>>; change: ReturnType<typeof diff> };

beforeAll(async () => {
  const { owner, env } = await account();
  const { id, runId } = await approvedDraft(owner, env);
  const before = await figures(owner.id);
  expect(await executeAction(env.workspaceId, id)).toMatchObject({ outcome: "executed" });
  reference = { charge: await chargeOf(owner.id, runId), change: diff(before, await figures(owner.id)) };
  // The reference charges the model cost, not the reservation nor the 0.5 minimum.
  expect(reference.charge).toMatchObject({ kinds: ["reserve", "settle"], settle: { credits: 2.5, charged: 2.5, shortfall: 0, tokens: 15_000, cost_usd: 0.17 } });
  expect(reference.charge.settle!.held).not.toBe(2.5);
  expect(reference.change).toMatchObject({ total_used: 2.5, reserved: 0, charged: 2.5 });
}, 120_000);

describe("a pending action whose run reserves credits is charged exactly once, whatever dies when", () => {
  it("dies between the flip to executed and the settle: the sweeper settles the stale hold for what the run cost", async () => {
    const { owner, env } = await account();
    const { id, runId } = await approvedDraft(owner, env);
    const before = await figures(owner.id);

    const run = executeStoppingBeforeSettle(env.workspaceId, id);
    await run.reached;
    // The work is delivered: the row is executed with its document, and the reservation is still open.
    const row = (await db().entities.pendingAction.get({ workspace_id: env.workspaceId, id }).go({ consistent: true })).data!;
    expect(row.status).toBe("executed");
    expect((await holdsOf(owner.id)).map((h) => h.run_id)).toEqual([runId]);

    // Not yet stale: nothing happens to it.
    expect(await sweepStaleHolds({ userId: owner.id })).toMatchObject({ stale: 0 });
    const swept = await sweepLater(owner.id);
    expect(swept.errors).toEqual([]);

    // Charged exactly what the uncrashed run was: one settle entry of the same figures, no release, no hold.
    await expectChargedAsReference(owner.id, runId, before);
    expect(swept).toMatchObject({ stale: 1, released: 0, settled: 1, credits_charged: 2.5 });
    // A second sweep finds nothing to do.
    expect(await sweepLater(owner.id)).toMatchObject({ stale: 0 });
    expect(await chargeOf(owner.id, runId)).toEqual(reference.charge);
  }, 60_000);

  it("the normal path: the flip records what the run owes, the settle right after charges it once, a later sweep nothing", async () => {
    const { owner, env } = await account();
    const { id, runId } = await approvedDraft(owner, env);
    const before = await figures(owner.id);

    expect(await executeAction(env.workspaceId, id)).toMatchObject({ outcome: "executed" });
    const row = (await db().entities.pendingAction.get({ workspace_id: env.workspaceId, id }).go({ consistent: true })).data!;
    // What the run owes was written by the flip itself, the very figure the settle then charged.
    expect(row.charge).toEqual({
      user_id: owner.id, run_id: runId, credits: 2.5, tokens: 15_000, cost_usd: 0.17,
      // What the run's record needs, should the sweeper have to write it; the run's own record is keyed at that time.
      run: { executed_at: expect.any(String), requested_by: owner.id, agent_type: "drafting", tool_name: "draft_document", engine: "model", model_id: "test-model", latency_ms: expect.any(Number) },
    });
    const { data: records } = await db().entities.agentRun.query.byWorkspace({ workspace_id: env.workspaceId }).go({ consistent: true, pages: "all" });
    expect(records.filter((r) => r.id === runId).map((r) => r.executed_at)).toEqual([row.charge!.run!.executed_at]);
    expect(await chargeOf(owner.id, runId)).toEqual(reference.charge);
    expect(await holdsOf(owner.id)).toEqual([]);

    expect(await sweepLater(owner.id)).toMatchObject({ stale: 0, released: 0, settled: 0 });
    expect(await chargeOf(owner.id, runId)).toEqual(reference.charge);
    expect(diff(before, await figures(owner.id))).toEqual(reference.change);
  }, 60_000);

  it("the sweeper settles while the run's own settle is on its way: the late settle finds it done, charged once", async () => {
    const { owner, env } = await account();
    const { id, runId } = await approvedDraft(owner, env);
    const before = await figures(owner.id);

    const run = executeStoppingBeforeSettle(env.workspaceId, id);
    await run.reached;
    const swept = await sweepLater(owner.id);
    run.resume();
    expect(await run.execution).toMatchObject({ outcome: "executed" });
    expect(swept.errors).toEqual([]);

    await expectChargedAsReference(owner.id, runId, before);
    expect(swept).toMatchObject({ stale: 1, released: 0, settled: 1 });
    // The run's record carries what was charged.
    const { data: runs } = await db().entities.agentRun.query.byWorkspace({ workspace_id: env.workspaceId }).go({ consistent: true, pages: "all" });
    expect(runs.filter((r) => r.id === runId).map((r) => r.credits_charged)).toEqual([2.5]);
  }, 60_000);

  it("the sweeper's transaction and the run's own settle in flight together, the sweeper's landing first: charged once", async () => {
    const { owner, env } = await account();
    const { id, runId } = await approvedDraft(owner, env);
    const before = await figures(owner.id);

    const run = executeStoppingBeforeSettle(env.workspaceId, id);
    await run.reached;
    // When the sweeper sends its transaction for the hold, the run's settle is let go; the run plans and sends its own
    // (the fast path: no reads, planned from its reservation) before the sweeper's reaches the table, and the
    // sweeper's commits first. Both were planned from a hold that was still open.
    const stack = dynamoClient().middlewareStack;
    const name = `race-${randomUUID()}`;
    let runSent!: () => void;
    let sweeperCommitted!: () => void;
    const runSending = new Promise<void>((resolve) => (runSent = resolve));
    const sweeperCommit = new Promise<void>((resolve) => (sweeperCommitted = resolve));
    let seen = 0;
    stack.add((next, context) => async (args) => {
      if (!String(context.commandName).startsWith("TransactWrite") || !JSON.stringify(args.input).includes(`run#${runId}#`)) return next(args);
      const n = ++seen;
      if (n === 1) {
        run.resume();
        await Promise.race([runSending, new Promise((resolve) => setTimeout(resolve, 5_000))]);
        try {
          return await next(args);
        } finally {
          sweeperCommitted();
        }
      }
      if (n === 2) {
        runSent();
        await sweeperCommit;
      }
      return next(args);
    }, { step: "initialize", name });
    try {
      const [swept, outcome] = await Promise.all([sweepLater(owner.id), run.execution]);
      expect(swept.errors).toEqual([]);
      expect(outcome).toMatchObject({ outcome: "executed" });
      expect(seen).toBeGreaterThanOrEqual(2);
    } finally {
      stack.remove(name);
    }
    // The sweeper's settle stands; the run's found it done. Never a release, never a second charge.
    await expectChargedAsReference(owner.id, runId, before);
    // One record of the run, whichever of the two wrote it.
    expect(await recordsOf(env.workspaceId, runId)).toEqual([recordOf(owner, runId)]);
  }, 60_000);
});

describe("the sweeper's settle of a delivered run also records the run and grants its milestone, as the run would have", () => {
  it("dies at before-settle on a trial account: the sweep writes the run's record and grants first_run, once; the run's late settle adds nothing", async () => {
    const { owner, env } = await account("trial");
    const { id, runId } = await approvedDraft(owner, env);
    const before = await figures(owner.id);

    const run = executeStoppingBeforeSettle(env.workspaceId, id);
    await run.reached;
    // Died before its settle, and so before its record and its milestone.
    expect(await recordsOf(env.workspaceId, runId)).toEqual([]);
    expect(await milestonesOf(owner.id, env.workspaceId)).toEqual([]);

    await sweepSettlesOnce(owner.id, 2.5);
    // What the row's charge holds, as a success under the run's id; listed as the run would have been.
    expect(await recordsOf(env.workspaceId, runId)).toEqual([recordOf(owner, runId)]);
    expect(await listedRuns(owner, env.workspaceId, runId)).toEqual([{ status: "success", tokens_used: 15_000, cost_usd: 0.17 }]);
    expect(await milestonesOf(owner.id, env.workspaceId)).toEqual(["first_run: 5"]);
    expect(await chargeOf(owner.id, runId)).toEqual(reference.charge);

    // A second sweep finds nothing; the run's own late settle finds everything done.
    expect(await sweepLater(owner.id)).toMatchObject({ stale: 0, settled: 0 });
    run.resume();
    expect(await run.execution).toMatchObject({ outcome: "executed" });
    expect(await recordsOf(env.workspaceId, runId)).toEqual([recordOf(owner, runId)]);
    expect(await milestonesOf(owner.id, env.workspaceId)).toEqual(["first_run: 5"]);
    expect(await chargeOf(owner.id, runId)).toEqual(reference.charge);
    expect(await holdsOf(owner.id)).toEqual([]);
    // Charged the draft once (2.5), and the milestone's 5 credits were granted once (not spent: total_used is 2.5).
    expect(diff(before, await figures(owner.id))).toEqual(reference.change);
  }, 60_000);

  it("two sweeps at once over the same stale hold: one record, one milestone, one charge", async () => {
    const { owner, env } = await account("trial");
    const { id, runId } = await approvedDraft(owner, env);
    const run = executeStoppingBeforeSettle(env.workspaceId, id);
    await run.reached;

    const sweeps = await Promise.all([sweepLater(owner.id), sweepLater(owner.id)]);
    expect(sweeps.flatMap((s) => s.errors)).toEqual([]);
    expect(sweeps.reduce((n, s) => n + s.settled, 0)).toBe(1);
    expect(await recordsOf(env.workspaceId, runId)).toEqual([recordOf(owner, runId)]);
    expect(await milestonesOf(owner.id, env.workspaceId)).toEqual(["first_run: 5"]);
    expect(await chargeOf(owner.id, runId)).toEqual(reference.charge);
  }, 60_000);
});

describe("a delivered draft whose first attempt's hold went stale is charged after a double crash", () => {
  it("attempt 1 reserves, calls the model and dies before its commit; a sweep 20 minutes on; attempt 2 delivers and dies before its settle; the sweep charges both attempts' use once", async () => {
    const { owner, env } = await account();
    const { id, runId } = await approvedDraft(owner, env);
    const before = await figures(owner.id);
    const rowOf = async () => (await db().entities.pendingAction.get({ workspace_id: env.workspaceId, id }).go({ consistent: true })).data!;

    // Attempt 1 reserves, then stalls for good just before it would commit the document and the flip.
    const first = executeStoppingBeforeSettle(env.workspaceId, id, "before-commit");
    await first.reached;
    expect((await holdsOf(owner.id)).map((h) => h.run_id)).toEqual([runId]);
    expect((await rowOf()).status).toBe("executing");
    // Its model call's use was kept on the row as the call ended (draft_document waits for that write before its create).
    expect((await rowOf()).spent).toEqual({ tokens: 15_000, cost_usd: 0.17 });

    // Twenty minutes on the hold is stale, but its action may still be executed (executing): the sweep leaves it.
    const early = await sweepLater(owner.id);
    expect(early.errors).toEqual([]);
    expect(early).toMatchObject({ stale: 1, released: 0, settled: 0 });

    // Attempt 1's process is gone with its lease: another executor claims the row (as after the lease's expiry).
    await db().entities.pendingAction.patch({ workspace_id: env.workspaceId, id }).set({ lease_owner: `gone-${randomUUID()}`, lease_expires_at: Date.now() - 1_000 }).go();
    // Attempt 2, under the same derived run id: delivers the draft (the flip records the charge), dies before its settle.
    const second = executeStoppingBeforeSettle(env.workspaceId, id);
    await second.reached;
    const row = await rowOf();
    expect(row.status).toBe("executed");
    // Both attempts called the model: 0.34 USD is 4.5 credits, what the delivered run owes.
    expect(row.charge).toMatchObject({ user_id: owner.id, run_id: runId, credits: 4.5, tokens: 30_000, cost_usd: 0.34 });
    // Attempt 2 reserved nothing of its own: the ledger reserves once per run id, so attempt 1's reservation is the run's.
    expect((await chargeOf(owner.id, runId)).kinds).toEqual(["reserve"]);
    expect((await holdsOf(owner.id)).map((h) => h.run_id)).toEqual([runId]);

    await sweepSettlesOnce(owner.id, 4.5);
    // One reserve, one settle of both attempts' use, no release, no hold.
    const charged = await chargeOf(owner.id, runId);
    expect(charged).toMatchObject({ kinds: ["reserve", "settle"], settle: { credits: 4.5, charged: 4.5, shortfall: 0, tokens: 30_000, cost_usd: 0.34 } });
    expect(await holdsOf(owner.id)).toEqual([]);
    const change = { ...reference.change, total_used: 4.5, charged: 4.5, tokens_used: 30_000, cost_usd: 0.34 };
    expect(diff(before, await figures(owner.id))).toEqual(change);
    const record = { ...recordOf(owner, runId), tokens_used: 30_000, cost_usd: 0.34, credits_charged: 4.5 };
    expect(await recordsOf(env.workspaceId, runId)).toEqual([record]);

    // Attempt 2's own late settle changes nothing.
    second.resume();
    expect(await second.execution).toMatchObject({ outcome: "executed" });
    expect(await chargeOf(owner.id, runId)).toEqual(charged);
    expect(diff(before, await figures(owner.id))).toEqual(change);
    expect(await recordsOf(env.workspaceId, runId)).toEqual([record]);
  }, 60_000);
});

/**
 * Make the next strongly consistent read of an insight fail once with a 5xx-class store error: draft_document's
 * pre-reads (`reserveAlongside` reads the recommendation's insights beside the reservation), a transient failure.
 * @returns `failed()` and `remove()` (call it in a `finally`)
 */
function insightReadFailsOnce(workspaceId: string): { failed: () => boolean; remove: () => void } {
  const stack = dynamoClient().middlewareStack;
  const name = `insight-read-fails-${randomUUID()}`;
  let failed = false;
  stack.add((next, context) => async (args) => {
    const input = JSON.stringify(args.input);
    if (!failed && /^(Get|BatchGet)/.test(String(context.commandName)) && input.includes("insight#") && input.includes(workspaceId)) {
      failed = true;
      throw Object.assign(new Error("the store did not answer"), { name: "InternalServerError" });
    }
    return next(args);
  }, { step: "initialize", name });
  return { failed: () => failed, remove: () => stack.remove(name) };
}

/** Execute the action with `fault` armed: the attempt fails on it and is deferred (transient) for a retry. */
async function deferredBy(fault: { failed(): boolean; remove(): void }, workspaceId: string, id: string) {
  try {
    expect(await executeAction(workspaceId, id)).toMatchObject({ outcome: "deferred" });
    expect(fault.failed()).toBe(true);
  } finally {
    fault.remove();
  }
}

/** Make a deferred action due now (its backoff over), as the sweeper would find it later. */
const dueNow = (workspaceId: string, id: string) =>
  db().entities.pendingAction.patch({ workspace_id: workspaceId, id }).set({ retry_at: new Date(Date.now() - 1_000).toISOString() }).go();

describe("an action's run that the executor will retry keeps its hold, and the run is charged once for what it finally was", () => {
  it("a hold whose action stays approved longer than MAX_HOLD_WAIT_MS is released all the same, and a late delivery still pays", async () => {
    const { owner, env } = await account();
    const { id, runId } = await approvedDraft(owner, env);
    const before = await figures(owner.id);
    await deferredBy(insightReadFailsOnce(env.workspaceId), env.workspaceId, id);
    const heldAt = Date.now();
    // Within the wait the hold is kept for the retry; past it (an action that never ends), its credits come back.
    expect(await sweepStaleHolds({ now: new Date(heldAt + MAX_HOLD_WAIT_MS - 60_000), userId: owner.id })).toMatchObject({ stale: 1, waiting: 1, released: 0 });
    expect(await sweepStaleHolds({ now: new Date(heldAt + MAX_HOLD_WAIT_MS + 60_000), userId: owner.id })).toMatchObject({ stale: 1, waiting: 0, released: 1 });
    expect(await holdsOf(owner.id)).toEqual([]);
    expect((await chargeOf(owner.id, runId)).kinds).toEqual(["release", "reserve"]); // sorted
    // The retry that then delivers settles after the release: charged from the spendable balance, once.
    await dueNow(env.workspaceId, id);
    expect(await executeAction(env.workspaceId, id)).toMatchObject({ outcome: "executed" });
    expect((await chargeOf(owner.id, runId)).kinds).toEqual(["release", "reserve", "settle"]);
    expect(diff(before, await figures(owner.id))).toEqual(reference.change);
  }, 60_000);


  it("attempt 1's pre-reads fail transiently (deferred, hold kept); attempt 2 delivers and dies before its settle; the sweep charges it", async () => {
    const { owner, env } = await account();
    const { id, runId } = await approvedDraft(owner, env);
    const before = await figures(owner.id);

    await deferredBy(insightReadFailsOnce(env.workspaceId), env.workspaceId, id);
    // The hold is the run's only one (a retry reserves nothing new under the same run id): it stays open.
    expect((await chargeOf(owner.id, runId)).kinds).toEqual(["reserve"]);
    expect((await holdsOf(owner.id)).map((h) => h.run_id)).toEqual([runId]);
    // Stale, but the action is approved again (deferred): the sweep leaves it for the retry.
    expect(await sweepLater(owner.id)).toMatchObject({ stale: 1, released: 0, settled: 0, waiting: 1 });

    await dueNow(env.workspaceId, id);
    const second = executeStoppingBeforeSettle(env.workspaceId, id);
    await second.reached;
    await sweepSettlesOnce(owner.id, 2.5);
    // Charged as the uncrashed draft: no release, one settle of the same figures, one record.
    await expectChargedAsReference(owner.id, runId, before);
    expect(await recordsOf(env.workspaceId, runId)).toEqual([recordOf(owner, runId)]);
    second.resume();
    expect(await second.execution).toMatchObject({ outcome: "executed" });
    expect(await chargeOf(owner.id, runId)).toEqual(reference.charge);
  }, 60_000);

  it("attempt 1 fails after its model call (the document's store write); attempt 2 delivers: one settle, as a success, for both attempts' use", async () => {
    const { owner, env } = await account();
    const { id, runId } = await approvedDraft(owner, env);
    const before = await figures(owner.id);

    await deferredBy(documentCreateFailsOnce(), env.workspaceId, id);
    // Not settled as a failure: no settle entry, no record, the hold kept; the attempt's use is kept on the row.
    expect((await chargeOf(owner.id, runId)).kinds).toEqual(["reserve"]);
    expect(await recordsOf(env.workspaceId, runId)).toEqual([]);
    expect((await holdsOf(owner.id)).map((h) => h.run_id)).toEqual([runId]);
    const deferred = (await db().entities.pendingAction.get({ workspace_id: env.workspaceId, id }).go({ consistent: true })).data!;
    expect(deferred.spent).toEqual({ tokens: 15_000, cost_usd: 0.17 });

    await dueNow(env.workspaceId, id);
    expect(await executeAction(env.workspaceId, id)).toMatchObject({ outcome: "executed" });
    // Both attempts called the model: 0.34 USD is 4.5 credits, charged once as the delivered (successful) run.
    const charged = await chargeOf(owner.id, runId);
    expect(charged).toMatchObject({ kinds: ["reserve", "settle"], settle: { credits: 4.5, charged: 4.5, shortfall: 0, tokens: 30_000, cost_usd: 0.34 } });
    expect(await holdsOf(owner.id)).toEqual([]);
    expect(diff(before, await figures(owner.id))).toMatchObject({ total_used: 4.5, reserved: 0, charged: 4.5, tokens_used: 30_000, cost_usd: 0.34 });
    expect(await recordsOf(env.workspaceId, runId)).toEqual([{ ...recordOf(owner, runId), tokens_used: 30_000, cost_usd: 0.34, credits_charged: 4.5 }]);
    const row = (await db().entities.pendingAction.get({ workspace_id: env.workspaceId, id }).go({ consistent: true })).data!;
    expect(row.charge).toMatchObject({ run_id: runId, credits: 4.5, tokens: 30_000, cost_usd: 0.34 });
    // A later sweep finds nothing.
    expect(await sweepLater(owner.id)).toMatchObject({ stale: 0 });
    expect(await chargeOf(owner.id, runId)).toEqual(charged);
  }, 60_000);

  it("attempt 1 fails after its model call; attempt 2 fails for good in its pre-reads: the carried use is settled as a failure, not given back", async () => {
    const { owner, env } = await account();
    const { id, runId } = await approvedDraft(owner, env, namingItsInsights(env));
    await deferredBy(documentCreateFailsOnce(), env.workspaceId, id);
    // An insight the action names is deleted meanwhile: attempt 2's pre-reads fail with a decided error (422).
    const row = (await db().entities.pendingAction.get({ workspace_id: env.workspaceId, id }).go({ consistent: true })).data!;
    const named = (row.tool_input as { insight_ids?: string[] }).insight_ids ?? [];
    expect(named.length).toBeGreaterThan(0);
    for (const insightId of named) await db().entities.insight.delete({ workspace_id: env.workspaceId, id: insightId }).go();

    await dueNow(env.workspaceId, id);
    expect(await executeAction(env.workspaceId, id)).toMatchObject({ outcome: "failed" });
    // Attempt 1's model call (0.17 USD, 15,000 tokens) is charged once, as the failed run's: 2.5 credits.
    expect(await chargeOf(owner.id, runId)).toMatchObject({ kinds: ["reserve", "settle"], settle: { credits: 2.5, charged: 2.5, tokens: 15_000, cost_usd: 0.17 } });
    expect(await holdsOf(owner.id)).toEqual([]);
  }, 60_000);

  it("attempt 1 fails after its model call; the action then ends failed without another run: the sweep settles the carried use", async () => {
    const { owner, env } = await account();
    const { id, runId } = await approvedDraft(owner, env);
    await deferredBy(documentCreateFailsOnce(), env.workspaceId, id);
    // Ended failed before any attempt reserved again (as when its next attempts were interrupted until it gave up).
    await db().entities.pendingAction.patch({ workspace_id: env.workspaceId, id }).set({ status: "failed" }).go();
    await expectSweptAsOneFailedCall(owner.id, runId);
  }, 60_000);

  it("attempt 1 fails after its model call; attempt 2 delivers and dies before its settle: the sweep charges the whole run once", async () => {
    const { owner, env } = await account();
    const { id, runId } = await approvedDraft(owner, env);
    const before = await figures(owner.id);

    await deferredBy(documentCreateFailsOnce(), env.workspaceId, id);
    await dueNow(env.workspaceId, id);
    const second = executeStoppingBeforeSettle(env.workspaceId, id);
    await second.reached;
    const swept = await sweepLater(owner.id);
    expect(swept.errors).toEqual([]);
    expect(swept).toMatchObject({ stale: 1, released: 0, settled: 1, credits_charged: 4.5 });
    expect(await chargeOf(owner.id, runId)).toMatchObject({ kinds: ["reserve", "settle"], settle: { credits: 4.5, charged: 4.5, tokens: 30_000, cost_usd: 0.34 } });
    expect(await holdsOf(owner.id)).toEqual([]);
    expect(diff(before, await figures(owner.id))).toMatchObject({ total_used: 4.5, reserved: 0, charged: 4.5 });
    const record = { ...recordOf(owner, runId), tokens_used: 30_000, cost_usd: 0.34, credits_charged: 4.5 };
    expect(await recordsOf(env.workspaceId, runId)).toEqual([record]);
    // Attempt 2's own late settle and record add nothing.
    second.resume();
    expect(await second.execution).toMatchObject({ outcome: "executed" });
    expect((await chargeOf(owner.id, runId)).kinds).toEqual(["reserve", "settle"]);
    expect(diff(before, await figures(owner.id))).toMatchObject({ total_used: 4.5, charged: 4.5 });
    expect(await recordsOf(env.workspaceId, runId)).toEqual([record]);
  }, 60_000);
});

/** The action's row, read strongly consistent. */
const rowOf = async (workspaceId: string, id: string) => (await db().entities.pendingAction.get({ workspace_id: workspaceId, id }).go({ consistent: true })).data!;

/**
 * Make the next transaction that carries the action's flip (its row's key, `pa#<id>`) fail once with a 5xx-class
 * store error: the tool's commit, after its model call (transient: the executor defers the action).
 */
function commitFailsOnce(actionId: string): { failed: () => boolean; remove: () => void } {
  const stack = dynamoClient().middlewareStack;
  const name = `commit-fails-${randomUUID()}`;
  let failed = false;
  stack.add((next, context) => async (args) => {
    if (!failed && String(context.commandName).startsWith("TransactWrite") && JSON.stringify(args.input).includes(`pa#${actionId}`)) {
      failed = true;
      throw Object.assign(new Error("the store did not answer"), { name: "InternalServerError" });
    }
    return next(args);
  }, { step: "initialize", name });
  return { failed: () => failed, remove: () => stack.remove(name) };
}

/** What generate_recommendations' run records, priced as the mocked model's use (one call: USAGE). */
const recommendationRecordOf = (owner: { id: string }, runId: string) => ({ ...recordOf(owner, runId), agent_type: "recommendation", tool_name: "generate_recommendations" });

describe("an attempt that lost its lease without knowing it and then fails for good leaves the run to the live attempt", () => {
  it("attempt A's lease runs out during its model call; B claims, delivers and settles; A then fails (422): A neither settles nor releases the hold", async () => {
    const { owner, env } = await account();
    const { id, runId } = await approvedDraft(owner, env);
    const before = await figures(owner.id);

    // Attempt A's model call answers only when the test lets it, with a use of its own: 0.05 USD, 1.0 credit as failed.
    let called!: () => void;
    let answer!: () => void;
    const atModel = new Promise<void>((resolve) => (called = resolve));
    calls.next.push({ usage: { inputTokens: 4_000, outputTokens: 1_000, costUsd: 0.05 }, called, answer: new Promise<void>((resolve) => (answer = resolve)) });
    const a = executeAction(env.workspaceId, id);
    await atModel;
    expect((await rowOf(env.workspaceId, id)).status).toBe("executing");
    // A's lease runs out under it (its renewals no longer reach the table): the row is claimable, A does not know.
    await db().entities.pendingAction.patch({ workspace_id: env.workspaceId, id }).set({ lease_expires_at: Date.now() - 1_000 }).go();

    // Attempt B claims the row, delivers the draft (the flip records the run's 2.5) and stands just before its settle.
    const b = executeStoppingBeforeSettle(env.workspaceId, id);
    await b.reached;
    expect(await rowOf(env.workspaceId, id)).toMatchObject({ status: "executed", charge: { run_id: runId, credits: 2.5, tokens: 15_000, cost_usd: 0.17 } });

    // The recommendation's insight is deleted meanwhile: A's document create fails its reference check, a decided
    // error (422) that ends an attempt failed, not retried.
    const row = await rowOf(env.workspaceId, id);
    const { data: rec } = await db().entities.recommendation.get({ workspace_id: env.workspaceId, id: (row.tool_input as { recommendation_id: string }).recommendation_id }).go({ consistent: true });
    expect(rec!.addresses_insight_ids?.length).toBeGreaterThan(0);
    for (const insightId of rec!.addresses_insight_ids ?? []) await db().entities.insight.delete({ workspace_id: env.workspaceId, id: insightId }).go();
    answer();
    // A finds the row executed by B: not A's to end.
    expect(await a).toMatchObject({ outcome: "executed" });
    // The run's shared hold is untouched: no settle at A's failed figure (1.0 for 0.05 USD), no release, no record.
    expect((await chargeOf(owner.id, runId)).kinds).toEqual(["reserve"]);
    expect((await holdsOf(owner.id)).map((h) => h.run_id)).toEqual([runId]);
    expect(await recordsOf(env.workspaceId, runId)).toEqual([]);

    // B's settle charges the run: the delivered draft as a success at its model cost, once.
    b.resume();
    expect(await b.execution).toMatchObject({ outcome: "executed" });
    await expectChargedAsReference(owner.id, runId, before);
    expect(await recordsOf(env.workspaceId, runId)).toEqual([recordOf(owner, runId)]);
    expect(await sweepLater(owner.id)).toMatchObject({ stale: 0 });
  }, 60_000);
});

describe("a tool that commits after its model call (generate_recommendations) settles after its commit", () => {
  it("attempt 1's commit fails after its model call (deferred, hold kept); attempt 2 delivers: one settle, as a success, for both attempts' use", async () => {
    const { owner, env } = await account();
    const { id, runId, input } = await approvedAction("generate_recommendations", owner, env);
    const before = await figures(owner.id);

    await deferredBy(commitFailsOnce(id), env.workspaceId, id);
    // Not settled at attempt 1's figure before its commit: no settle, no record, the hold kept, the use on the row.
    expect((await chargeOf(owner.id, runId)).kinds).toEqual(["reserve"]);
    expect(await recordsOf(env.workspaceId, runId)).toEqual([]);
    expect((await holdsOf(owner.id)).map((h) => h.run_id)).toEqual([runId]);
    expect((await rowOf(env.workspaceId, id)).spent).toEqual({ tokens: 15_000, cost_usd: 0.17 });

    await dueNow(env.workspaceId, id);
    expect(await executeAction(env.workspaceId, id)).toMatchObject({ outcome: "executed" });
    // Both attempts called the model: 0.34 USD is 4.5 credits, charged once as the delivered run.
    expect(await chargeOf(owner.id, runId)).toMatchObject({ kinds: ["reserve", "settle"], settle: { credits: 4.5, charged: 4.5, shortfall: 0, tokens: 30_000, cost_usd: 0.34 } });
    expect(await holdsOf(owner.id)).toEqual([]);
    expect(diff(before, await figures(owner.id))).toMatchObject({ total_used: 4.5, reserved: 0, charged: 4.5, tokens_used: 30_000, cost_usd: 0.34 });
    expect(await recordsOf(env.workspaceId, runId)).toEqual([{ ...recommendationRecordOf(owner, runId), tokens_used: 30_000, cost_usd: 0.34, credits_charged: 4.5 }]);
    const row = await rowOf(env.workspaceId, id);
    expect(row.charge).toMatchObject({ run_id: runId, credits: 4.5, tokens: 30_000, cost_usd: 0.34 });
    await toolCase("generate_recommendations").verify(env, id, row, { input });
  }, 60_000);

  it("the normal path: one settle after the commit, and the flip records what the run owes (the sweeper's charge after a crash)", async () => {
    const { owner, env } = await account();
    const { id, runId } = await approvedAction("generate_recommendations", owner, env);
    const before = await figures(owner.id);
    expect(await executeAction(env.workspaceId, id)).toMatchObject({ outcome: "executed" });
    expect(await chargeOf(owner.id, runId)).toMatchObject({ kinds: ["reserve", "settle"], settle: { credits: 2.5, charged: 2.5, tokens: 15_000, cost_usd: 0.17 } });
    expect(diff(before, await figures(owner.id))).toEqual(reference.change);
    expect((await rowOf(env.workspaceId, id)).charge).toMatchObject({ run_id: runId, credits: 2.5, tokens: 15_000, cost_usd: 0.17 });
    expect(await recordsOf(env.workspaceId, runId)).toEqual([recommendationRecordOf(owner, runId)]);
  }, 60_000);
});

describe("the use of an attempt that dies before its deferral is kept on the row as its model call ends", () => {
  it("generate_recommendations: attempt 1 dies after its model call, before its commit; attempt 2 delivers: one settle for both attempts' use", async () => {
    const { owner, env } = await account();
    const { id, runId } = await approvedAction("generate_recommendations", owner, env);
    const before = await figures(owner.id);

    // Attempt 1 calls the model and dies just before its commit: no deferral is ever written.
    const first = executeStoppingBeforeSettle(env.workspaceId, id, "before-commit");
    await first.reached;
    // Its use was kept on the row when the model call ended (the tool waits for it before going on).
    expect(await rowOf(env.workspaceId, id)).toMatchObject({ status: "executing", spent: { tokens: 15_000, cost_usd: 0.17 } });
    // Its process is gone with its lease (no renewal of its can extend it again), and the next executor claims the row.
    await db().entities.pendingAction.patch({ workspace_id: env.workspaceId, id }).set({ lease_owner: `gone-${randomUUID()}`, lease_expires_at: Date.now() - 1_000 }).go();
    expect(await executeAction(env.workspaceId, id)).toMatchObject({ outcome: "executed" });
    expect(await chargeOf(owner.id, runId)).toMatchObject({ kinds: ["reserve", "settle"], settle: { credits: 4.5, charged: 4.5, tokens: 30_000, cost_usd: 0.34 } });
    expect(await holdsOf(owner.id)).toEqual([]);
    expect(diff(before, await figures(owner.id))).toMatchObject({ total_used: 4.5, reserved: 0, charged: 4.5, tokens_used: 30_000, cost_usd: 0.34 });
    expect(await recordsOf(env.workspaceId, runId)).toEqual([{ ...recommendationRecordOf(owner, runId), tokens_used: 30_000, cost_usd: 0.34, credits_charged: 4.5 }]);
  }, 60_000);

  it("draft_document: attempt 1 dies before its commit; the action then ends failed (interrupted attempts): the sweep charges the kept use", async () => {
    const { owner, env } = await account();
    const { id, runId } = await approvedDraft(owner, env);
    const first = executeStoppingBeforeSettle(env.workspaceId, id, "before-commit");
    await first.reached;
    // draft_document waits for the write before its create (core/document/draft.ts): it is on the row already.
    expect((await rowOf(env.workspaceId, id)).spent).toEqual({ tokens: 15_000, cost_usd: 0.17 });
    // Interrupted until the executor gives up on it (MAX_ATTEMPTS claims that neither finished nor deferred).
    await db().entities.pendingAction.patch({ workspace_id: env.workspaceId, id }).set({ attempts: MAX_ATTEMPTS, lease_owner: `gone-${randomUUID()}`, lease_expires_at: Date.now() - 1_000 }).go();
    expect(await executeAction(env.workspaceId, id)).toMatchObject({ outcome: "failed", reason: expect.stringMatching(/^outcome unknown/) });
    // The model call that was made (0.17 USD, 15,000 tokens) is charged once, as the failed run's: 2.5 credits.
    await expectSweptAsOneFailedCall(owner.id, runId);
  }, 60_000);
});
