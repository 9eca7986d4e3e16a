import { isConditionalFailure } from "../db/errors";
import { randomUUID } from "node:crypto";
import diagnostics from "node:diagnostics_channel";
import { AppError } from "../error";
import { db } from "../db/service";
import type { CallUsage, ModelTier } from "../ai/ports";
import { grantMilestones, startCharge, type Charge, type Milestone, type OwedCharge, type OwedRun } from "../billing/charge";
import { creditsFor, type RunOutcome } from "../billing/credits";
import { milestoneSource, TRIAL_MILESTONE_CREDITS } from "../billing/ledger";
import { currentSignal } from "../context";

export type AgentType = "synthesis" | "recommendation" | "drafting" | "chat" | "block_action" | "embedding";

/** Largest input/output summary kept on a run, in characters (items must stay well under 400 KB). */
const MAX_DATA_CHARS = 20_000;
const clip = (v: unknown) => {
  const s = JSON.stringify(v ?? null);
  return s.length <= MAX_DATA_CHARS ? v : { truncated: true, preview: s.slice(0, MAX_DATA_CHARS) };
};

/**
 * What the harness's post-flight found (issue #21), written on the run's record: the research quality score (0..100),
 * whether the contract and the verifier passed, and the details (`quality`, exactly these keys:
 * {workflow_type, contract: {score, issues}, verifier: {score, issues}, grounding, retries, degraded, mission_id}).
 */
export interface RunQuality {
  rqs: number;
  contract_passed: boolean;
  verifier_passed: boolean;
  quality: {
    workflow_type: string;
    contract: { score: number; issues: string[] };
    verifier: { score: number; issues: string[] };
    grounding: number;
    retries: number;
    degraded: boolean;
    mission_id: string | null;
    /** Repairs dropped because a member changed or deleted the artifact meanwhile (their change stands); absent when none. */
    abandoned_repairs?: string[];
    /** True when a repair of the answer was left out because the query's turn budget (max_turns) was used up. */
    turn_budget_spent?: true;
  };
}

/** A trial milestone a run earned (spec 02 `milestone_unlocked`). */
export interface UnlockedMilestone {
  milestone: "first_run" | "engagement";
  credits_granted: number;
  message: string;
}

/** What `recordRun` needs to know about a run. */
export interface RunOptions<T> {
  workspaceId: string;
  /** Who asked for it (the member whose request or approved action started it). */
  userId: string;
  agentType: AgentType;
  toolName: string;
  /** The engine's name (`local`, `model`, `bedrock`, `openai-compatible`): a free engine reserves the minimum charge. */
  engine: string;
  input: unknown;
  /** The run's id; derive it (`idFor(pendingActionId, "agent-run")`) so a replayed pending action is charged once. */
  runId?: string;
  /** The model tier the run uses, for its reservation (default mid). */
  tier?: ModelTier;
  /** A copilot message: charged at least 0.25 credits (spec 02 Credits). */
  chatMessage?: boolean;
  /** A reservation made earlier (the copilot reserves before its stream opens); settled here. */
  charge?: Charge;
  /** The outcome of a run whose work returned (default success): partial and cancelled runs pay their minimum. */
  outcomeOf?: (result: T) => RunOutcome;
  /**
   * Aborts when the person who asked for the run is gone (a stream's client disconnected, its budget spent); default
   * the scope's (`currentSignal`, core/context.ts). A run whose signal fired stops before or right after its work, so
   * its caller writes nothing, and is recorded and charged as cancelled (spec 02 minimums), not as failed.
   */
  signal?: AbortSignal;
  /** The run's judged quality (the harness's post-flight), written on its record when the work returned. */
  qualityOf?: (result: T) => RunQuality | undefined;
  /**
   * Told of each trial milestone this run's settlement granted (spec 02 `milestone_unlocked`): what the run's own
   * `grantMilestones` committed, so of two runs settling together only one announces it.
   */
  onMilestone?: (m: UnlockedMilestone) => void;
}

/** What `recordRun` gives its work: the model use to report, and the point from which the work writes its result. */
export interface RunUsage {
  /**
   * Report one model call's use (tokens, USD). Await it before writing: for an approved action's run it resolves once
   * the use is kept on the action's row (`Charge.noteUsage`); for any other run at once. Never rejects.
   */
  add(u: CallUsage): Promise<void>;
  /**
   * Call right before the work writes its result itself (inside the run, so the run settles after the write): throws
   * the signal's abort if the person left, so nothing is written for them; from then on the run is what its work
   * returns (a stored result is a delivered one, charged as such), not cancelled by a signal firing during the write.
   * @throws DOMException AbortError (the signal's reason) when the run's signal has fired
   */
  beforeWrite(): void;
}

/**
 * Run `work` as one recorded, charged agent run (spec 02 Agent run, Credits; DESIGN.md 6.3). Before the work the
 * workspace owner's account reserves the run's estimated maximum (`startCharge`: 402 when it cannot, so nothing runs
 * and no model is called); after it, the run settles to `creditsFor(cost, outcome)` (success at least 0.5, failed
 * with cost 0.25, without cost 0, partial or cancelled 0.25, a chat message at least 0.25) and the agent run is written
 * with latency, tokens, cost, status and `credits_charged`, whether the work succeeded or failed; a failure is
 * re-thrown after that. Embedding runs are internal (ingestion) and not charged. Trial milestones the run earns are
 * granted afterwards. `work` reports model usage through `usage.add`; awaiting it, an approved action's work goes on
 * once the use is on the action's row (`Charge.noteUsage`), and other runs are not kept waiting. An approved action's
 * run that fails with an error after which the executor runs the action again (`Charge.keepsHoldAfter`) ends without
 * settling or recording: its retry, under the same run id, settles and records the run once.
 * @throws AppError USAGE_LIMIT_EXCEEDED (402) before the work when the account cannot carry the run; whatever `work` throws.
 */
export async function recordRun<T>(
  opts: RunOptions<T>,
  work: (usage: RunUsage) => Promise<T>,
  summarize: (result: T) => unknown = (r) => r,
): Promise<T> {
  const runId = opts.charge?.runId ?? opts.runId ?? randomUUID();
  const charge =
    opts.charge ??
    (opts.agentType === "embedding"
      ? null
      : await startCharge({ workspaceId: opts.workspaceId, runId, engine: opts.engine, tier: opts.tier, chatMessage: opts.chatMessage }));
  const started = Date.now();
  // The charge keeps what this run's record needs, for a record written by whoever settles it (the credit sweeper).
  charge?.describeRun({ requested_by: opts.userId, agent_type: opts.agentType, tool_name: opts.toolName, engine: opts.engine, started_at: started });
  // An action's retry counts from what its failed attempts used (they did not settle: the run settles once).
  let tokens = charge?.carried.tokens ?? 0;
  let cost = charge?.carried.costUsd ?? 0;
  let modelId: string | undefined;
  // The run stops where the person it serves left: before the work, and after it, before anything is written.
  const signal = opts.signal ?? currentSignal();
  let writesOwnResult = false;
  const usage: RunUsage = {
    beforeWrite() {
      signal?.throwIfAborted();
      writesOwnResult = true;
    },
    add(u: CallUsage) {
      tokens += u.inputTokens + u.outputTokens;
      cost += u.costUsd;
      modelId = u.modelId;
      // The charge prices the run from the same figures before it settles (an approved action's flip records it), and
      // an approved action's run keeps them on the row: awaiting this, the work goes on only once they are kept.
      return charge?.noteUsage({ tokens: u.inputTokens + u.outputTokens, costUsd: u.costUsd, modelId: u.modelId }) ?? Promise.resolve();
    },
  };
  const finish = async (outcome: RunOutcome, output: unknown, error?: string, quality?: RunQuality) => {
    // The settlement and the run's record are written side by side: the record carries the figure the settlement
    // charges (`creditsFor`), and is corrected in the rare case the balance could not cover it all (a shortfall).
    const planned = charge ? creditsFor(cost, outcome, { chatMessage: charge.chatMessage }) : 0;
    // A run whose charge was stored with its work (an approved action's flip) is recorded at the time fixed then: the
    // credit sweeper, settling it after a crash, writes that same record (`recordSettledRun`), and the later write of
    // the two finds it there and adds nothing. Its latency runs to that time too, as the sweeper's record's does
    // (`OwedRun.latency_ms`): the record's span is then the run's, not the run's plus its commit.
    const fixedAt = charge?.recordAt;
    const executedAt = fixedAt ?? new Date().toISOString();
    const latency = Math.max(0, (fixedAt ? Date.parse(fixedAt) : Date.now()) - started);
    let settledAt = 0;
    let writtenAt = 0;
    const settling = charge
      ? charge.settle(outcome, { tokens, costUsd: cost }).then((c) => ((settledAt = performance.now()), c))
      : Promise.resolve(0);
    const writing = db()
      .entities.agentRun.create({
        id: runId,
        workspace_id: opts.workspaceId,
        user_id: opts.userId,
        agent_type: opts.agentType,
        tool_name: opts.toolName,
        engine: opts.engine,
        model_id: modelId,
        input_data: clip(opts.input),
        output_data: clip(output),
        latency_ms: latency,
        tokens_used: tokens,
        cost_usd: Math.round(cost * 1e6) / 1e6,
        credits_charged: planned,
        executed_at: executedAt,
        status: outcome === "success" ? "success" : outcome === "failed" ? "failed" : "partial",
        ...(error ? { error_message: error.slice(0, 2000) } : {}),
        ...(quality ?? {}),
      })
      .go()
      .then(
        () => void (writtenAt = performance.now()),
        (err: unknown) => {
          if (!(fixedAt && isConditionalFailure(err))) throw err;
          writtenAt = performance.now();
        },
      );
    const [credits] = await Promise.all([settling, writing]);
    if (credits !== planned) {
      await db().entities.agentRun.patch({ workspace_id: opts.workspaceId, executed_at: executedAt, id: runId }).set({ credits_charged: credits }).go();
    }
    if (!charge) return;
    // What charging added to this request: the reservation, and the settlement's wait beyond the record's write.
    if (chargeTimings.hasSubscribers) {
      chargeTimings.publish({ runId, reserveMs: charge.waitMs, settleWaitMs: Math.max(0, settledAt - writtenAt) } satisfies ChargeTiming);
    }
    // Announced by the run whose grant committed (the ledger grants each once), never by two runs settling together.
    const granted = await grantMilestones(charge.payer, opts.workspaceId, outcome === "success", () => chargedRunCount(opts.workspaceId), charge.plan);
    for (const m of granted) opts.onMilestone?.({ milestone: m, credits_granted: TRIAL_MILESTONE_CREDITS, message: MILESTONE_MESSAGES[m] });
  };
  let result: T;
  try {
    signal?.throwIfAborted();
    result = await work(usage);
    // Work that reports its own outcome (the agent loop ends partial on an abort, and its partial answer is kept)
    // is judged by `outcomeOf`; work that wrote its result itself (`beforeWrite`) delivered it, whatever the signal
    // says since; any other work abandoned midway must not be written by its caller.
    if (!opts.outcomeOf && !writesOwnResult) signal?.throwIfAborted();
  } catch (err) {
    // An approved action's attempt the executor will run again is not the run's end: no settle, no record. Its hold
    // and its use (the executor carries it on the row) go to the retry, so the run is charged once, as what it
    // finally was (spec 02: a delivered run as a success), not as this attempt's failure.
    if (charge && !signal?.aborted && (await charge.keepsHoldAfter(err))) throw err;
    await finish(signal?.aborted ? "cancelled" : "failed", null, err instanceof Error ? err.message : String(err));
    throw err;
  }
  await finish(opts.outcomeOf?.(result) ?? "success", summarize(result), undefined, opts.qualityOf?.(result));
  return result;
}

const MILESTONE_MESSAGES: Record<Milestone, string> = {
  first_run: `Your first successful agent run in this workspace earned ${TRIAL_MILESTONE_CREDITS} credits.`,
  engagement: `Your third agent run in this workspace earned ${TRIAL_MILESTONE_CREDITS} credits.`,
};

/** One charged run's timings, published on the `r2d:charge` diagnostics channel (benchmarks subscribe). */
export interface ChargeTiming {
  runId: string;
  /** How long the request waited for its reservation (ms): all of it, or what outlasted the operation's reads. */
  reserveMs: number;
  /** How long the request waited for the settlement after its run record was written (ms; 0 when it was faster). */
  settleWaitMs: number;
}

/**
 * What charging adds to each AI request, for observers (bench/charging.ts): Node's diagnostics channel costs nothing
 * without a subscriber, and keeps measurement out of the stored record.
 */
export const chargeTimings = diagnostics.channel("r2d:charge");

/**
 * Record a run that someone other than the run settles: the credit sweeper (core/billing/sweeper.ts), for an approved
 * action's run that stored its work and the charge with it (`OwedCharge`) and died before its own settle. Does what
 * `recordRun` does after a successful run's settle (spec 02 Agent run, Trial milestones): writes the agent-run record
 * (status success; the charge's tokens, USD cost and credits; the run's id, agent type, tool, engine, model and the
 * requesting member from `owed.run`) under the time the charge fixed (`OwedRun.executed_at`), created only if absent,
 * so of this write and the run's own late one (the same item) the first stands and the other is a no-op; then grants
 * the trial milestones a successful run earns (`grantMilestones`: the ledger grants each once per workspace). Safe to
 * repeat, and to run before the settle: a sweep that dies midway leaves the hold, and the next one does the rest.
 * @param workspaceId the run's workspace (the action's)
 * @param owed the charge recorded with the work, with its `run`
 * @param summary what the run was asked and produced (clipped to MAX_DATA_CHARS as `recordRun` clips them)
 * @returns whether this call wrote the record (false: it was there), and the milestones this call granted
 * @throws the table's errors (the sweeper collects them and tries again at its next sweep)
 */
export async function recordSettledRun(
  workspaceId: string,
  owed: OwedCharge & { run: OwedRun },
  summary: { input: unknown; output: unknown },
): Promise<{ recorded: boolean; milestones: Milestone[] }> {
  const run = owed.run;
  let recorded = true;
  try {
    await db()
      .entities.agentRun.create({
        id: owed.run_id,
        workspace_id: workspaceId,
        user_id: run.requested_by,
        agent_type: run.agent_type as AgentType,
        tool_name: run.tool_name,
        engine: run.engine,
        model_id: run.model_id,
        input_data: clip(summary.input),
        output_data: clip(summary.output),
        latency_ms: run.latency_ms,
        tokens_used: owed.tokens,
        cost_usd: Math.round(owed.cost_usd * 1e6) / 1e6,
        credits_charged: owed.credits,
        executed_at: run.executed_at,
        status: "success",
      })
      .go();
  } catch (err) {
    if (!isConditionalFailure(err)) throw err;
    recorded = false; // the run's own record, or an earlier sweep's: the same item
  }
  const milestones = await grantMilestones(owed.user_id, workspaceId, true, () => chargedRunCount(workspaceId));
  return { recorded, milestones };
}

/**
 * Correct the credits on a run's record to what its settle charged, when that differs from the figure recorded (a
 * shortfall, or a settle that landed first with another figure): `recordRun` does the same after its own settle.
 * @param run the record's key: workspace, time (ISO 8601) and run id
 */
export async function correctRunCredits(run: { workspace_id: string; executed_at: string; id: string }, credits: number): Promise<void> {
  await db().entities.agentRun.patch(run).set({ credits_charged: credits }).go();
}

/** Agent runs of a workspace that count for the engagement milestone (all but the internal embedding runs), up to 3. */
async function chargedRunCount(workspaceId: string): Promise<number> {
  const { data } = await db()
    .entities.agentRun.query.byWorkspace({ workspace_id: workspaceId })
    .where((a, op) => op.ne(a.agent_type, "embedding"))
    .go({ limit: 3, pages: "all" });
  return data.length;
}

/** Agent runs of a workspace, newest first. */
export async function runsOf(workspaceId: string, limit = 50) {
  const { data } = await db().entities.agentRun.query.byWorkspace({ workspace_id: workspaceId }).go({ order: "desc", limit });
  return data;
}

const nowSeconds = () => Math.floor(Date.now() / 1000);

/**
 * Try to take an exclusive lock named `name` in `scope` for `seconds`. The lock survives a crash only until it
 * expires: the condition treats an expired lock as free (DynamoDB's TTL deletes it later).
 * @returns a release function (idempotent: one delete however often it is called; a failed one is tried again by the
 *   next call), or null when the lock is held.
 */
export async function tryLock(scope: string, name: string, seconds: number): Promise<(() => Promise<void>) | null> {
  const owner: string = randomUUID();
  try {
    await db()
      .entities.guard.put({ scope, name, owner, ttl: nowSeconds() + seconds })
      .where((attr, op) => `${op.notExists(attr.owner)} OR ${op.lt(attr.ttl, nowSeconds())}`)
      .go();
  } catch (err) {
    if (!isConditionalFailure(err)) throw err;
    // A put whose response was lost is sent again by the SDK, and the retry meets the lock the first one took: ours.
    const { data } = await db().entities.guard.get({ scope, name }).go({ consistent: true, attributes: ["owner"] });
    if (data?.owner !== owner) return null;
  }
  // Released once: a second call waits for the first (or tries again after a failure) instead of deleting again.
  let released: Promise<void> | undefined;
  const release = async () => {
    try {
      await db().entities.guard.delete({ scope, name }).where((attr, op) => op.eq(attr.owner, owner)).go();
    } catch (err) {
      if (!isConditionalFailure(err)) throw err; // already expired and taken by someone else: nothing to release
    }
  };
  return () =>
    (released ??= release().catch((err: unknown) => {
      released = undefined;
      throw err;
    }));
}

/**
 * Take an exclusive lock (`tryLock`) or fail.
 * @returns a release function. @throws AppError with `code` when the lock is held.
 */
export async function acquireLock(scope: string, name: string, seconds: number, code: "SYNTHESIS_IN_PROGRESS", message: string) {
  const release = await tryLock(scope, name, seconds);
  if (!release) throw new AppError(code, message);
  return release;
}

/** The rate limiter lives in core/rate-limit; re-exported for the callers that knew it here. */
export { rateLimit } from "../rate-limit";
