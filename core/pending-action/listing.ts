/**
 * The slim read behind `GET /api/pending-actions`: a workspace's pending actions, newest first, optionally of some
 * stored statuses, as their ids and creation times only (the pattern of core/task/listing.ts).
 *
 * Why an index: a row keeps up to 64 KiB each of tool input, preview, user edits and result, the rows are the
 * workspace's audit trail (never deleted), and DynamoDB charges (and pages, 1 MB each) by the whole item read,
 * whatever a ProjectionExpression returns: counting and ordering them from the partition read every row whole. The
 * `listed` index (gsi4, pending-action.entity.ts) carries only id, status, created_at and ElectroDB's identifiers.
 *
 * Older workspaces: rows written before the index have no gsi4 keys; the workspace's mark (sort key `paindex`) says
 * they all have; without it the listing reads the partition's rows once, gives the missing ones their keys, writes the
 * mark last and answers from what it read (core/db/slim-index.ts `readIndexed`).
 *
 * A global secondary index is eventually consistent: a row written a moment ago may be missing from the list, or be
 * counted under the status it just left, typically for well under a second. The page's rows are read by key,
 * strongly consistently (core/pending-action `list`).
 */
import { newestFirst, readIndexed, type ListedItem } from "../db/slim-index";
import { db } from "../db/service";
import { PENDING_ACTION_LIST_INDEX } from "./pending-action.entity";
import type { StoredStatus } from "./status";

/** What the list orders and fetches a row by (core/db/slim-index.ts `ListedItem`). */
export type ListedAction = ListedItem;
export { newestFirst };

/**
 * Every pending action of a workspace, optionally of the given stored statuses, newest first: one Query of the
 * `listed` index (statuses filtered by DynamoDB), paged through, beside a read of the workspace's mark; without the
 * mark, the rows of the partition as the backfill read them.
 * @param workspaceId the workspace (the caller has checked membership)
 * @param statuses stored statuses to keep (absent: all)
 * @throws the DynamoDB client's errors (nothing is swallowed)
 */
export async function listedActions(workspaceId: string, statuses?: readonly StoredStatus[]): Promise<ListedAction[]> {
  const query = db().entities.pendingAction.query.listed({ workspace_id: workspaceId });
  const read = await readIndexed(PENDING_ACTION_LIST_INDEX, workspaceId, async () =>
    (
      await (statuses ? query.where((a, op) => statuses.map((s) => op.eq(a.status, s)).join(" OR ")) : query).go({
        pages: "all",
        order: "desc",
        attributes: ["id", "created_at"],
      })
    ).data,
  );
  if (read.marked) return read.data.map((r) => ({ id: r.id, created_at: r.created_at }));
  return read.items
    .filter((r) => !statuses || statuses.includes(r.status as StoredStatus))
    .map((r) => ({ id: String(r.id), created_at: String(r.created_at) }))
    .sort(newestFirst);
}
