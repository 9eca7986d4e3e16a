/**
 * Dedup against the workspace: which new insight is the same theme as an insight the workspace already has,
 * so the caller merges (adds quotes, sources, counts) instead of creating a duplicate.
 */
import type { Embedder } from "../ports";
import { dot } from "../vectors";
import type { ExistingInsight } from "./types";

export interface MatchOptions {
  /** Centroid-to-stored-vector cosine threshold (default 0.85). */
  threshold?: number;
  /** Centroid-to-text cosine threshold, for existing insights without a usable vector (default 0.6). */
  textThreshold?: number;
}

/**
 * For each new insight, the id of the existing insight it duplicates, or undefined.
 *
 * An existing insight with a stored vector of the same dimension is compared with the new insight's centroid
 * (both are centroids of mention vectors from the same embedder; same theme ⇒ cosine ≥ `threshold`). One without
 * a usable vector (created by hand through POST /api/insights, or by another embedder) is embedded from
 * "title. description" (or brings that text's vector, `textVector`: its search vector) and compared with the
 * centroid at `textThreshold` (a statement about a theme sits further from the mean mention than another mean
 * mention does). The best match above threshold wins; ties go
 * to the earlier existing insight.
 * @param drafts new insights' unit-length centroids
 * @param existing the workspace's insights
 * @param embedder the embedder the centroids came from (used only for existing insights without vectors)
 */
export async function matchExisting(
  drafts: { vector: Float32Array }[],
  existing: ExistingInsight[],
  embedder: Embedder,
  opts: MatchOptions = {},
): Promise<(string | undefined)[]> {
  const threshold = opts.threshold ?? 0.85;
  const textThreshold = opts.textThreshold ?? 0.6;
  if (!existing.length || !drafts.length) return drafts.map(() => undefined);
  const usable = (v: Float32Array | undefined): v is Float32Array => v !== undefined && v.length === embedder.dimensions;
  // Only insights with neither a centroid nor their text's vector are embedded here: a workspace's older insights
  // (made by hand, or edited) would otherwise be embedded again on every synthesis, a cost growing with the workspace.
  const needText = existing.filter((e) => !usable(e.vector) && !usable(e.textVector));
  const textVecs = needText.length ? await embedder.embed(needText.map((e) => `${e.title}. ${e.description}`)) : [];
  const compare = existing.map((e) => {
    if (usable(e.vector)) return { id: e.id, vector: e.vector, min: threshold };
    const i = needText.indexOf(e);
    return { id: e.id, vector: i >= 0 ? textVecs[i]! : e.textVector!, min: textThreshold };
  });
  return drafts.map((d) => {
    let best: string | undefined;
    let bestScore = -Infinity;
    for (const c of compare) {
      if (c.vector.length !== d.vector.length) continue;
      const s = dot(d.vector, c.vector);
      if (s >= c.min && s - c.min > bestScore) {
        bestScore = s - c.min;
        best = c.id;
      }
    }
    return best;
  });
}

/**
 * Set `merge_into` on each new insight that duplicates one of the workspace's (`matchExisting`), in place: what both
 * engines do last, so the caller merges instead of creating a duplicate.
 * @param drafts the new insights, with their unit-length centroids
 * @param existing the workspace's insights (nothing happens without any)
 * @param opts the engine's thresholds (`matchThreshold`, `textMatchThreshold`)
 */
export async function markDuplicates(
  drafts: { vector: Float32Array; merge_into?: string }[],
  existing: ExistingInsight[] | undefined,
  embedder: Embedder,
  opts: { matchThreshold?: number; textMatchThreshold?: number },
): Promise<void> {
  if (!existing?.length) return;
  const matches = await matchExisting(drafts, existing, embedder, { threshold: opts.matchThreshold, textThreshold: opts.textMatchThreshold });
  matches.forEach((id, i) => {
    if (id) drafts[i]!.merge_into = id;
  });
}
