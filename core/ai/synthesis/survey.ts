/**
 * Closed survey questions as quantitative insights (issue #11 item 2), for every engine: the figures are computed
 * from the answers, never asked of a model.
 *
 * Input: a source's `response` units grouped by `fields.question`, one respondent per `speaker` (extraction gives
 * every row its own, core/extract/table.ts). A question is closed when extraction marked it (`fields.closed`) or,
 * for units from elsewhere, when `classifyClosedColumns` says so over the respondent-aligned answers (same rules,
 * core/extract/survey-columns.ts). One-column-per-option grids (`fields.stem`) are one question.
 *
 * Figures, all over the respondents who answered the question (n, the denominator every percentage states):
 * - single choice: respondents per option and share of n;
 * - multi-select: respondents who picked each option and share of n (shares add up to more than 100%);
 * - rating: mean (one decimal), distribution, share in the top two points of the scale (scale 1–5, 1–7 or 0–10
 *   from the highest value seen); a grid of ratings: mean per option;
 * - ranking: per option mean rank (one decimal) over the respondents who ranked it, and how many ranked it first.
 *
 * Which questions become insights (at most `SURVEY_INSIGHTS_MAX`, n ≥ 10, the most answered first, each survey's
 * best before any survey's second): a single choice
 * with a majority (≥ 50%), a split (top two both ≥ 25%, within 10 points) or a clear plurality (≥ 40%); a multi-select whose top option was
 * picked by ≥ 30%; every rating and ranking question (their mean is the finding).
 *
 * Type, from the question and the lead option's words (why: counts say how many, not what kind): problem words
 * ("challenge", "difficult", "hinder", "frustrat", "problem", "pain", "barrier") → pain_point; wish words ("want",
 * "improve", "wish", "would like", "like to see", "priorit", "missing") → feature_request; usage words ("how often", "use",
 * "run", "how long", "role") → behavior; a rating whose mean is below the scale's midpoint → pain_point; else
 * feedback_theme. Severity from the lead share (or the top-two-box share of a rating): pain points and requests
 * high ≥ 50%, medium ≥ 25%, else low; other types medium ≥ 50%, else low. Never critical: a count says how many,
 * not how bad, and severity words must come from the evidence.
 *
 * Quotes: free-text mentions of the respondents behind the lead figure (who picked the lead option, ranked the lead
 * item first, or gave the ratings the finding is about), most similar to "question + option", diverse (`pickQuotes`),
 * then `groundQuotes`. Closed answers are never mentions (filters.ts), and a mention holding a "[option]: n" rank
 * pair is dropped before clustering, so a number cell can never be a quote. A question whose respondents wrote no
 * grounded free text gives no insight (every insight is backed by someone's words).
 */
import { classifyClosedColumns, splitPicks, rankPairs, hasRankPair, type ClosedKind } from "../../extract/survey-columns";
import type { TextUnit } from "../../extract/types";
import type { Embedder } from "../ports";
import { groundQuotes, pickQuotes, type Quote, type QuoteCandidate } from "./quotes";
import type { InsightDraft, InsightType, Severity, SynthesisSource } from "./types";

/** Quantitative insights per synthesis, at most: headline figures, not a dump of every question. */
export const SURVEY_INSIGHTS_MAX = 6;
/** Respondents a question needs before its figures are a finding. */
const MIN_RESPONDENTS = 10;

/** A closed question of one source: its units by respondent. */
export interface ClosedQuestion {
  kind: ClosedKind;
  /** The question as asked (the column header, or a grid's stem). */
  question: string;
  /** Column headers (fields.question) it is made of: one, or one per option of a grid. */
  columns: string[];
  /** respondent → answer text per column header */
  answers: Map<string, Map<string, string>>;
  /** Grid option per column header. */
  options?: Map<string, string>;
  separator?: ";" | ",";
}

const respondentOf = (u: TextUnit, i: number) => u.speaker ?? `unit ${i}`;
const cache = new WeakMap<TextUnit[], ClosedQuestion[]>();

/**
 * The closed questions of a source's units (see file comment), cached per units array.
 * @returns questions in first-column order; empty when the source has no survey answers
 */
export function closedQuestions(units: TextUnit[]): ClosedQuestion[] {
  const hit = cache.get(units);
  if (hit) return hit;
  const headers: string[] = [];
  const byHeader = new Map<string, { units: { u: TextUnit; who: string }[] }>();
  units.forEach((u, i) => {
    const q = u.fields?.question;
    if (u.kind !== "response" || !q) return;
    let e = byHeader.get(q);
    if (!e) {
      byHeader.set(q, (e = { units: [] }));
      headers.push(q);
    }
    e.units.push({ u, who: respondentOf(u, i) });
  });
  const marked = units.some((u) => u.fields?.closed);
  let kinds: ({ kind: ClosedKind; stem?: string; option?: string; separator?: ";" | "," } | null)[];
  if (marked) {
    kinds = headers.map((h) => {
      const f = byHeader.get(h)!.units[0].u.fields!;
      const kind = f.closed as ClosedKind | undefined;
      return kind ? { kind, stem: f.stem, option: f.option, separator: f.separator as ";" | "," | undefined } : null;
    });
  } else {
    const people = [...new Set(headers.flatMap((h) => byHeader.get(h)!.units.map((x) => x.who)))];
    const row = new Map(people.map((p, r) => [p, r]));
    const columns = headers.map((h) => {
      const col = people.map(() => "");
      for (const { u, who } of byHeader.get(h)!.units) col[row.get(who)!] = u.text;
      return col;
    });
    kinds = classifyClosedColumns(headers, columns);
  }
  const out: ClosedQuestion[] = [];
  const grids = new Map<string, ClosedQuestion>();
  headers.forEach((h, c) => {
    const k = kinds[c];
    if (!k) return;
    let q = k.stem ? grids.get(k.stem) : undefined;
    if (!q) {
      q = { kind: k.kind, question: k.stem ?? h, columns: [], answers: new Map(), separator: k.separator };
      if (k.stem) {
        q.options = new Map();
        grids.set(k.stem, q);
      }
      out.push(q);
    }
    q.columns.push(h);
    if (k.stem) q.options!.set(h, k.option ?? h);
    for (const { u, who } of byHeader.get(h)!.units) {
      const a = q.answers.get(who) ?? new Map<string, string>();
      a.set(h, u.text.trim());
      q.answers.set(who, a);
    }
  });
  cache.set(units, out);
  return out;
}

/** Column headers of a source's closed questions: their answers are figures, never mentions (filters.ts). */
export function closedColumnHeaders(units: TextUnit[]): Set<string> {
  return new Set(closedQuestions(units).flatMap((q) => q.columns));
}

/** Whether a mention's text must never be evidence: a "[option]: n" rank pair, or only numbers and punctuation. */
export function isFigureText(text: string): boolean {
  return hasRankPair(text) || !/\p{L}/u.test(text);
}

/** One option's figures. */
export interface OptionFigure {
  option: string;
  /** Respondents who picked it (choice), ranked it (rank), rated it (rating grid), or gave this value (rating). */
  count: number;
  /** count ÷ n (choice, rating value) */
  share?: number;
  /** Mean rank or mean rating over `count` respondents. */
  mean?: number;
  /** Respondents who ranked it first (rank). */
  firsts?: number;
}

/** The figures of one closed question. */
export interface QuestionFigures {
  kind: ClosedKind;
  question: string;
  /** Respondents who answered (the denominator). */
  n: number;
  options: OptionFigure[];
  /** Mean rating (rating questions). */
  mean?: number;
  scale?: { min: number; max: number };
  /** Share of n in the top two points of the scale (rating). */
  topBox?: number;
  /** The option the finding is about, its respondents, and why it is a finding. */
  lead?: { option: OptionFigure; second?: OptionFigure; respondents: Set<string>; reason: "majority" | "plurality" | "split" | "top" | "mean" };
}

const round1 = (x: number) => Math.round(x * 10) / 10;
const byCount = (a: OptionFigure, b: OptionFigure) => b.count - a.count || (a.option < b.option ? -1 : a.option > b.option ? 1 : 0);

/** Scale of a rating question from its values: 0–10 when it has a 0 or values above 7, else 1–5 or 1–7. */
function scaleOf(values: number[]): { min: number; max: number } {
  const hi = Math.max(...values);
  const lo = Math.min(...values);
  return { min: lo === 0 ? 0 : 1, max: hi <= 5 && lo > 0 ? 5 : hi <= 7 && lo > 0 ? 7 : 10 };
}

/**
 * Compute the figures of a closed question (see file comment).
 * @returns figures with `lead` set when the question deserves an insight
 */
export function questionFigures(q: ClosedQuestion): QuestionFigures {
  const people = [...q.answers.entries()];
  const who = (pred: (a: Map<string, string>) => boolean) => new Set(people.filter(([, a]) => pred(a)).map(([p]) => p));
  const col = q.columns[0];

  if (q.kind === "single" || q.kind === "multi") {
    const picksOf = (a: Map<string, string>) => {
      const v = a.get(col) ?? "";
      return q.kind === "multi" ? splitPicks(v, q.separator ?? ";") : v ? [v] : [];
    };
    const answered = people.filter(([, a]) => picksOf(a).length);
    const n = answered.length;
    const counts = new Map<string, number>();
    for (const [, a] of answered) for (const p of picksOf(a)) counts.set(p, (counts.get(p) ?? 0) + 1);
    const options = [...counts.entries()].map(([option, count]) => ({ option, count, share: count / Math.max(1, n) })).sort(byCount);
    const f: QuestionFigures = { kind: q.kind, question: q.question, n, options };
    const [a, b] = options;
    const pickedBy = (o: string) => who((x) => picksOf(x).includes(o));
    if (n >= MIN_RESPONDENTS && a) {
      if (q.kind === "single" && a.share! >= 0.5) f.lead = { option: a, respondents: pickedBy(a.option), reason: "majority" };
      else if (q.kind === "single" && b && b.share! >= 0.25 && a.share! - b.share! <= 0.1)
        f.lead = { option: a, second: b, respondents: new Set([...pickedBy(a.option), ...pickedBy(b.option)]), reason: "split" };
      else if (q.kind === "single" && a.share! >= 0.4) f.lead = { option: a, respondents: pickedBy(a.option), reason: "plurality" };
      else if (q.kind === "multi" && a.share! >= 0.3) f.lead = { option: a, respondents: pickedBy(a.option), reason: "top" };
    }
    return f;
  }

  if (q.kind === "rating" && !q.options) {
    const values = people.map(([p, a]) => [p, a.get(col) ?? ""] as const).filter(([, v]) => /^\d{1,2}$/.test(v));
    const n = values.length;
    const nums = values.map(([, v]) => Number(v));
    const scale = scaleOf(nums.length ? nums : [1]);
    const counts = new Map<number, number>();
    for (const v of nums) counts.set(v, (counts.get(v) ?? 0) + 1);
    const options = [...counts.entries()].sort((x, y) => x[0] - y[0]).map(([v, count]) => ({ option: String(v), count, share: count / Math.max(1, n) }));
    const mean = nums.reduce((s, v) => s + v, 0) / Math.max(1, n);
    const top = nums.filter((v) => v >= scale.max - 1).length;
    const f: QuestionFigures = { kind: "rating", question: q.question, n, options, mean, scale, topBox: top / Math.max(1, n) };
    if (n >= MIN_RESPONDENTS) {
      // The voices of the finding: the satisfied when the mean is in the upper half, else the dissatisfied.
      const low = mean < (scale.min + scale.max) / 2;
      const respondents = new Set(values.filter(([, v]) => (low ? Number(v) <= scale.min + 1 : Number(v) >= scale.max - 1)).map(([p]) => p));
      f.lead = { option: { option: low ? `${scale.min}–${scale.min + 1}` : `${scale.max - 1}–${scale.max}`, count: respondents.size }, respondents, reason: "mean" };
    }
    return f;
  }

  // Grids (rating per option, rank per option) and rank-pair cells: per option, the numbers respondents gave it.
  const numbers = new Map<string, Map<string, number>>(); // option → respondent → number
  const add = (option: string, p: string, v: number) => {
    const m = numbers.get(option) ?? new Map<string, number>();
    if (!m.has(p)) m.set(p, v);
    numbers.set(option, m);
  };
  for (const [p, a] of people) {
    for (const [h, v] of a) {
      if (q.options) {
        if (/^\d{1,2}$/.test(v)) add(q.options.get(h)!, p, Number(v));
      } else for (const pair of rankPairs(v) ?? []) add(pair.option, p, pair.rank);
    }
  }
  const respondents = new Set([...numbers.values()].flatMap((m) => [...m.keys()]));
  const n = respondents.size;
  const options: OptionFigure[] = [...numbers.entries()].map(([option, m]) => {
    const vs = [...m.values()];
    return { option, count: vs.length, mean: vs.reduce((s, v) => s + v, 0) / vs.length, ...(q.kind === "rank" ? { firsts: vs.filter((v) => v === 1).length } : {}) };
  });
  const all = [...numbers.values()].flatMap((m) => [...m.values()]);
  const scale = q.kind === "rank" ? { min: 1, max: Math.max(options.length, ...all) } : scaleOf(all.length ? all : [1]);
  // Lowest mean rank (or highest mean rating) among options most respondents answered about.
  const maxCount = Math.max(0, ...options.map((o) => o.count));
  const sign = q.kind === "rank" ? 1 : -1;
  options.sort((a, b) => sign * (a.mean! - b.mean!) || b.count - a.count || (a.option < b.option ? -1 : 1));
  const f: QuestionFigures = { kind: q.kind, question: q.question, n, options, scale };
  const lead = options.find((o) => o.count >= maxCount / 2);
  if (lead && n >= MIN_RESPONDENTS) {
    const m = numbers.get(lead.option)!;
    const best = q.kind === "rank" ? 1 : scale.max - 1;
    const who = new Set([...m.entries()].filter(([, v]) => (q.kind === "rank" ? v === best : v >= best)).map(([p]) => p));
    f.lead = { option: lead, respondents: who, reason: "top" };
  }
  return f;
}

const PROBLEM = /\b(challeng\w*|difficult\w*|hard|hinder\w*|frustrat\w*|problem\w*|pain\w*|barrier\w*|obstacle\w*|issue\w*|struggl\w*|annoy\w*)\b/i;
const WISH = /\b(want\w*|improve\w*|improvement\w*|wish\w*|would like|like to see|like us to|priorit\w*|request\w*|missing)\b/i;
const USAGE = /\b(how often|use|used|using|run|how long|role|frequency|workflow)\b/i;

/** Insight type and severity of a question's figures (rule in the file comment). */
export function typeAndSeverity(f: QuestionFigures): { type: InsightType; severity: Severity } {
  const words = `${f.question} ${f.lead?.option.option ?? ""}`;
  let type: InsightType = PROBLEM.test(words) ? "pain_point" : WISH.test(words) ? "feature_request" : USAGE.test(words) ? "behavior" : "feedback_theme";
  if (f.kind === "rating" && f.mean !== undefined && f.scale && f.mean < (f.scale.min + f.scale.max) / 2) type = "pain_point";
  const share = f.kind === "rating" && f.topBox !== undefined ? f.topBox : f.lead?.option.share ?? (f.lead ? f.lead.respondents.size / Math.max(1, f.n) : 0);
  const severity: Severity =
    type === "pain_point" || type === "feature_request" ? (share >= 0.5 ? "high" : share >= 0.25 ? "medium" : "low") : share >= 0.5 ? "medium" : "low";
  return { type, severity };
}

const fmtInt = (x: number) => x.toLocaleString("en-US");
const pctOf = (x: number) => `${Math.round(x * 100)}%`;
const quoted = (s: string) => `“${s}”`;
/** A long question shortened at a word boundary for a title (the description keeps it whole). */
function shortQ(q: string, max = 90): string {
  const t = q.replace(/\s+/g, " ").trim();
  if (t.length <= max) return t;
  return `${t.slice(0, t.lastIndexOf(" ", max - 1)).replace(/[,;:]$/, "")}…`;
}

/** Title and description stating the figures (spec 01 Insight: title, description). */
export function describeFigures(f: QuestionFigures, sourcesLine: string): { title: string; description: string } {
  const q = shortQ(f.question);
  const lead = f.lead!;
  const n = fmtInt(f.n);
  const list = (opts: OptionFigure[]) => opts.map((o) => `${quoted(o.option)} ${fmtInt(o.count)} (${pctOf(o.share!)})`).join(", ");
  const head = `${f.n} respondents ${sourcesLine} answered ${quoted(f.question)}.`;
  if (f.kind === "single" && lead.reason === "split") {
    const b = lead.second!;
    return {
      title: `Respondents split on ${quoted(q)}: ${quoted(lead.option.option)} ${pctOf(lead.option.share!)} vs ${quoted(b.option)} ${pctOf(b.share!)} (n=${n})`,
      description: `${head} Answers: ${list(f.options)}; percentages of the ${n} who answered.`,
    };
  }
  if (f.kind === "single" || f.kind === "multi") {
    const o = lead.option;
    const verb = f.kind === "multi" ? "chose" : "answered";
    return {
      title: `${pctOf(o.share!)} of respondents (${fmtInt(o.count)} of ${n}) ${verb} ${quoted(o.option)} for ${quoted(q)}`,
      description:
        `${head} ${f.kind === "multi" ? "Picks (several per respondent, so shares add up to more than 100%)" : "Answers"}: ${list(f.options)}; ` +
        `percentages of the ${n} who answered.`,
    };
  }
  if (f.kind === "rating" && f.mean !== undefined) {
    const s = f.scale!;
    return {
      title: `Mean rating ${round1(f.mean).toFixed(1)} on a ${s.min}–${s.max} scale for ${quoted(q)}; ${pctOf(f.topBox!)} rate ${s.max - 1} or ${s.max} (n=${n})`,
      description: `${head} Ratings: ${list(f.options)}; mean ${round1(f.mean).toFixed(1)}; percentages of the ${n} who answered.`,
    };
  }
  const s = f.scale!;
  const per = f.options
    .map((o) => `${quoted(o.option)} mean ${f.kind === "rank" ? "rank" : "rating"} ${round1(o.mean!).toFixed(1)} (${fmtInt(o.count)} respondents` + (o.firsts !== undefined ? `, first for ${fmtInt(o.firsts)}` : "") + ")")
    .join(", ");
  const o = lead.option;
  if (f.kind === "rank") {
    return {
      title: `${quoted(o.option)} ranked first on average for ${quoted(q)} (mean rank ${round1(o.mean!).toFixed(1)} of ${s.max}, n=${fmtInt(o.count)})`,
      description: `${head} Lower is better (1 = first). ${per}.`,
    };
  }
  return {
    title: `${quoted(o.option)} rated highest for ${quoted(q)} (mean ${round1(o.mean!).toFixed(1)} on a ${s.min}–${s.max} scale, n=${fmtInt(o.count)})`,
    description: `${head} ${per}.`,
  };
}

/** What `surveyInsights` reads of the corpus: mentions (source, speaker, text) with their vectors. */
export interface SurveyCorpus {
  mentions: { sourceIndex: number; speaker: string | null; span: { text: string } }[];
  vectors: Float32Array[];
}

function normalized(v: Float32Array): Float32Array {
  let s = 0;
  for (let i = 0; i < v.length; i++) s += v[i] * v[i];
  const k = s > 0 ? 1 / Math.sqrt(s) : 0;
  return v.map((x) => x * k);
}

function dot(a: Float32Array, b: Float32Array): number {
  let s = 0;
  for (let i = 0; i < a.length; i++) s += a[i] * b[i];
  return s;
}

/** A survey source: typed survey, or a closed question whose header asks something ("?"). */
const counts = (s: SynthesisSource, q: ClosedQuestion) => s.source_type === "survey" || q.question.includes("?");

/**
 * Quantitative insights from the closed questions of the sources (see file comment), shared by every engine.
 *
 * @param sources the synthesised sources (same order as the corpus' `sourceIndex`)
 * @param corpus mentions after every filter and their vectors (quotes are chosen among them)
 * @param embedder embeds one "question option" anchor per insight (its vector, and what quotes are compared to)
 * @returns at most `SURVEY_INSIGHTS_MAX` drafts, most answered first; `mention_count` = respondents who answered,
 *   `frequency` = 1 (one source's question)
 * @throws whatever the embedder throws
 */
export async function surveyInsights(sources: SynthesisSource[], corpus: SurveyCorpus, embedder: Embedder): Promise<InsightDraft[]> {
  const found: { si: number; f: QuestionFigures }[] = [];
  sources.forEach((s, si) => {
    for (const q of closedQuestions(s.units)) {
      if (!counts(s, q)) continue;
      const f = questionFigures(q);
      if (f.lead && f.lead.respondents.size) found.push({ si, f });
    }
  });
  if (!found.length) return [];
  // Most answered first (then the stronger lead, then question text, so the order is stable); each survey's best
  // question before any survey's second, so one large survey does not crowd out another.
  const order = (a: { f: QuestionFigures }, b: { f: QuestionFigures }) =>
    b.f.n - a.f.n || (b.f.lead!.option.share ?? 0) - (a.f.lead!.option.share ?? 0) || (a.f.question < b.f.question ? -1 : 1);
  found.sort(order);
  const place = new Map<number, number>();
  const round = found.map(({ si }) => {
    const r = place.get(si) ?? 0;
    place.set(si, r + 1);
    return r;
  });
  const ranked = found.map((x, i) => ({ ...x, round: round[i] })).sort((a, b) => a.round - b.round || order(a, b));
  found.splice(0, found.length, ...ranked);

  const anchors = await embedder.embed(found.map(({ f }) => `${f.question} ${f.lead!.option.option}`));
  const sourcesById = new Map(sources.map((s) => [s.id, s]));
  const bySource = new Map<number, number[]>();
  corpus.mentions.forEach((m, i) => {
    if (m.speaker === null || isFigureText(m.span.text)) return;
    const list = bySource.get(m.sourceIndex);
    if (list) list.push(i);
    else bySource.set(m.sourceIndex, [i]);
  });
  const drafts: InsightDraft[] = [];
  for (let k = 0; k < found.length && drafts.length < SURVEY_INSIGHTS_MAX; k++) {
    const { si, f } = found[k];
    const anchor = normalized(anchors[k]);
    const lead = f.lead!;
    const words = lead.option.option.toLowerCase().split(/[^\p{L}\p{N}]+/u).filter((w) => w.length >= 4);
    const candidates: QuoteCandidate[] = (bySource.get(si) ?? [])
      .filter((i) => lead.respondents.has(corpus.mentions[i].speaker!))
      .map((i) => {
        const m = corpus.mentions[i];
        const text = m.span.text;
        const onTopic = words.some((w) => text.toLowerCase().includes(w));
        return { quote: { text, source_id: sources[si].id, speaker: m.speaker } as Quote, sim: dot(corpus.vectors[i], anchor), vector: corpus.vectors[i], onTopic };
      })
      .sort((a, b) => b.sim - a.sim)
      .slice(0, 300);
    const quotes = groundQuotes(pickQuotes(candidates, 3, 5), sourcesById);
    if (!quotes.length) continue;
    const { type, severity } = typeAndSeverity(f);
    const { title, description } = describeFigures(f, `of “${sources[si].title}”`);
    const sims = candidates.filter((c) => quotes.some((q) => q.text === c.quote.text)).map((c) => c.sim);
    drafts.push({
      title,
      description,
      insight_type: type,
      severity,
      quotes,
      source_ids: [sources[si].id],
      frequency: 1,
      mention_count: f.n,
      mentions_by_source: { [sources[si].id]: f.n },
      vector: anchor,
      embedder_id: embedder.id,
      cohesion: Math.round((sims.reduce((a, b) => a + b, 0) / Math.max(1, sims.length)) * 1000) / 1000,
      keyphrases: [f.question, lead.option.option],
    });
  }
  return drafts;
}
