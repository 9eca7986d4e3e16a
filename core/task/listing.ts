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
 * `taskindex`) says every one of its tasks has them; without it, the listing reads the partition's tasks once
 * (strongly consistent, as the list did before), gives the missing ones their keys, writes the mark last, and answers
 * from what it read (`backfill`).
 *
 * A global secondary index is eventually consistent: a task spawned a moment ago may be missing from the list, or a
 * task that just changed status may be counted under its previous one, typically for well under a second. The page's
 * tasks themselves are read by key, strongly consistently (core/task `list`).
 */
import { GetCommand, PutCommand, UpdateCommand } from "@aws-sdk/lib-dynamodb";
import pLimit from "p-limit";
import { Config } from "../config";
import { dynamoClient } from "../db/client";
import { isConditionalFailure } from "../db/errors";
import { queryAll } from "../db/partition";
import { db } from "../db/service";
import { taskListKeysOf } from "./task.entity";
import type { TaskStatus } from "./schema";

/** What the list orders and fetches a task by. */
export interface ListedTask {
  id: string;
  created_at: string;
}

/** Updates in flight at once while backfilling a workspace's index keys. */
const BACKFILL_CONCURRENCY = 8;

/** Newest first, then id (the index's own order: its sort key is `task#<created_at>#<id>`). */
export const newestFirst = (a: ListedTask, b: ListedTask) => b.created_at.localeCompare(a.created_at) || b.id.localeCompare(a.id);

/**
 * Every task of a workspace, optionally of one status, newest first: one Query of the `listed` index (status filtered
 * by DynamoDB), paged through, beside a read of the workspace's index mark; without the mark, `backfill` first.
 * @param workspaceId the workspace (the caller has checked membership)
 * @throws the DynamoDB client's errors (nothing is swallowed)
 */
export async function listedTasks(workspaceId: string, status?: TaskStatus): Promise<ListedTask[]> {
  const query = db().entities.task.query.listed({ workspace_id: workspaceId });
  const [marked, { data }] = await Promise.all([
    hasIndexMark(workspaceId),
    (status ? query.where((a, op) => op.eq(a.status, status)) : query).go({ pages: "all", order: "desc", attributes: ["id", "created_at"] }),
  ]);
  if (marked) return data.map((t) => ({ id: t.id, created_at: t.created_at }));
  const tasks = await backfill(workspaceId);
  return tasks.filter((t) => !status || t.status === status).sort(newestFirst);
}

/** Whether every task of the workspace carries its index keys (the mark, once written, stays: a stale miss only repeats `backfill`). */
async function hasIndexMark(workspaceId: string): Promise<boolean> {
  const keys = taskListKeysOf(workspaceId);
  const { Item } = await dynamoClient().send(new GetCommand({ TableName: Config.tableName(), Key: { pk: keys.pk, sk: keys.markSk }, ProjectionExpression: "pk" }));
  return Item !== undefined;
}

/**
 * Give a workspace's tasks written before the index their gsi4 keys, then write its index mark; idempotent, so two
 * first listings at once (or a crash part-way, retried by the next listing) are harmless. Reads the partition's tasks
 * once, strongly consistently (each whole, as DynamoDB charges it; the projection only shrinks the transfer). A task
 * deleted meanwhile is not brought back (each update is conditioned on the item existing); a task created meanwhile
 * has its keys from its create. The mark is written last: until it is, every listing takes this path again.
 * @returns the workspace's tasks as read: id, created_at, status
 */
export async function backfill(workspaceId: string): Promise<(ListedTask & { status: TaskStatus })[]> {
  const keys = taskListKeysOf(workspaceId);
  const names = ["pk", "sk", "__edb_e__", "id", "created_at", "status", "gsi4pk"];
  const items = await queryAll({
    TableName: Config.tableName(),
    KeyConditionExpression: "pk = :pk AND begins_with(sk, :sk)",
    ExpressionAttributeValues: { ":pk": keys.pk, ":sk": "task#" },
    // `status` is a reserved word: every name goes through a placeholder.
    ProjectionExpression: names.map((_, i) => `#a${i}`).join(", "),
    ExpressionAttributeNames: Object.fromEntries(names.map((n, i) => [`#a${i}`, n])),
    ConsistentRead: true,
  });
  const tasks = items.filter((i) => i.__edb_e__ === "task" && typeof i.id === "string" && typeof i.created_at === "string");
  const missing = tasks.filter((t) => t.gsi4pk !== keys.gsi4pk);
  await pLimit(BACKFILL_CONCURRENCY).map(missing, async (t) => {
    try {
      await dynamoClient().send(
        new UpdateCommand({
          TableName: Config.tableName(),
          Key: { pk: t.pk, sk: t.sk },
          UpdateExpression: "SET gsi4pk = :pk, gsi4sk = :sk",
          ConditionExpression: "attribute_exists(pk)",
          ExpressionAttributeValues: { ":pk": keys.gsi4pk, ":sk": taskListKeysOf(workspaceId, { created_at: String(t.created_at), id: String(t.id) }).gsi4sk },
        }),
      );
    } catch (err) {
      if (!isConditionalFailure(err)) throw err; // deleted since the read: nothing to index
    }
  });
  await markIndexed(workspaceId, missing.length);
  return tasks.map((t) => ({ id: String(t.id), created_at: String(t.created_at), status: t.status as TaskStatus }));
}

/** Write the workspace's index mark, once: a second backfill at the same time finds it and keeps the first's count. */
async function markIndexed(workspaceId: string, backfilled: number): Promise<void> {
  const keys = taskListKeysOf(workspaceId);
  try {
    await dynamoClient().send(
      new PutCommand({
        TableName: Config.tableName(),
        Item: { pk: keys.pk, sk: keys.markSk, backfilled, created_at: new Date().toISOString() },
        ConditionExpression: "attribute_not_exists(pk)",
      }),
    );
  } catch (err) {
    if (!isConditionalFailure(err)) throw err;
  }
}
