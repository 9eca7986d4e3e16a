/**
 * One sweep over durable records that are due (a deletion begun and not finished): each is claimed by moving it to
 * its next due time, conditioned on the due time read, so two sweeps at once run it once; then its work runs. Shared
 * by the document and workspace deletion sweeps (core/document/deletion.ts, core/workspace/deletion.ts), which differ
 * only in their records, their work and whether that work pauses on a budget.
 */
import { isConditionalFailure } from "./errors";

/** What one sweep did. */
export interface DueSweepReport {
  /** Due records the sweep read. */
  due: number;
  /** Records whose work finished (by this sweep, or found finished by another run). */
  finished: number;
  /** Records this sweep worked on until its budget ran out: due again at once, for the next sweep. */
  paused: number;
  /** Records another sweep took first, or left for the next sweep once the budget was spent. */
  skipped: number;
  /** Tries that failed (their errors are in `errors`): tried again after a longer wait. */
  failed: number;
  errors: unknown[];
}

/** A due record as a sweep needs it: its due time (ISO 8601) and how many tries it has had. */
export interface DueRecord {
  due_at: string;
  attempts: number;
}

export interface DueSweepSteps<R extends DueRecord> {
  /**
   * Move the record to `dueAt` with `attempts`, only while its due time is `record.due_at` (a conditional write:
   * its refusal, `isConditionalFailure`, means another sweep took it).
   */
  claim(record: R, dueAt: string, attempts: number): Promise<void>;
  /** The record's work; its last step removes the record. "paused": it stopped on the budget after some progress. */
  run(record: R): Promise<"finished" | "paused">;
  /**
   * A paused record is due again at once with its wait reset: move it to `dueAt` with no attempts, only while its due
   * time is `claimed` (a refusal means it finished or was claimed meanwhile). Needed only when `run` can pause.
   */
  resume?(record: R, claimed: string, dueAt: string): Promise<void>;
  /** The next due time after `attempts` tries, from the sweep's clock `now` (ISO 8601). */
  nextDue(now: number, attempts: number): string;
}

/**
 * Claim and run each due record in order. Past `deadline` (ms since the epoch) no new record starts, but the first
 * always does, so each sweep makes progress. Errors are collected in the report, not thrown, so one record does not
 * stop the sweep; a failed run stays claimed until its next due time (then it is tried again, without end).
 * @param now the sweep's clock, ms since the epoch (tests pass a later time instead of waiting)
 */
export async function sweepDue<R extends DueRecord>(records: readonly R[], steps: DueSweepSteps<R>, opts: { now: number; deadline?: number }): Promise<DueSweepReport> {
  const report: DueSweepReport = { due: records.length, finished: 0, paused: 0, skipped: 0, failed: 0, errors: [] };
  for (const [i, record] of records.entries()) {
    if (i > 0 && opts.deadline !== undefined && Date.now() >= opts.deadline) {
      report.skipped += 1;
      continue;
    }
    const claimed = steps.nextDue(opts.now, record.attempts + 1);
    try {
      await steps.claim(record, claimed, record.attempts + 1);
    } catch (err) {
      if (isConditionalFailure(err)) report.skipped += 1;
      else {
        report.failed += 1;
        report.errors.push(err);
      }
      continue;
    }
    try {
      if ((await steps.run(record)) === "finished") {
        report.finished += 1;
        continue;
      }
      report.paused += 1;
      try {
        await steps.resume?.(record, claimed, new Date(opts.now).toISOString());
      } catch (err) {
        // Finished or claimed meanwhile by another run: nothing to reschedule.
        if (!isConditionalFailure(err)) report.errors.push(err);
      }
    } catch (err) {
      report.failed += 1;
      report.errors.push(err);
    }
  }
  return report;
}
