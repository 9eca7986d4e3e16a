/**
 * Deleting a workspace (spec 01 `DELETE /api/workspaces/{id}`; spec 02 `user.deleted` for the workspaces a deleted user
 * owns) and removing one membership with its seat. The lower half of core/workspace: it reads and writes the table
 * (and the bucket, loaded when a deletion runs) only, and core/workspace checks the caller's role before calling it.
 *
 * A workspace deletion is resumable, as a document's is (core/document/deletion.ts): it begins with one transaction
 * that marks the owner's membership, writes a deletion record (./deletion.entity.ts) and gives the owner's workspace
 * slot back; from then on the workspace is gone for every reader and for the plan's `max_workspaces`. The cascade then
 * runs within a work budget, page by page, and its last transaction deletes the record. Whatever a request could not
 * finish, the recovery sweeper (`sweepWorkspaceDeletions`, every minute: functions/events/source-sweeper.ts) goes on
 * with once the record is due. Every step is idempotent, so the sweeper, a DELETE sent again and a redelivered
 * `user.deleted` may run the same deletion at once.
 */
import { createWriteTransaction } from "electrodb";
import { QueryCommand } from "@aws-sdk/lib-dynamodb";
import { Config } from "../config";
import { db } from "../db/service";
import { dynamoClient } from "../db/client";
import { cancelCodes, isConditionalFailure } from "../db/errors";
import { sweepDue, type DueSweepReport } from "../db/due-sweep";
import { conflictPause, transactRetryingConflicts } from "../db/transact";
import { deleteKeys, partitionKeys } from "../db/partition";
import { AppError, Errors } from "../error";
import { COUNTED_TRIES } from "../billing/counters";
import { serviceLog } from "../log";
import { partitionOf } from "./keys";
import { WORKSPACE_DELETION_SWEEP } from "./deletion.entity";
import { markDelete } from "../db/slim-index";
import { TASK_LIST_INDEX } from "../task/task.entity";
import { PENDING_ACTION_LIST_INDEX } from "../pending-action/pending-action.entity";
import { AGENT_RUN_LIST_INDEX } from "../agent/agent-run.entity";
import { ANSWER_INDEX } from "../chat/conversation.entity";
import { purgeUserConversations } from "../chat/purge";
import { DOCUMENT_INDEX } from "../document/document.entity";

const memberSk = (userId: string) => `member#${userId}`;
const WORKSPACE_SK = "workspace";
/** The deletion record's sort key (./deletion.entity.ts). */
const RECORD_SK = "wsdelete";

/**
 * How long after a deletion began the sweeper may go on with it (ms): longer than a request of the workspaces Lambda
 * (or the identity-provider webhook's) can run, so a request still deleting is not raced for nothing (racing it would
 * be harmless).
 */
export const WORKSPACE_DELETION_GRACE_MS = 120_000;
/** The longest wait between the sweeper's failed tries of one deletion (ms); each failed try doubles it up to this. */
export const WORKSPACE_DELETION_MAX_WAIT_MS = 3_600_000;
/**
 * The cascade's work budget in a request (ms): a DELETE (or one `user.deleted` delivery, for all the workspaces its
 * user owns) stops starting new pages past it and answers; the sweeper goes on. Well inside API Gateway's 29 s.
 */
export const WORKSPACE_DELETION_BUDGET_MS = 12_000;
/**
 * One sweep's work budget for workspace deletions (ms): under the sweeper Lambda's 300 s and under the wait a claim
 * sets (twice the grace), so no other sweep takes a deletion while this one still works on it.
 */
export const WORKSPACE_SWEEP_BUDGET_MS = 150_000;
/** Workspace deletions one sweep reads, at most (the oldest due first); the rest wait for the next sweep. */
export const WORKSPACE_SWEEP_LIMIT = 25;
/** Other members' memberships deleted in the deletion's first transaction, at most (DynamoDB's limit is 100 items). */
const MEMBERS_IN_BEGIN = 90;
/** Keys read per Query page of the cascade: each page is deleted before the next is read. */
const PAGE_KEYS = 1_000;
/** BatchWrites of one page in flight at once. */
const DELETE_CONCURRENCY = 4;

const due = (from: number, attempts: number) =>
  new Date(from + Math.min(WORKSPACE_DELETION_GRACE_MS * 2 ** attempts, WORKSPACE_DELETION_MAX_WAIT_MS)).toISOString();

/** The deletion record's entity, bound to the configured table and client. */
const deletions = () => db().entities.workspaceDeletion;

/**
 * Whether a workspace's deletion has begun and not finished (its record exists; strongly consistent): for work that
 * starts without a member's request (the nightly research cycles), which no membership check stops.
 */
export async function deletionBegun(workspaceId: string): Promise<boolean> {
  return (await deletions().get({ workspace_id: workspaceId }).go({ consistent: true })).data !== null;
}

/**
 * Begin a workspace's deletion, in one transaction: the owner's membership is marked `deleting_at` (kept if already
 * set: `if_not_exists`), so every membership check refuses it (core/workspace `live`), and leaves the user index
 * (gsi2), so the owner's workspaces list and the plan gate's count of owned workspaces (core/billing/gates.ts) leave
 * it out; the other memberships are deleted (up to `MEMBERS_IN_BEGIN`), so the workspace leaves their lists and reads
 * too; the deletion record is created, due a grace from `now`; the owner's workspace slot (`workspaces_owned`) goes
 * back, so the workspace stops counting against the plan's `max_workspaces` at once. The record's create is
 * conditioned on there being none, so a deletion begun twice (two DELETEs, a redelivered `user.deleted`) gives the
 * slot back once. A workspace marked by a deletion older than the records (no record) gets its record and its slot
 * back now: that deletion gave the slot back only in its last step.
 * @param ownerId the workspace's owner (the caller has checked it)
 * @param now the deletion's start, ms since the epoch (tests pass another clock)
 * @returns false when the owner's membership is gone (the deletion finished already); true when the deletion has
 *   begun, now or before
 * @throws AppError SERVICE_UNAVAILABLE (503, retryable) when the transaction kept colliding with other writes (nothing
 *   was written); Error from DynamoDB (nothing was written either)
 */
export async function beginWorkspaceDeletion(ownerId: string, workspaceId: string, now = Date.now()): Promise<boolean> {
  // The other members lose access in the same transaction, as many as it holds (a member added after this read, or
  // past the limit, goes in the cascade's first step).
  const others = (await partitionKeys(partitionOf(workspaceId), "member#")).filter((k) => k.sk !== memberSk(ownerId)).slice(0, MEMBERS_IN_BEGIN);
  for (let attempt = 1; attempt <= COUNTED_TRIES; attempt++) {
    const { data: account } = await db().entities.billingAccount.get({ user_id: ownerId }).go({ consistent: true });
    const owned = account?.workspaces_owned ?? 0;
    const result = await createWriteTransaction(
      db().pick("billingAccount", "workspaceDeletion"),
      ({ billingAccount, workspaceDeletion }) => [
        // Raw, as ElectroDB keeps an index's keys: the owner's membership leaves the user index (gsi2), which the
        // workspaces list, the plan gate's count of owned workspaces and `user.deleted` read, at once.
        {
          Update: {
            TableName: Config.tableName(),
            Key: { pk: partitionOf(workspaceId), sk: memberSk(ownerId) },
            UpdateExpression: "SET deleting_at = if_not_exists(deleting_at, :now) REMOVE gsi2pk, gsi2sk",
            ConditionExpression: "attribute_exists(pk) AND #role = :owner",
            ExpressionAttributeNames: { "#role": "role" },
            ExpressionAttributeValues: { ":now": new Date(now).toISOString(), ":owner": "owner" },
          },
        } as never,
        workspaceDeletion.create({ workspace_id: workspaceId, owner_id: ownerId, sweep: WORKSPACE_DELETION_SWEEP, due_at: due(now, 0), attempts: 0 }).commit(),
        // The slot goes back with the record, once (never below 0; an account older than the counter has none).
        ...(owned > 0 ? [billingAccount.patch({ user_id: ownerId }).subtract({ workspaces_owned: 1 }).where((a, op) => op.gt(a.workspaces_owned, 0)).commit()] : []),
        ...others.map((Key) => ({ Delete: { TableName: Config.tableName(), Key } }) as never),
      ],
    ).go();
    const codes = cancelCodes(result);
    if (codes.length === 0) return true;
    // The owner's membership is gone: the deletion's last transaction ran.
    if (codes[0] === "ConditionalCheckFailed") return false;
    // A record already: the deletion began before (its slot is back); this run goes on with it.
    if (codes[1] === "ConditionalCheckFailed") return true;
    // Refused for another reason than a collision or a condition (a throttle, a size): nothing was written.
    if (codes.some((c) => !["None", "TransactionConflict", "ConditionalCheckFailed"].includes(c))) {
      throw new Error(`The workspace deletion could not begin (${codes.join(", ")})`);
    }
    // A collision, or the counter moved under its condition: read it again.
    await conflictPause(attempt);
  }
  throw new AppError("SERVICE_UNAVAILABLE", "The workspace is busy; try deleting it again", { retryable: true });
}

/** How a run of a begun deletion ended (`runWorkspaceDeletion`). */
export type DeletionRun = "finished" | "gone" | "paused";

/**
 * Go on with a begun deletion, in an order no write outlives, until it is finished or `deadline` has passed:
 *
 * 1. every membership but the owner's is deleted, so no one else can start a write (this step is not budgeted: a
 *    workspace's members are few, and they must lose access first);
 * 2. two passes, each: the stored files (`workspaces/<id>/`), then the partition page by page (a strongly consistent
 *    Query of keys, `PAGE_KEYS` at a time, each page deleted before the next is read, from the last key read), all but
 *    the owner's membership, the workspace item and the record; the second pass deletes what a request already past
 *    its membership check wrote during the first. Past the deadline no new pass or page starts;
 * 3. one transaction deletes the workspace item (conditioned on it), the owner's membership, the list indexes' marks
 *    (documents, tasks, assistant messages: core/db/slim-index.ts) and the record.
 *
 * A run stopped at any point leaves the record, so another run (the sweeper's, a DELETE sent again) starts over from
 * step 1 and finds only what is left.
 * @param deadline ms since the epoch after which no new pass or page starts
 * @returns "finished" (this run deleted the last items), "gone" (another run had), "paused" (the deadline came first)
 * @throws Error from S3 or DynamoDB: the run stopped part-way and the record stays
 */
export async function runWorkspaceDeletion(ownerId: string, workspaceId: string, deadline: number): Promise<DeletionRun> {
  const pk = partitionOf(workspaceId);
  const kept = new Set([memberSk(ownerId), WORKSPACE_SK, RECORD_SK]);
  await deleteKeys((await partitionKeys(pk, "member#")).filter((k) => !kept.has(k.sk)));
  // Loaded here, not at import: only deletion needs S3, and the S3 client is a tenth of a workspaces cold start.
  const { deletePrefix, workspacePrefix } = await import("../storage");
  for (let pass = 0; pass < 2; pass++) {
    if (Date.now() >= deadline) return "paused";
    if ((await deletePrefix(workspacePrefix(workspaceId), { deadline })) < 0) return "paused";
    if (!(await deletePartitionPages(pk, kept, deadline))) return "paused";
  }
  const codes = await transactRetryingConflicts(
    () =>
      createWriteTransaction(db().pick("workspace", "membership", "workspaceDeletion"), ({ workspace, membership, workspaceDeletion }) => [
        workspace.remove({ id: workspaceId }).commit(),
        membership.delete({ workspace_id: workspaceId, user_id: ownerId }).commit(),
        // The list indexes' marks (core/db/slim-index.ts): a first listing's backfill may have written one after the
        // last pass above; it goes with the workspace item, whose existence its write is conditioned on.
        markDelete(DOCUMENT_INDEX, workspaceId) as never,
        markDelete(TASK_LIST_INDEX, workspaceId) as never,
        markDelete(PENDING_ACTION_LIST_INDEX, workspaceId) as never,
        markDelete(AGENT_RUN_LIST_INDEX, workspaceId) as never,
        markDelete(ANSWER_INDEX, workspaceId) as never,
        workspaceDeletion.delete({ workspace_id: workspaceId }).commit(),
      ]).go(),
    COUNTED_TRIES,
    () => new AppError("SERVICE_UNAVAILABLE", "The workspace is busy; try deleting it again", { retryable: true }),
  );
  if (codes.length === 0) return "finished";
  if (codes[0] === "ConditionalCheckFailed") {
    // The workspace item is gone: this step ran before and something stopped it from being seen (an interrupted
    // clean-up of this branch, or a deletion by code older than the records). What is left goes, record last.
    await db().entities.membership.delete({ workspace_id: workspaceId, user_id: ownerId }).go();
    await deletions().delete({ workspace_id: workspaceId }).go();
    return "gone";
  }
  // Refused for another reason (a throttle, a size): the record stays, and the next run tries again.
  throw new Error(`The workspace deletion's last step was refused (${codes.join(", ")})`);
}

/**
 * Delete a partition's items but `kept`, page by page: each strongly consistent Query page of keys (`PAGE_KEYS`;
 * DynamoDB reads whole items for it all the same) is deleted before the next is read, from the last key read, so a
 * large partition makes progress from its first page instead of being listed whole first.
 * @returns true when the partition was read to its end; false when `deadline` came first
 */
async function deletePartitionPages(pk: string, kept: ReadonlySet<string>, deadline: number): Promise<boolean> {
  let start: Record<string, unknown> | undefined;
  do {
    if (Date.now() >= deadline) return false;
    const page = await dynamoClient().send(
      new QueryCommand({
        TableName: Config.tableName(),
        KeyConditionExpression: "pk = :pk",
        ExpressionAttributeValues: { ":pk": pk },
        ProjectionExpression: "pk, sk",
        ConsistentRead: true,
        Limit: PAGE_KEYS,
        ExclusiveStartKey: start,
      }),
    );
    const keys = (page.Items ?? []).map((i) => ({ pk: i.pk as string, sk: i.sk as string })).filter((k) => !kept.has(k.sk));
    // `deleteKeys` sends its chunks of 25 one after another: a few chunks at once keep a page to a few round trips.
    const chunk = Math.ceil(keys.length / DELETE_CONCURRENCY);
    if (keys.length > 0) await Promise.all(Array.from({ length: DELETE_CONCURRENCY }, (_, i) => deleteKeys(keys.slice(i * chunk, (i + 1) * chunk))));
    start = page.LastEvaluatedKey;
  } while (start);
  return true;
}

/**
 * Delete a workspace and everything in it (spec 01 `DELETE /api/workspaces/{id}`, spec 02 `user.deleted`): begin the
 * deletion (`beginWorkspaceDeletion`: from then on the workspace is gone for its readers and its owner's plan), then
 * run its cascade until `deadline` (`runWorkspaceDeletion`). A cascade that stops on the deadline or on an error is
 * logged, not thrown: the deletion is durable from its first transaction, and the recovery sweeper finishes it a
 * grace (`WORKSPACE_DELETION_GRACE_MS`) after it began.
 * @param ownerId the workspace's owner (the caller has checked it: the membership's role, or `deleting_at` already set)
 * @param opts.deadline ms since the epoch after which the cascade starts no new page (default: now plus
 *   `WORKSPACE_DELETION_BUDGET_MS`)
 * @returns false when the workspace was gone already (another deletion finished first)
 * @throws as `beginWorkspaceDeletion`: then nothing was written, and the deletion can be asked for again
 */
export async function deleteWorkspace(ownerId: string, workspaceId: string, opts: { deadline?: number } = {}): Promise<boolean> {
  const deadline = opts.deadline ?? Date.now() + WORKSPACE_DELETION_BUDGET_MS;
  if (!(await beginWorkspaceDeletion(ownerId, workspaceId))) return false;
  try {
    const run = await runWorkspaceDeletion(ownerId, workspaceId, deadline);
    if (run === "paused") serviceLog("workspace").info("a workspace deletion ran out of its budget; the recovery sweeper goes on with it", { workspace_id: workspaceId });
  } catch (error) {
    serviceLog("workspace").warn("a workspace deletion stopped part-way; the recovery sweeper finishes it", { workspace_id: workspaceId, error: error as Error });
  }
  return true;
}

/** What one sweep of unfinished workspace deletions did. */
export type WorkspaceDeletionSweepReport = DueSweepReport;

/**
 * Go on with every workspace deletion whose record is due (`due_at` at or before `now`), oldest first, at most
 * `limit`, within one work budget: reads the sparse `due` index (never scans). Each record is first claimed by moving
 * it to its next due time (twice the last wait, at most `WORKSPACE_DELETION_MAX_WAIT_MS`; always longer than the
 * budget), conditioned on the due time read, so two sweeps at once run it once; then its cascade runs
 * (`runWorkspaceDeletion`), whose last step deletes the record. A run the budget stopped made progress: its record is
 * due again at once with its wait reset (conditioned on the claim). A run that failed is tried again after the wait,
 * without end: the owner asked for the workspace to go. Errors are collected, not thrown, so one deletion does not stop
 * the sweep.
 * @param opts.now the sweep's clock (ms since the epoch; tests pass a later time instead of waiting)
 * @param opts.budgetMs the sweep's work budget, ms (default `WORKSPACE_SWEEP_BUDGET_MS`)
 * @param opts.workspaceId only this workspace's record (tests that share a table)
 */
export async function sweepWorkspaceDeletions(opts: { now?: number; limit?: number; budgetMs?: number; workspaceId?: string } = {}): Promise<WorkspaceDeletionSweepReport> {
  const now = opts.now ?? Date.now();
  const deadline = Date.now() + (opts.budgetMs ?? WORKSPACE_SWEEP_BUDGET_MS);
  const { data } = await deletions()
    .query.due({ sweep: WORKSPACE_DELETION_SWEEP })
    // `~` sorts after every character of a time: records due at `now` exactly are in range.
    .lte({ due_at: `${new Date(now).toISOString()}~` })
    .where((a, op) => (opts.workspaceId ? op.eq(a.workspace_id, opts.workspaceId) : ""))
    .go({ limit: opts.limit ?? WORKSPACE_SWEEP_LIMIT });
  const moveTo = async (workspaceId: string, from: string, dueAt: string, attempts: number) => {
    await deletions()
      .patch({ workspace_id: workspaceId })
      .set({ sweep: WORKSPACE_DELETION_SWEEP, due_at: dueAt, attempts })
      .where((a, op) => op.eq(a.due_at, from))
      .go();
  };
  return sweepDue(data, {
    claim: (record, dueAt, attempts) => moveTo(record.workspace_id, record.due_at, dueAt, attempts),
    run: async (record) => ((await runWorkspaceDeletion(record.owner_id, record.workspace_id, deadline)) === "paused" ? "paused" : "finished"),
    // Progress was made: due again at once, its wait reset.
    resume: (record, claimed, dueAt) => moveTo(record.workspace_id, claimed, dueAt, 0),
    nextDue: due,
  }, { now, deadline });
}

/**
 * Remove one membership that is not the owner's, and give its seat back (the workspace's `members` counter) in the
 * same transaction, once: the delete is conditioned on the membership, so two removals racing free one seat. A
 * transaction that lost a race on the counter (parallel uploads count on the same item) is tried again.
 * @returns false when there was no such membership (removed meanwhile)
 * @throws AppError FORBIDDEN (403) for the owner's membership; SERVICE_UNAVAILABLE (503) when the counter stays contended
 */
export async function dropMembership(workspaceId: string, memberId: string): Promise<boolean> {
  for (let attempt = 0; attempt < COUNTED_TRIES; attempt++) {
    const { data: target } = await db().entities.membership.get({ workspace_id: workspaceId, user_id: memberId }).go({ consistent: true });
    if (!target) return false;
    if (target.role === "owner") throw new AppError("FORBIDDEN", "The owner cannot be removed from the workspace");
    const { data: counter } = await db().entities.usage.get({ workspace_id: workspaceId }).go({ consistent: true });
    if (counter?.members === undefined || counter.members <= 0) {
      // A workspace older than the counter has none to change (nor one that says no one is left).
      try {
        await db().entities.membership.remove({ workspace_id: workspaceId, user_id: memberId }).where((attr, op) => op.ne(attr.role, "owner")).go();
        return true;
      } catch (err) {
        if (isConditionalFailure(err)) return false;
        throw err;
      }
    }
    const result = await createWriteTransaction(db().pick("membership", "usage"), ({ membership, usage }) => [
      membership.remove({ workspace_id: workspaceId, user_id: memberId }).where((attr, op) => op.ne(attr.role, "owner")).commit(),
      usage.update({ workspace_id: workspaceId }).subtract({ members: 1 }).where((a, op) => op.gt(a.members, 0)).commit(),
    ]).go();
    if (!result.canceled) return true;
    // The membership's condition refused (removed meanwhile): the next read says so. A conflict: tried again.
    if (cancelCodes(result)[0] === "ConditionalCheckFailed") return false;
  }
  throw new AppError("SERVICE_UNAVAILABLE", "Too many changes to the workspace at once; try again", { retryable: true });
}

/**
 * Delete what a member keeps for themselves in a workspace: their memory (facts `memory#<user>#…` and head
 * `memhead#<user>`, DESIGN.md 6.6: "the person the fact was learned from and who alone sees it") and their skill
 * suggestions. Once they are no longer a member no route can reach these, so they go with the membership. With
 * `account` (the user's own deletion, spec 02 `user.deleted`: "all owned data"), also their skill ratings
 * (`skillfb#<slug>#<user>`) and their conversations with their messages and feedback (core/chat/purge.ts); a member
 * merely removed keeps their conversations, for when they are added back. Can be run again.
 */
export async function purgeMemberItems(workspaceId: string, memberId: string, opts: { account?: boolean } = {}): Promise<void> {
  const pk = partitionOf(workspaceId);
  const [facts, heads, suggestions, ratings] = await Promise.all([
    partitionKeys(pk, `memory#${memberId}#`),
    partitionKeys(pk, `memhead#${memberId}`),
    partitionKeys(pk, `skillsug#${memberId}#`),
    opts.account ? partitionKeys(pk, "skillfb#") : Promise.resolve([]),
    opts.account ? purgeUserConversations(workspaceId, memberId) : Promise.resolve(0),
  ]);
  await deleteKeys([
    ...facts,
    ...heads.filter((k) => k.sk === `memhead#${memberId}`),
    ...suggestions,
    ...ratings.filter((k) => k.sk.endsWith(`#${memberId}`)),
  ]);
}

/**
 * `dropMembership` for a route (DESIGN.md section 5 `DELETE /api/workspaces/{id}/members/{user_id}`), with the
 * member's own items (`purgeMemberItems`): purged before the membership goes, so a purge that fails (a throttle, a
 * crash) leaves the membership and the request sent again purges again; and after, for what a request already past
 * its membership check wrote meanwhile. A membership already gone is purged all the same before the 404: a removal
 * that failed after its drop (or one older than this order) left the items, which nothing else could reach.
 * The caller has checked that the requester may remove this member.
 * @throws AppError FORBIDDEN (403) for the owner's membership (nothing is purged); NOT_FOUND (404) when there is no
 *   such membership (its items purged); SERVICE_UNAVAILABLE (503) when the seat counter stays contended; Error from
 *   DynamoDB (the request can be sent again)
 */
export async function requireDropMembership(workspaceId: string, memberId: string): Promise<void> {
  const { data: target } = await db().entities.membership.get({ workspace_id: workspaceId, user_id: memberId }).go({ consistent: true });
  // The owner's memory is not a removed member's: refused before anything is purged.
  if (target?.role === "owner") throw new AppError("FORBIDDEN", "The owner cannot be removed from the workspace");
  await purgeMemberItems(workspaceId, memberId);
  if (!target) throw Errors.notFound("Member");
  const dropped = await dropMembership(workspaceId, memberId);
  await purgeMemberItems(workspaceId, memberId);
  if (!dropped) throw Errors.notFound("Member");
}
