/**
 * Surveys, one open question at a time (issue #11): what a researcher does with a survey export is code the answers
 * to each open question on their own, not pool every free-text cell of the file. Pooled, the answers of a large
 * question ("What hinders you?") crowd out the themes of another ("What features would you like?"), and a subject
 * raised under two questions (version control as a difficulty and as a wish) becomes one mixed theme.
 *
 * - **When**: every source being synthesised is a survey (`source_type` survey) and their free-text answers
 *   (`response` units carrying `fields.question`) answer two or more open questions. A workspace mixing surveys
 *   with interviews, reviews or documents is clustered as one body of text, as before: there a subject the survey
 *   and an interview share should meet in one theme.
 * - **Which question**: the column header, except that columns sharing a question stem ("Feature / Change #1:What
 *   new features…?", "#2", "#3": core/extract/survey-columns.ts `gridParts`) are one question, when two or more of
 *   the source's open columns share it. The same question asked in two survey sources (two waves) is one question.
 *   A survey source's text that answers no question (a report's paragraphs) is a segment of its own.
 * - **Budget**: the themes of all questions share one cap, raised for a multi-question survey to
 *   `surveyThemeCap` (base + 10 per open question beyond the first, at most 3 × base: 35 for two questions, 75
 *   from six on, whatever the number of questions). Each question gets at least `QUESTION_MIN_THEMES` (or all it has), the
 *   rest goes in proportion to the answers it received (D'Hondt's highest averages over the floor), so a question
 *   five times as answered gets about five times the themes, and a budget a question cannot use goes to the others.
 */
import { gridParts } from "../../extract/survey-columns";
import type { SynthesisSource } from "./types";

/** Themes every open question gets at least (or all it has): a question asked is a question reported on. */
export const QUESTION_MIN_THEMES = 3;
/**
 * Themes the cap grows by per open question beyond the first: about the size of a researcher's code frame for one
 * open question (with 5, the 2015 Jupyter survey's eight questions shared 60 places and its most-answered wish list
 * kept 10 themes, cutting the widgets theme, its 9th by size: see docs/decisions.md).
 */
export const THEMES_PER_EXTRA_QUESTION = 10;
/** The raised cap is at most this many times the base cap, however many questions the survey has. */
export const SURVEY_CAP_FACTOR = 3;

/** One open question's share of a survey synthesis. */
export interface QuestionSegment {
  /** Normalised question (grouping key); "" for survey text that answers no question. */
  key: string;
  /** The question as shown in descriptions (first sentence of the stem), or null. */
  question: string | null;
  /** The question as asked (the whole stem, instructions included), or null. */
  asked: string | null;
  /** Indices of its mentions in the corpus, ascending. */
  members: number[];
}

/** What segmenting needs of a mention. */
export interface SegmentMention {
  sourceIndex: number;
  unitIndex: number;
}

const clean = (s: string) => s.replace(/\s+/g, " ").trim();
const keyOf = (s: string) => clean(s).toLowerCase();

/**
 * A question as a reader needs it: white space collapsed, cut after its first "?" (the instructions that often
 * follow, "(Please list anything that comes to mind…)", do not say what was asked), else at 120 characters on a
 * word boundary.
 */
export function questionLabel(stem: string): string {
  const s = clean(stem);
  const q = s.indexOf("?");
  if (q > 0) return s.slice(0, q + 1);
  if (s.length <= 120) return s;
  return `${s.slice(0, s.lastIndexOf(" ", 119)).replace(/[,;:]$/, "")}…`;
}

/**
 * Question of each open column of one survey source: the header, or the stem its grid siblings share.
 * @param headers headers of the source's free-text answer columns (`fields.question` of its mentions' units)
 * @returns header → question stem
 */
export function questionStems(headers: string[]): Map<string, string> {
  const stemOf = new Map<string, string>();
  const byStem = new Map<string, string[]>();
  for (const h of headers) {
    const g = gridParts(h);
    if (!g) continue;
    const k = keyOf(g.stem);
    byStem.set(k, [...(byStem.get(k) ?? []), h]);
    stemOf.set(h, g.stem);
  }
  // A stem is a question only when two or more columns share it: "Stem - Option" also splits a lone header that
  // merely contains " - ", which is one question as written.
  return new Map(headers.map((h) => {
    const stem = stemOf.get(h);
    return [h, stem !== undefined && byStem.get(keyOf(stem))!.length >= 2 ? stem : h];
  }));
}

/**
 * Mentions of a survey-only synthesis, grouped by the open question they answer (see file comment).
 * @returns the segments in order of first mention, or null when the input is not survey-only or holds fewer than
 *   two open questions (then it is clustered as one body of text)
 */
export function questionSegments(mentions: SegmentMention[], sources: SynthesisSource[]): QuestionSegment[] | null {
  if (!sources.length || sources.some((s) => s.source_type !== "survey")) return null;
  const headerOf = (m: SegmentMention): string | undefined => {
    const u = sources[m.sourceIndex].units[m.unitIndex];
    return u.kind === "response" ? u.fields?.question : undefined;
  };
  const stems = sources.map((_, si) => {
    const headers = new Set<string>();
    for (const m of mentions) {
      const h = m.sourceIndex === si ? headerOf(m) : undefined;
      if (h) headers.add(h);
    }
    return questionStems([...headers]);
  });
  const segments = new Map<string, QuestionSegment>();
  mentions.forEach((m, i) => {
    const h = headerOf(m);
    const stem = h ? stems[m.sourceIndex].get(h)! : null;
    const key = stem ? keyOf(stem) : "";
    let seg = segments.get(key);
    if (!seg) segments.set(key, (seg = { key, question: stem ? questionLabel(stem) : null, asked: stem ? clean(stem) : null, members: [] }));
    seg.members.push(i);
  });
  const questions = [...segments.values()].filter((s) => s.key).length;
  return questions >= 2 ? [...segments.values()] : null;
}

/**
 * The themes' cap for a survey analysed question by question.
 * @param base the cap for one body of text (`maxInsights`)
 * @param questions open questions that yielded at least one theme
 */
export function surveyThemeCap(base: number, questions: number): number {
  return Math.min(SURVEY_CAP_FACTOR * base, base + THEMES_PER_EXTRA_QUESTION * Math.max(0, questions - 1));
}

/**
 * How many themes each question keeps: at least `floor` (or all it has; floors go to the most answered questions
 * first when the cap cannot hold them all), then one at a time to the question with the highest answers ÷ (themes
 * kept + 1) that has more (D'Hondt), until the cap is reached or every theme is kept.
 *
 * @param weights answers per question (the share it deserves)
 * @param available themes each question has, best first
 * @param cap themes kept in all
 * @returns themes kept per question; the sum is min(cap, Σ available)
 */
export function allocateThemes(weights: number[], available: number[], cap: number, floor = QUESTION_MIN_THEMES): number[] {
  const kept = available.map(() => 0);
  let left = cap;
  const byWeight = weights.map((_, i) => i).sort((a, b) => weights[b] - weights[a] || a - b);
  for (const i of byWeight) {
    const take = Math.min(floor, available[i], left);
    kept[i] = take;
    left -= take;
  }
  while (left > 0) {
    let best = -1;
    for (let i = 0; i < kept.length; i++) {
      if (kept[i] >= available[i]) continue;
      if (best < 0 || weights[i] / (kept[i] + 1) > weights[best] / (kept[best] + 1)) best = i;
    }
    if (best < 0) break;
    kept[best]++;
    left--;
  }
  return kept;
}
