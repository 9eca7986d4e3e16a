/**
 * The per-workspace search snapshot of insights (issue #24 point 1): what `POST /api/insights/search` ranks, kept as a
 * small set of items in the workspace's partition so that a container loads a whole workspace in one Query instead of
 * reading every insight item, and never embeds anything but the query.
 *
 * Layout (raw items in the service table, partition `ws#<workspace>`, beside the workspace's other items):
 * - `searchix#head`: `version` (bumped by every change applied), `pending` (a string set of `<insight id>@<ms>`: changes
 *   begun and not yet applied), `built` (the snapshot was built from the insights once; before that the first search
 *   builds it, which is how workspaces older than the snapshot get one).
 * - `searchix#s#<shard>#<page>`: the rows of the insights whose id hashes to `<shard>` (one of `SHARDS`), encoded as one
 *   blob (`encodeShard`) cut into pages of at most `PAGE_BYTES`; page 0 carries the page count, every page the shard's
 *   `rev` (page 0 marks that with `pagerevs`), and every page of a shard is written together under a condition on page
 *   0's `rev`. A Query is read-committed per item only, so a reader can meet page 0 of one write and page 1 of another:
 *   pages whose rev is not page 0's are a shard read mid-rewrite, read again (`samePages`).
 * - `searchix#lex#<page>`: the workspace's lexical (BM25) index in MiniSearch's serialized form, deflated, with the
 *   head version it was built at (`lexv`, on every page, checked like a shard's `rev`). Stored by the first reader
 *   that had to build it (`saveLexical`), so the next containers load it (about five times faster than indexing the
 *   text again); a reader whose head version differs builds its own.
 * A row holds what ranking and filters need: id, type, severity, frequency, creation time, title, description (at
 * most `MAX_DESCRIPTION` characters) and the int8 search vector with its scale and embedder; and the rest of what a
 * search result shows (`RowView`: sources, quotes, counts, notes, rating, archived, update time), so a search answers
 * from the snapshot without reading the insights. A whole workspace (rows and lexical index) is read by one
 * paginated Query of `searchix#`.
 *
 * Versioning, so a stale snapshot never returns a deleted insight or misses a new one:
 * 1. `beginChange` adds `<id>@<now>` for each insight about to be written to `pending`;
 * 2. the insight write(s);
 * 3. `finishChange` re-reads those insights (strongly consistent), rewrites their rows in their shards (a deleted one's
 *    row goes), then removes the pending entries and adds 1 to `version`, in one update.
 * Readers read the head (one GetItem) and reuse the rows they hold while `version` is the one they loaded at. Rows are
 * read after the head, so they contain every change whose version bump the reader saw. A write that died between 1
 * and 3 leaves its entries in `pending`: once older than `STALE_PENDING_MS` the next reader or writer re-applies those
 * ids (step 3 again, idempotent: it reads the items as they are), so no change stays invisible. Re-reading instead of
 * trusting the writer's own values makes concurrent writers of one insight converge: the last to apply reads the last
 * write.
 *
 * Vectors are computed on write only (`searchVectorFields`, by the insight write paths); the snapshot copies them from
 * the items. A row whose insight has no vector of the current embedder (the embedder was down when it was written, or
 * it is older than search vectors) ranks by its words alone; `finishChange` with an embedder (a write path) embeds
 * such insights of the shards it touches, and while the head counts `unembedded` rows (left by `rebuild` for insights
 * older than search vectors) a few more of those, storing their vectors on the items.
 */
import { createHash } from "node:crypto";
import { deflateRawSync, inflateRawSync } from "node:zlib";
import { GetCommand, PutCommand, TransactWriteCommand, UpdateCommand } from "@aws-sdk/lib-dynamodb";
import { ConditionalCheckFailedException, TransactionCanceledException } from "@aws-sdk/client-dynamodb";
import { Config } from "../config";
import { dynamoClient } from "../db/client";
import { requestScope } from "../context";
import { consistentBatchGet } from "../db/batch-get";
import { queryPrefix } from "../db/partition";
import { sdkCancelCodes } from "../db/errors";
import type { Embedder } from "../ai/ports";
import { decodeInt8, encodeInt8, quantizeInt8 } from "../ai/vectors";
import { toView, type InsightItem } from "./view";
import type { Insight as InsightView } from "./schema";

/** Shards per workspace: an insight write rewrites one (~1/64 of the rows; 80 rows at 5,000 insights). */
export const SHARDS = 64;
/** Largest blob bytes per page item (DynamoDB items hold 400 KB). */
export const PAGE_BYTES = 350_000;
/** A pending change older than this is taken for dead (its writer crashed) and re-applied by whoever sees it. */
export const STALE_PENDING_MS = 30_000;
/** Characters of a description kept in a row (ranking and the text fallback look at these). */
export const MAX_DESCRIPTION = 8_000;
/** Insights without a current vector that one `finishChange` embeds on the side, at most (legacy backfill). */
const BACKFILL_PER_CHANGE = 32;
/** Attempts at a shard's conditional rewrite before giving up (another writer kept changing the shard). */
const SHARD_ATTEMPTS = 8;

/** One insight as search sees it. */
export interface SearchRow {
  id: string;
  insight_type: string;
  severity: string;
  frequency: number;
  created_at: string;
  title: string;
  description: string;
  /** The embedder of `codes`, or null when the row has no vector. */
  embedder_id: string | null;
  codes: Int8Array | null;
  scale: number;
  /**
   * The rest of the insight as a search result shows it, as of the row's write; null for a row written before rows
   * carried it (the search reads such an insight from the table, and refreshes the rows: `refreshRows`).
   */
  view: RowView | null;
}

/**
 * What a search result shows of an insight beyond the row's ranked fields (core/insight/view.ts `toView`), with the
 * whole description when the row's is cut at `MAX_DESCRIPTION`.
 */
export type RowView = Pick<InsightView, "source_ids" | "quotes" | "mention_count" | "impact" | "is_archived" | "notes" | "rating" | "updated_at"> & {
  description?: string;
};

/** The head of a workspace's snapshot. */
export interface SnapshotHead {
  version: number;
  built: boolean;
  /** Pending changes: insight id and when it began (ms since the epoch). */
  pending: { entry: string; id: string; at: number }[];
}

/** An insight item as the document client reads it (ElectroDB stores its attributes under these names). */
type InsightRecord = InsightItem & {
  search_vector?: string;
  search_scale?: number;
  search_embedder_id?: string;
};

const pk = (workspaceId: string) => `ws#${workspaceId}`;
const HEAD_SK = "searchix#head";
const SHARD_PREFIX = "searchix#s#";
const shardPrefix = (shard: number) => `${SHARD_PREFIX}${String(shard).padStart(2, "0")}#`;
const pageSk = (shard: number, page: number) => `${shardPrefix(shard)}${page}`;

/** The shard of an insight id: the first 4 bytes of its SHA-1, modulo `SHARDS` (ids are UUIDs: any hash spreads). */
export function shardOf(id: string): number {
  return createHash("sha1").update(id).digest().readUInt32BE(0) % SHARDS;
}

/** The text an insight's search vector embeds: "title. description" (what a reader of the insight sees first). */
export const searchText = (i: { title: string; description: string }): string => `${i.title}. ${i.description}`;

/**
 * The search-vector attributes of insights about to be written with these texts (`search_vector`, `search_scale`,
 * `search_embedder_id`), one batch embedding. When the embedder is unavailable the insights are written without a
 * vector (they rank by their words until a later write embeds them), and nothing is thrown: a search index is not a
 * reason to refuse an insight.
 * @returns one attribute set per text, in order (empty objects when embedding failed)
 */
export async function searchVectorFields(
  texts: string[],
  getEmbedder: () => Promise<Embedder>,
): Promise<{ search_vector?: string; search_scale?: number; search_embedder_id?: string }[]> {
  if (texts.length === 0) return [];
  try {
    const emb = await getEmbedder();
    const vectors = await emb.embed(texts);
    return vectors.map((v) => {
      const q = quantizeInt8(v);
      return { search_vector: encodeInt8(q.codes), search_scale: q.scale, search_embedder_id: emb.id };
    });
  } catch (err) {
    warn("insight search vectors not computed (embedder unavailable): the insights rank by their words until rewritten", err);
    return texts.map(() => ({}));
  }
}

let warned = 0;
function warn(message: string, err: unknown): void {
  // Once a minute at most: a down embedder would otherwise log on every write.
  if (Date.now() - warned < 60_000) return;
  warned = Date.now();
  void import("@aws-lambda-powertools/logger").then(({ Logger }) =>
    new Logger({ serviceName: "research-to-delivery", logLevel: Config.logLevel() as "INFO" }).warn(message, { error: err instanceof Error ? err : new Error(String(err)) }),
  );
}

// ---------------------------------------------------------------------------------------------------------------
// Rows <-> shard blobs

function rowOf(item: InsightRecord): SearchRow {
  const codes = item.search_vector ? decodeInt8(item.search_vector) : null;
  const v = toView(item);
  const cut = item.description.length > MAX_DESCRIPTION;
  return {
    id: item.id,
    insight_type: item.insight_type,
    severity: item.severity,
    frequency: item.frequency,
    created_at: item.created_at,
    title: item.title,
    description: item.description.length > MAX_DESCRIPTION ? item.description.slice(0, MAX_DESCRIPTION) : item.description,
    embedder_id: codes ? (item.search_embedder_id ?? null) : null,
    codes: codes && item.search_embedder_id ? codes : null,
    scale: item.search_scale ?? 0,
    view: {
      source_ids: v.source_ids,
      quotes: v.quotes,
      mention_count: v.mention_count,
      impact: v.impact,
      is_archived: v.is_archived,
      notes: v.notes,
      rating: v.rating,
      updated_at: v.updated_at,
      ...(cut ? { description: v.description } : {}),
    },
  };
}

/**
 * A shard's rows as one blob: a 4-byte length, the JSON of the rows without their codes (deflated: text shrinks about
 * threefold, and bytes are what a cold load pays for), then the codes of the rows that have a vector, in row order
 * (each row's own length). A row's view is the last element of its JSON array (absent in rows written before views).
 */
export function encodeShard(rows: SearchRow[]): Buffer {
  const meta = rows.map((r) => [r.id, r.insight_type, r.severity, r.frequency, r.created_at, r.title, r.description, r.embedder_id, r.codes ? r.codes.length : 0, r.scale, r.view]);
  const json = deflateRawSync(Buffer.from(JSON.stringify(meta), "utf8"), { level: 6 });
  const vectors = rows.filter((r) => r.codes).map((r) => Buffer.from(r.codes!.buffer, r.codes!.byteOffset, r.codes!.byteLength));
  const head = Buffer.alloc(4);
  head.writeUInt32BE(json.length, 0);
  return Buffer.concat([head, json, ...vectors]);
}

/** The rows of a blob made by `encodeShard`. @throws Error on a truncated blob */
export function decodeShard(blob: Uint8Array): SearchRow[] {
  const buf = Buffer.from(blob.buffer, blob.byteOffset, blob.byteLength);
  const jsonLength = buf.readUInt32BE(0);
  if (4 + jsonLength > buf.length) throw new Error("search shard blob truncated in its rows");
  const meta = JSON.parse(inflateRawSync(buf.subarray(4, 4 + jsonLength)).toString("utf8")) as [string, string, string, number, string, string, string, string | null, number, number, RowView | undefined][];
  let off = 4 + jsonLength;
  const rows = meta.map(([id, insight_type, severity, frequency, created_at, title, description, embedder_id, dims, scale, view]) => {
    let codes: Int8Array | null = null;
    if (dims > 0) {
      if (off + dims > buf.length) throw new Error(`search shard blob truncated at row ${id}`);
      // A copy: the codes outlive the page buffers they came in.
      codes = new Int8Array(buf.buffer.slice(buf.byteOffset + off, buf.byteOffset + off + dims));
      off += dims;
    }
    return { id, insight_type, severity, frequency, created_at, title, description, embedder_id, codes, scale, view: view ?? null };
  });
  return rows;
}

// ---------------------------------------------------------------------------------------------------------------
// Head

/** The snapshot head of a workspace (strongly consistent); a workspace without one is at version 0, not built. */
export async function readHead(workspaceId: string): Promise<SnapshotHead> {
  const { Item } = await dynamoClient().send(new GetCommand({ TableName: Config.tableName(), Key: headKey(workspaceId), ConsistentRead: true }));
  return parseHead(Item);
}

/**
 * Mark a new workspace's snapshot as built and empty (`POST /api/workspaces`, right after its transaction): a
 * workspace born with search snapshots has no insight older than them, so its first search needs no `rebuild` (which
 * reads every insight: the first-search cost of issue #24 point 6). Only if no head exists yet; a crash before this
 * leaves the workspace without a head, and its first search builds the snapshot as for an older workspace.
 */
export async function startEmptySnapshot(workspaceId: string): Promise<void> {
  try {
    await dynamoClient().send(
      new PutCommand({
        TableName: Config.tableName(),
        Item: { pk: pk(workspaceId), sk: HEAD_SK, version: 0, built: true, unembedded: 0 },
        ConditionExpression: "attribute_not_exists(pk)",
      }),
    );
  } catch (err) {
    if (!(err instanceof ConditionalCheckFailedException)) throw err;
  }
}

/** The table key of a workspace's snapshot head (for a reader that fetches it with other items in one BatchGet). */
export const headKey = (workspaceId: string): { pk: string; sk: string } => ({ pk: pk(workspaceId), sk: HEAD_SK });

/** A snapshot head from its raw item as the document client returns it; no item is version 0, not built. */
export function parseHead(Item: Record<string, unknown> | undefined): SnapshotHead {
  const pending = [...((Item?.pending as Set<string> | undefined) ?? [])].map((entry) => {
    const at = entry.lastIndexOf("@");
    return { entry, id: entry.slice(0, at), at: Number(entry.slice(at + 1)) };
  });
  return { version: (Item?.version as number | undefined) ?? 0, built: Item?.built === true, pending };
}

/** A change begun by `beginChange`: what `finishChange` applies and clears. */
export interface Change {
  workspaceId: string;
  ids: string[];
  entries: string[];
}

/**
 * The request-scope key under which core/insight/search.ts keeps a head this request read, for its next reads of the
 * snapshot (core/context.ts `recent`, `HEAD_REUSE_MS`).
 */
export const keptHeadKey = (workspaceId: string): string => `insight-search-head#${workspaceId}`;

/**
 * Forget the head this request kept: a request that changes an insight itself (a stream variant's operation creates
 * insights before its agent searches) must not search as of a head read before its own change.
 */
function dropKeptHead(workspaceId: string): void {
  requestScope()?.recent.delete(keptHeadKey(workspaceId));
}

/**
 * Step 1 of a change (see the module comment): record the insights about to be written as pending, so a writer that
 * dies before applying its change is noticed and its change applied by someone else.
 * @param ids insights the write creates, changes or deletes
 */
export async function beginChange(workspaceId: string, ids: string[]): Promise<Change> {
  dropKeptHead(workspaceId);
  const unique = [...new Set(ids)];
  const now = Date.now();
  const entries = unique.map((id) => `${id}@${now}`);
  if (entries.length) {
    await dynamoClient().send(
      new UpdateCommand({
        TableName: Config.tableName(),
        Key: { pk: pk(workspaceId), sk: HEAD_SK },
        UpdateExpression: "ADD pending :p",
        ExpressionAttributeValues: { ":p": new Set(entries) },
      }),
    );
  }
  return { workspaceId, ids: unique, entries };
}

/**
 * Step 3 of a change: re-read the insights, rewrite their rows, clear the pending entries and bump the version.
 * Call it after the write, also when the write failed (it may have written part): it reads what is there.
 * @param embedder given on write paths: insights of the touched shards without a current vector are embedded (at most
 *   `BACKFILL_PER_CHANGE`) and their vectors stored on the items. Never given on a read path.
 * @throws whatever DynamoDB throws; the pending entries then stay and are re-applied after `STALE_PENDING_MS`.
 */
export async function finishChange(change: Change, embedder?: Embedder): Promise<void> {
  dropKeptHead(change.workspaceId);
  if (change.ids.length === 0) return;
  let unembedded = 0;
  try {
    await applyRows(change.workspaceId, change.ids, embedder);
    const { Attributes } = await dynamoClient().send(
      new UpdateCommand({
        TableName: Config.tableName(),
        Key: { pk: pk(change.workspaceId), sk: HEAD_SK },
        UpdateExpression: "ADD version :one DELETE pending :p",
        ExpressionAttributeValues: { ":one": 1, ":p": new Set(change.entries) },
        ReturnValues: "ALL_NEW",
      }),
    );
    unembedded = (Attributes?.unembedded as number | undefined) ?? 0;
  } finally {
    // Again once the version moved (or did not): a read of this request that ran beside the change kept the head as it
    // was before the bump, and would answer as of it for the rest of its window.
    dropKeptHead(change.workspaceId);
  }
  if (embedder && unembedded > 0) await backfill(change.workspaceId, embedder);
}

/**
 * Embed up to `BACKFILL_PER_CHANGE` rows of the workspace that have no vector of `embedder` (insights older than
 * search vectors, counted by `rebuild` in the head's `unembedded`), store the vectors on the insights, apply their rows
 * and count them off. Runs on write paths only (`finishChange` with an embedder), a few per write, until none is left.
 */
async function backfill(workspaceId: string, embedder: Embedder): Promise<void> {
  const missing = (await loadRows(workspaceId)).filter((r) => r.embedder_id !== embedder.id).slice(0, BACKFILL_PER_CHANGE);
  if (missing.length) {
    // Not embedded (the embedder unavailable): nothing is counted off, a later write tries again.
    if (!(await embedRows(workspaceId, missing, embedder))) return;
    await applyRows(workspaceId, missing.map((r) => r.id));
  }
  const left = missing.length < BACKFILL_PER_CHANGE ? 0 : undefined;
  await dynamoClient().send(
    new UpdateCommand({
      TableName: Config.tableName(),
      Key: { pk: pk(workspaceId), sk: HEAD_SK },
      UpdateExpression: left === 0 ? "ADD version :one SET unembedded = :zero" : "ADD version :one, unembedded :minus",
      ExpressionAttributeValues: left === 0 ? { ":one": 1, ":zero": 0 } : { ":one": 1, ":minus": -missing.length },
    }),
  );
}

/**
 * Run `write` as one change of the given insights: `beginChange`, the write, `finishChange` (also when the write
 * throws, whose error is then rethrown). A `finishChange` that fails after the write succeeded is logged, not thrown:
 * the change stays pending and a later read repairs it.
 */
export async function asChange<T>(workspaceId: string, ids: string[], write: () => Promise<T>, embedder?: () => Promise<Embedder | undefined>): Promise<T> {
  const change = await beginChange(workspaceId, ids);
  let result: T;
  try {
    result = await write();
  } catch (err) {
    await finishChange(change).catch(() => undefined); // the entries stay pending and are re-applied later
    throw err;
  }
  // The write is committed: the snapshot's bookkeeping failing must not answer it as failed (a retry would write it
  // twice). Its entries stay pending, and the next reader re-applies them after STALE_PENDING_MS (`repairStale`).
  await finishChange(change, await embedder?.().catch(() => undefined)).catch((err: unknown) => warn("search snapshot not updated after a write; a later read repairs it", err));
  return result;
}

// ---------------------------------------------------------------------------------------------------------------
// Applying rows

/** The insights of `ids` as they are now (strongly consistent BatchGets of 100), by id; missing ones are absent. */
async function readInsights(workspaceId: string, ids: string[]): Promise<Map<string, InsightRecord>> {
  const found = new Map<string, InsightRecord>();
  for (let i = 0; i < ids.length; i += 100) {
    const keys = ids.slice(i, i + 100).map((id) => ({ pk: pk(workspaceId), sk: `insight#${id}` }));
    for (const item of await consistentBatchGet(Config.tableName(), keys)) found.set(item.id as string, item as InsightRecord);
  }
  return found;
}

/**
 * Page 0's mark that every page of its blob carries the blob's rev (`rev` of a shard, `lexv` of the lexical index).
 * Pages written before revs were on every page have none; they are read as before, but only under a page 0 without
 * this mark (a page 0 written since then has rewritten every page of its blob in the same transaction).
 */
const PAGE_REVS = "pagerevs";

/**
 * Whether the pages of one blob (in page order, page 0 first) are of one write: every page carries page 0's `revAttr`
 * (a page without one only under an unmarked, older page 0). DynamoDB's Query reads each item committed but not the
 * items of one transaction together, so page 0 of a rewrite can come with page 1 of the write before it: such a blob
 * decodes without error into wrong vectors.
 */
function samePages(items: Record<string, unknown>[], revAttr: "rev" | "lexv"): boolean {
  const rev = items[0]?.[revAttr];
  const marked = items[0]?.[PAGE_REVS] === true;
  return items.every((item, k) => k === 0 || (item[revAttr] === undefined ? !marked : item[revAttr] === rev));
}

/** A shard as stored: its rows, its rev (0 when absent) and how many pages it has. @throws ShardChanged mid-rewrite */
async function readShard(workspaceId: string, shard: number): Promise<{ rows: SearchRow[]; rev: number; pages: number }> {
  const items = await queryAll(workspaceId, shardPrefix(shard));
  if (items.length === 0) return { rows: [], rev: 0, pages: 0 };
  const first = items.find((i) => i.sk === pageSk(shard, 0));
  const pages = (first?.pages as number | undefined) ?? 0;
  const parts = items
    .map((i) => ({ page: Number((i.sk as string).slice(shardPrefix(shard).length)), item: i }))
    .filter((p) => p.page < pages)
    .sort((a, b) => a.page - b.page);
  // Read between a rewrite's pages (some missing, or of two writes): read again. A mixed blob decoded and written
  // back under page 0's rev would store wrong vectors for good.
  if (!first || parts.length !== pages || !samePages(parts.map((p) => p.item), "rev")) throw new ShardChanged();
  return { rows: decodeShard(Buffer.concat(parts.map((p) => p.item.blob as Uint8Array))), rev: (first.rev as number) ?? 0, pages };
}

class ShardChanged extends Error {}

/** Write a shard's rows as its pages, on condition that its rev is still `rev`. @throws ShardChanged when it is not */
async function writeShard(workspaceId: string, shard: number, rows: SearchRow[], rev: number, oldPages: number): Promise<void> {
  const blob = encodeShard(rows);
  const pages: Buffer[] = [];
  for (let off = 0; off < blob.length; off += PAGE_BYTES) pages.push(blob.subarray(off, off + PAGE_BYTES));
  const table = Config.tableName();
  const condition = rev === 0
    ? { ConditionExpression: "attribute_not_exists(pk)" }
    : { ConditionExpression: "rev = :rev", ExpressionAttributeValues: { ":rev": rev } };
  const page0 = { TableName: table, Item: { pk: pk(workspaceId), sk: pageSk(shard, 0), rev: rev + 1, pages: pages.length, [PAGE_REVS]: true, blob: pages[0] }, ...condition };
  try {
    if (pages.length === 1 && oldPages <= 1) {
      await dynamoClient().send(new PutCommand(page0));
      return;
    }
    // Every page carries the rev, so a reader can tell pages of two writes apart (`samePages`).
    const rest = pages.slice(1).map((b, k) => ({ Put: { TableName: table, Item: { pk: pk(workspaceId), sk: pageSk(shard, k + 1), rev: rev + 1, blob: b } } }));
    const surplus = Array.from({ length: Math.max(0, oldPages - pages.length) }, (_, k) => ({
      Delete: { TableName: table, Key: { pk: pk(workspaceId), sk: pageSk(shard, pages.length + k) } },
    }));
    await dynamoClient().send(new TransactWriteCommand({ TransactItems: [{ Put: page0 }, ...rest, ...surplus] }));
  } catch (err) {
    const refused =
      err instanceof ConditionalCheckFailedException ||
      (sdkCancelCodes(err) ?? []).some((c) => c === "ConditionalCheckFailed" || c === "TransactionConflict");
    if (refused) throw new ShardChanged();
    throw err;
  }
}

/** The snapshot's items of a workspace whose sort key starts with `skPrefix` (strongly consistent). */
const queryAll = (workspaceId: string, skPrefix: string) => queryPrefix(pk(workspaceId), skPrefix);

/** Rewrite the rows of `ids` from the insights as they are now; with an embedder, backfill missing vectors. */
async function applyRows(workspaceId: string, ids: string[], embedder?: Embedder): Promise<void> {
  const byShard = new Map<number, string[]>();
  for (const id of ids) byShard.set(shardOf(id), [...(byShard.get(shardOf(id)) ?? []), id]);
  let backfillLeft = embedder ? BACKFILL_PER_CHANGE : 0;
  await Promise.all(
    [...byShard].map(async ([shard, shardIds]) => {
      for (let attempt = 0; ; attempt++) {
        try {
          const { rows, rev, pages } = await readShard(workspaceId, shard);
          // The insights are read after the shard's rev, on every attempt: a write conditioned on that rev then carries
          // what they were after every change whose rows landed before it (read once, before the loop, a retry wrote
          // the rows of an insight as they were before a change, or a delete, that had landed meanwhile).
          const insights = await readInsights(workspaceId, shardIds);
          const touched = new Set(shardIds);
          const next = rows.filter((r) => !touched.has(r.id));
          for (const id of shardIds) {
            const item = insights.get(id);
            if (item) next.push(rowOf(item));
          }
          if (embedder && backfillLeft > 0) {
            const missing = next.filter((r) => r.embedder_id !== embedder.id).slice(0, backfillLeft);
            backfillLeft -= missing.length;
            if (missing.length) await embedRows(workspaceId, missing, embedder);
          }
          await writeShard(workspaceId, shard, next, rev, pages);
          return;
        } catch (err) {
          if (!(err instanceof ShardChanged) || attempt + 1 >= SHARD_ATTEMPTS) throw err;
          await new Promise((r) => setTimeout(r, 5 + Math.random() * 20 * (attempt + 1)));
        }
      }
    }),
  );
}

/** A row's whole description: the row's own is cut at `MAX_DESCRIPTION`, and its view keeps the rest (`rowOf`). */
const wholeDescription = (row: SearchRow): string => row.view?.description ?? row.description;

/**
 * Embed rows without a current vector and store the vectors on their insights too (a write path's backfill). The
 * insight's whole text is embedded, as a write embeds it (`searchText`), and the store is conditioned on that text.
 * @returns false when the embedder was unavailable (nothing stored)
 */
async function embedRows(workspaceId: string, rows: SearchRow[], embedder: Embedder): Promise<boolean> {
  let vectors: Float32Array[];
  try {
    vectors = await embedder.embed(rows.map((r) => searchText({ title: r.title, description: wholeDescription(r) })));
  } catch (err) {
    warn("insight search vectors not backfilled (embedder unavailable)", err);
    return false;
  }
  await Promise.all(
    rows.map(async (row, k) => {
      const q = quantizeInt8(vectors[k]);
      row.codes = q.codes;
      row.scale = q.scale;
      row.embedder_id = embedder.id;
      try {
        await dynamoClient().send(
          new UpdateCommand({
            TableName: Config.tableName(),
            Key: { pk: pk(workspaceId), sk: `insight#${row.id}` },
            // Only while the text is the one embedded: a concurrent retitle wins and brings its own vector.
            ConditionExpression: "title = :t AND description = :d",
            UpdateExpression: "SET search_vector = :v, search_scale = :s, search_embedder_id = :e",
            ExpressionAttributeValues: { ":t": row.title, ":d": wholeDescription(row), ":v": encodeInt8(q.codes), ":s": q.scale, ":e": embedder.id },
          }),
        );
      } catch (err) {
        if (!(err instanceof ConditionalCheckFailedException)) throw err;
      }
    }),
  );
  return true;
}

// ---------------------------------------------------------------------------------------------------------------
// Reading the snapshot

/** The serialized lexical index stored beside the rows: the head version it reflects, its JSON and its page count. */
export interface StoredLexical {
  version: number;
  json: string;
  pages: number;
}

const LEXICAL_PREFIX = "searchix#lex#";

/**
 * A blob cut in pages: its parts in page order, or null when the pages are not all there or not all of one write (a
 * rewrite under way: `samePages` on `revAttr`).
 */
function joinPages(pages: { page: number; item: Record<string, unknown> }[], revAttr: "rev" | "lexv"): Buffer | null {
  pages.sort((a, b) => a.page - b.page);
  const count = pages[0]?.page === 0 ? ((pages[0].item.pages as number | undefined) ?? 0) : 0;
  const parts = pages.filter((p) => p.page < count).map((p) => p.item);
  return parts.length === count && count > 0 && samePages(parts, revAttr) ? Buffer.concat(parts.map((p) => p.blob as Uint8Array)) : null;
}

/**
 * Every row of a workspace's snapshot and its stored lexical index, in one paginated Query of the snapshot's items.
 * @throws Error when a shard was caught between the pages of its rewrite (the caller reads again)
 */
export async function loadSnapshot(workspaceId: string): Promise<{ rows: SearchRow[]; lexical: StoredLexical | null }> {
  const items = await queryAll(workspaceId, "searchix#");
  const groups = new Map<string, { page: number; item: Record<string, unknown> }[]>();
  for (const item of items) {
    const sk = item.sk as string;
    if (sk === HEAD_SK) continue;
    const cut = sk.lastIndexOf("#");
    const group = sk.slice(0, cut + 1);
    groups.set(group, [...(groups.get(group) ?? []), { page: Number(sk.slice(cut + 1)), item }]);
  }
  const rows: SearchRow[] = [];
  let lexical: StoredLexical | null = null;
  for (const [group, pages] of groups) {
    const blob = joinPages(pages, group === LEXICAL_PREFIX ? "lexv" : "rev");
    if (group === LEXICAL_PREFIX) {
      // A lexical index caught mid-rewrite is only not used: the reader builds its own.
      if (blob) lexical = { version: pages[0]!.item.lexv as number, json: inflateRawSync(blob).toString("utf8"), pages: pages.length };
      continue;
    }
    if (!blob) throw new Error("search snapshot read during a shard rewrite; retry");
    rows.push(...decodeShard(blob));
  }
  return { rows, lexical };
}

/** Every row of a workspace's snapshot. */
export async function loadRows(workspaceId: string): Promise<SearchRow[]> {
  return (await loadSnapshot(workspaceId)).rows;
}

/**
 * The largest deflated lexical index stored (bytes): its pages and the surplus deletes go in one transaction, which
 * DynamoDB refuses past 4 MB (a ValidationException) or 100 items. A larger one (tens of thousands of long insights)
 * is not stored: each container builds its own, as for small workspaces.
 */
export const LEXICAL_MAX_BYTES = 3_500_000;

/**
 * Store a workspace's lexical index (MiniSearch's JSON, deflated, in pages) as of head version `version`, unless one
 * of a later version is there already. Written by the reader that had to build it, so the next containers load it
 * instead of building it; derived from stored text only. An index past `LEXICAL_MAX_BYTES` deflated is not stored.
 * @param oldPages pages of the stored index read with the rows (so surplus ones are deleted)
 * @returns whether it was stored (false: too large, or a newer one is there or being written)
 */
export async function saveLexical(workspaceId: string, version: number, json: string, oldPages: number): Promise<boolean> {
  const blob = deflateRawSync(Buffer.from(json, "utf8"), { level: 1 });
  if (blob.length > LEXICAL_MAX_BYTES) return false;
  const pages: Buffer[] = [];
  for (let off = 0; off < blob.length; off += PAGE_BYTES) pages.push(blob.subarray(off, off + PAGE_BYTES));
  const table = Config.tableName();
  const page0 = {
    TableName: table,
    Item: { pk: pk(workspaceId), sk: `${LEXICAL_PREFIX}0`, lexv: version, pages: pages.length, [PAGE_REVS]: true, blob: pages[0] },
    ConditionExpression: "attribute_not_exists(pk) OR lexv < :v",
    ExpressionAttributeValues: { ":v": version },
  };
  try {
    if (pages.length === 1 && oldPages <= 1) {
      await dynamoClient().send(new PutCommand(page0));
      return true;
    }
    const rest = pages.slice(1).map((b, k) => ({ Put: { TableName: table, Item: { pk: pk(workspaceId), sk: `${LEXICAL_PREFIX}${k + 1}`, lexv: version, blob: b } } }));
    const surplus = Array.from({ length: Math.max(0, oldPages - pages.length) }, (_, k) => ({
      Delete: { TableName: table, Key: { pk: pk(workspaceId), sk: `${LEXICAL_PREFIX}${pages.length + k}` } },
    }));
    await dynamoClient().send(new TransactWriteCommand({ TransactItems: [{ Put: page0 }, ...rest, ...surplus] }));
    return true;
  } catch (err) {
    // A newer index is there already, or another reader is writing one: either way, nothing to do.
    if (err instanceof ConditionalCheckFailedException || err instanceof TransactionCanceledException) return false;
    throw err;
  }
}

/**
 * Build the snapshot from the workspace's insights (their stored vectors; nothing is embedded): for a workspace whose
 * insights predate the snapshot, and for a benchmark's bulk-loaded insights. Rows of insights that no longer exist
 * go. Concurrent changes are safe: each shard is rewritten under its condition, from items read after it.
 * @param insightIds every insight id of the workspace
 */
export async function rebuild(workspaceId: string, insightIds: string[]): Promise<void> {
  const present = (await loadRows(workspaceId).catch(() => [] as SearchRow[])).map((r) => r.id);
  const ids = [...new Set([...insightIds, ...present])];
  if (ids.length) await applyRows(workspaceId, ids);
  const unembedded = (await loadRows(workspaceId)).filter((r) => !r.codes).length;
  await dynamoClient().send(
    new UpdateCommand({
      TableName: Config.tableName(),
      Key: { pk: pk(workspaceId), sk: HEAD_SK },
      UpdateExpression: "ADD version :one SET built = :t, unembedded = :u",
      ExpressionAttributeValues: { ":one": 1, ":t": true, ":u": unembedded },
    }),
  );
}

/**
 * Rewrite the rows of `ids` from the insights as they are now and bump the version, with no pending entry: for rows
 * stored before rows carried their view (`SearchRow.view` null), which the first search that loads them brings up to
 * date once. Reads those insights (BatchGets of 100); nothing is embedded.
 */
export async function refreshRows(workspaceId: string, ids: string[]): Promise<void> {
  if (ids.length === 0) return;
  await applyRows(workspaceId, ids);
  await dynamoClient().send(
    new UpdateCommand({
      TableName: Config.tableName(),
      Key: { pk: pk(workspaceId), sk: HEAD_SK },
      UpdateExpression: "ADD version :one",
      ExpressionAttributeValues: { ":one": 1 },
    }),
  );
}

/**
 * Re-apply pending changes older than `STALE_PENDING_MS` (their writers died): rows rewritten from the insights as
 * they are, entries removed, version bumped. Nothing is embedded (this runs on reads).
 * @returns whether anything was re-applied
 */
export async function repairStale(workspaceId: string, head: SnapshotHead, now = Date.now()): Promise<boolean> {
  const stale = head.pending.filter((p) => now - p.at >= STALE_PENDING_MS);
  if (stale.length === 0) return false;
  await finishChange({ workspaceId, ids: [...new Set(stale.map((p) => p.id))], entries: stale.map((p) => p.entry) });
  return true;
}
