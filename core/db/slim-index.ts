/**
 * Sparse and slim lists of a workspace's items, and the one-time backfill of items written before their list existed
 * (docs/decisions.md "Slim list index", "Documents are listed from a sparse index"; core/db/table.ts
 * `SLIM_LIST_ATTRIBUTES`).
 *
 * A kind of item listed on a global index (a workspace's tasks and assistant messages on gsi4, its documents on gsi3)
 * gets its index keys from its ElectroDB entity on every write since the index exists. Items written before have none.
 * A per-workspace mark (an item in the workspace partition, sort key `SlimIndex.markSk`) says every item of that kind
 * in the workspace carries them; without it, a reader goes through `backfill` once: one strongly consistent read of
 * the items in the partition, a conditional update giving each missing item its keys, and the mark written last (only
 * while the workspace item exists). A workspace created since the marks exist has them from its create (`markPut`,
 * core/workspace `create`) and never pays the backfill; its deletion deletes them with the workspace item
 * (`markDelete`, core/workspace/deletion.ts).
 *
 * One implementation for every such list, so the mark, the conditions and the order of writes cannot drift apart.
 */
import { GetCommand, TransactWriteCommand, UpdateCommand } from "@aws-sdk/lib-dynamodb";
import pLimit from "p-limit";
import { Config } from "../config";
import { dynamoClient } from "./client";
import { cancelledOnlyBy, isConditionalFailure, sdkCancelCodes } from "./errors";
import { queryAll } from "./partition";
import { TABLE_KEYS, type GlobalIndexName, type IndexKeys, type SlimKeys } from "./table";

export type { IndexKeys, SlimKeys };

/**
 * The Put of a workspace's mark that an index shaping its own mark gives (`SlimIndex.mark`): the item, and the
 * condition the write carries (an ElectroDB create's `attribute_not_exists`), as ElectroDB's `params()` gives them.
 */
export interface MarkPut {
  readonly TableName: string;
  readonly Item: Record<string, unknown>;
  readonly ConditionExpression?: string;
  readonly ExpressionAttributeNames?: Record<string, string>;
  readonly ExpressionAttributeValues?: Record<string, unknown>;
}

/**
 * One kind of item listed on a global index in a workspace (`I`: gsi4 for the slim lists, gsi3 for documents), and
 * how an item of that kind written before the index is found.
 */
export interface SlimIndex<I extends GlobalIndexName = GlobalIndexName> {
  /** The global index the items are listed on; its key fields (core/db/table.ts `TABLE_KEYS`) are what `backfill` writes. */
  readonly index: I;
  /** Sort key of the workspace's mark in its partition (`ws#<ws>`), e.g. `taskindex`. Unique per kind. */
  readonly markSk: string;
  /** Sort-key prefix under which the kind's items live in the workspace partition (`task#`, `conversation#`). */
  readonly skPrefix: string;
  /** ElectroDB entity name (`__edb_e__`) of the items (other entities sharing the prefix are filtered out by DynamoDB). */
  readonly entity: string;
  /**
   * Attributes `backfill` reads back for the caller, besides the keys and the entity name; absent: whole items (the
   * documents' listing parses them whole with ElectroDB).
   */
  readonly attributes?: readonly string[];
  /**
   * The index keys the item is to carry, exactly as its entity's index template writes them; undefined for an item
   * the index leaves out (a sparse index's condition, or an item missing a key attribute).
   */
  keysOf(workspaceId: string, item: Record<string, unknown>): IndexKeys<I> | undefined;
  /**
   * The mark's Put when the kind has a mark of its own shape (the documents': an ElectroDB `document_index` item
   * that also sits in gsi3, so the listing's Query reads it): its key must be `ws#<ws>` / `markSk`. Absent: a raw
   * item of the key, `backfilled` and `created_at`.
   * @param table the table the Put goes to (ElectroDB's params name one)
   * @param backfilled the items given keys when the mark is written (0 at a workspace's create)
   */
  mark?(workspaceId: string, backfilled: number, table: string): MarkPut;
}

/** What a slim list orders and fetches an item by: its id and creation time (ISO 8601). */
export interface ListedItem {
  id: string;
  created_at: string;
}

/**
 * Newest first, then id (descending), so pages are stable: the order of a slim list keyed `<prefix>#<created_at>#<id>`
 * read in descending order, for the lists a backfill answers from the partition (tasks, pending actions).
 */
export const newestFirst = (a: ListedItem, b: ListedItem): number => b.created_at.localeCompare(a.created_at) || b.id.localeCompare(a.id);

/** Conditional updates in flight at once while backfilling a workspace. */
const BACKFILL_CONCURRENCY = 8;

const markKey = (index: SlimIndex, workspaceId: string) => ({ pk: `ws#${workspaceId}`, sk: index.markSk });

/**
 * Whether the workspace's mark for `index` exists: every listed item of the workspace carries its index keys. An
 * eventually consistent GetItem (0.5 read unit): the mark, once written, stays; a stale miss only repeats `backfill`.
 * For the gsi4 lists; the documents' listing reads its mark with its own Query instead (core/document/listing.ts).
 */
export async function hasMark(index: SlimIndex, workspaceId: string): Promise<boolean> {
  const { Item } = await dynamoClient().send(new GetCommand({ TableName: Config.tableName(), Key: markKey(index, workspaceId), ProjectionExpression: "pk" }));
  return Item !== undefined;
}

/** What `readIndexed` answers: the index read's result when the mark holds, else the items `backfill` read. */
export type Indexed<T> = { marked: true; data: T } | { marked: false; items: Record<string, unknown>[] };

/**
 * Read a workspace's slim list (gsi4): `read` (the caller's Query of gsi4) and the mark at once; without the mark, the
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
 * Give the workspace's items of `index` written before it their index keys (the fields of `SlimIndex.index`), then
 * write the mark; idempotent, so two first reads at once (or a crash part-way, retried by the next read) are harmless.
 * Reads the kind's items of the partition once, strongly consistently (each whole, as DynamoDB charges it; the
 * projection and the entity filter only shrink the transfer). An item deleted meanwhile is not brought back (each
 * update is conditioned on the item existing); one created meanwhile has its keys from its create. The mark is written
 * last, and only into a workspace that still exists (`writeMark`): until it is, every read takes this path again.
 * @returns the listed items (those `keysOf` gives keys) as read, with their index keys: pk, sk, `__edb_e__`, the
 *   index's key fields and `attributes`, or whole items when the index names no `attributes`
 * @throws the DynamoDB client's errors (nothing is swallowed; a mark the workspace's deletion or another transaction
 *   kept out is not an error)
 */
export async function backfill(index: SlimIndex, workspaceId: string): Promise<Record<string, unknown>[]> {
  const { partitionKey, sortKey } = TABLE_KEYS.globalIndexes[index.index];
  const names = index.attributes ? [...new Set(["pk", "sk", "__edb_e__", partitionKey, sortKey, ...index.attributes])] : undefined;
  const items = await queryAll({
    TableName: Config.tableName(),
    KeyConditionExpression: "pk = :pk AND begins_with(sk, :sk)",
    FilterExpression: "#e = :e",
    ExpressionAttributeValues: { ":pk": `ws#${workspaceId}`, ":sk": index.skPrefix, ":e": index.entity },
    // Names such as `status` and `role` are reserved words: every name goes through a placeholder.
    ...(names ? { ProjectionExpression: names.map((_, i) => `#a${i}`).join(", ") } : {}),
    ExpressionAttributeNames: { "#e": "__edb_e__", ...Object.fromEntries((names ?? []).map((n, i) => [`#a${i}`, n])) },
    ConsistentRead: true,
  });
  const listed = items.flatMap((item) => {
    const keys = item.__edb_e__ === index.entity ? (index.keysOf(workspaceId, item) as Record<string, string> | undefined) : undefined;
    return keys ? [{ item, keys }] : [];
  });
  const missing = listed.filter(({ item, keys }) => item[partitionKey] !== keys[partitionKey] || item[sortKey] !== keys[sortKey]);
  await pLimit(BACKFILL_CONCURRENCY).map(missing, async ({ item, keys }) => {
    try {
      await dynamoClient().send(
        new UpdateCommand({
          TableName: Config.tableName(),
          Key: { pk: item.pk, sk: item.sk },
          UpdateExpression: "SET #ipk = :pk, #isk = :sk",
          ConditionExpression: "attribute_exists(pk)",
          ExpressionAttributeNames: { "#ipk": partitionKey, "#isk": sortKey },
          ExpressionAttributeValues: { ":pk": keys[partitionKey], ":sk": keys[sortKey] },
        }),
      );
    } catch (err) {
      if (!isConditionalFailure(err)) throw err; // deleted since the read: nothing to index
    }
  });
  await writeMark(index, workspaceId, missing.length);
  return listed.map(({ item, keys }) => ({ ...item, ...keys }));
}

/**
 * The mark's Put: the index's own (`SlimIndex.mark`, with its condition), or a raw item whose `backfilled` counts the
 * items given keys when it was written (0 for a new workspace), unconditional.
 */
function markOf(index: SlimIndex, workspaceId: string, backfilled: number): MarkPut {
  const table = Config.tableName();
  return index.mark?.(workspaceId, backfilled, table) ?? { TableName: table, Item: { ...markKey(index, workspaceId), backfilled, created_at: new Date().toISOString() } };
}

/**
 * Write the mark once, and only into a workspace that still exists: a second backfill at the same time finds the mark
 * and keeps the first's count; a backfill that outlived its workspace's deletion (which empties the partition) does
 * not leave an orphan mark behind (a condition on the workspace item, `ws#<id>` / `workspace`, in one transaction;
 * one that lands before the deletion's last transaction goes with it, `markDelete`). The mark's own condition (an
 * index's `mark`) gives way to `attribute_not_exists(pk)`, which says the same of one item.
 * @throws the DynamoDB client's errors but the cancellations that leave nothing to write (see below)
 */
async function writeMark(index: SlimIndex, workspaceId: string, backfilled: number): Promise<void> {
  const table = Config.tableName();
  try {
    await dynamoClient().send(
      new TransactWriteCommand({
        TransactItems: [
          { ConditionCheck: { TableName: table, Key: { pk: `ws#${workspaceId}`, sk: "workspace" }, ConditionExpression: "attribute_exists(pk)" } },
          { Put: { TableName: table, Item: markOf(index, workspaceId, backfilled).Item, ConditionExpression: "attribute_not_exists(pk)" } },
        ],
      }),
    );
  } catch (err) {
    // The workspace is gone, or the mark is there already: nothing to write either way. A conflict with another
    // transaction on the workspace item leaves the mark unwritten too: the next read backfills (finding nothing
    // missing) and writes it; the read itself has its answer.
    if (!cancelledOnlyBy(sdkCancelCodes(err) ?? [], ["ConditionalCheckFailed", "TransactionConflict"])) throw err;
  }
}

/**
 * The mark of a workspace that has no items yet, as one write of a transaction (core/workspace `create`): its
 * items all get their keys from their creates, so it never needs `backfill`. The raw marks are unconditional (the
 * workspace is new); an index's own mark keeps its own condition (the documents': ElectroDB's create's).
 * (A raw `{Put}` like an ElectroDB `.commit()`'s; not typed through core/db/agent-write.ts, whose import of the entity
 * catalogue would close a circle through the entity files that define the indexes.)
 */
export const markPut = (index: SlimIndex, workspaceId: string) => ({ Put: markOf(index, workspaceId, 0) });

/**
 * The deletion of a workspace's mark, as one write of a transaction (core/workspace/deletion.ts: its last
 * transaction, beside the workspace item's): a backfill whose mark landed after the deletion's last partition pass
 * but before the workspace item went would otherwise leave it behind. Unconditional: an absent mark is no error.
 */
export const markDelete = (index: SlimIndex, workspaceId: string) => ({ Delete: { TableName: Config.tableName(), Key: markKey(index, workspaceId) } });
