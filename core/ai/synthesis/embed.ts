/**
 * Step 2 of synthesis: mention vectors, precomputable per source at ingestion so synthesis only embeds what is new.
 */
import type { TextUnit } from "../../extract/types";
import type { EmbedOptions, Embedder } from "../ports";
import { unitMentions, type MentionSpan } from "./mentions";

/**
 * Embed the mentions of a source's units (ingestion-time precomputation for synthesis).
 * @param opts passed to the embedder (`background` for the Index step)
 *
 * @returns one Float32Array per unit, same order: the vectors of `unitMentions(unit)` concatenated
 *   (`mentions × embedder.dimensions` floats; length 0 for a unit without mentions and for a closed-question
 *   answer, `fields.closed`, which synthesis always skips). Store each with
 *   `encodeVector` and pass them back as `SynthesisSource.vectors` with `vectors_embedder_id = embedder.id`.
 * @throws whatever the embedder throws
 */
export async function embedUnits(units: TextUnit[], embedder: Embedder, opts?: EmbedOptions): Promise<Float32Array[]> {
  // Answers to closed survey questions are never mentions (filters.ts): no vectors, no embedding time.
  const spans = units.map((u) => (u.fields?.closed ? [] : unitMentions(u)));
  const texts = spans.flatMap((s) => s.map((m) => m.text));
  const vecs = texts.length ? await embedder.embed(texts, opts) : [];
  return packPerUnit(spans, vecs, embedder.dimensions);
}

/** Concatenate each unit's mention vectors, in order. */
export function packPerUnit(spans: MentionSpan[][], vecs: Float32Array[], dims: number): Float32Array[] {
  let k = 0;
  return spans.map((s) => {
    const out = new Float32Array(s.length * dims);
    for (let j = 0; j < s.length; j++) out.set(vecs[k++], j * dims);
    return out;
  });
}

/**
 * Whether stored per-unit vectors line up with the units' current mentions for this embedder.
 * @param spans mentions per unit; null for a unit that is skipped (its vectors are not read)
 */
export function vectorsAligned(
  spans: (MentionSpan[] | null)[],
  vectors: Float32Array[] | undefined,
  dims: number,
  storedId: string | undefined,
  embedderId: string,
): vectors is Float32Array[] {
  if (!vectors || vectors.length !== spans.length) return false;
  if (storedId !== undefined && storedId !== embedderId) return false;
  return spans.every((s, i) => s === null || (vectors[i] instanceof Float32Array && vectors[i].length === s.length * dims));
}
