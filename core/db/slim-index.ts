/**
 * Slim gsi4 lists of a workspace's items, and the one-time backfill of items written before their list existed
 * (docs/decisions.md "Slim list index"; core/db/table.ts `SLIM_LIST_ATTRIBUTES`).
 *
 * A kind of item listed on gsi4 (a workspace's tasks, its assistant messages) gets its gsi4 keys from its ElectroDB
 * entity on every write since the index exists. Items written before have none. A per-workspace mark (a raw item in
 * the workspace partition, sort key `SlimIndex.markSk`) says every item of that kind in the workspace carries them;
 * without it, a reader goes through `backfill` once: one strongly consistent read of the items in the partition, a
 * conditional update giving each missing item its keys, and the mark written last. A workspace created since the
 * marks exist has them from its create (`markPut`, core/workspace `create`) and never pays the backfill.
 *
 * One implementation for every slim list, so the mark, the conditions and the order of writes cannot drift apart.
 */
import { TransactionCanceledException } from "@aws-sdk/client-dynamodb";
import { GetCommand, TransactWriteCommand, UpdateCommand } from "@aws-sdk/lib-dynamodb";
import pLimit from "p-limit";
import { Config } from "../config";
import { dynamoClient } from "./client";
import { isConditionalFailure } from "./errors";
import { queryAll } from "./partition";
import type { SlimKeys } from "./table";

export type { SlimKeys };

/** One kind of item listed on gsi4 in a workspace, and how an item of that kind written before the index is found. */
export interface SlimIndex {
  /** Sort key of the workspace's mark in its partition (`ws#<ws>`), e.g. `taskindex`. Unique per kind. */
  readonly markSk: string;
  /** Sort-key prefix under which the kind's items live in the workspace partition (`task#`, `conversation#`). */
  readonly skPrefix: string;
  /** ElectroDB entity name (`__edb_e__`) of the items (other entities sharing the prefix are filtered out by DynamoDB). */
  readonly entity: string;
  /** Attributes `backfill` reads back for the caller, besides the keys and the entity name. */
  readonly attributes: readonly string[];
  /**
   * The gsi4 keys the item is to carry, exactly as its entity's index template writes them; undefined for an item
   * the index leaves out (a sparse index's condition, or an item missing a key attribute).
   */
  keysOf(workspaceId: string, item: Record<string, unknown>): SlimKeys | undefined;
}

/** Conditional updates in flight at once while backfilling a workspace. */
const BACKFILL_CONCURRENCY = 8;

const markKey = (index: SlimIndex, workspaceId: string) => ({ pk: `ws#${workspaceId}`, sk: index.markSk });

/**
 * Whether the workspace's mark for `index` exists: every listed item of the workspace carries its gsi4 keys. An
 * eventually consistent GetItem (0.5 read unit): the mark, once written, stays; a stale miss only repeats `backfill`.
 */
export async function hasMark(index: SlimIndex, workspaceId: string): Promise<boolean> {
  const { Item } = await dynamoClient().send(new GetCommand({ TableName: Config.tableName(), Key: markKey(index, workspaceId), ProjectionExpression: "pk" }));
  return Item !== undefined;
}

/** What `readIndexed` answers: the index read's result when the mark holds, else the items `backfill` read. */
export type Indexed<T> = { marked: true; data: T } | { marked: false; items: Record<string, unknown>[] };

/**
 * Read a workspace's slim list: `read` (the caller's Query of gsi4) and the mark at once; without the mark, the
 * index may miss older items, so `backfill` runs and its items (the listed items of the partition, as read, with
 * `SlimIndex.attributes`) answer instead.
 * @param read the index Query; its result is dropped when the mark is missing
 * @throws the DynamoDB client's errors (nothing is swallowed)
 */
export async function readIndexed<T>(index: SlimIndex, workspaceId: string, read: () => Promise<T>): Promise<Indexed<T>> {
  const [marked, data] = await Promise.all([hasMark(index, workspaceId), read()]);
  if (marked) return { marked: true, data };
  return { marked: false, items: await backfill(index, workspaceId) };
}

/**
 * Give the workspace's items of `index` written before it their gsi4 keys, then write the mark; idempotent, so two
 * first reads at once (or a crash part-way, retried by the next read) are harmless. Reads the kind's items of the
 * partition once, strongly consistently (each whole, as DynamoDB charges it; the projection and the entity filter
 * only shrink the transfer). An item deleted meanwhile is not brought back (each update is conditioned on the item
 * existing); one created meanwhile has its keys from its create. The mark is written last: until it is, every read
 * takes this path again.
 * @returns the listed items (those `keysOf` gives keys) as read: pk, sk, `__edb_e__`, gsi4pk, gsi4sk and `attributes`
 * @throws the DynamoDB client's errors (nothing is swallowed)
 */
export async function backfill(index: SlimIndex, workspaceId: string): Promise<Record<string, unknown>[]> {
  const names = [...new Set(["pk", "sk", "__edb_e__", "gsi4pk", "gsi4sk", ...index.attributes])];
  const items = await queryAll({
    TableName: Config.tableName(),
    KeyConditionExpression: "pk = :pk AND begins_with(sk, :sk)",
    FilterExpression: "#e = :e",
    ExpressionAttributeValues: { ":pk": `ws#${workspaceId}`, ":sk": index.skPrefix, ":e": index.entity },
    // Names such as `status` and `role` are reserved words: every name goes through a placeholder.
    ProjectionExpression: names.map((_, i) => `#a${i}`).join(", "),
    ExpressionAttributeNames: { "#e": "__edb_e__", ...Object.fromEntries(names.map((n, i) => [`#a${i}`, n])) },
    ConsistentRead: true,
  });
  const listed = items.flatMap((item) => {
    const keys = item.__edb_e__ === index.entity ? index.keysOf(workspaceId, item) : undefined;
    return keys ? [{ item, keys }] : [];
  });
  const missing = listed.filter(({ item, keys }) => item.gsi4pk !== keys.gsi4pk || item.gsi4sk !== keys.gsi4sk);
  await pLimit(BACKFILL_CONCURRENCY).map(missing, async ({ item, keys }) => {
    try {
      await dynamoClient().send(
        new UpdateCommand({
          TableName: Config.tableName(),
          Key: { pk: item.pk, sk: item.sk },
          UpdateExpression: "SET gsi4pk = :pk, gsi4sk = :sk",
          ConditionExpression: "attribute_exists(pk)",
          ExpressionAttributeValues: { ":pk": keys.gsi4pk, ":sk": keys.gsi4sk },
        }),
      );
    } catch (err) {
      if (!isConditionalFailure(err)) throw err; // deleted since the read: nothing to index
    }
  });
  await writeMark(index, workspaceId, missing.length);
  return listed.map(({ item, keys }) => ({ ...item, ...keys }));
}

/** The mark's item: `backfilled` counts the items given keys when it was written (0 for a new workspace). */
const markItem = (index: SlimIndex, workspaceId: string, backfilled: number) => ({ ...markKey(index, workspaceId), backfilled, created_at: new Date().toISOString() });

/**
 * Write the mark once, and only into a workspace that still exists: a second backfill at the same time finds the mark
 * and keeps the first's count; a backfill that outlived its workspace's deletion (which empties the partition) does
 * not leave an orphan mark behind (a condition on the workspace item, `ws#<id>` / `workspace`, in one transaction).
 */
async function writeMark(index: SlimIndex, workspaceId: string, backfilled: number): Promise<void> {
  const table = Config.tableName();
  try {
    await dynamoClient().send(
      new TransactWriteCommand({
        TransactItems: [
          { ConditionCheck: { TableName: table, Key: { pk: `ws#${workspaceId}`, sk: "workspace" }, ConditionExpression: "attribute_exists(pk)" } },
          { Put: { TableName: table, Item: markItem(index, workspaceId, backfilled), ConditionExpression: "attribute_not_exists(pk)" } },
        ],
      }),
    );
  } catch (err) {
    // The workspace is gone, or the mark is there already: nothing to write either way. A conflict with another
    // transaction on the workspace item leaves the mark unwritten too: the next read backfills (finding nothing
    // missing) and writes it; the read itself has its answer.
    const reasons = err instanceof TransactionCanceledException ? (err.CancellationReasons ?? []) : [];
    const settled = reasons.some((r) => r.Code === "ConditionalCheckFailed" || r.Code === "TransactionConflict") && reasons.every((r) => ["ConditionalCheckFailed", "TransactionConflict", "None"].includes(r.Code ?? "None"));
    if (!settled) throw err;
  }
}

/**
 * The mark of a workspace that has no items yet, as one write of a transaction (core/workspace `create`): its
 * items all get their keys from their creates, so it never needs `backfill`. Unconditional: the workspace is new.
 * (A raw `{Put}` like an ElectroDB `.commit()`'s; not typed through core/db/agent-write.ts, whose import of the entity
 * catalogue would close a circle through the entity files that define the indexes.)
 */
export const markPut = (index: SlimIndex, workspaceId: string) => ({ Put: { TableName: Config.tableName(), Item: markItem(index, workspaceId, 0) } });

/**
 * The deletion of a workspace's mark, as one write of a transaction (core/workspace/deletion.ts: its last
 * transaction, beside the workspace item's): a backfill whose mark landed after the deletion's last partition pass
 * but before the workspace item went would otherwise leave it behind. Unconditional: an absent mark is no error.
 */
export const markDelete = (index: SlimIndex, workspaceId: string) => ({ Delete: { TableName: Config.tableName(), Key: markKey(index, workspaceId) } });
