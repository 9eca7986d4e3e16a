import { db } from "../db/service";
import { partitionKeys } from "../db/partition";
import { requireMember } from "../workspace";
import { embedder } from "../ai/select";
import { toView, type InsightItem } from "./index";
import { loadSnapshot, readHead, rebuild, repairStale, saveLexical, type SnapshotHead } from "./search-index";
import { buildIndex, hasVectors, hybridRank, lexicalHits, serializeLexical, textRank, type RankIndex, type Ranked } from "./search-rank";
import type { SearchInsightsInput } from "./schema";

export { MIN_RELEVANCE } from "./search-rank";

/**
 * Rows held per container, over all workspaces (about 1 KB each with their lexical index): past it the least recently
 * searched workspaces are dropped. 200,000 rows is a few hundred MB at most, inside the insights function's memory.
 */
const MAX_CACHED_ROWS = 200_000;

/** Rows from which a built lexical index is stored for other containers (below, building it costs ~10 ms or less). */
const PERSIST_LEXICAL_FROM = 300;

interface Cached {
  version: number;
  index: RankIndex;
}

/**
 * Per-container cache of each workspace's search snapshot (core/insight/search-index.ts), reused while the snapshot
 * head's version is unchanged: a warm search costs the head read, the query embedding, the ranking and one BatchGet
 * of the insights returned. Insertion order is recency (a hit is re-inserted).
 */
const cache = new Map<string, Cached>();

/** Forget every cached snapshot of this container (tests and benchmarks measuring a cold container). */
export function clearSearchCache(): void {
  cache.clear();
}

function remember(workspaceId: string, entry: Cached): void {
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
 * from the stored insights; pending changes whose writers died are re-applied first. Nothing is embedded here.
 */
async function snapshot(workspaceId: string, first: SnapshotHead): Promise<RankIndex> {
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
    return hit.index;
  }
  let loaded;
  for (let attempt = 0; ; attempt++) {
    try {
      loaded = await loadSnapshot(workspaceId);
      break;
    } catch (err) {
      // A shard caught between the pages of its rewrite (only shards past 350 KB have several): read again.
      if (attempt >= 3) throw err;
    }
  }
  const { rows, lexical } = loaded;
  const current = lexical?.version === head.version ? lexical.json : undefined;
  const index = buildIndex(rows, current);
  // The first container to load a changed workspace stores the lexical index it built, so the next ones load it
  // (about five times faster than building it). Small workspaces build theirs in a few milliseconds: not stored.
  if (!current && rows.length >= PERSIST_LEXICAL_FROM) await saveLexical(workspaceId, head.version, serializeLexical(index), lexical?.pages ?? 0);
  remember(workspaceId, { version: head.version, index });
  return index;
}

/**
 * The insights of the first `limit` candidates, read from the table (strongly consistent), so what is returned is the
 * insight as it is now. A candidate whose insight is gone (its deletion's change is still being applied) is skipped and
 * the next one taken.
 * @returns the insights with their scores, and how many candidates turned out to be gone
 */
async function fetchTop(workspaceId: string, ranked: Ranked[], limit: number): Promise<{ found: { item: InsightItem; score: number }[]; gone: number }> {
  const found: { item: InsightItem; score: number }[] = [];
  let gone = 0;
  let next = 0;
  while (found.length < limit && next < ranked.length) {
    const batch = ranked.slice(next, next + (limit - found.length));
    next += batch.length;
    const byId = new Map<string, InsightItem>();
    let keys = batch.map((r) => ({ workspace_id: workspaceId, id: r.row.id }));
    // Keys DynamoDB left unprocessed (throttling) are asked again: only a key it answered without an item is gone.
    for (let attempt = 0; keys.length; attempt++) {
      if (attempt >= 5) throw new Error(`DynamoDB left ${keys.length} insight reads unprocessed`);
      const { data, unprocessed } = await db().entities.insight.get(keys).go({ consistent: true });
      for (const i of data) byId.set(i.id, i as InsightItem);
      keys = unprocessed as typeof keys;
    }
    for (const r of batch) {
      const item = byId.get(r.row.id);
      if (item) found.push({ item, score: r.score });
      else gone++;
    }
  }
  return { found, gone };
}

/**
 * `POST /api/insights/search` (spec 01): rank the workspace's insights (archived included) by relevance to the query:
 * hybrid BM25 + vector ranking fused by reciprocal rank fusion (core/insight/search-rank.ts) over the workspace's
 * search snapshot; when vector search is unavailable (no embedder, the query cannot be embedded, or no insight has a
 * vector of the current embedder), the spec's fallback: case-insensitive matching on title and description.
 * Only the query is embedded; insight vectors are written with the insights.
 * @returns at most `limit` insights with a `score` in (0, 1], `total` candidates after the filters, the `query`, and
 *   `mode`: "semantic" (hybrid ranking) or "text" (the fallback).
 * @throws AppError FORBIDDEN (403) when the caller is not a member of the workspace.
 */
export async function search(userId: string, input: SearchInsightsInput) {
  // Three things at once: the membership check, the snapshot head's read and the query's embedding (the longest).
  // Nothing of the workspace is used before the membership check has passed; a failed embedding only means the text
  // fallback.
  const emb = await embedder().catch(() => null);
  const queryVector = emb ? emb.embed([input.query]).then(([v]) => v ?? null, () => null) : Promise.resolve(null);
  const head = readHead(input.workspace_id);
  head.catch(() => undefined); // awaited below, after the membership check
  await requireMember(userId, input.workspace_id);
  const index = await snapshot(input.workspace_id, await head);
  const filters = { insight_type: input.insight_type, severity: input.severity, min_frequency: input.min_frequency };
  // The BM25 list while the query's embedding is under way (it runs off this thread), then the vectors and the fusion.
  const lexical = lexicalHits(index, input.query, filters);
  const q = await queryVector;
  // The best candidates, with room for a few whose insight turns out to be gone (fetchTop skips those).
  const semantic = emb && q && hasVectors(index, emb.id) ? hybridRank(index, input.query, q, emb.id, filters, 2 * input.limit + 20, lexical) : null;
  const ranked = semantic?.ranked ?? textRank(index.rows, input.query, filters);
  const { found, gone } = await fetchTop(input.workspace_id, ranked, input.limit);
  return {
    insights: found.map(({ item, score }) => ({ ...toView(item), score: Math.round(score * 1000) / 1000 })),
    total: (semantic?.total ?? ranked.length) - gone,
    query: input.query,
    mode: semantic ? ("semantic" as const) : ("text" as const),
  };
}
