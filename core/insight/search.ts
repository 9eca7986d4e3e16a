import { db } from "../db/service";
import { requireMember } from "../workspace";
import { embedder } from "../ai/select";
import { decodeVector, encodeVector, toMatrix, topK, type Matrix } from "../ai/vectors";
import type { Embedder } from "../ai/ports";
import { allOf, insightsVersion, toView, type InsightItem } from "./index";
import type { SearchInsightsInput } from "./schema";

/** Lowest cosine relevance a semantic hit needs to count (Universal Sentence Encoder and Titan alike put unrelated text below it). */
export const MIN_RELEVANCE = 0.25;
/** A title or description containing the query verbatim ranks above purely semantic neighbours. */
const EXACT_BONUS = 0.5;
const MAX_CACHED_WORKSPACES = 20;

interface Loaded {
  version: number;
  embedderId: string | null;
  items: InsightItem[];
  matrix: Matrix | null;
}

/**
 * Per-container cache of each workspace's insights and their vectors, reused while the workspace's insights version
 * (bumped on every insight write) is unchanged, so a warm search costs one small read plus the query embedding.
 */
const cache = new Map<string, Loaded>();

const textOf = (i: InsightItem) => `${i.title}. ${i.description}`;

async function load(workspaceId: string, version: number, emb: Embedder | null): Promise<Loaded> {
  const items = await allOf(workspaceId);
  if (!emb) return { version, embedderId: null, items, matrix: null };
  const missing = items.filter((i) => !i.vector || i.embedder_id !== emb.id);
  if (missing.length) {
    const vectors = await emb.embed(missing.map(textOf));
    await Promise.all(
      missing.map((item, k) => {
        item.vector = encodeVector(vectors[k]);
        item.embedder_id = emb.id;
        // Stored so the next cold load does not embed again; not an insight change, so no version bump.
        return db().entities.insight.patch({ workspace_id: item.workspace_id, id: item.id }).set({ vector: item.vector, embedder_id: emb.id }).go();
      }),
    );
  }
  const matrix = toMatrix(items.map((i) => decodeVector(i.vector!, emb.dimensions)), emb.dimensions);
  return { version, embedderId: emb.id, items, matrix };
}

/**
 * `POST /api/insights/search` (spec 01): rank the workspace's insights (archived included) by semantic relevance to
 * the query; when embeddings are unavailable, fall back to case-insensitive matching on title and description.
 * @returns at most `limit` insights with a `score`, `total` matching, and `mode` ("semantic" or "text").
 */
export async function search(userId: string, input: SearchInsightsInput) {
  await requireMember(userId, input.workspace_id);
  let emb: Embedder | null = null;
  try {
    emb = await embedder();
  } catch {
    emb = null; // no vector search available: text fallback below
  }
  const version = await insightsVersion(input.workspace_id);
  let loaded = cache.get(input.workspace_id);
  if (!loaded || loaded.version !== version || loaded.embedderId !== (emb?.id ?? null)) {
    try {
      loaded = await load(input.workspace_id, version, emb);
    } catch (err) {
      if (!emb) throw err;
      emb = null; // embedding the stored insights failed (embedder unavailable): text fallback below
      loaded = await load(input.workspace_id, version, null);
    }
    cache.delete(input.workspace_id);
    if (cache.size >= MAX_CACHED_WORKSPACES) cache.delete(cache.keys().next().value!);
    cache.set(input.workspace_id, loaded);
  }
  const needle = input.query.toLowerCase();
  const passes = (i: InsightItem) =>
    (!input.insight_type || i.insight_type === input.insight_type) &&
    (!input.severity || i.severity === input.severity) &&
    (!input.min_frequency || i.frequency >= input.min_frequency);
  const contains = (i: InsightItem) => i.title.toLowerCase().includes(needle) || i.description.toLowerCase().includes(needle);

  let scored: { item: InsightItem; score: number }[] | null = null;
  if (emb && loaded.matrix) {
    try {
      const [q] = await emb.embed([input.query]);
      scored = topK(loaded.matrix, q!, loaded.items.length)
        .map((h) => ({ item: loaded!.items[h.index]!, score: h.score }))
        .filter(({ item }) => passes(item))
        .map(({ item, score }) => ({ item, score: score + (contains(item) ? EXACT_BONUS : 0) }))
        .filter(({ score }) => score >= MIN_RELEVANCE)
        .sort((a, b) => b.score - a.score);
    } catch {
      scored = null; // embedding the query failed: text fallback
    }
  }
  const mode = scored ? ("semantic" as const) : ("text" as const);
  if (!scored) {
    scored = loaded.items
      .filter((i) => passes(i) && contains(i))
      .map((item) => ({ item, score: item.title.toLowerCase().includes(needle) ? 1 : 0.5 }))
      .sort((a, b) => b.score - a.score || b.item.created_at.localeCompare(a.item.created_at));
  }
  return {
    insights: scored.slice(0, input.limit).map(({ item, score }) => ({ ...toView(item), score: Math.round(score * 1000) / 1000 })),
    total: scored.length,
    query: input.query,
    mode,
  };
}
