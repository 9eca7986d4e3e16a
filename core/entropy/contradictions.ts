/**
 * Contradictory insights (issue #21; docs/decisions.md "Entropy scanner"): pairs of active insights of one workspace
 * that talk about the same thing and disagree. Two stages, so the rules run on a few pairs instead of all n²/2:
 *
 * 1. Candidates: pairs whose embeddings (core/ai, the workspace's embedder) are at least `minSimilarity` apart in
 *    cosine, at most `NEIGHBOURS` per insight. Sentence encoders put a sentence and its negation very close, so the
 *    embedding finds the pairs and cannot tell agreement from disagreement; the rules do that. Without vectors,
 *    candidates are pairs sharing at least half their topic words (Jaccard).
 * 2. Rules (core/entropy/statements.ts), over two clauses that make the same claim (at least half their words
 *    shared) on a topic both insights share: one denies what the other affirms, or they sit at opposite ends of one
 *    scale (easy/hard, fast/slow, more/less, …); or, weaker, one praises what the other criticises (only for
 *    near-paraphrases, `STANCE_MIN_SIMILARITY`). Matching clauses rather than whole insights keeps a word that two
 *    insights use in different claims ("I don't use R" against "my collaborator uses R") from counting.
 *
 * Severity: that of the weightier insight (critical or high → high, medium → medium, low → low), one step lower when
 * only the weak stance rule fired. Pure: vectors and texts in, pairs out.
 */
import { rowDot, toMatrix } from "../ai/vectors";
import { disagreements, readStatement, type Disagreement, type Statement } from "./statements";
import type { EntropySeverity } from "./schema";

/** Most candidate neighbours compared per insight (bounds the rule work on a workspace of near-duplicates). */
const NEIGHBOURS = 25;
/** Praise against complaint counts only between near-paraphrases: otherwise it is two aspects of one feature. */
export const STANCE_MIN_SIMILARITY = 0.7;
/** Without vectors: the least topic overlap (Jaccard) for two insights to be compared. */
const MIN_TOPIC_JACCARD = 0.5;

export interface ScannedInsight {
  id: string;
  title: string;
  description: string;
  severity: "low" | "medium" | "high" | "critical";
  /** Unit-length embedding of `title. description`; all of one dimension, or none at all. */
  vector?: Float32Array;
}

export interface Contradiction {
  /** The pair, lower id first. */
  insightIds: [string, string];
  /** Cosine of the embeddings (or the topic Jaccard without them), 3 decimals. */
  similarity: number;
  severity: EntropySeverity;
  rules: Disagreement[];
  detail: string;
}

const WEIGHT = { low: 0, medium: 1, high: 2, critical: 2 } as const;
const LEVELS: EntropySeverity[] = ["low", "medium", "high"];

const jaccard = (a: Set<string>, b: Set<string>) => {
  if (a.size === 0 || b.size === 0) return 0;
  let both = 0;
  for (const x of a) if (b.has(x)) both++;
  return both / (a.size + b.size - both);
};

const describe = (rules: Disagreement[]): string =>
  rules
    .map((r) =>
      r.rule === "negation"
        ? `one denies what the other states (${r.terms.join(", ")})`
        : r.rule === "opposite_scale"
          ? `they sit at opposite ends of "${r.terms[0]}" (${r.terms.slice(1).join(" / ")})`
          : `one praises what the other criticises (${r.terms.join(", ")})`,
    )
    .join("; ");

/**
 * The contradictory pairs among `insights` (active insights of one workspace), weightiest first.
 * @param opts.minSimilarity lowest embedding cosine of a candidate pair (0–1)
 * @returns each pair once, sorted by severity then similarity, descending
 */
export function findContradictions(insights: ScannedInsight[], opts: { minSimilarity: number }): Contradiction[] {
  const statements = new Map<number, Statement>();
  const statementOf = (i: number) => {
    let s = statements.get(i);
    if (!s) statements.set(i, (s = readStatement(`${insights[i]!.title}. ${insights[i]!.description}`)));
    return s;
  };
  const candidates: [number, number, number][] = [];
  const withVectors = insights.length > 0 && insights.every((i) => i.vector);
  if (withVectors) {
    const m = toMatrix(insights.map((i) => i.vector!));
    for (let i = 0; i < insights.length; i++) {
      const row: [number, number][] = [];
      for (let j = i + 1; j < insights.length; j++) {
        const s = rowDot(m, j, insights[i]!.vector!);
        if (s >= opts.minSimilarity) row.push([j, s]);
      }
      row.sort((x, y) => y[1] - x[1] || x[0] - y[0]);
      for (const [j, s] of row.slice(0, NEIGHBOURS)) candidates.push([i, j, s]);
    }
  } else {
    for (let i = 0; i < insights.length; i++) {
      for (let j = i + 1; j < insights.length; j++) {
        const s = jaccard(statementOf(i).topics, statementOf(j).topics);
        if (s >= MIN_TOPIC_JACCARD) candidates.push([i, j, s]);
      }
    }
  }
  const found: Contradiction[] = [];
  for (const [i, j, similarity] of candidates) {
    const rules = disagreements(statementOf(i), statementOf(j)).filter((r) => r.rule !== "opposite_stance" || similarity >= STANCE_MIN_SIMILARITY);
    if (rules.length === 0) continue;
    const a = insights[i]!;
    const b = insights[j]!;
    const strong = rules.some((r) => r.rule !== "opposite_stance");
    const level = Math.max(WEIGHT[a.severity], WEIGHT[b.severity]) - (strong ? 0 : 1);
    const [first, second] = a.id < b.id ? [a, b] : [b, a];
    found.push({
      insightIds: [first.id, second.id],
      similarity: Math.round(similarity * 1000) / 1000,
      severity: LEVELS[Math.max(0, level)]!,
      rules,
      detail: `“${first.title}” and “${second.title}” disagree: ${describe(rules)}.`,
    });
  }
  return found.sort((x, y) => LEVELS.indexOf(y.severity) - LEVELS.indexOf(x.severity) || y.similarity - x.similarity || x.insightIds.join().localeCompare(y.insightIds.join()));
}
