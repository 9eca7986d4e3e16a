import { randomUUID } from "node:crypto";
import { crashPointReached } from "../crash-point";
import { AppError, type ErrorCode } from "../error";
import { db } from "../db/service";
import { Config } from "../config";
import { isConditionalFailure } from "../db/errors";
import { asWrite, runIdFor, SettlementRefused, type WriteItem } from "../db/agent-write";
import { owedBy, withDelivery, type Delivery, type OwedCharge } from "../billing/charge";
import { withRequestScope } from "../context";
import { serviceLog } from "../log";
import { requireMember } from "../workspace";
import { gatedTool, parseToolInput } from "../agent/tools";
import { DUE } from "./pending-action.entity";
import { jsonBytes, sweepGraceMs, type PendingActionItem } from "./index";
import { MAX_JSON_BYTES } from "./schema";
import type { StoredStatus } from "./status";

/**
 * Exactly-once execution of approved pending actions (DESIGN.md 6.2; spec 01 Pending action status: approved →
 * executed | failed). Nothing in memory carries an execution: the approved row does, and every driver (the DynamoDB
 * Streams consumer, the sweeper, the embedded runtime's stream reader) calls `executeAction`, which is safe to call
 * any number of times, concurrently, for the same row.
 *
 * 1. Claim: approved (and due) → executing with a lease (owner + expiry), one conditional write; an executing row
 *    whose lease expired (its executor died) may be claimed again. Losing the claim means someone else is on it.
 * 2. Run the gated tool as the approving member, handing it the settlement (`ctx.settle`): the flip executing →
 *    executed with the tool's result, conditioned on still holding the lease. The tool's core operation commits its
 *    writes and the settlement in ONE transaction, each written item tagged with the action id in that same write.
 *    A crash before that commit leaves nothing written, and the replay does it all; after it, the row is executed
 *    and a replay has nothing to do. Of two executors that both believe they hold the row (a lease that expired
 *    under a slow run), only the holder's transaction can commit. When the tool's charged run (its id derived from
 *    the action) commits inside the run, before it settles (draft_document, run_synthesis, generate_recommendations),
 *    the flip also records what the run owes (`charge`), and the run's hold names the action: a crash before the
 *    settle is charged by the credit sweeper, which settles that hold for the recorded amount instead of releasing it
 *    (core/billing/sweeper.ts).
 * 3. A tool that wrote nothing (or ran outside a transaction) is flipped here, conditioned on the lease.
 * 4. How a failure ends (`classify`): a transient one (the model or the table busy, a rate limit, a synthesis lock
 *    held by another run, a concurrent change) puts the row back to approved with a retry time, backing off
 *    exponentially (`retryDelayMs`), up to MAX_RETRIES; a decided one (invalid input, not found, an invalid
 *    transition, the approver no longer a member, no subscription or credits) ends failed at once. A charged run
 *    that fails with an error that is retried (`Delivery.retriedAfter`) neither settles nor releases: the retry,
 *    under the same run id, charges against that hold once, counting the use kept on the row (`spent`): written as
 *    each model call of the run ends (`keepSpent`), so an attempt that dies before its deferral leaves it too.
 * A row whose executions were interrupted MAX_ATTEMPTS times (claims that neither finished nor were deferred) ends
 * failed "outcome unknown": a poison row is never retried forever.
 */

/** Interrupted executions (claims that neither finished nor deferred) after which a row ends failed, outcome unknown. */
export const MAX_ATTEMPTS = 5;

/** Transient failures after which a row ends failed (with about 16 minutes of backoff behind it). */
export const MAX_RETRIES = 20;

/** The first retry's delay, and the most any retry waits (before jitter), ms. */
export const RETRY_BASE_MS = 2_000;
export const RETRY_MAX_MS = 60_000;

/** The lease an executor holds on a claimed row: env `PENDING_ACTION_LEASE_SECONDS` (default 60 s). */
export const leaseMs = (): number => Config.pendingActionLeaseSeconds() * 1000;

/**
 * How long a row waits before its `retries`-th retry (0-based), ms: RETRY_BASE_MS doubled per earlier retry, capped
 * at RETRY_MAX_MS, times a random factor in [0.5, 1] (rows deferred together do not come back together); never less
 * than what the failure asked for (`retry_after_seconds` of a 429/503).
 */
export function retryDelayMs(retries: number, retryAfterMs = 0): number {
  const backoff = Math.min(RETRY_MAX_MS, RETRY_BASE_MS * 2 ** Math.min(retries, 20));
  return Math.max(retryAfterMs, Math.round(backoff * (0.5 + Math.random() / 2)));
}

/** What one call of `executeAction` did. */
export interface ExecutionOutcome {
  /**
   * executed / failed: this call finished the row (executed also when the tool's own transaction did, with its
   * writes, and something after it failed); deferred: a transient failure put it back to approved, to be retried at
   * `retryAt`; skipped: nothing to do here (not claimable, not due yet, or the claim or lease was lost).
   */
  outcome: "executed" | "failed" | "deferred" | "skipped";
  /** The row's stored status as this call last saw it (undefined when the row does not exist). */
  status?: StoredStatus;
  /** For failed: the error stored on the row. For deferred: the transient failure. For skipped: why. */
  reason?: string;
  /** For deferred: when the row is due again (ISO). */
  retryAt?: string;
  /** For failed by an unexpected error: the error itself, for the driver to log (its message is not stored). */
  cause?: unknown;
}

const key = (row: PendingActionItem) => ({ workspace_id: row.workspace_id, id: row.id });

async function read(workspaceId: string, id: string): Promise<PendingActionItem | null> {
  const { data } = await db().entities.pendingAction.get({ workspace_id: workspaceId, id }).go({ consistent: true });
  return data;
}

/**
 * Claim a row for this executor: approved → executing, or executing (lease expired) → executing, in one
 * conditional write on exactly the state that was read (status, and for a reclaim the previous lease owner and its
 * lease still expired at `now`: a live executor that renewed its lease since the read keeps the row).
 * @returns the claimed row, or null when another executor got there first or the lease was renewed.
 */
async function claim(row: PendingActionItem, owner: string, now: number): Promise<PendingActionItem | null> {
  const expires = now + leaseMs();
  try {
    const { data } = await db()
      .entities.pendingAction.patch(key(row))
      .set({ status: "executing", lease_owner: owner, lease_expires_at: expires, sweep: DUE, due_at: new Date(expires).toISOString() })
      .add({ attempts: 1 })
      .remove(["retry_at"])
      .where((attr, op) =>
        row.status === "executing"
          ? // The owner alone is not enough: a live executor renews its lease under the same owner (keepLease), and a
            // reclaim racing that renewal would run the tool a second time alongside it. A row with no lease time is
            // expired, as the read side takes it (`?? 0`).
            `${op.eq(attr.status, "executing")} AND ${op.eq(attr.lease_owner, row.lease_owner ?? "")} AND (${op.notExists(attr.lease_expires_at)} OR ${op.lte(attr.lease_expires_at, now)})`
          : op.eq(attr.status, "approved"),
      )
      .go({ response: "all_new" });
    return data as PendingActionItem;
  } catch (err) {
    if (isConditionalFailure(err)) return null;
    throw err;
  }
}

/** The attributes of a row finished executed or failed (it leaves the sweeper's index). */
function finished(end: { status: "executed"; result: Record<string, unknown> } | { status: "failed"; error: string }) {
  return end.status === "executed"
    ? { status: "executed" as const, result: storable(end.result), executed_at: new Date().toISOString() }
    : { status: "failed" as const, error: end.error.slice(0, 2000) };
}
const UNLISTED = ["sweep", "due_at", "lease_owner", "lease_expires_at", "retry_at"] as const;

/**
 * The settlement handed to the tool (ExecutionContext.settle): executing → executed with `result`, conditioned on
 * still holding the lease, as a write for the tool's own transaction. With `owed` (the tool's run has reserved and
 * not yet settled: it commits inside the run) the flip also records what the run owes, so the charge is stored with
 * the work it pays for: should the process die before the run settles, the credit sweeper settles the run's hold for
 * this amount instead of releasing it (core/billing/sweeper.ts).
 */
function settlement(row: PendingActionItem, owner: string, result: Record<string, unknown>, owed?: OwedCharge): WriteItem {
  const write = db()
    .entities.pendingAction.patch(key(row))
    .set({ ...finished({ status: "executed", result }), ...(owed ? { charge: owed } : {}) })
    .remove([...UNLISTED])
    .where((attr, op) => `${op.eq(attr.status, "executing")} AND ${op.eq(attr.lease_owner, owner)}`);
  return asWrite(write);
}

/**
 * Finish a claimed row: executing → executed | failed, conditioned on still holding the lease; leaves the
 * sweeper's index. @returns false when the lease was lost (another executor reclaimed the row and will finish it).
 */
async function finish(
  row: PendingActionItem,
  owner: string,
  end: { status: "executed"; result: Record<string, unknown> } | { status: "failed"; error: string },
): Promise<boolean> {
  try {
    await db()
      .entities.pendingAction.patch(key(row))
      .set(finished(end))
      .remove([...UNLISTED])
      .where((attr, op) => `${op.eq(attr.status, "executing")} AND ${op.eq(attr.lease_owner, owner)}`)
      .go();
    return true;
  } catch (err) {
    if (isConditionalFailure(err)) return false;
    throw err;
  }
}

/** Model use of an action's run over its attempts so far (the row's `spent`). */
type Spent = { tokens: number; cost_usd: number };

/**
 * Put a claimed row back after a transient failure: executing → approved, due again at `retryAt` (the sweeper's
 * index, and the executor skips it until then), `retries` + 1, the failure kept as `last_error`; conditioned on
 * still holding the lease. With `spent` (the run kept its hold for the retry), the run's use so far is kept on the
 * row for the retry's charge; `null` removes the row's figure (the run settled already). @returns false when the
 * lease was lost.
 */
async function defer(row: PendingActionItem, owner: string, error: string, retryAt: string, spent?: Spent | null): Promise<boolean> {
  try {
    await db()
      .entities.pendingAction.patch(key(row))
      .set({ status: "approved", sweep: DUE, due_at: retryAt, retry_at: retryAt, last_error: error.slice(0, 2000), ...(spent ? { spent } : {}) })
      .add({ retries: 1 })
      .remove(spent === null ? ["lease_owner", "lease_expires_at", "spent"] : ["lease_owner", "lease_expires_at"])
      .where((attr, op) => `${op.eq(attr.status, "executing")} AND ${op.eq(attr.lease_owner, owner)}`)
      .go();
    return true;
  } catch (err) {
    if (isConditionalFailure(err)) return false;
    throw err;
  }
}

/**
 * Keep the use of the run doing a claimed row's work on the row (`spent`: its attempts' use so far, this one's
 * included) as each model call ends, conditioned on still holding the lease: an attempt that dies before its deferral
 * (a crash, a timeout) leaves it for the next attempt's charge and for the credit sweeper. One write per model call
 * of an approved action's run, on no other path. Never throws: a lost lease (the condition) or a failed write leaves
 * the row's figure as it was (the deferral, when there is one, writes it again).
 */
async function keepSpent(row: PendingActionItem, owner: string, spent: Spent): Promise<void> {
  try {
    await db()
      .entities.pendingAction.patch(key(row))
      .set({ spent })
      .where((attr, op) => `${op.eq(attr.status, "executing")} AND ${op.eq(attr.lease_owner, owner)}`)
      .go();
  } catch (err) {
    if (!isConditionalFailure(err)) serviceLog("pending-action").warn("the run's use could not be kept on its action", { action_id: row.id, error: String(err) });
  }
}

/**
 * End a row that is not to be run again (interrupted too often) as failed, conditioned on the state it was read in.
 * @returns false when it changed meanwhile.
 */
async function giveUp(row: PendingActionItem, error: string): Promise<boolean> {
  try {
    await db()
      .entities.pendingAction.patch(key(row))
      .set(finished({ status: "failed", error }))
      .remove([...UNLISTED])
      .where((attr, op) =>
        row.status === "executing"
          ? // As in `claim`: a lease renewed since the read means the row is running, not interrupted.
            `${op.eq(attr.status, "executing")} AND ${op.eq(attr.lease_owner, row.lease_owner ?? "")} AND (${op.notExists(attr.lease_expires_at)} OR ${op.lte(attr.lease_expires_at, Date.now())})`
          : op.eq(attr.status, "approved"),
      )
      .go();
    return true;
  } catch (err) {
    if (isConditionalFailure(err)) return false;
    throw err;
  }
}

/** A result as stored: itself, or a truncated marker when its JSON is over MAX_JSON_BYTES (the item stays small). */
function storable(result: Record<string, unknown>): Record<string, unknown> {
  if (jsonBytes(result) <= MAX_JSON_BYTES) return result;
  return { truncated: true, preview: JSON.stringify(result).slice(0, MAX_JSON_BYTES / 2) };
}

/**
 * Keep the lease while a long tool runs (synthesis can take minutes): extend it every third of its length,
 * conditioned on still holding it. A failed extension is harmless: the settlement's own condition decides.
 */
function keepLease(row: PendingActionItem, owner: string): () => void {
  const timer = setInterval(() => {
    const expires = Date.now() + leaseMs();
    db()
      .entities.pendingAction.patch(key(row))
      .set({ status: "executing", lease_expires_at: expires, sweep: DUE, due_at: new Date(expires).toISOString() })
      .where((attr, op) => `${op.eq(attr.status, "executing")} AND ${op.eq(attr.lease_owner, owner)}`)
      .go()
      .catch(() => undefined);
  }, Math.max(250, leaseMs() / 3));
  timer.unref();
  return () => clearInterval(timer);
}

/** AppError codes that mean "not now": the same execution may well succeed later. Every other code is decided. */
const TRANSIENT_CODES = new Set<ErrorCode>(["SERVICE_UNAVAILABLE", "RATE_LIMITED", "SYNTHESIS_IN_PROGRESS", "CONFLICT", "REQUEST_TIMEOUT"]);
/** AWS SDK error names (DynamoDB, S3, Bedrock) of throttling, capacity, transaction races and server faults. */
const TRANSIENT_AWS_ERRORS = new Set([
  "ProvisionedThroughputExceededException",
  "ThrottlingException",
  "Throttling",
  "RequestLimitExceeded",
  "TooManyRequestsException",
  "SlowDown",
  "InternalServerError",
  "InternalServerException",
  "ServiceUnavailable",
  "ServiceUnavailableException",
  "TransactionConflictException",
  "TransactionInProgressException",
  "RequestTimeout",
  "RequestTimeoutException",
  "TimeoutError",
]);
/** Node network error codes of a connection that failed or dropped (the endpoint restarting, a network blip). */
const TRANSIENT_NETWORK_CODES = new Set(["ECONNREFUSED", "ECONNRESET", "ETIMEDOUT", "EPIPE", "EAI_AGAIN", "UND_ERR_SOCKET"]);

/** How a failed execution ends: retried later, failed with a message for people, or failed as a defect. */
export type FailureKind = { kind: "transient"; message: string; retryAfterMs: number } | { kind: "decided"; message: string } | { kind: "defect" };

/**
 * Classify an execution's failure (DESIGN.md 6.2): transient (retried with backoff) are AppErrors with a code in
 * TRANSIENT_CODES and infrastructure errors of throttling, capacity, transaction races, server faults and dropped
 * connections, found on the error or its `cause` chain (ElectroDB wraps the SDK's); decided (failed at once) is every
 * other AppError, whose message is meant for people; anything else is a defect (failed with a generic message).
 */
export function classify(err: unknown): FailureKind {
  if (err instanceof AppError) {
    if (!TRANSIENT_CODES.has(err.code)) return { kind: "decided", message: err.message };
    const after = Number(err.extra.retry_after_seconds ?? 0);
    return { kind: "transient", message: err.message, retryAfterMs: Number.isFinite(after) && after > 0 ? after * 1000 : 0 };
  }
  let e = err as { name?: string; code?: string; message?: string; cause?: unknown; $retryable?: unknown; $metadata?: { httpStatusCode?: number } } | undefined;
  for (let depth = 0; e && typeof e === "object" && depth < 6; depth++, e = e.cause as typeof e) {
    const status = e.$metadata?.httpStatusCode ?? 0;
    if (TRANSIENT_AWS_ERRORS.has(e.name ?? "") || TRANSIENT_NETWORK_CODES.has(e.code ?? "") || e.$retryable || status >= 500 || status === 429) {
      return { kind: "transient", message: `${e.name ?? "Error"}: ${e.message ?? "temporarily unavailable"}`, retryAfterMs: 0 };
    }
  }
  return { kind: "defect" };
}

type Ended =
  | { status: "executed"; result: Record<string, unknown>; settled: boolean }
  | { status: "failed"; error: string; cause?: unknown }
  | { status: "transient"; error: string; retryAfterMs: number; spent?: Spent | null }
  | { status: "lost" };

/** How a tool's (or a precondition's) error ends the execution. */
function ended(err: unknown): Ended {
  if (err instanceof SettlementRefused) return { status: "lost" };
  const failure = classify(err);
  if (failure.kind === "transient") return { status: "transient", error: failure.message, retryAfterMs: failure.retryAfterMs };
  // Our errors carry a message meant for people; anything else is a defect whose details stay in the logs.
  if (failure.kind === "decided") return { status: "failed", error: failure.message };
  return { status: "failed", error: "execution failed with an internal error", cause: err };
}

/**
 * Run the claimed row's tool, handing it the settlement. @returns how it ended (never throws for the tool's own
 * failures); `settled` when the tool built the settlement (its transaction may then have finished the row).
 */
async function run(row: PendingActionItem, owner: string): Promise<Ended> {
  const approver = row.resolved_by;
  if (!approver) return { status: "failed", error: "no approving member is recorded" };
  try {
    await requireMember(approver, row.workspace_id);
  } catch (err) {
    if (err instanceof AppError && (err.code === "FORBIDDEN" || err.code === "NOT_FOUND")) {
      return { status: "failed", error: "approver is no longer a member" };
    }
    if (classify(err).kind === "transient") return ended(err);
    throw err;
  }
  const tool = gatedTool(row.tool_name);
  if (!tool) return { status: "failed", error: `unknown tool ${row.tool_name}` };
  const input = { ...((row.tool_input as Record<string, unknown>) ?? {}), ...((row.user_edits as Record<string, unknown>) ?? {}) };
  const parsed = parseToolInput(tool, input);
  if (!parsed.ok) return { status: "failed", error: `Invalid input: ${parsed.problems}` };
  let settled = false;
  // The tool's charged run (its id derived from the action) registers its charge here when it reserves.
  const delivery: Delivery = {
    workspaceId: row.workspace_id,
    actionId: row.id,
    runId: runIdFor({ pendingActionId: row.id })!,
    // The run keeps its hold (no release, no settle) when this execution will be retried after its error: deferred
    // (transient, retries left) or lost to another executor, which runs the same run id and shares the hold. A lease
    // that ran out while the tool worked is read back (only on this failure path): another executor may hold the
    // row now, and a failure of this stale attempt must not settle (or release) the run that one is delivering.
    retriedAfter: async (err) => {
      const end = ended(err);
      if (end.status === "lost" || (end.status === "transient" && (row.retries ?? 0) < MAX_RETRIES)) return true;
      const now = await read(row.workspace_id, row.id);
      return !(now?.status === "executing" && now.lease_owner === owner);
    },
    ...(row.spent ? { carried: row.spent } : {}),
    keepUse: (spent) => keepSpent(row, owner, spent),
  };
  const settle = (result: Record<string, unknown>) => {
    settled = true;
    return settlement(row, owner, result, owedBy(delivery));
  };
  try {
    const ctx = { userId: approver, workspaceId: row.workspace_id, actionId: row.id, approvedAt: row.resolved_at, settle };
    const result = await withDelivery(delivery, () => tool.execute(ctx, parsed.data));
    return { status: "executed", result, settled };
  } catch (err) {
    const end = ended(err);
    // Deferred with its hold kept: what the run used so far (earlier attempts' included) goes on the row for the
    // retry's charge. A run that settled already (work that failed after its run ended) owes nothing more: the row's
    // earlier figure is cleared (null), or the next attempt's record would count it again. Without a charge (failed
    // before reserving), the row's figure stands.
    if (end.status !== "transient" || !delivery.charge) return end;
    const owed = delivery.charge.owed("failed");
    return { ...end, spent: owed ? { tokens: owed.tokens, cost_usd: owed.cost_usd } : null };
  }
}

/**
 * Execute one approved pending action exactly once (DESIGN.md 6.2). Safe to call repeatedly and concurrently for the
 * same row: a row that is not approved (or executing with an expired lease), or a deferred row before its retry time,
 * is skipped, and of concurrent callers only the one whose claim succeeds runs the tool.
 *
 * Runs as the approving member (`resolved_by`), whose membership is checked again (lost → failed "approver is no
 * longer a member"); an unknown tool → failed; userEdits shallow-merged into toolInput and validated with the tool's
 * input (invalid → failed with the validation message); a tool error → deferred when transient (`classify`; failed
 * "gave up after N retries: ..." after MAX_RETRIES), else failed with its message (an AppError's) or a generic one
 * (anything else, returned as `cause` for the caller to log).
 *
 * @param workspaceId the row's workspace; @param id the pending action id.
 * @returns what this call did (see ExecutionOutcome).
 * @throws only infrastructure errors of the row's own reads and writes (DynamoDB unreachable); the drivers retry those.
 */
export async function executeAction(workspaceId: string, id: string): Promise<ExecutionOutcome> {
  const row = await read(workspaceId, id);
  if (!row) return { outcome: "skipped", reason: "no such pending action" };
  const now = Date.now();
  if (row.status === "approved" && row.retry_at && Date.parse(row.retry_at) > now) {
    return { outcome: "skipped", status: row.status, reason: `retry due at ${row.retry_at}`, retryAt: row.retry_at };
  }
  const claimable = row.status === "approved" || (row.status === "executing" && (row.lease_expires_at ?? 0) <= now);
  if (!claimable) return { outcome: "skipped", status: row.status, reason: row.status === "executing" ? "being executed" : `status ${row.status}` };

  // Claims that neither finished nor deferred were interrupted (a crash, a lost lease); deliberate deferrals do not
  // count. For internal tools nothing of an interrupted run was written (the writes commit with the flip), but a
  // row that kills every executor that runs it must not be run forever.
  const interrupted = row.attempts - (row.retries ?? 0);
  if (interrupted >= MAX_ATTEMPTS) {
    const error = `outcome unknown: execution was interrupted ${interrupted} times`;
    return (await giveUp(row, error))
      ? { outcome: "failed", status: "failed", reason: error }
      : { outcome: "skipped", status: row.status, reason: "claim lost" };
  }

  const owner = randomUUID();
  const claimed = await claim(row, owner, now);
  if (!claimed) return { outcome: "skipped", status: row.status, reason: "claim lost" };
  await crashPointReached("after-claim");

  const stop = keepLease(claimed, owner);
  let end: Ended;
  try {
    // One scope per execution: the tool's core calls check the approver's membership once, here.
    end = await withRequestScope(() => run(claimed, owner));
  } finally {
    stop();
  }
  await crashPointReached("after-execute");

  // The row is no longer ours to end: its settlement committed already (the tool's transaction carried it, and what
  // failed came after), or another executor holds it now.
  const elsewhere = async (): Promise<ExecutionOutcome> =>
    (await read(workspaceId, id))?.status === "executed"
      ? { outcome: "executed", status: "executed" }
      : { outcome: "skipped", status: "executing", reason: "lease lost" };
  switch (end.status) {
    case "lost":
      return { outcome: "skipped", status: "executing", reason: "lease lost" };
    case "executed":
      // The tool's transaction carried the settlement: when it committed, the row is executed already.
      if (end.settled) {
        const done = await elsewhere();
        if (done.outcome === "executed") return done;
      }
      return (await finish(claimed, owner, end)) ? { outcome: "executed", status: "executed" } : elsewhere();
    case "failed":
      if (!(await finish(claimed, owner, end))) return elsewhere();
      return { outcome: "failed", status: "failed", reason: end.error, ...(end.cause !== undefined ? { cause: end.cause } : {}) };
    case "transient": {
      const retries = claimed.retries ?? 0;
      if (retries >= MAX_RETRIES) {
        const error = `gave up after ${retries} retries: ${end.error}`;
        return (await finish(claimed, owner, { status: "failed", error })) ? { outcome: "failed", status: "failed", reason: error } : elsewhere();
      }
      const retryAt = new Date(Date.now() + retryDelayMs(retries, end.retryAfterMs)).toISOString();
      return (await defer(claimed, owner, end.error, retryAt, end.spent)) ? { outcome: "deferred", status: "approved", reason: end.error, retryAt } : elsewhere();
    }
  }
}

/** What one sweep did. */
export interface SweepReport {
  /** Rows the sweep looked at (due in the sparse index). */
  due: number;
  executed: number;
  failed: number;
  /** Rows a transient failure put back, to be retried later. */
  deferred: number;
  skipped: number;
  /** Due rows not started because the time left was under a row's budget (the next sweep takes them). */
  left: number;
  /** Unexpected tool errors, for the caller to log. */
  errors: unknown[];
}

/**
 * The time the sweeper leaves for each row it claims, ms: it claims no further row once less than this is left of its
 * run. A row killed with its Lambda counts as an interruption (MAX_ATTEMPTS of them fail it "outcome unknown"), its
 * model calls are paid again and a killed synthesis holds the workspace's lock until its lease runs out, while a row
 * not claimed is only taken by the next sweep a minute later. Tools run 15-60 s under a lease (60 s by default) they
 * renew while they run: two leases, at least 2 minutes.
 */
export const sweepRowBudgetMs = (): number => Math.min(Math.max(120_000, 2 * leaseMs()), SWEEP_ROW_BUDGET_MAX_MS);

/**
 * The most a row's budget may be, ms: two thirds of the executor Lambda's 300 s (stacks/PendingActions.ts
 * EXECUTOR_TIMEOUT_SECONDS), so a long lease setting (PENDING_ACTION_LEASE_SECONDS of 150 or more) still leaves the
 * sweeper time to claim rows instead of none.
 */
const SWEEP_ROW_BUDGET_MAX_MS = 200_000;

/**
 * The sweeper (DESIGN.md 6.2): re-drive the rows the stream did not finish. Queries the sparse `due` index (never a
 * Scan) for approved rows approved more than the grace period ago, deferred rows whose retry time has come, and
 * executing rows whose lease expired, and runs `executeAction` on each, a few at a time.
 * @param opts.graceMs how long an approved row is left to the stream (default `sweepGraceMs()`, 30 s); the embedded
 *   runtime passes 0 at start-up, when no stream record from before it started will ever arrive.
 * @param opts.limit at most this many rows per sweep (default 200); the next sweep takes the rest.
 * @param opts.timeLeftMs the time left to the caller's run (a Lambda's `getRemainingTimeInMillis`), asked before each
 *   claim: under `rowBudgetMs` no further row is started, and the rows in flight are finished. Without it there is
 *   no deadline (the embedded runtime).
 * @param opts.rowBudgetMs what one row may need, ms (default {@link sweepRowBudgetMs}).
 */
export async function sweep(opts: { graceMs?: number; limit?: number; timeLeftMs?: () => number; rowBudgetMs?: number } = {}): Promise<SweepReport> {
  // due_at = approved_at + default grace (or lease expiry); a shorter grace looks that much further ahead.
  const horizon = new Date(Date.now() + sweepGraceMs() - (opts.graceMs ?? sweepGraceMs())).toISOString();
  const { data } = await db()
    .entities.pendingAction.query.due({ sweep: DUE })
    .lte({ due_at: horizon })
    .go({ limit: opts.limit ?? 200 });
  const report: SweepReport = { due: data.length, executed: 0, failed: 0, deferred: 0, skipped: 0, left: 0, errors: [] };
  const queue = [...data];
  const budget = opts.rowBudgetMs ?? sweepRowBudgetMs();
  // A row started without the time to finish would be killed mid-run with the Lambda: leave it to the next sweep.
  const next = () => {
    if (opts.timeLeftMs && queue.length > 0 && opts.timeLeftMs() < budget) {
      report.left += queue.length;
      queue.length = 0;
    }
    return queue.shift();
  };
  const worker = async () => {
    for (let row = next(); row; row = next()) {
      const done = await executeAction(row.workspace_id, row.id);
      report[done.outcome]++;
      if (done.cause !== undefined) report.errors.push(done.cause);
    }
  };
  await Promise.all(Array.from({ length: 4 }, worker));
  return report;
}
