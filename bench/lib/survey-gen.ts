/**
 * A large survey export generated from the real Jupyter 2015 UX survey, for the synthesis benchmark (issue #11:
 * "a 5,000-response survey you generate from the real one").
 *
 * Each generated response copies the closed answers (choice, multi-select, role tenure, audience size) of one real
 * response drawn at random, so the answer distributions stay realistic, and replaces each free-text answer that
 * response gave with two real answers to the same question drawn at random from all respondents, run together as
 * two sentences ("a. b", or "a b" when a already ends a sentence; not "; ", which reads as a multi-select).
 * Pairs keep the answers distinct, as in a real survey of that size (single redrawn answers would repeat so often
 * that the free-text columns look like choice columns), while every sentence stays a real respondent's.
 * Deterministic: pure-rand xoroshiro128+ from `seed`.
 */
import { readFileSync } from "node:fs";
import Papa from "papaparse";
import { uniformFloat64 } from "pure-rand/distribution/uniformFloat64";
import { xoroshiro128plus } from "pure-rand/generator/xoroshiro128plus";

export const JUPYTER_2015_SURVEY = "/work/shared/realdata/jupyter/surveys/2015-notebook-ux-survey-export.csv";

/** A column whose answers are this share distinct or more is free text (its answers are redrawn). */
const FREE_TEXT_DISTINCT = 0.3;

/**
 * Generate `n` responses as CSV text (header of the real file, then `n` rows).
 * @param n responses (rows) to generate
 * @param seed PRNG seed (same seed, same file)
 */
export function generateSurvey(n: number, seed = 2015, file = JUPYTER_2015_SURVEY): string {
  const parsed = Papa.parse<string[]>(readFileSync(file, "utf8"), { skipEmptyLines: "greedy" });
  const [header, ...rows] = parsed.data;
  const rng = xoroshiro128plus(seed);
  const pick = <T>(xs: T[]): T => xs[Math.floor(uniformFloat64(rng) * xs.length)];
  const pools = header.map((_, c) => rows.map((r) => (r[c] ?? "").trim()).filter(Boolean));
  const free = pools.map((p) => p.length >= 10 && new Set(p).size / p.length >= FREE_TEXT_DISTINCT);
  // Multi-select answers ("comfortable;intuitive") are picks, copied like the other closed answers (the draws
  // still happen, so the free text of every other column stays the same for a given seed).
  const picks = pools.map((p) => p.filter((v) => /^[^;\s][^;]*(;[^;]*)+$/.test(v) && !v.includes("; ")).length >= p.length * 0.5);
  const out: string[][] = [header];
  for (let i = 0; i < n; i++) {
    const base = pick(rows);
    out.push(header.map((_, c) => {
      const v = (base[c] ?? "").trim();
      // Metadata columns (timestamps, status) are copied; free text is redrawn from the column's real answers.
      if (!v || !free[c] || c <= 2) return v;
      const a = pick(pools[c]);
      let b = pick(pools[c]);
      if (b === a) b = pick(pools[c]);
      if (picks[c]) return v;
      if (b === a) return a;
      return /[.!?]$/.test(a) ? `${a} ${b}` : `${a}. ${b}`;
    }));
  }
  return Papa.unparse(out);
}
