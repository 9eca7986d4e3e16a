/**
 * Closed survey questions: which table columns hold picks, ratings or ranks rather than someone's own words
 * (issue #11: "Closed survey questions are thrown away"). Pure functions over cell text, shared by extraction
 * (core/extract/table.ts marks such answers `fields.closed`) and synthesis (core/ai/synthesis/survey.ts computes
 * counts, percentages, mean ratings and mean ranks from them), so both read a column the same way.
 *
 * Kinds:
 * - `single`: one pick per respondent from a small vocabulary ("Daily", "Weekly"): at most 30 distinct values
 *   covering ≥ 90% of the answers, each value repeated (answers ≥ 2 × vocabulary), labels of 6 words or fewer
 *   (median), not sentences;
 * - `multi`: several picks joined by ";" (SurveyGizmo, Qualtrics) or "," (Google Forms) whose items form such a
 *   vocabulary, with ≥ 10% of the answers holding more than one pick;
 * - `rating`: whole numbers within 0–10 under a rating-like header ("rate", "satisfied", "how likely", "score"),
 *   or one column per option sharing a question stem ("Rate each [Speed]") that is not a ranking;
 * - `rank`: one column per option sharing a stem ("Rank these [Installation]") whose numbers are distinct per
 *   respondent (a permutation) and no larger than the number of options, or the header says "rank"; or cells
 *   that list "[option]: n" pairs.
 * Choice columns also need a question-like header (a "?", three words or more, or a "select/choose/which/rate/rank"
 * prompt): "Status", "os" or "Country" are export metadata, not questions the researcher asked.
 */

export type ClosedKind = "single" | "multi" | "rating" | "rank";

export interface ClosedColumn {
  kind: ClosedKind;
  /** For one-column-per-option grids (ratings or ranks): the shared question and this column's option. */
  stem?: string;
  option?: string;
  /** Multi-select separator. */
  separator?: ";" | ",";
}

/** Distinct picks at most, for a choice vocabulary. */
export const CHOICE_VOCABULARY = 30;
const RATING_HEADER = /\b(rate|rating|ratings|scale|score|satisf\w*|likely|likelihood|recommend|agree|important|importance|how (easy|well|much|useful|often))\b/i;
const RANK_HEADER = /\b(rank|ranking|ranked|order of (importance|preference)|prioriti[sz]e)\b/i;
const PROMPT_HEADER = /^(select|choose|pick|which|rate|rank|please|how|what|do|does|did|are|is|would|have)\b/i;
/** "[option]: n" (the brackets some exports put around a ranked item) */
const RANK_PAIR = /^\s*\[([^\]]{1,300})\]\s*[:=]\s*(\d{1,2})\s*$/;

/** Whether a header reads like a question put to respondents (not export metadata such as "Status"). */
export function questionLike(header: string): boolean {
  const h = header.trim();
  return h.includes("?") || PROMPT_HEADER.test(h) || h.split(/\s+/).filter((w) => /\p{L}/u.test(w)).length >= 3;
}

/**
 * "[option]: n" pairs of a rank cell ("[Installation]: 1; [Docs]: 2", one pair per line, or a single pair).
 * @returns the pairs, or null when the cell is not made only of such pairs
 */
export function rankPairs(cell: string): { option: string; rank: number }[] | null {
  const parts = cell.split(/[;\n]|,(?=\s*\[)/).map((p) => p.trim()).filter(Boolean);
  if (!parts.length) return null;
  const out: { option: string; rank: number }[] = [];
  for (const p of parts) {
    const m = RANK_PAIR.exec(p);
    if (!m) return null;
    out.push({ option: m[1].trim(), rank: Number(m[2]) });
  }
  return out;
}

/** Whether text holds a "[option]: n" rank pair anywhere: never evidence in someone's words (issue #11). */
export function hasRankPair(text: string): boolean {
  return /\[[^\]\n]{1,300}\]\s*[:=]\s*\d{1,2}\b/.test(text);
}

/** Picks of a multi-select answer: split at the separator, trimmed, empty pieces dropped, each pick once. */
export function splitPicks(cell: string, separator: ";" | ","): string[] {
  return [...new Set(cell.split(separator).map((p) => p.trim()).filter(Boolean))];
}

/**
 * Split a grid header into its question stem and option: "Stem [Option]" (Google Forms, Qualtrics),
 * "Option:Stem?" (SurveyGizmo), "Stem - Option" (Qualtrics).
 */
export function gridParts(header: string): { stem: string; option: string } | null {
  const h = header.replace(/\s+/g, " ").trim();
  let m = /^(.*\S)\s*\[([^\]]+)\]\s*$/.exec(h);
  if (m) return { stem: m[1].trim(), option: m[2].trim() };
  m = /^([^:?]{1,120}):\s*(.+\?.*)$/.exec(h);
  if (m) return { stem: m[2].trim(), option: m[1].trim() };
  m = /^(.+?)\s+-\s+(.+)$/.exec(h);
  if (m) return { stem: m[1].trim(), option: m[2].trim() };
  return null;
}

const filledOf = (values: string[]) => values.map((v) => (v ?? "").trim()).filter((v) => v && /[\p{L}\p{N}]/u.test(v));
const isSmallInt = (v: string) => /^\d{1,2}$/.test(v) && Number(v) <= 10;

/** Whether a column is made of whole numbers 0–10 (at least 95% of its answers, two values or more). */
function smallIntegers(filled: string[]): boolean {
  if (filled.length < 5) return false;
  const ints = filled.filter(isSmallInt);
  return ints.length >= filled.length * 0.95 && new Set(ints).size >= 2;
}

/** Share of the answers covered by the 30 most frequent picks, and whether picks repeat enough to be a vocabulary. */
function vocabulary(items: string[]): { covered: number; distinct: number } {
  const counts = new Map<string, number>();
  for (const i of items) counts.set(i.toLowerCase(), (counts.get(i.toLowerCase()) ?? 0) + 1);
  const top = [...counts.values()].sort((a, b) => b - a).slice(0, CHOICE_VOCABULARY);
  // Options are labels ("Less often than monthly"), not sentences: repeated long answers (a pasted template, a
  // small sample) stay free text.
  const words = [...counts.keys()].map((k) => k.split(/\s+/).length).sort((a, b) => a - b);
  if (words[Math.floor(words.length / 2)] > 6) return { covered: 0, distinct: counts.size };
  return { covered: top.reduce((a, n) => a + n, 0) / Math.max(1, items.length), distinct: counts.size };
}

/** Choice kind of one column from its answers, or null when they are free text. */
function choiceKind(filled: string[]): Pick<ClosedColumn, "kind" | "separator"> | null {
  if (filled.length < 5) return null;
  for (const sep of [";", ","] as const) {
    const multiple = filled.filter((v) => v.includes(sep)).length;
    if (multiple < filled.length * 0.1) continue;
    const items = filled.flatMap((v) => splitPicks(v, sep));
    const voc = vocabulary(items);
    if (voc.covered >= 0.9 && items.length >= 2 * Math.min(voc.distinct, CHOICE_VOCABULARY)) return { kind: "multi", separator: sep };
  }
  const voc = vocabulary(filled);
  if (voc.covered >= 0.9 && filled.length >= 2 * Math.min(voc.distinct, CHOICE_VOCABULARY)) return { kind: "single" };
  return null;
}

/**
 * Classify every column of a survey table (see file comment).
 *
 * @param headers column headers
 * @param columns answers per column, aligned by respondent (columns[c][r] is respondent r's answer to column c;
 *   "" when blank): alignment is what tells a ranking (distinct numbers per respondent) from a rating grid
 * @returns per column its closed kind (with grid stem/option), or null for free text, ids, dates and metadata
 */
export function classifyClosedColumns(headers: string[], columns: string[][]): (ClosedColumn | null)[] {
  const filled = columns.map(filledOf);
  const out: (ClosedColumn | null)[] = headers.map(() => null);

  // Numeric grids: columns of small whole numbers sharing a stem.
  const numeric = headers.map((_, c) => smallIntegers(filled[c]));
  const stems = new Map<string, number[]>();
  headers.forEach((h, c) => {
    const g = numeric[c] ? gridParts(h) : null;
    if (g) stems.set(g.stem, [...(stems.get(g.stem) ?? []), c]);
  });
  for (const [stem, cols] of stems) {
    if (cols.length < 2) continue;
    const kind: ClosedKind = RANK_HEADER.test(stem) || isPermutationGrid(cols.map((c) => columns[c])) ? "rank" : "rating";
    for (const c of cols) out[c] = { kind, stem, option: gridParts(headers[c])!.option };
  }

  headers.forEach((h, c) => {
    if (out[c] || filled[c].length < 5) return;
    if (filled[c].filter((v) => rankPairs(v)).length >= filled[c].length * 0.8) {
      out[c] = { kind: "rank" };
      return;
    }
    if (numeric[c]) {
      if (RATING_HEADER.test(h) || RANK_HEADER.test(h)) out[c] = { kind: "rating" };
      return;
    }
    if (!questionLike(h)) return;
    const choice = choiceKind(filled[c]);
    if (choice) out[c] = choice;
  });
  return out;
}

/**
 * Whether the numbers of a grid are ranks: for at least 90% of the respondents who answered two or more of its
 * columns, the numbers are distinct and none exceeds the number of columns.
 */
function isPermutationGrid(cols: string[][]): boolean {
  const rows = Math.max(...cols.map((c) => c.length));
  let answered = 0;
  let ranks = 0;
  for (let r = 0; r < rows; r++) {
    const vals = cols.map((c) => (c[r] ?? "").trim()).filter(isSmallInt).map(Number);
    if (vals.length < 2) continue;
    answered++;
    if (new Set(vals).size === vals.length && vals.every((v) => v >= 1 && v <= cols.length)) ranks++;
  }
  return answered >= 3 && ranks >= answered * 0.9;
}
