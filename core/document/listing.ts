/**
 * A workspace's documents without their children: the one read behind `GET /api/documents`, the documents gate and
 * usage views, the copilot's workspace profile and verifier, the resume briefing and the copilot's introduction.
 *
 * Why an index: a document's revisions, blocks, notes and tickets share its sort-key prefix (document.entity.ts), so
 * the partition Query `begins_with(sk, "document#")` reads every child of every document, revisions with their full
 * texts, to find the documents. The documents alone are in a sparse gsi3 index (`wsdocs#<ws>` / `document#<id>`),
 * which only document items carry. Its Query also answers the workspace's index mark (gsi3 sort key `document`): a
 * workspace created before the index has none until its documents have been given their index keys, which the first
 * listing does, once (`backfill`). docs/decisions.md "Documents are listed from a sparse index".
 *
 * A global secondary index is eventually consistent: a list read right after a write may not show it yet (typically
 * for well under a second). Reads by id stay strongly consistent.
 */
import { UpdateCommand } from "@aws-sdk/lib-dynamodb";
import type { EntityItem } from "electrodb";
import { Config } from "../config";
import { dynamoClient } from "../db/client";
import { isConditionalFailure } from "../db/errors";
import { queryAll, queryPrefix } from "../db/partition";
import { db } from "../db/service";
import { listedKeysOf, type DocumentEntity } from "./document.entity";
import pLimit from "p-limit";

type DocumentItem = EntityItem<DocumentEntity>;
type Attribute = keyof DocumentItem;

/** What `documentsOf` reads: some attributes only (default: whole items), documents created at or after a time. */
export interface DocumentsOfOptions<A extends Attribute> {
  /** The attributes to read back (a projection: less transfer, the same read units). */
  attributes?: readonly A[];
  /** ISO-8601: only documents whose `created_at` is at or after it. */
  createdSince?: string;
}

/** The ElectroDB fields a raw item needs to be parsed as a document (its entity name and model version). */
const OWNERSHIP = ["__edb_e__", "__edb_v__"] as const;
/** Updates in flight at once while backfilling a workspace's index keys. */
const BACKFILL_CONCURRENCY = 8;

/**
 * Every document of a workspace (not its revisions, blocks, notes or tickets), unordered: one Query of the sparse
 * index, paged through. A workspace whose index mark is missing (created before the index) is read from its partition
 * once, strongly consistently, and its documents are given their index keys (`backfill`).
 * @param workspaceId the workspace (the caller has checked membership)
 * @returns the document items, with `attributes` only when given
 * @throws the DynamoDB client's errors (nothing is swallowed)
 */
export async function documentsOf<A extends Attribute = Attribute>(workspaceId: string, opts: DocumentsOfOptions<A> = {}): Promise<Pick<DocumentItem, A>[]> {
  const keys = listedKeysOf(workspaceId);
  const names = opts.attributes ? ["gsi3sk", ...OWNERSHIP, ...new Set<string>([...opts.attributes, ...(opts.createdSince ? ["created_at"] : [])])] : [];
  const items = await queryAll({
    TableName: Config.tableName(),
    IndexName: "gsi3",
    KeyConditionExpression: "gsi3pk = :pk AND begins_with(gsi3sk, :sk)",
    ExpressionAttributeValues: { ":pk": keys.gsi3pk, ":sk": keys.markSk },
    ...(names.length
      ? { ProjectionExpression: names.map((_, i) => `#a${i}`).join(", "), ExpressionAttributeNames: Object.fromEntries(names.map((n, i) => [`#a${i}`, n])) }
      : {}),
  });
  const marked = items.some((i) => i.gsi3sk === keys.markSk);
  const docs = marked ? items : await backfill(workspaceId);
  return parsed(docs, opts);
}

/** The items as document items (ElectroDB drops what is not a document), filtered and projected as asked. */
function parsed<A extends Attribute>(items: Record<string, unknown>[], opts: DocumentsOfOptions<A>): Pick<DocumentItem, A>[] {
  const since = opts.createdSince;
  const kept = since ? items.filter((i) => typeof i.created_at === "string" && i.created_at >= since) : items;
  const { data } = db().entities.document.parse({ Items: kept }, { ignoreOwnership: false, ...(opts.attributes ? { attributes: opts.attributes } : {}) });
  return data as unknown as Pick<DocumentItem, A>[];
}

/**
 * Give an older workspace's documents their index keys, then write its index mark; idempotent, so two first
 * listings at once (or a crash part-way, retried by the next listing) are harmless. Reads the partition's documents
 * with their children, once, strongly consistently. A document deleted meanwhile is not brought back (each update is
 * conditioned on the item existing). The mark is written last: until it is, every listing takes this path again.
 * @returns the workspace's raw document items, as the partition read them
 */
export async function backfill(workspaceId: string): Promise<Record<string, unknown>[]> {
  const keys = listedKeysOf(workspaceId);
  const all = await queryPrefix(keys.pk, "document#");
  const docs = all.filter((i) => i.__edb_e__ === "document");
  const missing = docs.filter((d) => d.gsi3pk !== keys.gsi3pk);
  await pLimit(BACKFILL_CONCURRENCY).map(missing, async (d) => {
    try {
      await dynamoClient().send(
        new UpdateCommand({
          TableName: Config.tableName(),
          Key: { pk: d.pk, sk: d.sk },
          UpdateExpression: "SET gsi3pk = :pk, gsi3sk = :sk",
          ConditionExpression: "attribute_exists(pk)",
          ExpressionAttributeValues: { ":pk": keys.gsi3pk, ":sk": listedKeysOf(workspaceId, String(d.id)).documentSk },
        }),
      );
    } catch (err) {
      if (!isConditionalFailure(err)) throw err; // deleted since the read: nothing to index
    }
  });
  await markIndexed(workspaceId, missing.length);
  return docs;
}

/**
 * Write a workspace's index mark (`document_index` item). Once written it is not rewritten: a second backfill
 * at the same time finds it and keeps the first one's count.
 */
async function markIndexed(workspaceId: string, backfilled: number): Promise<void> {
  try {
    await db().entities.documentIndexMark.create({ workspace_id: workspaceId, backfilled }).go();
  } catch (err) {
    if (!isConditionalFailure(err)) throw err;
  }
}
