/**
 * The stale-reservation sweeper (DESIGN.md 6.3: "A sweeper releases stale reservations"). A run reserves before it
 * starts and settles when it ends; a process that dies in between (a Lambda timeout, a crash, a stream whose host
 * went away) leaves its hold open, and the held credits would stay unusable. Holds older than `STALE_HOLD_MS` are
 * released: nothing still running can own one (a Lambda lives at most 15 minutes, a stream 300 s). A run that does
 * settle after its release is charged from the spendable balance (ledger `settle`), so nothing is charged twice
 * and nothing is lost.
 *
 * Except the hold of an approved pending action's run (it names the action). When the action is executed and its flip
 * recorded what this run owes (the row's `charge`, core/pending-action/executor.ts: a tool that commits inside its
 * run), the hold is settled for that amount through the ledger's own `settle`, as the run would have settled it, and
 * what the run does after its settle is done too: its agent-run record and its trial milestones (core/agent
 * `recordSettledRun`). While the action may still be executed (approved or executing), the hold is left open: the
 * next attempt runs under the same derived run id, for which the ledger reserves once, so it holds nothing of its own,
 * and this hold is what its settle, or a later sweep's after it died, charges against.
 */
import { db } from "../db/service";
import { correctRunCredits, recordSettledRun } from "../agent";
import { BOOST_EXPIRY_DUE, OPEN_HOLDS } from "./account.entity";
import { expireBoosts, release, settle, type Closing, type CreditHold } from "./ledger";
import type { OwedCharge, OwedRun } from "./charge";
import { creditsFor } from "./credits";
import { serviceLog } from "../log";

/** Age after which an open reservation is stale: above the longest a run can live (a 15-minute Lambda), with margin. */
export const STALE_HOLD_MS = 20 * 60_000;
/**
 * Longest a stale hold waits for its pending action to end (approved or executing) before it is released all the
 * same: the executor ends an action within about an hour on Lambda (MAX_ATTEMPTS interrupted claims, MAX_RETRIES
 * deferrals backing off to 60 s), but a tool hung on the embedded runtime renews its lease for as long as the process
 * lives, and its credits must not stay unusable for that long. A release is safe for a run that settles later (the
 * ledger charges a settle after its release from the spendable balance); only a delivery whose run then dies before
 * its settle goes uncharged.
 */
export const MAX_HOLD_WAIT_MS = 6 * 3600_000;

/** What one sweep did. */
export interface HoldSweepReport {
  /** Open holds older than the cut-off that were looked at. */
  stale: number;
  /** Holds this sweep released (another sweeper or the run's own settle may have closed the rest first). */
  released: number;
  /** Held credits given back by those releases and these settlements. */
  credits_returned: number;
  /** Holds of delivered work (an executed pending action's run) this sweep settled for what the run owed. */
  settled: number;
  /** Credits those settlements charged. */
  credits_charged: number;
  /** Holds left open because their pending action may still be executed (approved or executing). */
  waiting: number;
  errors: unknown[];
}

/** What to do with a stale hold (`fateOf`). */
type Fate =
  | { act: "release" }
  | { act: "wait" }
  | { act: "settle"; workspaceId: string; owed: OwedCharge; summary: { input: unknown; output: unknown } };

/**
 * What to do with a stale hold, from the pending action it names (read strongly consistent):
 * - executed, and its flip recorded a charge for this very run and payer: settle for it (the work was delivered);
 * - approved or executing: wait (a later attempt of the same run may deliver, and this is the run's only hold), for
 *   at most MAX_HOLD_WAIT_MS from the hold's creation, then release;
 * - failed, with use its attempts kept on the row (`spent`): settle it as a failed run (no agent-run record);
 * - anything else (no action named, the action gone, failed without use, executed without this run's charge): release.
 */
async function fateOf(hold: CreditHold, now: Date): Promise<Fate> {
  if (!hold.action_workspace_id || !hold.action_id) return { act: "release" };
  const { data: row } = await db().entities.pendingAction.get({ workspace_id: hold.action_workspace_id, id: hold.action_id }).go({ consistent: true });
  if (row?.status === "approved" || row?.status === "executing") {
    if (now.getTime() - Date.parse(hold.created_at) <= MAX_HOLD_WAIT_MS) return { act: "wait" };
    serviceLog("billing").error("a credit hold waited longer than its pending action may run, and is released", { run_id: hold.run_id, action_id: hold.action_id, status: row.status, held_since: hold.created_at });
    return { act: "release" };
  }
  const spent = row?.status === "failed" ? row.spent : undefined;
  if (spent && (spent.tokens > 0 || spent.cost_usd > 0)) {
    // Failed after earlier attempts used the model and kept this hold for a retry that never settled (it failed
    // before reserving, or died): that use was spent, and is charged as the failed run's, once.
    const failed: OwedCharge = { user_id: hold.user_id, run_id: hold.run_id, credits: creditsFor(spent.cost_usd, "failed"), tokens: spent.tokens, cost_usd: spent.cost_usd };
    return { act: "settle", workspaceId: row!.workspace_id, owed: failed, summary: { input: null, output: null } };
  }
  const owed = row?.status === "executed" ? row.charge : undefined;
  if (!owed || owed.run_id !== hold.run_id || owed.user_id !== hold.user_id) return { act: "release" };
  const input = { ...((row!.tool_input as Record<string, unknown>) ?? {}), ...((row!.user_edits as Record<string, unknown>) ?? {}) };
  return { act: "settle", workspaceId: row!.workspace_id, owed, summary: { input, output: row!.result ?? null } };
}

/**
 * Close one stale hold as `fateOf` says; null when it is left open. A delivered run is first recorded, with its trial
 * milestones (`recordSettledRun`), then settled: the settle closes the hold, so a sweep that dies before it leaves
 * the hold for the next one, which redoes what is left. Each step is once-only (the record is created only if
 * absent, the milestones and the settle are the ledger's), so a sweeper racing another, or the run's own late settle
 * and record, leaves one record, one milestone grant and one charge; a settle after this one finds it done
 * (`already_applied`).
 */
async function closeStale(hold: CreditHold, now: Date): Promise<Closing | null> {
  const fate = await fateOf(hold, now);
  if (fate.act === "wait") return null;
  if (fate.act === "release") return release(hold.user_id, hold.run_id);
  const { owed, workspaceId } = fate;
  // A charge recorded before the run was described (no `run`) is settled without a record, as it was then.
  const run: OwedRun | undefined = owed.run;
  if (run) await recordSettledRun(workspaceId, { ...owed, run }, fate.summary);
  const closing = await settle(hold.user_id, hold.run_id, owed.credits, { tokens: owed.tokens, costUsd: owed.cost_usd });
  if (run && closing.charged !== owed.credits) await correctRunCredits({ workspace_id: workspaceId, executed_at: run.executed_at, id: owed.run_id }, closing.charged);
  return closing;
}

/**
 * Close every reservation older than `olderThanMs` (default `STALE_HOLD_MS`), oldest first, at most `limit` per
 * sweep; reads the `open` index of holds (never scans). A hold whose run delivered its work (an executed pending
 * action that recorded the run's charge) is settled for that charge, after the run's agent-run record and trial
 * milestones are written (`recordSettledRun`); a hold whose action may still be executed is left open (`waiting`; it is
 * looked at again by each sweep until the action ends, at most MAX_HOLD_WAIT_MS); every other is released. Each is
 * the ledger's once-only `settle` or `release`, so two sweepers, or a sweeper racing the run's own settle, close a
 * hold once (DESIGN.md 6.3; spec 02 Credits, Agent run). Errors are collected, not thrown, so one bad account does not stop the sweep.
 * @param opts.now the sweep's clock (tests pass a later time instead of waiting)
 * @param opts.userId only this account's holds (support releasing one account's holds; tests that share a table)
 */
export async function sweepStaleHolds(opts: { now?: Date; olderThanMs?: number; limit?: number; userId?: string } = {}): Promise<HoldSweepReport> {
  const now = opts.now ?? new Date();
  const cutoff = new Date(now.getTime() - (opts.olderThanMs ?? STALE_HOLD_MS)).toISOString();
  const { data } = await db()
    .entities.creditHold.query.open({ sweep: OPEN_HOLDS })
    .lt({ created_at: cutoff })
    .where((a, op) => (opts.userId ? op.eq(a.user_id, opts.userId) : ""))
    .go({ limit: opts.limit ?? 500 });
  const report: HoldSweepReport = { stale: data.length, released: 0, credits_returned: 0, settled: 0, credits_charged: 0, waiting: 0, errors: [] };
  for (const hold of data) {
    try {
      const closing = await closeStale(hold, now);
      if (!closing) {
        report.waiting += 1;
        continue;
      }
      if (!closing.applied) continue;
      report.credits_returned += closing.returned;
      if (closing.kind === "settle") {
        report.settled += 1;
        report.credits_charged += closing.charged;
      } else report.released += 1;
    } catch (err) {
      report.errors.push(err);
    }
  }
  return report;
}

/** What one boost-expiry sweep did. */
export interface BoostSweepReport {
  /** Packs past their expiry still open when the sweep read the index. */
  due: number;
  /** Accounts whose lapsed packs this sweep closed. */
  accounts: number;
  /** Credits the closed packs had left, forfeited (ledger `expire#boost#<id>`). */
  credits_expired: number;
  errors: unknown[];
}

/**
 * Close the boost packs whose 30 days have passed (spec 02 "Boost pack"; DESIGN.md 6.3 `expire` events), for every
 * account, earliest expiry first, at most `limit` packs per sweep: reads the sparse `expiring` index (packs leave it
 * when closed; never a scan) and runs the ledger's `expireBoosts` for each account found, which writes one `expire`
 * item per pack (`expire#boost#<boost id>`, created only if absent), so two sweeps, or a sweep racing a settle that
 * returns credits to the pack, close it once. Afterwards the ledger's deltas again sum to the spendable balance that
 * `GET /credits` shows. Errors are collected, not thrown.
 * @param opts.now the sweep's clock (tests pass a later time instead of waiting)
 * @param opts.userId only this account's packs (tests that share a table)
 */
export async function sweepExpiredBoosts(opts: { now?: Date; limit?: number; userId?: string } = {}): Promise<BoostSweepReport> {
  const now = opts.now ?? new Date();
  const nowIso = now.toISOString();
  const { data } = await db()
    .entities.creditBoost.query.expiring({ expiry: BOOST_EXPIRY_DUE })
    // `~` sorts after every character of an id: the range ends after every pack expiring at `now` exactly.
    .lte({ expires_at: `${nowIso}~` })
    .where((a, op) => (opts.userId ? op.eq(a.user_id, opts.userId) : ""))
    .go({ limit: opts.limit ?? 500 });
  const users = [...new Set(data.filter((b) => b.expires_at <= nowIso).map((b) => b.user_id))];
  const report: BoostSweepReport = { due: data.length, accounts: 0, credits_expired: 0, errors: [] };
  for (const userId of users) {
    try {
      report.credits_expired += await expireBoosts(userId, now);
      report.accounts += 1;
    } catch (err) {
      report.errors.push(err);
    }
  }
  return report;
}
