/**
 * Step 4 of synthesis: name a cluster from its own words.
 *
 * Candidate keyphrases are wink-nlp noun phrases (1–3 nouns/adjectives ending in a noun, and verb+noun pairs such
 * as "lose work"), keyed by `phraseKey`. Each cluster's candidates are ranked by class-based TF-IDF
 * (c-TF-IDF, as in BERTopic): the share of the cluster's mentions containing the phrase, times
 * log(1 + A / f) where f is how many mentions of the whole synthesis contain it and A the average cluster size,
 * so words frequent everywhere ("notebook", "app") lose to words specific to the cluster ("variable inspector").
 * Multi-word phrases get a small bonus; a phrase must occur in at least 2 mentions (and 5% of the cluster).
 * Domain words, prominent (in 5%+ of the mentions) in more than a quarter of all clusters, or in more than an
 * eighth of them while occurring in 2%+ (and 50+) of all mentions ("app", "notebook"), are damped (×0.3): they
 * name the product, not the theme; so are phrases made only of domain words ("Jupyter Notebook"). A cluster whose best phrase covers under `MIN_COVERAGE` of its mentions has no shared topic and
 * is not turned into an insight (see index.ts): we do not invent a name for it.
 * The phrase is shown in its most frequent written form in the cluster (proper nouns and acronyms keep their case).
 */
import type { InsightType } from "./classify";
import type { MentionSpan } from "./mentions";

/** Leading adjectives that carry no topic ("good notebook" → "notebook"). */
const GENERIC_ADJ = new Set([
  "good", "great", "new", "other", "more", "many", "much", "few", "same", "different", "certain", "own", "main", "whole",
  "able", "such", "various", "several", "first", "last", "next", "better", "best", "easy", "nice", "lot", "real",
  "little", "big", "small", "large", "current", "specific", "general", "simple", "whole", "entire", "overall",
  "actual", "possible", "important", "particular", "full", "free", "sure", "like", "most", "least", "um", "uh",
  "super", "huge", "old", "additional", "basic", "proper", "single", "multiple", "right", "wrong", "hard",
]);
/** Head nouns that carry no topic on their own. */
const GENERIC_NOUN = new Set([
  "thing", "way", "lot", "time", "stuff", "something", "anything", "everything", "nothing", "bit", "kind", "sort",
  "part", "one", "people", "person", "guy", "day", "year", "week", "month", "minute", "etc", "example", "case",
  "point", "fact", "reason", "question", "answer", "yes", "okay", "today", "um", "uh", "yeah", "hmm", "right", "sense",
  "idea", "number", "side", "end", "place", "line", "level", "hand", "look", "use", "area", "couple", "mind", "stage",
  "moment", "matter", "deal", "term", "item", "aspect", "feature", "option", "ability", "support", "lots", "others",
  "anyone", "someone", "everyone", "anybody", "somebody", "everybody", "oh", "ok", "wow", "gosh", "sir", "ma'am",
  "mr", "mrs", "ms", "dr", "i", "ii", "iii", "lol", "na", "n/a", "problem", "issue", "need", "work", "im", "whatever",
  "user", "users", "min", "minute", "hour", "gonna", "wanna", "gotta", "lady", "man", "woman", "folks",
]);

/**
 * Identity of a phrase: lower-cased words, the last one singularised by a plain "-s" rule ("Kernels" → "kernel",
 * "data" stays). Lemmas are not used: the lemmatiser treats the same word differently as noun and proper noun
 * ("data" → "datum" but "Data" → "data").
 */
export function phraseKey(words: string[]): string {
  const w = words.map((x) => x.toLowerCase());
  const last = w[w.length - 1];
  if (last.length > 3 && last.endsWith("s") && !/(ss|us|is|ics)$/.test(last)) w[w.length - 1] = last.endsWith("ies") ? `${last.slice(0, -3)}y` : last.slice(0, -1);
  return w.join(" ");
}

export interface PhraseOcc {
  /** Lemmas, lower-cased, space-joined: the identity of the phrase. */
  key: string;
  /** As written in this mention. */
  surface: string;
  words: number;
}

/**
 * The distinct keyphrase candidates of one mention.
 * @param span a mention with its tokens and noun-phrase ranges (from `unitMentions`)
 */
export function mentionPhrases(span: MentionSpan): PhraseOcc[] {
  const seen = new Map<string, PhraseOcc>();
  for (const p of span.phrases) {
    let first = p.first;
    const last = p.last;
    while (first <= last && (span.tokens[first].pos === "ADJ" && GENERIC_ADJ.has(span.tokens[first].normal))) first++;
    if (first > last) continue;
    const toks = span.tokens.slice(first, last + 1);
    if (toks.some((t) => t.type !== "word" || !/\p{L}{2,}/u.test(t.value))) continue;
    const head = toks[toks.length - 1];
    if (GENERIC_NOUN.has(head.lemma.toLowerCase()) && toks.length === 1) continue;
    if (toks.every((t) => t.stop || GENERIC_NOUN.has(t.lemma.toLowerCase()))) continue;
    if (toks[0].pos === "VERB" && (toks[0].stop || toks.length < 2)) continue;
    // The phrase and its shorter endings ("exploratory data analysis" → "data analysis" → "analysis"), so
    // variants of one concept count together and the ranking can prefer the shared core.
    for (let from = 0; from < toks.length; from++) {
      const part = toks.slice(from);
      if (part.length === 1 && GENERIC_NOUN.has(part[0].lemma.toLowerCase())) continue;
      if ((part[0].pos === "VERB" || part[0].pos === "ADJ") && part.length === 1) continue;
      if (part.every((t) => t.stop)) continue;
      const key = phraseKey(part.map((t) => t.normal));
      if (key.length < 3 || seen.has(key)) continue;
      const start = part[0].start - span.tokens[0].start;
      const end = head.end - span.tokens[0].start;
      const surface = span.text.slice(start, end).replace(/\s+/g, " ");
      // Only plain words: no abbreviation dots ("Va."), slashes or symbols in a title.
      if (!/^[\p{L}\p{N}][\p{L}\p{N} '’-]*$/u.test(surface)) continue;
      seen.set(key, { key, surface, words: part.length });
    }
  }
  return [...seen.values()];
}

/** Share of clusters a phrase may be prominent in before it counts as a domain word. */
export const MAX_SPREAD = 0.25;

/**
 * For each phrase key, the share of clusters in which it occurs in at least 5% of the mentions (and 2 of them).
 * @param clusters phrase lists of each cluster's mentions
 */
export function phraseSpread(clusters: PhraseOcc[][][]): Map<string, number> {
  const spread = new Map<string, number>();
  for (const members of clusters) {
    const count = new Map<string, number>();
    for (const list of members) for (const p of list) count.set(p.key, (count.get(p.key) ?? 0) + 1);
    const min = Math.max(2, 0.05 * members.length);
    for (const [k, c] of count) if (c >= min) spread.set(k, (spread.get(k) ?? 0) + 1);
  }
  for (const [k, v] of spread) spread.set(k, v / Math.max(1, clusters.length));
  return spread;
}

/** Share of a cluster's mentions its top phrase must occur in for the cluster to be named (and kept). */
export const MIN_COVERAGE = 0.2;

export interface RankedPhrase {
  key: string;
  surface: string;
  /** Mentions of the cluster containing the phrase. */
  count: number;
  score: number;
  /** A domain word (prominent in many clusters): names the product, not a theme. */
  domain: boolean;
}

/**
 * How a phrase is shown: its most frequent written form, but lower case when users also write it that way at
 * least a third as often (sentence-initial capitals are not names); acronyms keep their case.
 */
export function displayForm(variants: Map<string, number>): string {
  const sorted = [...variants.entries()].sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]));
  const [top, topCount] = sorted[0];
  const lower = variants.get(top.toLowerCase()) ?? 0;
  const lowerTotal = sorted.filter(([v]) => v === v.toLowerCase()).reduce((a, [, c]) => a + c, 0);
  if (top !== top.toLowerCase() && !/[A-Z]{2,}/.test(top) && (lower * 3 >= topCount || lowerTotal * 3 >= topCount)) {
    return top.toLowerCase();
  }
  return top;
}

/**
 * Rank a cluster's keyphrases by c-TF-IDF.
 * @param members phrase lists of the cluster's mentions
 * @param globalCount mentions of the whole synthesis containing each phrase key
 * @param avgClusterSize A in the formula (mentions clustered / clusters)
 */
export function rankPhrases(
  members: PhraseOcc[][],
  globalCount: Map<string, number>,
  avgClusterSize: number,
  spread: Map<string, number> = new Map(),
  totalMentions = Infinity,
): RankedPhrase[] {
  const count = new Map<string, number>();
  const surfaces = new Map<string, Map<string, number>>();
  const words = new Map<string, number>();
  for (const list of members) {
    for (const p of list) {
      count.set(p.key, (count.get(p.key) ?? 0) + 1);
      const m = surfaces.get(p.key) ?? new Map<string, number>();
      m.set(p.surface, (m.get(p.surface) ?? 0) + 1);
      surfaces.set(p.key, m);
      words.set(p.key, p.words);
    }
  }
  const n = Math.max(1, members.length);
  const minCount = Math.max(2, Math.ceil(0.05 * n));
  const isDomain = (k: string) => {
    const sp = spread.get(k) ?? 0;
    return sp > MAX_SPREAD || (sp > MAX_SPREAD / 2 && (globalCount.get(k) ?? 0) >= Math.max(50, 0.02 * totalMentions));
  };
  const out: RankedPhrase[] = [];
  for (const [key, c] of count) {
    if (c < minCount) continue;
    const f = globalCount.get(key) ?? c;
    const bonus = 1 + 0.25 * ((words.get(key) ?? 1) - 1);
    // A phrase made only of domain words ("Jupyter Notebook") is a domain phrase too.
    const domain = isDomain(key) || key.split(" ").every((w) => isDomain(phraseKey([w])));
    const score = (c / n) * Math.log(1 + avgClusterSize / f) * bonus * (domain ? 0.3 : 1);
    const surface = displayForm(surfaces.get(key)!);
    out.push({ key, surface, count: c, score, domain });
  }
  return out.sort((a, b) => b.score - a.score || a.key.localeCompare(b.key));
}

/**
 * Up to `max` top phrases that do not repeat each other's words or 5-letter stems ("variable inspector" then not
 * "inspector"; "documentation" then not "document").
 */
export function distinctTop(ranked: RankedPhrase[], max: number): RankedPhrase[] {
  const out: RankedPhrase[] = [];
  // Same word, or same 5-letter stem ("document"/"documentation", "editor"/"editing").
  const stem = (w: string) => (w.length >= 5 ? w.slice(0, 5) : w);
  for (const r of ranked) {
    const words = new Set(r.key.split(" ").map(stem));
    if (out.some((o) => o.key.split(" ").some((w) => words.has(stem(w))))) continue;
    out.push(r);
    if (out.length >= max) break;
  }
  return out;
}

/** The phrases a title names: the top one, and the second when it is at least half as strong. */
export function subjectPhrases(top: RankedPhrase[]): RankedPhrase[] {
  const [a, b] = top;
  if (!a) return [];
  return b && b.score >= 0.5 * a.score ? [a, b] : [a];
}

/**
 * How much two clusters' titles say the same thing: Jaccard overlap of the words of their subject phrases
 * (singularised), 0–1. "text and editing" vs "text editing" is 1; "version control" vs "git integration" is 0.
 */
export function subjectOverlap(a: RankedPhrase[], b: RankedPhrase[]): number {
  const words = (top: RankedPhrase[]) => new Set(subjectPhrases(top).flatMap((p) => p.key.split(" ").map((w) => phraseKey([w]))));
  const wa = words(a);
  const wb = words(b);
  const shared = [...wa].filter((w) => wb.has(w)).length;
  return shared / Math.max(1, new Set([...wa, ...wb]).size);
}

/**
 * Title from the type and the top keyphrases: "Users struggle with X" only for pain points, "Users ask for X" for
 * feature requests, "Unmet need: X" for opportunities, "How users work with X" for behaviours, "Users value X"
 * for positive feedback themes, "Feedback on X" otherwise. A second phrase is added ("X and Y") when it is at
 * least half as strong as the first.
 */
export function titleFor(type: InsightType, positive: boolean, top: RankedPhrase[]): string {
  const parts = subjectPhrases(top);
  const subject = parts.length ? parts.map((p) => p.surface).join(" and ") : "a recurring topic";
  switch (type) {
    case "pain_point":
      return `Users struggle with ${subject}`;
    case "feature_request":
      return `Users ask for ${subject}`;
    case "opportunity":
      return `Unmet need: ${subject}`;
    case "behavior":
      return `How users work with ${subject}`;
    default:
      return positive ? `Users value ${subject}` : `Feedback on ${subject}`;
  }
}
