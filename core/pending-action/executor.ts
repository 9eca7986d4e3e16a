import { crashPoint } from "../crash-point";
import { randomUUID } from "node:crypto";
import { AppError } from "../error";
import { db } from "../db/service";
import { Config } from "../config";
import { isConditionalFailure } from "../db/errors";
import { withRequestScope } from "../context";
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
 * 1. Claim: approved → executing with a lease (owner + expiry), one conditional write; an executing row whose lease
 *    expired (its executor died) may be claimed again. Losing the claim means someone else is on it.
 * 2. Run the gated tool as the approving member. Its `execute` is idempotent per action id (ids derived from it,
 *    create-if-absent), so a re-run after a crash between its write and step 3 returns the first write's result.
 * 3. Flip executing → executed (result, executedAt) or failed (error), conditioned on still holding the lease.
 * A row claimed MAX_ATTEMPTS times without finishing ends failed "outcome unknown": never retried forever.
 */

/** Claims after which a row that still has not finished is given up as failed, outcome unknown. */
export const MAX_ATTEMPTS = 5;

/** The lease an executor holds on a claimed row: env `PENDING_ACTION_LEASE_SECONDS` (default 60 s). */
export const leaseMs = (): number => Config.pendingActionLeaseSeconds() * 1000;

/** What one call of `executeAction` did. */
export interface ExecutionOutcome {
  /** executed / failed: this call finished the row; skipped: nothing to do here (not claimable, or claim lost). */
  outcome: "executed" | "failed" | "skipped";
  /** The row's stored status as this call last saw it (undefined when the row does not exist). */
  status?: StoredStatus;
  /** For failed: the error stored on the row. For skipped: why. */
  reason?: string;
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
 * conditional write on exactly the state that was read (status, and for a reclaim the previous lease owner).
 * @returns the claimed row, or null when another executor got there first.
 */
async function claim(row: PendingActionItem, owner: string, now: number): Promise<PendingActionItem | null> {
  const expires = now + leaseMs();
  try {
    const { data } = await db()
      .entities.pendingAction.patch(key(row))
      .set({ status: "executing", lease_owner: owner, lease_expires_at: expires, sweep: DUE, due_at: new Date(expires).toISOString() })
      .add({ attempts: 1 })
      .where((attr, op) =>
        row.status === "executing"
          ? `${op.eq(attr.status, "executing")} AND ${op.eq(attr.lease_owner, row.lease_owner ?? "")}`
          : op.eq(attr.status, "approved"),
      )
      .go({ response: "all_new" });
    return data as PendingActionItem;
  } catch (err) {
    if (isConditionalFailure(err)) return null;
    throw err;
  }
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
  const set =
    end.status === "executed"
      ? { status: "executed" as const, result: storable(end.result), executed_at: new Date().toISOString() }
      : { status: "failed" as const, error: end.error.slice(0, 2000) };
  try {
    await db()
      .entities.pendingAction.patch(key(row))
      .set(set)
      .remove(["sweep", "due_at", "lease_owner", "lease_expires_at"])
      .where((attr, op) => `${op.eq(attr.status, "executing")} AND ${op.eq(attr.lease_owner, owner)}`)
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
 * conditioned on still holding it. A failed extension is harmless: the flip's own condition decides.
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

/**
 * Run the claimed row's tool. @returns how it ended (never throws for the tool's own failures).
 */
async function run(row: PendingActionItem): Promise<{ status: "executed"; result: Record<string, unknown> } | { status: "failed"; error: string; cause?: unknown }> {
  const approver = row.resolved_by;
  if (!approver) return { status: "failed", error: "no approving member is recorded" };
  try {
    await requireMember(approver, row.workspace_id);
  } catch (err) {
    if (err instanceof AppError && (err.code === "FORBIDDEN" || err.code === "NOT_FOUND")) {
      return { status: "failed", error: "approver is no longer a member" };
    }
    throw err;
  }
  const tool = gatedTool(row.tool_name);
  if (!tool) return { status: "failed", error: `unknown tool ${row.tool_name}` };
  const input = { ...((row.tool_input as Record<string, unknown>) ?? {}), ...((row.user_edits as Record<string, unknown>) ?? {}) };
  const parsed = parseToolInput(tool, input);
  if (!parsed.ok) return { status: "failed", error: `Invalid input: ${parsed.problems}` };
  try {
    const result = await tool.execute({ userId: approver, workspaceId: row.workspace_id, actionId: row.id }, parsed.data);
    return { status: "executed", result };
  } catch (err) {
    // Our errors carry a message meant for people; anything else is a defect whose details stay in the logs.
    if (err instanceof AppError) return { status: "failed", error: err.message };
    return { status: "failed", error: "execution failed with an internal error", cause: err };
  }
}

/**
 * Execute one approved pending action exactly once (DESIGN.md 6.2). Safe to call repeatedly and concurrently for the
 * same row: a row that is not approved (or executing with an expired lease) is skipped, and of concurrent callers
 * only the one whose claim succeeds runs the tool.
 *
 * Runs as the approving member (`resolved_by`), whose membership is checked again (lost → failed "approver is no
 * longer a member"); an unknown tool → failed; userEdits shallow-merged into toolInput and validated with the tool's
 * input (invalid → failed with the validation message); a tool error → failed with its message (an AppError's) or a
 * generic one (anything else, returned as `cause` for the caller to log).
 *
 * @param workspaceId the row's workspace; @param id the pending action id.
 * @returns what this call did (see ExecutionOutcome).
 * @throws only infrastructure errors (DynamoDB unreachable); the drivers retry those.
 */
export async function executeAction(workspaceId: string, id: string): Promise<ExecutionOutcome> {
  const row = await read(workspaceId, id);
  if (!row) return { outcome: "skipped", reason: "no such pending action" };
  const now = Date.now();
  const claimable = row.status === "approved" || (row.status === "executing" && (row.lease_expires_at ?? 0) <= now);
  if (!claimable) return { outcome: "skipped", status: row.status, reason: row.status === "executing" ? "being executed" : `status ${row.status}` };

  if (row.attempts >= MAX_ATTEMPTS) {
    // Interrupted this often: whether the last run's write happened cannot be told here; do not try again.
    const owner = row.lease_owner ?? "";
    const error = `outcome unknown: execution was interrupted ${row.attempts} times`;
    return (await finish(row, owner, { status: "failed", error }))
      ? { outcome: "failed", status: "failed", reason: error }
      : { outcome: "skipped", status: row.status, reason: "claim lost" };
  }

  const owner = randomUUID();
  const claimed = await claim(row, owner, now);
  if (!claimed) return { outcome: "skipped", status: row.status, reason: "claim lost" };
  crashPoint("after-claim");

  const stop = keepLease(claimed, owner);
  let ended: Awaited<ReturnType<typeof run>>;
  try {
    // One scope per execution: the tool's core calls check the approver's membership once, here.
    ended = await withRequestScope(() => run(claimed));
  } finally {
    stop();
  }
  crashPoint("after-execute");

  if (!(await finish(claimed, owner, ended))) return { outcome: "skipped", status: "executing", reason: "lease lost" };
  return ended.status === "executed"
    ? { outcome: "executed", status: "executed" }
    : { outcome: "failed", status: "failed", reason: ended.error, ...(ended.cause !== undefined ? { cause: ended.cause } : {}) };
}

/** What one sweep did. */
export interface SweepReport {
  /** Rows the sweep looked at (due in the sparse index). */
  due: number;
  executed: number;
  failed: number;
  skipped: number;
  /** Unexpected tool errors, for the caller to log. */
  errors: unknown[];
}

/**
 * The sweeper (DESIGN.md 6.2): re-drive the rows the stream did not finish. Queries the sparse `due` index (never a
 * Scan) for approved rows approved more than the grace period ago and executing rows whose lease expired, and runs
 * `executeAction` on each, a few at a time.
 * @param opts.graceMs how long an approved row is left to the stream (default `sweepGraceMs()`, 30 s); the embedded
 *   runtime passes 0 at start-up, when no stream record from before it started will ever arrive.
 * @param opts.limit at most this many rows per sweep (default 200); the next sweep takes the rest.
 */
export async function sweep(opts: { graceMs?: number; limit?: number } = {}): Promise<SweepReport> {
  // due_at = approved_at + default grace (or lease expiry); a shorter grace looks that much further ahead.
  const horizon = new Date(Date.now() + sweepGraceMs() - (opts.graceMs ?? sweepGraceMs())).toISOString();
  const { data } = await db()
    .entities.pendingAction.query.due({ sweep: DUE })
    .lte({ due_at: horizon })
    .go({ limit: opts.limit ?? 200 });
  const report: SweepReport = { due: data.length, executed: 0, failed: 0, skipped: 0, errors: [] };
  const queue = [...data];
  const worker = async () => {
    for (let row = queue.shift(); row; row = queue.shift()) {
      const done = await executeAction(row.workspace_id, row.id);
      report[done.outcome]++;
      if (done.cause !== undefined) report.errors.push(done.cause);
    }
  };
  await Promise.all(Array.from({ length: 4 }, worker));
  return report;
}
