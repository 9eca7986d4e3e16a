/**
 * Deleting a document (spec 01 `DELETE /api/documents/{id}`) so that a crash at any step is finished without a
 * person: the DELETE marks the document `deleting_at` and writes a deletion record (./deletion.entity.ts) in one
 * transaction, removes the document's children, the document and its stored texts, and deletes the record last. A
 * DELETE that dies part-way leaves the record, and the recovery sweeper (`sweepDocumentDeletions`, every minute with
 * the research sources' sweep: functions/events/source-sweeper.ts) finishes it once it is due.
 *
 * Every step is idempotent (deleting what is gone is a no-op), so the sweeper and a DELETE sent again may run the
 * same deletion at once.
 */
import { createWriteTransaction } from "electrodb";
import { isConditionalFailure } from "../db/errors";
import { transactRetryingConflicts } from "../db/transact";
import { sweepDue, type DueSweepReport } from "../db/due-sweep";
import { AppError } from "../error";
import { deleteKeys, partitionKeys } from "../db/partition";
import { db } from "../db/service";
import { deletePrefix } from "../storage";
import { partitionOf } from "../workspace/keys";
import { documentPrefix } from "./content";
import { DELETION_SWEEP } from "./deletion.entity";

/**
 * How long after a DELETE began the sweeper may finish it (ms): longer than a request of the documents Lambda can run
 * (API Gateway ends it after 29 s), so a DELETE in progress is not raced for nothing (racing it would be harmless).
 */
export const DELETION_GRACE_MS = 120_000;
/** The longest wait between the sweeper's tries of one deletion (ms); each failed try doubles it up to this. */
export const DELETION_MAX_WAIT_MS = 3_600_000;
/** Deletions one sweep finishes, at most (the oldest due first); the rest wait for the next sweep. */
export const DELETION_SWEEP_LIMIT = 100;

const due = (from: number, attempts: number) => new Date(from + Math.min(DELETION_GRACE_MS * 2 ** attempts, DELETION_MAX_WAIT_MS)).toISOString();

/**
 * Begin a document's deletion: mark it `deleting_at` (from then on block and annotation creates, revision saves,
 * restores and status changes refuse it: core/document/block-ops.ts, ./index.ts) and write its deletion record, in
 * one transaction. A document already marked (a DELETE sent again) keeps its first mark; its record is written again,
 * due a grace from now.
 * @returns false when the document item is gone (another deletion removed it): what is left of it is still deleted
 * @throws AppError CONFLICT (409, retryable) when the transaction kept colliding with other writes on the document;
 *   Error from DynamoDB: nothing was written in either case, the DELETE can be sent again
 */
export async function beginDocumentDeletion(workspaceId: string, documentId: string, now = Date.now()): Promise<boolean> {
  // A collision with another transaction on the document item (a block create, a ticket write) wrote nothing: it is
  // sent again, then refused as a conflict the client may retry.
  const codes = await transactRetryingConflicts(
    () =>
      createWriteTransaction(db().pick("document", "documentDeletion"), ({ document, documentDeletion }) => [
        document
          .patch({ workspace_id: workspaceId, id: documentId })
          // `if_not_exists`: a DELETE sent again keeps the first mark.
          .data((a, op) => {
            op.ifNotExists(a.deleting_at, new Date(now).toISOString());
          })
          .commit(),
        documentDeletion.put({ workspace_id: workspaceId, document_id: documentId, sweep: DELETION_SWEEP, due_at: due(now, 0), attempts: 0 }).commit(),
      ]).go(),
    BEGIN_TRIES,
    () => new AppError("CONFLICT", "The document kept changing while its deletion began; retry", { retryable: true }),
  );
  if (codes.length === 0) return true;
  if (codes[0] === "ConditionalCheckFailed") return false;
  throw new Error(`the deletion of document ${documentId} could not begin: ${codes.join(", ")}`);
}

/** How many times the deletion's first transaction is tried when it collides with another on the document. */
const BEGIN_TRIES = 5;

/**
 * Remove a document whose deletion has begun: its children (blocks, revisions, annotations), then the document item,
 * then its stored texts, then the deletion record. Items go before objects, so a failure part-way leaves
 * unreferenced objects, never an item pointing at nothing; the record goes last, so a failure leaves it for the
 * sweeper. Idempotent.
 * @throws Error from DynamoDB or S3: the deletion stopped part-way; the record stays and the sweeper finishes it
 */
export async function finishDocumentDeletion(workspaceId: string, documentId: string): Promise<void> {
  const own = `document#${documentId}`;
  const keys = await partitionKeys(partitionOf(workspaceId), own);
  await deleteKeys(keys.filter((k) => k.sk !== own));
  await deleteKeys(keys.filter((k) => k.sk === own));
  await deletePrefix(documentPrefix(workspaceId, documentId));
  await db().entities.documentDeletion.delete({ workspace_id: workspaceId, document_id: documentId }).go();
}

/** What one sweep of unfinished document deletions did (`paused` stays 0: a document's deletion runs whole). */
export type DeletionSweepReport = DueSweepReport;

/**
 * Finish every document deletion whose record is due (`due_at` at or before `now`), oldest first, at most `limit`:
 * reads the sparse `due` index (never scans). Each record is first moved to its next due time (twice the last wait,
 * at most `DELETION_MAX_WAIT_MS`), conditioned on the due time read, so two sweeps at once finish it once; then the
 * deletion runs, and its last step deletes the record. A deletion that fails is tried again after that wait, without
 * end: the user asked for the document to go. Errors are collected, not thrown, so one deletion does not stop the
 * sweep.
 * @param opts.now the sweep's clock (ms since the epoch; tests pass a later time instead of waiting)
 * @param opts.workspaceId only this workspace's records (tests that share a table)
 */
export async function sweepDocumentDeletions(opts: { now?: number; limit?: number; workspaceId?: string } = {}): Promise<DeletionSweepReport> {
  const now = opts.now ?? Date.now();
  const { data } = await db()
    .entities.documentDeletion.query.due({ sweep: DELETION_SWEEP })
    // `~` sorts after every character of a time: records due at `now` exactly are in range.
    .lte({ due_at: `${new Date(now).toISOString()}~` })
    .where((a, op) => (opts.workspaceId ? op.eq(a.workspace_id, opts.workspaceId) : ""))
    .go({ limit: opts.limit ?? DELETION_SWEEP_LIMIT });
  return sweepDue(data, {
    claim: async (record, dueAt, attempts) => {
      await db()
        .entities.documentDeletion.patch({ workspace_id: record.workspace_id, document_id: record.document_id })
        .set({ sweep: DELETION_SWEEP, due_at: dueAt, attempts })
        .where((a, op) => op.eq(a.due_at, record.due_at))
        .go();
    },
    run: async (record) => {
      await finishDocumentDeletion(record.workspace_id, record.document_id);
      return "finished";
    },
    nextDue: due,
  }, { now });
}
