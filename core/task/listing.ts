/**
 * The slim read behind `GET /api/tasks`: a workspace's tasks, newest first, optionally of one status, as their ids
 * and creation times only.
 *
 * Why an index: a task item keeps up to 100 KB of result and checkpoint, and DynamoDB charges (and pages, 1 MB each)
 * by the whole item read, whatever a ProjectionExpression returns. Counting and ordering a workspace's tasks from its
 * partition therefore read every task whole. The tasks' `listed` index (gsi4, task.entity.ts) carries only id, status,
 * created_at and ElectroDB's identifiers (an INCLUDE projection, core/db/table.ts), sorted newest first by its key, so
 * the same count reads a few hundred bytes per task. docs/decisions.md "Slim list index".
 *
 * Older workspaces: tasks written before the index have no gsi4 keys. A workspace's index mark (a raw item, sort key
 * `taskindex`, written by the workspace's create since then) says every one of its tasks has them; without it, the
 * listing reads the partition's tasks once (strongly consistent, as the list did before), gives the missing ones their
 * keys, writes the mark last, and answers from what it read: core/db/slim-index.ts, shared with the feedback
 * dashboard's assistant messages.
 *
 * A global secondary index is eventually consistent: a task spawned a moment ago may be missing from the list, or a
 * task that just changed status may be counted under its previous one, typically for well under a second. The page's
 * tasks themselves are read by key, strongly consistently (core/task `list`).
 */
import { newestFirst, readIndexed, type ListedItem } from "../db/slim-index";
import { db } from "../db/service";
import { TASK_LIST_INDEX } from "./task.entity";
import type { TaskStatus } from "./schema";

/** What the list orders and fetches a task by (core/db/slim-index.ts `ListedItem`). */
export type ListedTask = ListedItem;
export { newestFirst };

/**
 * Every task of a workspace, optionally of one status, newest first: one Query of the `listed` index (status filtered
 * by DynamoDB), paged through, beside a read of the workspace's index mark; without the mark, the tasks of the
 * partition as the backfill read them (core/db/slim-index.ts `readIndexed`).
 * @param workspaceId the workspace (the caller has checked membership)
 * @throws the DynamoDB client's errors (nothing is swallowed)
 */
export async function listedTasks(workspaceId: string, status?: TaskStatus): Promise<ListedTask[]> {
  const query = db().entities.task.query.listed({ workspace_id: workspaceId });
  const read = await readIndexed(TASK_LIST_INDEX, workspaceId, async () =>
    (await (status ? query.where((a, op) => op.eq(a.status, status)) : query).go({ pages: "all", order: "desc", attributes: ["id", "created_at"] })).data,
  );
  if (read.marked) return read.data.map((t) => ({ id: t.id, created_at: t.created_at }));
  return read.items
    .filter((t) => !status || t.status === status)
    .map((t) => ({ id: String(t.id), created_at: String(t.created_at) }))
    .sort(newestFirst);
}
