/**
 * The stale-reservation sweeper (DESIGN.md 6.3: "A sweeper releases stale reservations"). A run reserves before it
 * starts and settles when it ends; a process that dies in between (a Lambda timeout, a crash, a stream whose host
 * went away) leaves its hold open, and the held credits would stay unusable. Holds older than `STALE_HOLD_MS` are
 * released: nothing still running can own one (a Lambda lives at most 15 minutes, a stream 300 s). A run that does
 * settle after its release is charged from the spendable balance (ledger `settle`), so nothing is charged twice
 * and nothing is lost.
 */
import { db } from "../db/service";
import { BOOST_EXPIRY_DUE, OPEN_HOLDS } from "./account.entity";
import { expireBoosts, release } from "./ledger";

/** Age after which an open reservation is stale: above the longest a run can live (a 15-minute Lambda), with margin. */
export const STALE_HOLD_MS = 20 * 60_000;

/** What one sweep did. */
export interface HoldSweepReport {
  /** Open holds older than the cut-off that were looked at. */
  stale: number;
  /** Holds this sweep released (another sweeper or the run's own settle may have closed the rest first). */
  released: number;
  credits_returned: number;
  errors: unknown[];
}

/**
 * Release every reservation older than `olderThanMs` (default `STALE_HOLD_MS`), oldest first, at most `limit` per
 * sweep; reads the `open` index of holds (never scans). Each release is the ledger's once-only `release`, so two
 * sweepers, or a sweeper racing the run's own settle, close a hold once. Errors are collected, not thrown, so one bad
 * account does not stop the sweep.
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
  const report: HoldSweepReport = { stale: data.length, released: 0, credits_returned: 0, errors: [] };
  for (const hold of data) {
    try {
      const closing = await release(hold.user_id, hold.run_id);
      if (closing.applied) {
        report.released += 1;
        report.credits_returned += closing.returned;
      }
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
