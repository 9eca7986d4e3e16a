/**
 * Deleting a workspace (spec 01 `DELETE /api/workspaces/{id}`; spec 02 `user.deleted` for the workspaces a deleted user
 * owns) and removing one membership with its seat. The lower half of core/workspace: it reads and writes the table
 * only, and core/workspace checks the caller's role before calling it.
 */
import { createWriteTransaction } from "electrodb";
import { db } from "../db/service";
import { cancelCodes, isConditionalFailure } from "../db/errors";
import { deleteKeys, partitionKeys } from "../db/partition";
import { AppError, Errors } from "../error";
import { COUNTED_TRIES } from "../billing/counters";
import { partitionOf } from "./keys";
import { markDelete } from "../db/slim-index";
import { TASK_LIST_INDEX } from "../task/task.entity";
import { ANSWER_INDEX } from "../chat/conversation.entity";
import { DOCUMENT_INDEX } from "../document/document.entity";

const memberSk = (userId: string) => `member#${userId}`;
const WORKSPACE_SK = "workspace";

/**
 * Delete a workspace and everything in it, in an order that no write outlives and that can be run again after a
 * failure at any step (a retried DELETE, a redelivered `user.deleted`):
 *
 * 1. the owner's membership is marked `deleting_at`: from then on every membership check refuses it (core/workspace
 *    `requireMember`, `readAsMember`; task progress streams), and only this deletion, run again, passes;
 * 2. every other membership is deleted, so no one can start a write;
 * 3. the stored files, then every item of the partition but the owner's membership and the workspace item;
 * 4. the partition (strongly consistent) and the files are listed again, and what a request already past its
 *    membership check wrote meanwhile is deleted;
 * 5. one transaction deletes the workspace item (conditioned on it), the owner's membership and the list indexes'
 *    marks (documents, tasks, assistant messages: core/db/slim-index.ts), and gives the owner's workspace slot back
 *    (`workspaces_owned`): two deletions at once give it back once.
 *
 * @param ownerId the workspace's owner (the caller has checked it: the membership's role, or `deleting_at` already set)
 * @returns false when the workspace was gone already (another deletion finished first)
 * @throws Error from S3 or DynamoDB: the deletion stopped part-way and can be run again
 */
export async function deleteWorkspace(ownerId: string, workspaceId: string): Promise<boolean> {
  const pk = partitionOf(workspaceId);
  const kept = new Set([memberSk(ownerId), WORKSPACE_SK]);
  try {
    await db()
      .entities.membership.patch({ workspace_id: workspaceId, user_id: ownerId })
      .set({ deleting_at: new Date().toISOString() })
      .where((a, op) => op.eq(a.role, "owner"))
      .go();
  } catch (err) {
    if (!isConditionalFailure(err)) throw err;
    return false;
  }
  await deleteKeys((await partitionKeys(pk, "member#")).filter((k) => !kept.has(k.sk)));
  // Loaded here, not at import: only deletion needs S3, and the S3 client is a tenth of a workspaces cold start.
  const { deletePrefix, workspacePrefix } = await import("../storage");
  for (let pass = 0; pass < 2; pass++) {
    await deletePrefix(workspacePrefix(workspaceId));
    await deleteKeys((await partitionKeys(pk)).filter((k) => !kept.has(k.sk)));
  }
  for (let attempt = 0; attempt < COUNTED_TRIES; attempt++) {
    const { data: account } = await db().entities.billingAccount.get({ user_id: ownerId }).go({ consistent: true });
    const owned = account?.workspaces_owned ?? 0;
    const result = await createWriteTransaction(db().pick("workspace", "membership", "billingAccount"), ({ workspace, membership, billingAccount }) => [
      workspace.remove({ id: workspaceId }).commit(),
      membership.delete({ workspace_id: workspaceId, user_id: ownerId }).commit(),
      // The list indexes' marks (core/db/slim-index.ts): a first listing's backfill may have written one after the
      // last pass above; it goes with the workspace item, whose existence its write is conditioned on.
      markDelete(DOCUMENT_INDEX, workspaceId) as never,
      markDelete(TASK_LIST_INDEX, workspaceId) as never,
      markDelete(ANSWER_INDEX, workspaceId) as never,
      // The slot goes back with the workspace item, once (never below 0; an account older than the counter has none).
      ...(owned > 0 ? [billingAccount.patch({ user_id: ownerId }).subtract({ workspaces_owned: 1 }).where((a, op) => op.gt(a.workspaces_owned, 0)).commit()] : []),
    ]).go();
    if (!result.canceled) return true;
    const codes = cancelCodes(result);
    if (codes[0] === "ConditionalCheckFailed") {
      // The workspace item is gone: another deletion finished; the owner's membership goes if it is still there.
      await db().entities.membership.delete({ workspace_id: workspaceId, user_id: ownerId }).go();
      return false;
    }
    // A conflict, or the counter moved under the condition: read it again.
  }
  throw new AppError("SERVICE_UNAVAILABLE", "The workspace is busy; try deleting it again", { retryable: true });
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
 * suggestions; with `feedback`, also their skill ratings (`skillfb#<slug>#<user>`, the user's deletion). Once they
 * are no longer a member no route can reach these, so they go with the membership. Can be run again.
 */
export async function purgeMemberItems(workspaceId: string, memberId: string, opts: { feedback?: boolean } = {}): Promise<void> {
  const pk = partitionOf(workspaceId);
  const [facts, heads, suggestions, ratings] = await Promise.all([
    partitionKeys(pk, `memory#${memberId}#`),
    partitionKeys(pk, `memhead#${memberId}`),
    partitionKeys(pk, `skillsug#${memberId}#`),
    opts.feedback ? partitionKeys(pk, "skillfb#") : Promise.resolve([]),
  ]);
  await deleteKeys([
    ...facts,
    ...heads.filter((k) => k.sk === `memhead#${memberId}`),
    ...suggestions,
    ...ratings.filter((k) => k.sk.endsWith(`#${memberId}`)),
  ]);
}

/** `dropMembership` for a route: a membership that is not there is 404. */
export async function requireDropMembership(workspaceId: string, memberId: string): Promise<void> {
  if (!(await dropMembership(workspaceId, memberId))) throw Errors.notFound("Member");
  await purgeMemberItems(workspaceId, memberId);
}
