/**
 * A workspace's documents without their children: the one read behind `GET /api/documents`, the documents gate and
 * usage views, the copilot's workspace profile and verifier, the resume briefing and the copilot's introduction.
 *
 * Why an index: a document's revisions, blocks, notes and tickets share its sort-key prefix (document.entity.ts), so
 * the partition Query `begins_with(sk, "document#")` reads every child of every document, revisions with their full
 * texts, to find the documents. The documents alone are in a sparse gsi3 index (`wsdocs#<ws>` / `document#<id>`),
 * which only document items carry. Its Query also answers the workspace's index mark (gsi3 sort key `document`): a
 * workspace created before the index has none until its documents have been given their index keys, which the first
 * listing does, once, through the backfill every list index shares (core/db/slim-index.ts `backfill`, with
 * `DOCUMENT_INDEX`). docs/decisions.md "Documents are listed from a sparse index".
 *
 * A global secondary index is eventually consistent: a list read right after a write may not show it yet (typically
 * for well under a second). Reads by id stay strongly consistent.
 */
import type { EntityItem } from "electrodb";
import { Config } from "../config";
import { queryAll } from "../db/partition";
import { db } from "../db/service";
import { backfill } from "../db/slim-index";
import { DOCUMENT_INDEX, documentIndexMarkKeysOf, type DocumentEntity } from "./document.entity";

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

/**
 * Every document of a workspace (not its revisions, blocks, notes or tickets), unordered: one Query of the sparse
 * index, paged through, which also reads the workspace's index mark (no other DynamoDB call: this runs on every
 * copilot stream). A workspace whose mark is missing (created before the index) is read from its partition once,
 * strongly consistently, and its documents are given their index keys (core/db/slim-index.ts `backfill`, whose mark
 * is written only while the workspace exists). docs/decisions.md "Documents are listed from a sparse index".
 * @param workspaceId the workspace (the caller has checked membership)
 * @returns the document items, with `attributes` only when given
 * @throws the DynamoDB client's errors (nothing is swallowed)
 */
export async function documentsOf<A extends Attribute = Attribute>(workspaceId: string, opts: DocumentsOfOptions<A> = {}): Promise<Pick<DocumentItem, A>[]> {
  const mark = documentIndexMarkKeysOf(workspaceId);
  const names = opts.attributes ? ["gsi3sk", ...OWNERSHIP, ...new Set<string>([...opts.attributes, ...(opts.createdSince ? ["created_at"] : [])])] : [];
  const items = await queryAll({
    TableName: Config.tableName(),
    IndexName: "gsi3",
    // The mark's gsi3 sort key (`document`) begins every document's (`document#<id>`): one Query reads both.
    KeyConditionExpression: "gsi3pk = :pk AND begins_with(gsi3sk, :sk)",
    ExpressionAttributeValues: { ":pk": mark.gsi3pk, ":sk": mark.gsi3sk },
    ...(names.length
      ? { ProjectionExpression: names.map((_, i) => `#a${i}`).join(", "), ExpressionAttributeNames: Object.fromEntries(names.map((n, i) => [`#a${i}`, n])) }
      : {}),
  });
  const marked = items.some((i) => i.gsi3sk === mark.gsi3sk);
  const docs = marked ? items : await backfill(DOCUMENT_INDEX, workspaceId);
  return parsed(docs, opts);
}

/** The items as document items (ElectroDB drops what is not a document), filtered and projected as asked. */
function parsed<A extends Attribute>(items: Record<string, unknown>[], opts: DocumentsOfOptions<A>): Pick<DocumentItem, A>[] {
  const since = opts.createdSince;
  const kept = since ? items.filter((i) => typeof i.created_at === "string" && i.created_at >= since) : items;
  const { data } = db().entities.document.parse({ Items: kept }, { ignoreOwnership: false, ...(opts.attributes ? { attributes: opts.attributes } : {}) });
  return data as unknown as Pick<DocumentItem, A>[];
}
