/**
 * A distributional thesaurus learned from the input itself (issue #11: near-duplicate themes merge). Two phrases
 * mean the same thing to these respondents when they keep the same company: "git" and "version control" are each
 * written next to "diff", "github" and each other. Short answers to one question rarely hold two synonyms at once
 * ("git" in one answer, "version control" in the next), and a sentence encoder puts such one-word answers far apart,
 * so clusters of them stay split; comparing what the phrases co-occur with across the whole input joins them.
 *
 * Method: positive pointwise mutual information (PPMI) between phrase keys co-occurring in one mention, over every
 * mention of the input; a phrase's context vector is its PPMI row plus itself; a cluster's vector is the weighted sum
 * of its lead phrases' unit rows; two clusters' relatedness is the cosine of those vectors (second-order
 * co-occurrence, Schütze 1998; PPMI as in Bullinaria & Levy 2007).
 */
import type { PhraseOcc, RankedPhrase } from "./naming";

/** Co-occurrences below this are chance for a PPMI row (a pair written together once or twice says little). */
const MIN_PAIR = 3;
/** Weights of a cluster's first three phrases in its vector: the lead phrase names the theme. */
const RANK_WEIGHT = [1, 0.6, 0.4];

export class Thesaurus {
  private readonly n: number;
  private readonly occ = new Map<string, number[]>();
  private readonly phrases: PhraseOcc[][];
  private readonly rows = new Map<string, Map<string, number>>();

  /** @param phrases each mention's distinct phrase candidates (`mentionPhrases`), for the whole input */
  constructor(phrases: PhraseOcc[][]) {
    this.phrases = phrases;
    this.n = phrases.length;
    phrases.forEach((list, i) => {
      for (const p of list) {
        const at = this.occ.get(p.key);
        if (at) at.push(i);
        else this.occ.set(p.key, [i]);
      }
    });
  }

  /** A phrase's unit-length context vector: PPMI with each phrase it co-occurs with at least `MIN_PAIR` times, and itself. */
  row(key: string): Map<string, number> {
    const cached = this.rows.get(key);
    if (cached) return cached;
    const at = this.occ.get(key) ?? [];
    const both = new Map<string, number>();
    for (const i of at) for (const p of this.phrases[i]) if (p.key !== key) both.set(p.key, (both.get(p.key) ?? 0) + 1);
    const row = new Map<string, number>();
    if (at.length) row.set(key, Math.log2(this.n / at.length));
    for (const [c, k] of both) {
      if (k < MIN_PAIR) continue;
      const pmi = Math.log2((k * this.n) / (at.length * this.occ.get(c)!.length));
      if (pmi > 0) row.set(c, pmi);
    }
    const norm = Math.hypot(...row.values()) || 1;
    for (const [c, v] of row) row.set(c, v / norm);
    this.rows.set(key, row);
    return row;
  }

  /**
   * Relatedness of two clusters' names, 0–1: cosine of the weighted sums of their first three non-domain phrases'
   * context vectors, phrases both hold left out. Synonymous leads ("git integration, diff" / "version control, git") score high; clusters that
   * only share a generic word score low, since a generic word's PPMI with everything is small.
   */
  relatedness(a: RankedPhrase[], b: RankedPhrase[]): number {
    // A phrase both names hold says nothing about synonymy ("cell" in two Jupyter themes): it is left out, and
    // the shared-phrase merge rules (which ask for closer centroids) judge it.
    const shared = new Set(a.filter((p) => b.some((q) => q.key === p.key)).map((p) => p.key));
    const va = this.clusterVector(a.filter((p) => !shared.has(p.key)));
    const vb = this.clusterVector(b.filter((p) => !shared.has(p.key)));
    let dot = 0;
    for (const [k, v] of va) dot += v * (vb.get(k) ?? 0);
    const na = Math.hypot(...va.values());
    const nb = Math.hypot(...vb.values());
    return na && nb ? dot / (na * nb) : 0;
  }

  private clusterVector(top: RankedPhrase[]): Map<string, number> {
    const out = new Map<string, number>();
    top
      .filter((p) => !p.domain)
      .slice(0, RANK_WEIGHT.length)
      .forEach((p, r) => {
        for (const [k, v] of this.row(p.key)) out.set(k, (out.get(k) ?? 0) + RANK_WEIGHT[r] * v);
      });
    return out;
  }
}
