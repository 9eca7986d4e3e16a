/**
 * Quotes: picking representative ones for a cluster, and GROUNDING every quote of either engine.
 *
 * Grounding (DESIGN.md section 5): a quote is kept only when its text occurs verbatim (exact substring, no
 * normalisation) in the extracted_text of the source it names. This is checked in code for both the local
 * engine and the Bedrock engine, never assumed.
 */
import { dot } from "../vectors";

/** A quote as stored on an insight (spec 01 Insight: quotes[] each has text, source_id, speaker). */
export interface Quote {
  text: string;
  source_id: string;
  /** Who said it; null when unknown. */
  speaker: string | null;
}

/** Anything with the extracted text of a source. */
export type SourceTexts = Map<string, { extracted_text: string }> | Record<string, { extracted_text: string }>;

function textOf(sources: SourceTexts, id: string): string | undefined {
  const s = sources instanceof Map ? sources.get(id) : Object.prototype.hasOwnProperty.call(sources, id) ? sources[id] : undefined;
  return s?.extracted_text;
}

/**
 * Keep only quotes whose text is a verbatim substring of their source's extracted_text; drop the rest
 * (unknown source, empty text, or text not found). Order is preserved; exact duplicates are dropped. A quote longer
 * than MAX_QUOTE_CHARS is kept cut to its beginning (`cutQuote`).
 * @param quotes proposed quotes
 * @param sourcesById extracted text per source id
 * @returns the grounded quotes
 */
export function groundQuotes(quotes: Quote[], sourcesById: SourceTexts): Quote[] {
  const seen = new Set<string>();
  const out: Quote[] = [];
  for (const q of quotes) {
    if (!q || typeof q.text !== "string" || q.text.trim() === "") continue;
    const text = textOf(sourcesById, q.source_id);
    if (text === undefined || !text.includes(q.text)) continue;
    const quoted = cutQuote(q.text);
    const key = `${q.source_id}\u0000${quoted}`;
    if (seen.has(key)) continue;
    seen.add(key);
    out.push({ text: quoted, source_id: q.source_id, speaker: q.speaker ?? null });
  }
  return out;
}

/**
 * Longest quote stored, characters. A mention may be a whole paragraph with no sentence break (a unit kept whole),
 * and an insight keeps up to 12 quotes: uncut, a few such quotes pass DynamoDB's 400 KB item and fail every synthesis
 * over those sources.
 */
export const MAX_QUOTE_CHARS = 2_000;

/**
 * `text` cut to MAX_QUOTE_CHARS at its last word break within them (a hard cut when it has none; never half of a
 * surrogate pair): its beginning, so still a verbatim substring of the source.
 */
export function cutQuote(text: string): string {
  if (text.length <= MAX_QUOTE_CHARS) return text;
  let out = text.slice(0, MAX_QUOTE_CHARS);
  const space = out.search(/\s\S*$/);
  if (space > MAX_QUOTE_CHARS / 2) out = out.slice(0, space);
  if (/[\uD800-\uDBFF]$/.test(out)) out = out.slice(0, -1);
  return out.trimEnd();
}

/** A candidate quote: a mention with its similarity to the cluster centroid and its vector. */
export interface QuoteCandidate {
  quote: Quote;
  /** Similarity to the centroid (0..1). */
  sim: number;
  vector: Float32Array;
  /** Whether it contains one of the insight's keyphrases (so the quote shows what the title says). */
  onTopic?: boolean;
  /**
   * False for a note-taker's or author's line (`MentionSpan.origin` "note"): when a theme has the participant's own
   * words too (speech, answers), those are quoted first. Undefined counts as own words.
   */
  ownWords?: boolean;
}

/** Preference for the participant's own words over a note-taker's paraphrase (see `QuoteCandidate.ownWords`). */
const PARAPHRASE_PENALTY = 0.1;
const bonus = (c: QuoteCandidate) => (c.onTopic ? 0.15 : 0) - (c.ownWords === false ? PARAPHRASE_PENALTY : 0);

/** Quote length outside this range (characters) is penalised: too short says little, too long is not a quote. */
const GOOD_MIN = 30;
const GOOD_MAX = 280;

/**
 * Pick `min`..`max` representative quotes: greedy maximal-marginal-relevance over the candidates, scoring
 * similarity to the centroid, plus 0.15 when it contains one of the insight's keyphrases, minus 0.1 for a
 * note-taker's line (`ownWords` false), minus 0.5 × the highest similarity to a quote already picked, minus 0.1
 * when its source already has a quote, minus 0.1 when its length is outside 30–280 characters. Stops after `min`
 * quotes once the best remaining score (without the note penalty) falls below 0.2. Deterministic (ties by
 * candidate order).
 */
export function pickQuotes(candidates: QuoteCandidate[], min = 3, max = 5): Quote[] {
  // Consider the 200 most central candidates only: quotes far from the centroid are never representative.
  const pool = [...candidates]
    .map((c, i) => ({ c, i }))
    .sort((a, b) => b.c.sim + bonus(b.c) - (a.c.sim + bonus(a.c)) || a.i - b.i)
    .slice(0, 200);
  const picked: QuoteCandidate[] = [];
  const usedSources = new Set<string>();
  const usedTexts = new Set<string>();
  while (picked.length < max && pool.length) {
    let best = -1;
    let bestScore = -Infinity;
    for (let j = 0; j < pool.length; j++) {
      const c = pool[j].c;
      if (usedTexts.has(c.quote.text.trim().toLowerCase())) continue;
      let redundancy = 0;
      for (const p of picked) redundancy = Math.max(redundancy, dot(c.vector, p.vector));
      const len = c.quote.text.length;
      const score =
        c.sim + bonus(c) - 0.5 * redundancy - (usedSources.has(c.quote.source_id) ? 0.1 : 0) - (len < GOOD_MIN || len > GOOD_MAX ? 0.1 : 0);
      if (score > bestScore) {
        bestScore = score;
        best = j;
      }
    }
    if (best < 0) break;
    // The paraphrase penalty orders candidates; it does not decide how many quotes a theme gets.
    if (picked.length >= min && bestScore + (pool[best].c.ownWords === false ? PARAPHRASE_PENALTY : 0) < 0.2) break;
    const [{ c }] = pool.splice(best, 1);
    picked.push(c);
    usedSources.add(c.quote.source_id);
    usedTexts.add(c.quote.text.trim().toLowerCase());
  }
  return picked.map((p) => p.quote);
}
