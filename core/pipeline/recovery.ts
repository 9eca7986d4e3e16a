import { Config } from "../config";
import { isConditionalFailure } from "../db/errors";
import { db } from "../db/service";
import * as Research from "../research";
import { SOURCE_DUE } from "../research/research-source.entity";
import { objectSize } from "../storage";
import { PRESIGN_VALID_SECONDS } from "../storage/presign";
import { hasExtractionTimedOut, isExtractionRunning, startExtraction } from "./index";
import { indexMentions, mentionIndexingEnabled } from "./mentions";

/** What one sweep did, by outcome (counts of sources). */
export interface SourceSweepReport {
  /** Sources the sparse index returned as due. */
  due: number;
  /** An execution of the source's attempt was still running: looked at again later. */
  running: number;
  /** Extraction started again under a new attempt (its execution had died). */
  restarted: number;
  /** Indexed by the sweeper (the execution died, or its Index step failed, after Complete). */
  indexed: number;
  /** Failed with a reason: the upload never arrived, its execution timed out, or extraction was interrupted too often. */
  failed: number;
  /** Settled without indexing (indexing is off, or given up: synthesis embeds on the fly). */
  settled: number;
  /** Still waiting: a presigned upload whose URL has not expired, or a write another sweeper won. */
  waiting: number;
  /** Left to the next sweep: too little of the sweep's time was left to start them (`timeLeftMs`). */
  left: number;
  /** Internal errors, one per source that could not be handled this time (it stays due). */
  errors: unknown[];
}

/** How long a presigned upload URL is valid, ms (the one setting reprocess also reads: core/research). */
const PRESIGN_VALID_MS = PRESIGN_VALID_SECONDS * 1000;

/**
 * The recovery sweeper of research sources (issue #10; the pattern of DESIGN.md 6.2): the durable record drives the
 * work. Every source whose extraction or indexing is still owed sits in the sparse `due` index (gsi3,
 * `source#due`) until it settles; this Queries the entries due by now (never Scans) and, for each:
 *
 * - an execution of its attempt is still running (Step Functions' DescribeExecution in AWS, the local runner's own
 *   record on the embedded runtime): it is looked at again after as long as its work has run so far, between the
 *   grace and MAX_RUNNING_LEASE_MS (runningLease), so a long backlog is looked at a few times, not once per grace;
 * - pending, and its file never arrived: a presigned upload waits until its URL expires (then fails with "the
 *   upload did not arrive"); a multipart upload interrupted between the item and the object fails at once;
 * - pending, and its execution ended by the state machine's own timeout (TIMED_OUT in AWS, where no Catch runs, so
 *   MarkFailed never did): fails with a timeout reason, since a new attempt would redo the same slow work (and
 *   start another paid Textract or Transcribe job);
 * - pending otherwise (the S3 event or the execution was lost, the process crashed): a new attempt starts, the
 *   bump conditioned on the attempt the sweeper saw, so two sweepers cannot both restart it; after
 *   Config.sourceMaxRecoveries restarts the source fails with a reason instead of looping;
 * - completed and not indexed: indexed here (embedding is idempotent: same vectors, same key), up to the same
 *   bound, then settled unindexed (synthesis embeds on the fly).
 *
 * @param opts.now the sweep's clock (default now); `all` looks at every unsettled source whatever its due time (the
 *   embedded runtime at start-up: nothing of a previous process runs any more); `workspaceId` limits the sweep to one
 *   workspace (tests share a table).
 * @param opts.timeLeftMs the time left to the caller's run, ms (a Lambda's `getRemainingTimeInMillis`), asked before
 *   each source: under SOURCE_STEP_BUDGET_MS no further source is looked at, and under INDEX_RECOVERY_BUDGET_MS no
 *   indexing is started (its source stays due, `left`), so the Lambda is not killed part-way through an embedding
 *   that then counts against the source's attempts. Without it there is no deadline (the embedded runtime).
 */
export async function sweepSources(
  opts: { now?: number; all?: boolean; workspaceId?: string; limit?: number; timeLeftMs?: () => number } = {},
): Promise<SourceSweepReport> {
  const now = opts.now ?? Date.now();
  const query = db().entities.researchSource.query.due({ sweep: SOURCE_DUE });
  const { data } = await (opts.all ? query : query.lte({ due_at: new Date(now).toISOString() }))
    .where((attr, op) => (opts.workspaceId ? op.eq(attr.workspace_id, opts.workspaceId) : ""))
    .go({ limit: opts.limit ?? 200 });
  const report: SourceSweepReport = { due: data.length, running: 0, restarted: 0, indexed: 0, failed: 0, settled: 0, waiting: 0, left: 0, errors: [] };
  const queue = [...data];
  const timeLeft = opts.timeLeftMs ?? (() => Number.POSITIVE_INFINITY);
  const next = () => {
    if (queue.length > 0 && timeLeft() < SOURCE_STEP_BUDGET_MS) {
      report.left += queue.length;
      queue.length = 0;
    }
    return queue.shift();
  };
  // Indexing embeds on this process; two at a time, as the local runner's Index limit.
  const worker = async () => {
    for (let item = next(); item; item = next()) {
      try {
        report[await recover(item, now, timeLeft)]++;
      } catch (err) {
        report.errors.push(err);
      }
    }
  };
  await Promise.all(Array.from({ length: 2 }, worker));
  return report;
}

type Outcome = Exclude<keyof SourceSweepReport, "due" | "errors">;

/**
 * Time a sweep needs left to look at one more source, ms: a few reads and a conditional write, or the start of an
 * extraction (anything slow runs in the execution it starts, not here).
 */
export const SOURCE_STEP_BUDGET_MS = 15_000;
/**
 * Time a sweep needs left to start indexing a source here, ms: embedding a source's mentions (the Index step's work,
 * given 300 s there) is usually seconds, but under throttling its retries take far longer, and a sweep killed
 * part-way has spent one of the source's attempts for nothing.
 */
export const INDEX_RECOVERY_BUDGET_MS = 120_000;
/**
 * How long a sweeper's claim on a source it indexes holds, ms: longer than the sweeper Lambda may run (300 s,
 * stacks/Pipelines.ts) with a margin, so a sweep of the next minutes does not claim and embed the same source while
 * this one still embeds it (claims are conditioned on the due time read, so one claim wins, but only while the first
 * claim's due time has not come). A sweeper killed part-way leaves the source due after this.
 */
export const INDEX_CLAIM_MS = 360_000;

async function recover(seen: Research.SourceItem, now: number, timeLeft: () => number): Promise<Outcome> {
  // The index entry may be stale by now (eventually consistent GSI): decide on the item itself.
  const item = await Research.getItem(seen.workspace_id, seen.id);
  if (!item || item.sweep !== SOURCE_DUE) return "waiting";
  if (await isExtractionRunning({ source_id: item.id, attempt: item.processing_attempt })) {
    return (await pushDue(item, runningLease(item, now))) ? "running" : "waiting";
  }
  if (item.processing_status === "pending") return recoverPending(item, now);
  if (item.processing_status === "completed" && !item.indexed) return recoverIndexing(item, now, timeLeft);
  // Failed or indexed with the sweep fields left behind (a write from before they were kept): settle it.
  await Research.settleUnindexed(item.workspace_id, item.id);
  return "settled";
}

async function recoverPending(item: Research.SourceItem, now: number): Promise<Outcome> {
  if ((await objectSize(item.file_key)) === null) {
    const expires = Date.parse(item.created_at) + PRESIGN_VALID_MS;
    if (item.upload_method === "presigned" && now < expires) {
      // The client may still upload: look again once its URL has expired.
      await pushDue(item, Research.dueAfterGrace(expires));
      return "waiting";
    }
    const reason =
      item.upload_method === "presigned"
        ? "The file did not arrive before its upload URL expired; upload it again"
        : "The upload was interrupted before the file was stored; upload it again";
    return (await Research.markFailed(item.workspace_id, item.id, item.processing_attempt, reason)) ? "failed" : "waiting";
  }
  if (await hasExtractionTimedOut({ source_id: item.id, attempt: item.processing_attempt })) {
    const reason = "Extraction ran past its time limit and was stopped; try reprocessing, or split the file into smaller parts";
    return (await Research.markFailed(item.workspace_id, item.id, item.processing_attempt, reason)) ? "failed" : "waiting";
  }
  const recoveries = item.recoveries ?? 0;
  if (recoveries >= Config.sourceMaxRecoveries()) {
    const reason = `Extraction was interrupted ${recoveries + 1} times without finishing; try reprocessing, or split the file`;
    return (await Research.markFailed(item.workspace_id, item.id, item.processing_attempt, reason)) ? "failed" : "waiting";
  }
  const attempt = item.processing_attempt + 1;
  try {
    await db()
      .entities.researchSource.patch({ workspace_id: item.workspace_id, id: item.id })
      .set({ processing_attempt: attempt, recoveries: recoveries + 1, sweep: SOURCE_DUE, due_at: Research.dueAfterGrace(now) })
      .where((attr, op) => `${op.eq(attr.processing_status, "pending")} AND ${op.eq(attr.processing_attempt, item.processing_attempt)}`)
      .go();
  } catch (err) {
    if (isConditionalFailure(err)) return "waiting"; // another sweeper, a reprocess or the execution moved it on
    throw err;
  }
  // If this start is lost too, the new due time brings the source back to the next sweep.
  await startExtraction({ workspace_id: item.workspace_id, source_id: item.id, bucket: Config.bucketName(), key: item.file_key, attempt });
  return "restarted";
}

async function recoverIndexing(item: Research.SourceItem, now: number, timeLeft: () => number): Promise<Outcome> {
  const attempts = item.index_attempts ?? 0;
  if (!mentionIndexingEnabled() || attempts >= Config.sourceMaxRecoveries()) {
    await Research.settleUnindexed(item.workspace_id, item.id);
    return "settled";
  }
  if (timeLeft() < INDEX_RECOVERY_BUDGET_MS) return "left";
  // Count the attempt before the slow work, so a sweeper that dies while embedding still moves towards the bound; the
  // claim outlasts this sweeper's run (INDEX_CLAIM_MS), so no other sweep embeds the source meanwhile.
  const claimUntil = new Date(now + Math.max(INDEX_CLAIM_MS, Config.sourceSweepGraceSeconds() * 1000)).toISOString();
  if (!(await pushDue(item, claimUntil, { index_attempts: attempts + 1 }))) return "waiting";
  const stillCurrent = async () => {
    const current = await Research.getItem(item.workspace_id, item.id);
    if (!current || current.processing_status !== "completed" || current.processing_attempt !== item.processing_attempt) {
      throw new Error(`source ${item.id} changed while it was being indexed`);
    }
  };
  if (!(await indexMentions(item.workspace_id, item.id, stillCurrent))) {
    await Research.settleUnindexed(item.workspace_id, item.id);
    return "settled";
  }
  return "indexed";
}

/**
 * Longest a source whose execution still runs is left alone (ms): how late the sweeper may notice that such an
 * execution ended without settling its source (Step Functions ends every execution within the state machine's
 * TimeoutSeconds; on the embedded runtime a crash is picked up by the start-up sweep, which ignores due times).
 */
export const MAX_RUNNING_LEASE_MS = 10 * 60_000;

/**
 * When to look again at a source whose execution still runs: after as long as its work has already run (since the
 * upload for a pending source, since Complete for one being indexed), at least the grace and at most
 * MAX_RUNNING_LEASE_MS. A fixed grace made a backlog cost one look per unsettled source per grace (a 500-source
 * upload that indexes for 40 minutes: about 16 looks each, each a GetItem, a conditional UpdateItem and in AWS a
 * DescribeExecution); doubling leases make it a handful per source (issue #24 point 4).
 * @returns the ISO due time.
 */
function runningLease(item: Research.SourceItem, now: number): string {
  const started = Date.parse(item.processing_status === "completed" ? (item.processed_at ?? item.created_at) : item.created_at);
  const grace = Config.sourceSweepGraceSeconds() * 1000;
  const ran = Number.isFinite(started) ? now - started : 0;
  return new Date(now + Math.min(MAX_RUNNING_LEASE_MS, Math.max(grace, ran))).toISOString();
}

/**
 * Move a source's due time (and set `extra`), conditioned on the due time and attempt the sweeper read, so of two
 * sweepers only one acts on it. @returns whether this call won.
 */
async function pushDue(item: Research.SourceItem, dueAt: string, extra: { index_attempts?: number } = {}): Promise<boolean> {
  try {
    await db()
      .entities.researchSource.patch({ workspace_id: item.workspace_id, id: item.id })
      .set({ sweep: SOURCE_DUE, due_at: dueAt, ...extra })
      .where((attr, op) => `${op.eq(attr.due_at, item.due_at!)} AND ${op.eq(attr.processing_attempt, item.processing_attempt)} AND ${op.eq(attr.processing_status, item.processing_status)}`)
      .go();
    return true;
  } catch (err) {
    if (isConditionalFailure(err)) return false;
    throw err;
  }
}
