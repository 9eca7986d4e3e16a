import { serviceLog } from "../log";
import { Errors } from "../error";
import { Config } from "../config";
import { fitResponse } from "../response-size";
import { consistentBatchGet } from "../db/batch-get";
import { readAsMember, verifiedInThisRequest, type ItemRef } from "../workspace";
import type { Prefetch } from "../db/read";
import { requestScope } from "../context";
import { db } from "../db/service";
import { partitionKeys } from "../db/partition";
import { embedder } from "../ai/select";
import { embedQuery } from "../ai/query-cache";
import type { Embedder } from "../ai/ports";
import { toView, type InsightItem } from "./view";
import type { Insight as InsightView } from "./schema";
import { headKey, keptHeadKey, loadSnapshot, parseHead, readHead, rebuild, refreshRows, repairStale, saveLexical, type SearchRow, type SnapshotHead } from "./search-index";
import { buildIndex, hasVectors, hybridRank, lexicalHits, serializeLexical, textRank, type RankIndex, type Ranked } from "./search-rank";
import type { SearchInsightsInput } from "./schema";

export { MIN_RELEVANCE } from "./search-rank";

/**
 * Rows held per container, over all workspaces (about 2 KB each with their view and lexical index): past it the least
 * recently searched workspaces are dropped. 100,000 rows is a few hundred MB at most, inside the insights function's
 * memory.
 */
const MAX_CACHED_ROWS = 100_000;

/** Rows from which a built lexical index is stored for other containers (below, building it costs ~10 ms or less). */
const PERSIST_LEXICAL_FROM = 300;

/**
 * How long a search waits for a remote embedder's query embedding (Bedrock, an OpenAI-compatible server) before
 * answering with the text fallback (spec 01). Bedrock's embedder retries throttling with backoff (core/ai/bedrock.ts
 * DEFAULT_RETRY: about 16–24 s in all), and the insights function has API Gateway's 29 s: waiting that out would time
 * the search out instead of falling back. A healthy Titan embedding takes a fraction of this; a cached one nothing.
 */
export const QUERY_EMBED_DEADLINE_MS = 2_000;

/**
 * The query's vector, or null when the embedding fails or is cut by its deadline (QUERY_EMBED_DEADLINE_MS, an
 * EmbedOptions signal): a remote embedder aborts its request and stops retrying then. The local embedder ignores the
 * signal: it has no throttling or backoff, and its one wait, its model's first load, is worth sitting out (a deadline
 * would only make first searches text).
 */
function queryVectorWithin(emb: Embedder, query: string): Promise<Float32Array | null> {
  return embedQuery(emb, query, { signal: AbortSignal.timeout(QUERY_EMBED_DEADLINE_MS) }).catch(() => null);
}

interface Cached {
  version: number;
  index: RankIndex;
}

/**
 * Per-container cache of each workspace's search snapshot (core/insight/search-index.ts), reused while the snapshot
 * head's version is unchanged: a warm search costs one BatchGet of membership and head, the query embedding (unless
 * this container embedded the same text before) and the ranking; its results come from the rows (`resultsOf`).
 * Insertion order is recency (a hit is re-inserted).
 */
const cache = new Map<string, Cached>();

/** Forget every cached snapshot of this container (tests and benchmarks measuring a cold container). */
export function clearSearchCache(): void {
  cache.clear();
}

function remember(workspaceId: string, entry: Cached): void {
  // A request holding an older kept head loads the rows as they are now but labels them with its head's version:
  // replacing a newer entry with it would make the next reader at the newer version load the snapshot again.
  const held = cache.get(workspaceId);
  if (held && held.version > entry.version) return;
  cache.delete(workspaceId);
  cache.set(workspaceId, entry);
  let rows = 0;
  for (const c of cache.values()) rows += c.index.rows.length;
  for (const [key, c] of cache) {
    if (rows <= MAX_CACHED_ROWS || key === workspaceId) break;
    cache.delete(key);
    rows -= c.index.rows.length;
  }
}

/**
 * The workspace's snapshot as of its head's current version: from this container's cache, else loaded (one Query of
 * its shard pages) and indexed. A workspace whose snapshot was never built (insights older than it) is built first,
 * from the stored insights; pending changes whose writers died are re-applied first; rows stored without their view
 * are rewritten once. Nothing is embedded here.
 * @returns the indexed rows and the head they are as of (read again when any of that work was done)
 */
async function snapshot(workspaceId: string, first: SnapshotHead, refreshed = false): Promise<{ index: RankIndex; head: SnapshotHead }> {
  let head = first;
  if (!head.built) {
    const ids = (await partitionKeys(`ws#${workspaceId}`, "insight#")).map((k) => k.sk.slice("insight#".length));
    await rebuild(workspaceId, ids);
    head = await readHead(workspaceId);
  }
  if (await repairStale(workspaceId, head)) head = await readHead(workspaceId);
  const hit = cache.get(workspaceId);
  if (hit && hit.version === head.version) {
    remember(workspaceId, hit);
    return { index: hit.index, head };
  }
  let loaded;
  for (let attempt = 0; ; attempt++) {
    try {
      loaded = await loadSnapshot(workspaceId);
      break;
    } catch (err) {
      // A shard caught between the pages of its rewrite (only shards past 350 KB have several): read again, after a
      // moment (the rewrite is one transaction, committing its other pages within milliseconds).
      if (attempt >= 3) throw err;
      await new Promise((r) => setTimeout(r, 10 * (attempt + 1)));
    }
  }
  const { rows, lexical } = loaded;
  // Rows stored before rows carried their view: rewritten once from their insights, then the snapshot read again.
  // Once per search: a row still without one (written meanwhile by an older deployment) is read from the table.
  const old = rows.filter((r) => !r.view).map((r) => r.id);
  if (old.length > 0 && !refreshed) {
    await refreshRows(workspaceId, old);
    return snapshot(workspaceId, await readHead(workspaceId), true);
  }
  const current = lexical?.version === head.version ? lexical.json : undefined;
  const index = buildIndex(rows, current);
  // The first container to load a changed workspace stores the lexical index it built, so the next ones load it
  // (about five times faster than building it). Small workspaces build theirs in a few milliseconds: not stored.
  if (!current && rows.length >= PERSIST_LEXICAL_FROM) {
    // A cache for the next containers: failing to store it (a throttle, a refused write) must not fail this search.
    await saveLexical(workspaceId, head.version, serializeLexical(index), lexical?.pages ?? 0).catch((err: unknown) =>
      serviceLog("insights").warn("the search's lexical index could not be stored; the next container builds its own", { workspace_id: workspaceId, error: err as Error }),
    );
  }
  remember(workspaceId, { version: head.version, index });
  return { index, head };
}

/**
 * How long a head this request read stays good for its next reads of the snapshot: the copilot's stream reads the head
 * beside its membership check (`prefetchSearchHead`), moments before its pre-flight (`snapshotInsights`) and its
 * first search, which then read none. A search later in a long stream reads it again. What the copilot writes goes
 * through pending actions, executed elsewhere; a change of an insight this request makes itself (a stream variant's
 * operation) drops the kept head (core/insight/search-index.ts `beginChange`, `finishChange`), so a search after it
 * reads the head again.
 */
export const HEAD_REUSE_MS = 5_000;

/**
 * Keep a head for this request's next reads of the snapshot (core/context.ts `recent`).
 * @param readAt when the read began (ms since the epoch): the window counts from it, not from the snapshot's load
 */
function keepHead(workspaceId: string, head: SnapshotHead, readAt: number): void {
  requestScope()?.recent.set(keptHeadKey(workspaceId), { at: readAt, value: head });
}

/** A head this request read less than HEAD_REUSE_MS ago; else undefined. Says nothing of who may see it. */
function keptHead(workspaceId: string): SnapshotHead | undefined {
  const kept = requestScope()?.recent.get(keptHeadKey(workspaceId));
  return kept && Date.now() - kept.at <= HEAD_REUSE_MS ? (kept.value as SnapshotHead) : undefined;
}

/** A head this request read less than HEAD_REUSE_MS ago, with the user's membership verified in it; else undefined. */
function recentHead(userId: string, workspaceId: string): SnapshotHead | undefined {
  return verifiedInThisRequest(userId, workspaceId) ? keptHead(workspaceId) : undefined;
}

/**
 * The snapshot as of a head this request kept (`kept`), else as of one `read` now; a head read here, or read again by
 * `snapshot`, is kept for the request's next reads, its window counting from the read.
 * @returns the head the snapshot started from (`first`), the snapshot and the head it is as of
 */
async function keptSnapshot(workspaceId: string, kept: SnapshotHead | undefined, read: () => Promise<SnapshotHead>): Promise<{ first: SnapshotHead; index: RankIndex; head: SnapshotHead }> {
  const readAt = Date.now();
  const first = kept ?? (await read());
  const { index, head } = await snapshot(workspaceId, first);
  if (!kept || head !== first) keepHead(workspaceId, head, readAt);
  return { first, index, head };
}

/** The head as an item of a member-checked read (core/workspace): a raw item, no entity. */
function headRef(workspaceId: string): ItemRef {
  return {
    entity: {
      get: () => ({ params: () => ({ TableName: Config.tableName(), Key: headKey(workspaceId) }) }),
      parse: ({ Item }) => ({ data: Item }),
    },
    key: {},
  };
}

/**
 * The workspace's snapshot head, read ahead by a request's membership check (core/workspace
 * `requireMemberWithWorkspace`, in its round trip) and kept for HEAD_REUSE_MS for the request's pre-flight and first
 * search (the copilot's stream).
 */
export function prefetchSearchHead(workspaceId: string): Prefetch {
  const readAt = Date.now();
  return { ref: headRef(workspaceId), keep: (item) => keepHead(workspaceId, parseHead((item ?? undefined) as Record<string, unknown> | undefined), readAt) };
}

/**
 * The caller's membership check and the workspace's snapshot head in one round trip: one BatchGetItem (strongly
 * consistent) of both keys, which share the partition `ws#<workspace>`. The membership key is the membership entity's
 * own (`db().entities.membership`), and the rule is `requireMember`'s (core/workspace) with no role required: no
 * membership item, 403; a membership verified earlier in the same request (the request scope of core/context.ts,
 * where `requireMember` keeps it) is not read again, and only the head is. The head is used only after the check
 * passed: nothing of the workspace reaches a non-member.
 * @throws AppError FORBIDDEN (403) when the caller is not a member of the workspace (or it does not exist).
 */
async function memberAndHead(userId: string, workspaceId: string): Promise<SnapshotHead> {
  const { item } = await readAsMember<Record<string, unknown>>(userId, workspaceId, headRef(workspaceId), { scope: "workspace" });
  return parseHead(item ?? undefined);
}

/** The attributes a search result shows (core/insight toView): not the vectors, which are most of an item's bytes. */
const RESULT_ATTRIBUTES = [
  "id", "workspace_id", "insight_type", "title", "description", "source_ids", "quotes", "frequency", "mention_count",
  "severity", "impact", "is_archived", "notes", "rating", "created_at", "updated_at",
] as const;
/** The projection of `RESULT_ATTRIBUTES` (names through placeholders: some are DynamoDB reserved words). */
const PROJECTION = {
  ProjectionExpression: RESULT_ATTRIBUTES.map((_, i) => `#a${i}`).join(", "),
  ExpressionAttributeNames: Object.fromEntries(RESULT_ATTRIBUTES.map((a, i) => [`#a${i}`, a])),
};

/** The insight entity's key with two markers for its composites, read once (see `insightKey`). */
let insightKeyTemplate: { pk: string; sk: string } | undefined;

/**
 * An insight's table key as the insight entity builds it: its templates are read from ElectroDB once, with markers in
 * place of the composites, and filled here. ElectroDB's `params()` per key costs about 0.1 ms of CPU, a millisecond
 * for a page of ten.
 */
function insightKey(workspaceId: string, id: string): { pk: string; sk: string } {
  insightKeyTemplate ??= db().entities.insight.get({ workspace_id: "\u0001", id: "\u0002" }).params<{ Key: { pk: string; sk: string } }>().Key;
  const fill = (s: string) => s.replace(/[\u0001\u0002]/g, (m) => (m === "\u0001" ? workspaceId : id)); // one pass
  return { pk: fill(insightKeyTemplate.pk), sk: fill(insightKeyTemplate.sk) };
}

/** A row's insight as a search result shows it, from the row alone (null for a row without its view). */
function viewOf(workspaceId: string, row: SearchRow): InsightView | null {
  const v = row.view;
  if (!v) return null;
  return {
    id: row.id,
    workspace_id: workspaceId,
    insight_type: row.insight_type as InsightView["insight_type"],
    title: row.title,
    description: v.description ?? row.description,
    source_ids: v.source_ids,
    quotes: v.quotes,
    frequency: row.frequency,
    mention_count: v.mention_count,
    severity: row.severity as InsightView["severity"],
    impact: v.impact,
    is_archived: v.is_archived,
    notes: v.notes,
    rating: v.rating,
    created_at: row.created_at,
    updated_at: v.updated_at,
  };
}

/**
 * The insights of these rows as `GET /api/insights/{id}` shows them. Each comes from its row, which is the insight as
 * of the snapshot version the head named when it was read: every applied change bumps that version, so the row is
 * current unless a change of that insight was under way (its id is in the head's `pending`). Those, and rows without
 * a view, are read from the table by BatchGetItem (strongly consistent, only the attributes shown, 100 keys a call).
 * The keys are the insight entity's own, read through the document client (the projected attributes are stored under
 * their own names, so the item is the entity's item).
 * @param pending ids of the insights with a change under way (the head's `pending`)
 * @returns the views by insight id; an insight that turns out to be gone (its deletion's change is still being
 *   applied) has none
 */
async function viewsOfRows(workspaceId: string, rows: readonly SearchRow[], pending: ReadonlySet<string>): Promise<Map<string, InsightView>> {
  const views = new Map<string, InsightView>();
  const keys: { pk: string; sk: string }[] = [];
  for (const row of rows) {
    const view = pending.has(row.id) ? null : viewOf(workspaceId, row);
    if (view) views.set(row.id, view);
    else keys.push(insightKey(workspaceId, row.id));
  }
  // A key DynamoDB answered without an item is gone (core/db/batch-get.ts asks unprocessed keys again).
  for (let at = 0; at < keys.length; at += 100) {
    for (const i of await consistentBatchGet(Config.tableName(), keys.slice(at, at + 100), PROJECTION)) views.set(i.id as string, toView(i as InsightItem));
  }
  return views;
}

/**
 * The insights of the first `limit` candidates, in rank order (`viewsOfRows`); a candidate whose insight turns out
 * to be gone is skipped and the next one taken.
 * @param pending ids of the insights with a change under way (the head's `pending`)
 * @returns the insights with their scores, and how many candidates turned out to be gone
 */
async function resultsOf(
  workspaceId: string,
  ranked: Ranked[],
  limit: number,
  pending: ReadonlySet<string>,
): Promise<{ found: { view: InsightView; score: number }[]; gone: number }> {
  const found: { view: InsightView; score: number }[] = [];
  let gone = 0;
  let next = 0;
  while (found.length < limit && next < ranked.length) {
    const batch = ranked.slice(next, next + (limit - found.length));
    next += batch.length;
    const views = await viewsOfRows(workspaceId, batch.map((r) => r.row), pending);
    for (const r of batch) {
      const view = views.get(r.row.id);
      if (view) found.push({ view, score: r.score });
      else gone++;
    }
  }
  return { found, gone };
}

/**
 * Every insight of a workspace (archived included) as its search snapshot holds it, for readers that need the whole
 * workspace's text on every request (the copilot harness's pre-flight, core/harness/profile.ts): from this container's
 * cached snapshot while the head's version is unchanged (one strongly consistent GetItem of the head, or none when
 * this request read it less than HEAD_REUSE_MS ago: `prefetchSearchHead`), else loaded as a search loads it. Exact as
 * of the head read (`viewsOfRows`); an insight found gone is left out. A head read here is kept for the request's
 * first search; a kept one keeps its own time (the window counts from the read).
 * The caller has checked that its user is a member of the workspace: nothing here checks it.
 * @returns the insights as `GET /api/insights/{id}` shows them, in no particular order
 */
export async function snapshotInsights(workspaceId: string): Promise<InsightView[]> {
  const { first, index, head } = await keptSnapshot(workspaceId, keptHead(workspaceId), () => readHead(workspaceId));
  const pending = new Set([...first.pending, ...head.pending].map((p) => p.id));
  return [...(await viewsOfRows(workspaceId, index.rows, pending)).values()];
}

/**
 * `POST /api/insights/search` (spec 01): rank the workspace's insights (archived included) by relevance to the query:
 * hybrid BM25 + vector ranking fused by reciprocal rank fusion (core/insight/search-rank.ts) over the workspace's
 * search snapshot; when vector search is unavailable (no embedder, the query cannot be embedded, or no insight has a
 * vector of the current embedder, or the query's embedding takes longer than QUERY_EMBED_DEADLINE_MS), the spec's
 * fallback: case-insensitive matching on title and description.
 * Only the query is embedded; insight vectors are written with the insights.
 * @returns at most `limit` insights with a `score` in (0, 1], `total` candidates after the filters, the `query`, and
 *   `mode`: "semantic" (hybrid ranking) or "text" (the fallback).
 * @throws AppError FORBIDDEN (403) when the caller is not a member of the workspace.
 */
export async function search(userId: string, input: SearchInsightsInput) {
  // Two things at once: the query's embedding (off this thread; from this container's cache when the same text was
  // embedded before, core/ai/query-cache.ts) and one BatchGet of the membership and the snapshot head, or nothing when
  // this request verified the membership and read the head moments ago (`recentHead`). Nothing of the workspace is
  // used before the membership check has passed; a failed or late embedding (QUERY_EMBED_DEADLINE_MS) only means the
  // text fallback.
  const emb = await embedder().catch(() => null);
  const queryVector = emb ? queryVectorWithin(emb, input.query) : Promise.resolve(null);
  const { first, index, head } = await keptSnapshot(input.workspace_id, recentHead(userId, input.workspace_id), () => memberAndHead(userId, input.workspace_id));
  const filters = { insight_type: input.insight_type, severity: input.severity, min_frequency: input.min_frequency };
  // The BM25 list while the query's embedding is under way, then the vectors and the fusion.
  const lexical = lexicalHits(index, input.query, filters);
  const q = await queryVector;
  // The best candidates, with room for a few whose insight turns out to be gone (fetchTop skips those).
  const semantic = emb && q && hasVectors(index, emb.id) ? hybridRank(index, input.query, q, emb.id, filters, 2 * input.limit + 20, lexical) : null;
  const ranked = semantic?.ranked ?? textRank(index.rows, input.query, filters);
  const { found, gone } = await resultsOf(input.workspace_id, ranked, input.limit, new Set([...first.pending, ...head.pending].map((p) => p.id)));
  return {
    // At most LIST_RESPONSE_BYTES: the best results that fit (100 insights at their fields' limits would not).
    insights: fitResponse(found.map(({ view, score }) => ({ ...view, score: Math.round(score * 1000) / 1000 }))),
    total: (semantic?.total ?? ranked.length) - gone,
    query: input.query,
    mode: semantic ? ("semantic" as const) : ("text" as const),
  };
}
