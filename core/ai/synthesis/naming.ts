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
 *
 * The title is a sentence from the cluster's own evidence (`sentenceTitle`): the most central clause that carries a
 * keyphrase two voices use, compressed by rules over wink-nlp tokens; the keyphrase template (`titleFor`) is only the
 * fallback when no clause qualifies. Extractive on purpose: a clause cut from the evidence cannot claim what nobody said.
 */
import { mentionCues, type InsightType } from "./classify";
import { signInAt, type Token } from "./nlp";
import type { MentionSpan } from "./mentions";
import { REDACTION_RE, STOCK_PREFIXES } from "./markers";

/** Leading adjectives that carry no topic ("good notebook" → "notebook"). */
const GENERIC_ADJ = new Set([
  "good", "great", "new", "other", "more", "many", "much", "few", "same", "different", "certain", "own", "main", "whole",
  "able", "such", "various", "several", "first", "last", "next", "better", "best", "easy", "nice", "lot", "real",
  "little", "big", "small", "large", "current", "specific", "general", "simple", "whole", "entire", "overall",
  "actual", "possible", "important", "particular", "full", "free", "sure", "like", "most", "least", "um", "uh",
  "super", "huge", "old", "additional", "basic", "proper", "single", "multiple", "right", "wrong", "hard",
]);
/** Verbs that make no topic with their object ("having access", "get help"): the noun alone names it. */
const LIGHT_VERBS = new Set(["have", "get", "make", "take", "do", "go", "use", "need", "want", "try", "give", "let", "keep", "put"]);
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
    // A leading token that is no plain word ("D.C Medical center") is dropped, not the whole phrase.
    while (first <= last && (span.tokens[first].type !== "word" || !/\p{L}{2,}/u.test(span.tokens[first].value) || /\./.test(span.tokens[first].value))) first++;
    if (first > last) continue;
    const toks = span.tokens.slice(first, last + 1);
    if (toks.some((t) => t.type !== "word" || !/\p{L}{2,}/u.test(t.value))) continue;
    const head = toks[toks.length - 1];
    if (GENERIC_NOUN.has(head.lemma.toLowerCase()) && toks.length === 1) continue;
    if (toks.every((t) => t.stop || GENERIC_NOUN.has(t.lemma.toLowerCase()))) continue;
    if (toks[0].pos === "VERB" && (toks[0].stop || toks.length < 2 || LIGHT_VERBS.has(toks[0].lemma.toLowerCase()))) continue;
    // The phrase and its shorter endings ("exploratory data analysis" → "data analysis" → "analysis"), so
    // variants of one concept count together and the ranking can prefer the shared core.
    // A three-word compound also names its two-word modifier ("community care letters" → "community care"), which
    // other mentions use on its own.
    const parts = toks.map((_, from) => toks.slice(from));
    if (toks.length === 3 && /^(NOUN|PROPN)$/.test(toks[1].pos) && !GENERIC_NOUN.has(toks[1].lemma.toLowerCase())) parts.push(toks.slice(0, 2));
    for (const part of parts) {
      if (part.length === 1 && GENERIC_NOUN.has(part[0].lemma.toLowerCase())) continue;
      if ((part[0].pos === "VERB" || part[0].pos === "ADJ") && part.length === 1) continue;
      if (part.every((t) => t.stop)) continue;
      // A phrase ending in a way of signing in ("healthy Vet log-in", where wink-nlp sees "log") ends in "login".
      const signIn = signInAt(span.tokens, span.tokens.indexOf(part[part.length - 1]));
      const key = signIn >= 0 ? phraseKey([...part.slice(0, -1).map((t) => t.normal), "login"]) : phraseKey(part.map((t) => t.normal));
      if (key.length < 3 || seen.has(key)) continue;
      const start = part[0].start - span.tokens[0].start;
      const end = (signIn >= 0 ? span.tokens[signIn] : part[part.length - 1]).end - span.tokens[0].start;
      const surface = span.text.slice(start, end).replace(/\s+/g, " ");
      // Only plain words: no abbreviation dots ("Va."), slashes or symbols in a title.
      if (!/^[\p{L}\p{N}][\p{L}\p{N} '’-]*$/u.test(surface)) continue;
      seen.set(key, { key, surface, words: part.length });
    }
  }
  // Signing in, however it is written ("log in", "log-in", "logins", "sign in"), is one phrase, "login"; wink-nlp
  // tags most of these forms as verbs, so without this the commonest subject of app feedback has no noun phrase.
  for (let i = 0; i < span.tokens.length && !seen.has("login"); i++) {
    const end = signInAt(span.tokens, i);
    if (end < 0) continue;
    const surface = span.text.slice(span.tokens[i].start - span.tokens[0].start, span.tokens[end].end - span.tokens[0].start).replace(/\s+/g, " ");
    seen.set("login", { key: "login", surface, words: 1 });
  }
  return [...seen.values()];
}

/** Share of clusters a phrase may be prominent in before it counts as a domain word. */
export const MAX_SPREAD = 0.25;
/**
 * Clusters a phrase must be prominent in, whatever the share, to count as a domain word: with four themes or fewer
 * (one short interview note) every phrase of one theme is in more than a quarter of them, and a phrase two themes
 * share may be a topic they both touch; the product's own name recurs across most themes.
 */
export const MIN_DOMAIN_CLUSTERS = 3;

/**
 * For each phrase key, the share of clusters in which it occurs in at least 5% of the mentions (and 2 of them);
 * 0 when that is fewer than `MIN_DOMAIN_CLUSTERS` clusters.
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
  for (const [k, v] of spread) spread.set(k, v < MIN_DOMAIN_CLUSTERS ? 0 : v / Math.max(1, clusters.length));
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
 * @param voices who said each member (parallel to `members`): when the cluster has several voices, a phrase only
 *   one of them uses is damped ×0.3
 */
export function rankPhrases(
  members: PhraseOcc[][],
  globalCount: Map<string, number>,
  avgClusterSize: number,
  spread: Map<string, number> = new Map(),
  totalMentions = Infinity,
  voices?: string[],
): RankedPhrase[] {
  const count = new Map<string, number>();
  // Who uses each phrase: in a theme with several voices, a phrase only one of them uses is that respondent's
  // vocabulary ("libertad" five times from one person), not the theme's name.
  const usedBy = new Map<string, Set<string>>();
  if (voices) members.forEach((list, k) => list.forEach((p) => usedBy.set(p.key, (usedBy.get(p.key) ?? new Set<string>()).add(voices[k]))));
  const multiVoice = !!voices && new Set(voices).size > 1;
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
  // A two-mention theme (only a short note's voice has one, cluster.ts `SHORT_NOTE_PASSAGES`) is two answers the
  // clustering found alike: when they share no phrase, a phrase of either may name it (the title is a clause of it).
  const shareable = [...count.values()].some((c) => c >= 2);
  const minCount = n <= 2 && !multiVoice && !shareable ? 1 : Math.max(2, Math.ceil(0.05 * n));
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
    // One respondent's vocabulary in a theme of several voices is damped like a domain word: it names the theme
    // only when nothing the voices share does.
    const oneVoice = multiVoice && (usedBy.get(key)?.size ?? 0) < 2;
    const score = (c / n) * Math.log(1 + avgClusterSize / f) * bonus * (domain ? 0.3 : 1) * (oneVoice ? 0.3 : 1);
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
 * How much two clusters' keyphrases overlap, 0–1: shared words of their non-domain top phrases (singularised) over
 * the smaller set. "mission, vision, values" vs "mission statement, community, values" is 2/3: two clusters about
 * one subject whose names differ only in a phrase or two.
 */
export function keyphraseOverlap(a: RankedPhrase[], b: RankedPhrase[]): number {
  const words = (top: RankedPhrase[]) => new Set(top.filter((p) => !p.domain).flatMap((p) => p.key.split(" ").filter((w) => w.length > 2).map((w) => phraseKey([w]))));
  const wa = words(a);
  const wb = words(b);
  if (!wa.size || !wb.size) return 0;
  return [...wa].filter((w) => wb.has(w)).length / Math.min(wa.size, wb.size);
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

// ---------------------------------------------------------------------------------------------------------------
// Sentence titles: the finding in a participant's own clause, compressed (issue #11 item 3)
// ---------------------------------------------------------------------------------------------------------------

// REDACTION_RE, STOCK_PREFIXES and isStockTitle live in markers.ts (the harness imports them without the NLP).
export { REDACTION_RE, STOCK_PREFIXES, isStockTitle } from "./markers";

/** One mention as the title builder sees it. */
export interface TitleMention {
  span: MentionSpan;
  /** Similarity to the cluster centroid (centrality). */
  sim: number;
  /** Who said it (source + speaker): a title must be said by more than one voice when the cluster has several. */
  voice: string;
  /** The survey question it answers, if any (a clause repeating the question is boilerplate, not a finding). */
  question?: string;
}

/** Who a first-person clause is about: "Users"/"Participants" (plural) or "The participant" (one voice). */
export interface TitleSubject {
  noun: string;
  plural: boolean;
}

/**
 * The subject first-person speech is rewritten to: one voice → "The participant"; every mention from interviews →
 * "Participants"; otherwise "Users".
 */
export function titleSubject(voices: number, sourceTypes: string[]): TitleSubject {
  if (voices <= 1) return { noun: "The participant", plural: false };
  if (sourceTypes.length && sourceTypes.every((t) => t === "interview")) return { noun: "Participants", plural: true };
  return { noun: "Users", plural: true };
}

/** Titles longer than this (characters) are cut at a clause boundary or rejected. */
export const TITLE_MAX_CHARS = 80;
const TITLE_MAX_WORDS = 16;
const TITLE_MIN_WORDS = 4;
/** Longest aside in parentheses a title keeps inside its clause; a longer one is left out. */
const ASIDE_MAX_WORDS = 4;
/** Fewest words of a survey answer that names its theme as it stands ("Inline data visualization"). */
const ANSWER_MIN_WORDS = 3;

/** Discourse markers and fillers dropped at the start of a clause. */
const LEAD_FILLERS = new Set([
  "so", "well", "yeah", "yes", "no", "oh", "um", "uh", "like", "honestly", "actually", "basically", "also", "and", "but",
  "then", "now", "okay", "ok", "just", "really", "anyway", "plus", "still", "overall", "personally", "or", "hmm", "mhm",
  "right", "sure", "again", "however", "generally", "definitely", "absolutely", "obviously", "anyways", "possibly",
  "probably", "maybe", "perhaps", "hopefully", "unfortunately", "fortunately", "currently", "otherwise", "apparently",
]);
/** Words dropped anywhere: fillers, hedges and intensifiers that a researcher's sentence would not keep. */
const INNER_FILLERS = new Set(["please", "um", "uh", "umm", "uhm", "really", "just", "actually", "basically", "literally", "honestly", "very", "quite", "pretty", "definitely", "probably", "maybe", "perhaps", "totally", "super", "etc"]);
/** Multi-word fillers dropped anywhere. */
const INNER_PHRASES = ["for example", "for instance", "as well", "you know", "i mean", "kind of", "sort of", "let's say", "let 's say", "let us say"];
/** Hedge and report openings ("I think", "it seems like"), as lower-case word sequences. */
const HEDGES = [
  "i think that", "i think", "i feel like", "i feel that", "i guess", "i believe that", "i believe", "i mean", "i would say that",
  "i would say", "i'd say", "i know that", "it seems like", "it seems that", "to be honest", "in my opinion", "for me", "you know",
  "i suppose", "it's like", "kind of", "sort of", "i have to say", "i must say", "let's say", "let 's say", "funny thing",
  "the funny thing is", "the thing is", "the problem is that", "the problem is",
];
const REPORT_VERBS = new Set(["say", "mention", "note", "explain", "share", "state", "report", "comment", "feel", "think", "believe", "add", "describe", "indicate", "express"]);
const MODALS = new Set(["can", "could", "will", "would", "should", "may", "might", "must", "shall", "ca", "wo", "'d", "'ll"]);
/** Words that open a subordinate clause or a fragment: a title does not start with one. */
const SUBORDINATORS = new Set(["if", "since", "as", "that", "when", "while", "although", "though", "because", "unless", "until", "whether", "even", "once", "whereas", "which", "who", "where", "what", "how", "why", "to", "of", "at", "in", "on", "for", "with", "from", "by", "about", "than", "like", "into", "through", "during", "without", "within"]);
/** A finite verb after one of these belongs to a relative or subordinate clause, not to the title's own clause. */
const RELATIVES = new Set(["that", "which", "who", "where", "when", "if", "because", "while", "whether", "whom", "whose", "as", "after", "before", "since", "until", "once", "although", "though", "unless"]);
/** Imperatives that state a request ("Add a filter" → "Users ask to add a filter"). */
const REQUEST_VERBS = new Set(["add", "allow", "make", "let", "include", "give", "fix", "bring", "put", "show", "enable", "provide", "please", "offer", "support", "create", "improve", "change", "update", "remove", "stop"]);
/** Clause boundaries after which a long title may be cut. */
const CUT_WORDS = new Set(["when", "because", "which", "so", "and", "but", "if", "that", "after", "before", "since", "while", "as", "where", "or", "though", "although", "until", "unless", "to", "for", "with", "by", "from", "in", "on", "at"]);
/** Contractions that follow a subject, spelled out after a rewritten one ("I've" → "Users have"). */
const CONTRACTION: Record<string, [string, string]> = { "'m": ["are", "is"], "'re": ["are", "is"], "'ve": ["have", "has"], "'ll": ["will", "will"], "'d": ["would", "would"], "'s": ["is", "is"] };

const apos = (s: string) => s.replace(/’/g, "'");
const isWord = (t: Token) => t.type === "word" || /^[\p{L}\p{N}'’]+$/u.test(t.value);
/** Whether the token follows the previous one without a space in the original ("ca|n't", "browser|-|level"). */
const glued = (t: Token, prev: Token | undefined) => !!prev && t.end > t.start && t.start === prev.end;

/**
 * Clauses of a mention, as token lists: cut at sentence punctuation, dashes, square brackets, "but"/"because", and
 * ", and/so/which …"; an aside in parentheses of at most `ASIDE_MAX_WORDS` words stays, a longer one is left out.
 * @param span the mention
 * @param listItems also cut where a capitalised common word follows a lower-case one (a survey answer's list items)
 */
export function clausesOf(span: MentionSpan, listItems = false): Token[][] {
  const out: Token[][] = [];
  let cur: Token[] = [];
  const flush = (question = false) => {
    if (cur.length && !question) out.push(cur);
    cur = [];
  };
  const toks = span.tokens;
  for (let i = 0; i < toks.length; i++) {
    const t = toks[i];
    const v = t.value;
    if (/\?/.test(v)) {
      flush(true);
      continue;
    }
    // A hyphen inside a word ("browser-level") is not a dash.
    // A parenthesis is an aside inside the clause, not its end: a short one stays ("The notebook (and all documents)
    // are auto-saved"), a long one is left out ("Coarse grain (moving between large sections like …) navigation
    // needs much more attention"); one never closed ends the clause.
    if (v === "(") {
      const close = toks.findIndex((x, j) => j > i && x.value === ")");
      if (close > i) {
        if (toks.slice(i + 1, close).filter(isWord).length <= ASIDE_MAX_WORDS) cur.push(...toks.slice(i, close + 1));
        i = close;
        continue;
      }
      flush();
      continue;
    }
    if (/^[.!;:…)\[\]"“”–—]+$/.test(v) || v === "--" || (v === "-" && !glued(t, toks[i - 1]))) {
      flush();
      continue;
    }
    if (v === ",") {
      const next = toks[i + 1]?.normal;
      if (next && ["and", "so", "but", "which", "because", "although", "though", "while", "whereas"].includes(next)) flush();
      else cur.push(t);
      continue;
    }
    // In a survey answer, a capitalised common word after a lower-case one starts the next item of a list written
    // without punctuation ("difficulty reloading modules Other languages: …").
    if (listItems && cur.length && /^[A-Z][a-z]/.test(v) && t.pos !== "PROPN" && /[a-z]$/.test(toks[i - 1].value)) flush();
    // A line break ends a clause (list answers: "difficulty reloading modules\nOther languages: …").
    if (i > 0 && /\n/.test(span.text.slice(toks[i - 1].end - toks[0].start, t.start - toks[0].start))) flush();
    // A sentence end the tokenizer kept inside a word ("in." before "It's"): the clause ends here.
    if (v.length > 1 && /\w[.!?]$/.test(v) && /^[A-Z]/.test(toks[i + 1]?.value ?? "")) {
      cur.push(t);
      flush();
      continue;
    }
    if (["but", "because", "although", "whereas"].includes(t.normal) && cur.length >= 3) {
      flush();
      continue;
    }
    // "… and I …": a new clause with its own subject.
    if (t.normal === "and" && cur.length >= 3 && toks[i + 1]?.pos === "PRON" && toks[i + 2] && (toks[i + 2].pos === "VERB" || toks[i + 2].pos === "AUX")) {
      flush();
      continue;
    }
    cur.push(t);
  }
  flush();
  return out;
}

const startsWith = (t: Token[], words: string[]) => words.every((w, k) => t[k] && apos(t[k].normal) === w);

/** Drop leading fillers, hedges, report frames ("P10 said that") and verbless intros ("As a Veteran, …"). */
function stripLead(tokens: Token[]): Token[] {
  let t = tokens;
  for (let guard = 0; guard < 8; guard++) {
    const before = t.length;
    while (t.length && (LEAD_FILLERS.has(t[0].normal) || t[0].pos === "INTJ" || t[0].pos === "PUNCT" || t[0].pos === "CCONJ" || t[0].type === "punctuation")) t = t.slice(1);
    for (const h of HEDGES) {
      const words = h.split(" ");
      if (startsWith(t, words)) {
        t = t.slice(words.length);
        break;
      }
    }
    // "<someone> said (that) …": keep what was said.
    const rv = t.findIndex((x, k) => k <= 3 && x.pos === "VERB" && REPORT_VERBS.has(x.lemma.toLowerCase()));
    const frame = t.slice(0, rv);
    if (rv >= 1 && frame.every((x) => ["PROPN", "NOUN", "PRON", "DET", "NUM"].includes(x.pos) && !RELATIVES.has(x.normal) && !/^(?:any|every|some|no)(?:one|body)$/.test(x.normal)) && t[rv + 1] && t[rv + 1].pos !== "PUNCT") {
      t = t.slice(rv + 1);
      if (t[0]?.normal === "that") t = t.slice(1);
    }
    // A verbless intro before a comma ("As a Veteran, …", "For prescriptions, …"), or a subordinate one ("As we
    // move to bigger models, it gets …"): the main clause follows the comma.
    const comma = t.findIndex((x) => x.value === ",");
    if (comma > 0 && comma <= 5 && !t.slice(0, comma).some((x) => x.pos === "VERB" || x.pos === "AUX")) t = t.slice(comma + 1);
    else if (comma > 0 && comma <= 14 && (t[0].pos === "SCONJ" || ["as", "when", "if", "since", "while", "although", "though", "once", "because"].includes(t[0].normal)) && t.length - comma > 4) t = t.slice(comma + 1);
    if (t.length === before) break;
  }
  return t;
}

/** Drop inner fillers ("really", "um", ", you know,", "for example") and leftover comma runs. */
function stripInner(tokens: Token[]): Token[] {
  const out: Token[] = [];
  for (let i = 0; i < tokens.length; i++) {
    const t = tokens[i];
    const phrase = INNER_PHRASES.find((p) => startsWith(tokens.slice(i), p.split(" ")));
    // "kind of"/"you know" only as fillers, not "the kind of data" or "you know the answer".
    if (phrase && (!/^(kind|sort) of$/.test(phrase) || tokens[i - 1]?.pos !== "DET") && (phrase !== "you know" || tokens[i - 1]?.value === "," || tokens[i + 2]?.value === ",")) {
      i += phrase.split(" ").length - 1;
      continue;
    }
    if (INNER_FILLERS.has(t.normal) && !(t.normal === "just" && tokens[i + 1]?.pos === "NOUN")) continue;
    if (t.normal === "like" && (tokens[i - 1]?.value === "," || tokens[i + 1]?.value === ",")) continue;
    if (t.value === "," && (out.length === 0 || out[out.length - 1].value === "," || i === tokens.length - 1)) continue;
    out.push(t);
  }
  const dangling = (k: number) => {
    const x = out[k];
    if (x.value === ",") return true;
    // "log-in": a glued part of a compound is not a dangling preposition.
    if (glued(x, out[k - 1]) && out[k - 1]?.value === "-") return false;
    // A particle after its verb ("sign in", "log out") belongs to it.
    if (x.pos === "ADP" && (out[k - 1]?.pos === "VERB" || /^(?:sign|log|check|logged|signed|checked|kicked|locked)$/.test(out[k - 1]?.normal ?? ""))) return false;
    return x.pos === "CCONJ" || x.pos === "ADP" || x.pos === "DET" || x.normal === "to" || x.normal === "least" || x.normal === "etc";
  };
  while (out.length && dangling(out.length - 1)) out.pop();
  return out;
}

/** Third-person singular of a base-form verb ("have" → "has", "try" → "tries", "go" → "goes"). */
function thirdPerson(v: string): string {
  const l = v.toLowerCase();
  if (l === "have") return "has";
  if (l === "be" || l === "am" || l === "are") return "is";
  if (l === "do") return "does";
  if (/(?:s|sh|ch|x|z|o)$/.test(l)) return `${v}es`;
  if (/[^aeiou]y$/.test(l)) return `${v.slice(0, -1)}ies`;
  return `${v}s`;
}

/** A word of the rendered title and whether a space precedes it. */
interface Piece {
  text: string;
  space: boolean;
}

/**
 * Words of a clause with first and second person rewritten to the subject ("I can't" → "Users can't",
 * "my password" → "their password", a second "I" → "they"; with one voice "I have" → "The participant has").
 */
function rewritePerson(tokens: Token[], who: TitleSubject, alreadyNamed = false): Piece[] {
  const out: Piece[] = [];
  let named = alreadyNamed; // the subject noun was used once; later first-person references become "they"/"them"
  let afterSubject = false; // the previous word was a rewritten subject (agreement of the next verb)
  let subjectPlural = who.plural;
  for (let i = 0; i < tokens.length; i++) {
    const t = tokens[i];
    const n = apos(t.normal);
    const v = apos(t.value).toLowerCase();
    const prev = tokens[i - 1];
    // "lets you", "for you": an object, not the generic subject.
    const isObject = !!prev && (prev.pos === "VERB" || prev.pos === "ADP");
    let w: string | undefined;
    let subject = false;
    const fused = /^(i|we|you)('m|'re|'ve|'d|'ll)$/.exec(n);
    if ((n === "i" || n === "we" || (n === "you" && !isObject)) && v !== "'s") {
      w = named ? "they" : who.noun.toLowerCase();
      subjectPlural = named ? true : who.plural;
      named = true;
      subject = true;
    } else if (fused) {
      // "I'm" as one token: subject and verb.
      const plural = named ? true : who.plural;
      w = `${named ? "they" : who.noun.toLowerCase()} ${CONTRACTION[fused[2]][plural ? 0 : 1]}`;
      named = true;
    } else if (afterSubject && CONTRACTION[v]) w = CONTRACTION[v][subjectPlural ? 0 : 1];
    else if (n === "me" || n === "us" || n === "you") {
      // The first mention of the person names them, whatever its case ("It keeps asking me" → "… asking users").
      w = named ? "them" : who.noun.toLowerCase();
      named = true;
    }
    else if (n === "my" || n === "our" || n === "your") w = "their";
    else if (n === "mine" || n === "ours" || n === "yours") w = "theirs";
    else if (n === "myself" || n === "ourselves" || n === "yourself" || n === "yourselves") w = "themselves";
    else if (afterSubject && n === "am") w = subjectPlural ? "are" : "is";
    else if (afterSubject && n === "was" && subjectPlural) w = "were";
    else if (afterSubject && n === "were" && !subjectPlural) w = "was";
    else if (afterSubject && !subjectPlural && (t.pos === "VERB" || t.pos === "AUX") && !MODALS.has(n) && n === t.lemma.toLowerCase() && !/ing$/.test(n)) w = thirdPerson(t.value);
    const space = i === 0 ? true : w && CONTRACTION[v] ? true : !glued(t, prev) && !(t.end === t.start && /^[,.;:!%)]$|^n't$/.test(t.value));
    out.push({ text: w ?? t.value, space });
    // Agreement carries over adverbs and negation ("I still have", "I don't").
    afterSubject = subject || (afterSubject && (t.pos === "ADV" || t.pos === "PART") && !w);
  }
  return out;
}

const render = (pieces: Piece[]) =>
  pieces
    .map((p, k) => (k && p.space ? " " : "") + p.text)
    .join("")
    .replace(/\bca n't\b/gi, "can't")
    .replace(/\bwo n't\b/gi, "won't");

/** Content lemmas of tokens (nouns, verbs, adjectives, proper nouns; not stop words). */
function contentLemmas(tokens: Token[]): string[] {
  return tokens
    .filter((t) => isWord(t) && !t.stop && ["NOUN", "PROPN", "VERB", "ADJ"].includes(t.pos) && t.value.length > 2)
    .map((t) => phraseKey([t.lemma.toLowerCase()]));
}

/** Whether a clause contains a phrase (its key matches consecutive tokens, last word singularised). */
function containsPhrase(tokens: Token[], key: string): boolean {
  const words = key.split(" ");
  for (let i = 0; i + words.length <= tokens.length; i++) {
    const part = tokens.slice(i, i + words.length).map((t) => t.normal);
    if (phraseKey(part) === key) return true;
    // "login" stands for every way of writing signing in (`signInAt`), as in `mentionPhrases`.
    if (words[words.length - 1] === "login" && signInAt(tokens, i + words.length - 1) >= 0 && phraseKey([...part.slice(0, -1), "login"]) === key) return true;
  }
  return false;
}

/**
 * Whether tokens read as a clause of their own: a finite verb (an auxiliary or modal, or a verb not after "to" and
 * not a bare -ing form) that comes before any relative or subordinate word ("A prompt that allows …" is a noun
 * phrase, "Ensuring that this can be done" a fragment), or a verb at the start (the implied subject).
 */
function hasMainVerb(t: Token[]): boolean {
  for (let k = 0; k < t.length; k++) {
    const x = t[k];
    if (k > 0 && RELATIVES.has(x.normal)) return false;
    if (x.pos === "AUX" && !/ing$/.test(x.normal)) return true;
    // "Built-in" is an adjective, not a verb.
    if (x.pos === "VERB" && t[k - 1]?.normal !== "to" && !/ing$/.test(x.normal) && !(t[k + 1]?.value === "-" && glued(t[k + 1], x))) return true;
  }
  return false;
}

/** A clause opening "Having to …": a burden stated without its subject. */
const havingTo = (t: Token[]) => t[0]?.normal === "having" && t[1]?.normal === "to";

/**
 * Compress one clause into a title, or undefined when it does not make one: fillers, hedges and report frames
 * dropped, first person rewritten (`rewritePerson`), a clause starting at its verb given its implied subject, cut at
 * a clause boundary to at most `TITLE_MAX_CHARS` (keeping what `mustKeep` requires); a main verb required and no
 * subordinate or prepositional opening ("If …", "Of the …").
 * @param tokens the clause's wink tokens
 * @param who the subject first person is rewritten to
 * @param mustKeep what a cut must keep (the keyphrase)
 * @param asks read a bare imperative as a request ("Shorten the loading time" → "Users ask to shorten …"), for
 *   feature requests
 * @param verbless accept a noun phrase of at least `ANSWER_MIN_WORDS` words (a survey answer: "Quick data exploration
 *   and visualization"), for themes of a survey question, whose answers are mostly noun phrases
 */
export function compressClause(tokens: Token[], who: TitleSubject, mustKeep: (toks: Token[]) => boolean = () => true, asks = false, verbless = false): string | undefined {
  let t = stripInner(stripLead(tokens));
  const minWords = verbless ? ANSWER_MIN_WORDS : TITLE_MIN_WORDS;
  if (t.length < minWords) return undefined;
  const first = t[0];
  if (SUBORDINATORS.has(first.normal) || first.pos === "ADP" || first.pos === "SCONJ" || first.pos === "PART") return undefined;
  // "Can I have a login …" without its question mark is still a question.
  if (first.pos === "AUX" && t.slice(1, 3).some((x) => x.pos === "PRON" && ["i", "we", "you", "they", "it"].includes(x.normal))) return undefined;
  // "There is this tool …", "This is it": nothing a reader can pin down.
  if (/^there$/.test(first.normal) && /^(this|that|these|those)$/.test(t[2]?.normal ?? "")) return undefined;
  if (t.some((x) => /^[=<>{}|\\^~+#@]+$/.test(x.value))) return undefined;
  // "But you it takes …": two subjects in a row is a restart in speech, not a sentence.
  for (let k = 0; k + 1 < t.length; k++) {
    if (["i", "we", "you"].includes(t[k].normal) && t[k + 1].pos === "PRON" && ["it", "he", "she", "they", "i", "we", "you"].includes(t[k + 1].normal)) return undefined;
  }
  // A short verbless tail after the last comma ("…, or what they well", "…, launching") is trailing speech.
  const trimTail = (x: Token[]): Token[] => {
    for (let pass = 0; pass < 3; pass++) {
      const lastComma = x.map((y) => y.value).lastIndexOf(",");
      if (lastComma <= 0) break;
      const tail = x.slice(lastComma + 1);
      const head = stripInner(x.slice(0, lastComma));
      if (!(tail.filter(isWord).length <= 4 && (!hasMainVerb(tail) || tail[0]?.pos === "CCONJ") && hasMainVerb(head) && mustKeep(head))) break;
      x = head;
    }
    return x;
  };
  t = trimTail(t);
  // With one voice, "we" is usually the researchers or the participant's family, not the participant.
  if (!who.plural && t.some((x) => ["we", "our", "us", "ours"].includes(x.normal) && x.pos === "PRON")) return undefined;
  const build = (x: Token[]): string => {
    const f = x[0];
    const compound = x[1] && x[1].value === "-" && glued(x[1], f);
    // A clause that starts at its verb has an implied subject: the speaker ("Can't log in" → "Users can't log in";
    // "Add a filter" → "Users ask to add a filter") or, for a third-person verb, the product ("Keeps asking me …"
    // → "It keeps asking them …").
    // A survey answer taken as it stands is a label, not a sentence: no subject is supplied ("Complicated data analysis").
    const implied = !verbless && (f.pos === "VERB" || f.pos === "AUX") && !/ing$/.test(f.normal) && !compound;
    const thirdPersonVerb = implied && f.normal !== f.lemma.toLowerCase() && /s$/.test(f.normal) && !MODALS.has(f.normal);
    const pieces = rewritePerson(x, who, implied && !thirdPersonVerb);
    if (havingTo(x)) {
      // A note's "Having to remember all my logins" is the participant's burden: "Users have to remember …".
      pieces[0] = { text: who.plural ? "have" : "has", space: true };
      pieces.unshift({ text: who.noun.toLowerCase(), space: true });
    } else if (implied) {
      const lowerFirst = /^[A-Z][a-z]/.test(pieces[0].text) ? pieces[0].text.toLowerCase() : pieces[0].text;
      pieces[0] = { text: lowerFirst, space: true };
      if (thirdPersonVerb) pieces.unshift({ text: "it", space: true });
      else if (f.pos === "VERB" && f.normal === f.lemma.toLowerCase() && (REQUEST_VERBS.has(f.normal) || asks)) {
        if (f.normal === "please") pieces.shift();
        pieces.unshift({ text: `${who.noun.toLowerCase()} ${who.plural ? "ask" : "asks"} to`, space: true });
      } else {
        if (!who.plural && !MODALS.has(f.normal) && f.normal === f.lemma.toLowerCase()) pieces[0] = { text: thirdPerson(pieces[0].text), space: true };
        pieces.unshift({ text: who.noun.toLowerCase(), space: true });
      }
    }
    let s = render(pieces).replace(/[*_`#~\[\]"“”]/g, "").replace(/\s+/g, " ").trim();
    // An aside the cut left open ("… over Colab (particularly because …") is dropped from its parenthesis on.
    const open = s.lastIndexOf("(");
    if (open > 0 && s.indexOf(")", open) < 0) s = s.slice(0, open).trim();
    s = s.replace(/[\s,;:.!-]+$/, "");
    return s.charAt(0).toUpperCase() + s.slice(1);
  };
  const words = (x: Token[]) => x.filter(isWord).length;
  let text = build(t);
  // Too long: cut at the last clause boundary that leaves the key phrase, a main verb and enough words.
  const complete = (x: Token[]) => verbless || hasMainVerb(x) || havingTo(x);
  while (text.length > TITLE_MAX_CHARS || words(t) > TITLE_MAX_WORDS) {
    let cut = -1;
    for (let k = t.length - 1; k >= minWords; k--) {
      if ((CUT_WORDS.has(t[k].normal) || t[k].value === ",") && complete(stripInner(t.slice(0, k))) && mustKeep(t.slice(0, k)) && words(t.slice(0, k)) >= minWords) {
        cut = k;
        break;
      }
    }
    if (cut < 0) return undefined;
    t = trimTail(stripInner(t.slice(0, cut)));
    text = build(t);
  }
  if (!complete(t) || words(t) < minWords || !mustKeep(t)) return undefined;
  // Speech restarting itself ("they are they want …", "the the") or a pleasantry ("thank them for having them") is
  // no finding.
  if (/\b(\w+(?: \w+)?) \1\b/i.test(text) || t.some((x) => x.lemma.toLowerCase() === "thank" || x.normal === "thanks")) return undefined;
  // "Possible sources could be": a predicate cut off before its complement.
  const last = t[t.length - 1];
  if (last.pos === "AUX" || MODALS.has(last.normal)) return undefined;
  return text;
}

interface TitleCandidate {
  text: string;
  score: number;
  agrees: boolean;
}

/** Pronouns that need an antecedent the reader of a title does not have. */
const VAGUE_START = /^(?:it|this|that|they|he|she|there|these|those)\b/i;

/**
 * A title stating the cluster's finding as a short sentence from its own evidence: clauses of the 40 most central
 * mentions that contain one of the cluster's keyphrases are compressed (`compressClause`) and scored by centrality
 * (+ similarity to the centroid), keyphrase (+0.25 for a subject phrase, +0.1 for another top phrase, +0.1 more for
 * the best one: c-TF-IDF's name for the theme), the share of
 * their content words other voices also use (+0.3 × share) and agreement with the insight type (+0.3: a pain
 * point's title states a problem, a request's a wish); vague pronoun openings and long titles lose a little.
 * Undefined when no clause qualifies (the caller falls back to `titleFor`). A clause is rejected when it carries a
 * redaction marker, repeats the survey question, contradicts the type (praise naming a problem or the reverse), when
 * its keyphrase was said by one voice only, or when under a quarter of its content words are shared: one respondent's
 * words never name a theme. With a single voice, "other voices" means other passages.
 * @param members the cluster's mentions with centrality and voice
 * @param top the cluster's ranked distinct keyphrases (`distinctTop`)
 * @param type the insight type (`classifyType`); `positive` for praise themes
 * @param who the subject first person is rewritten to (`titleSubject`)
 */
export function sentenceTitle(members: TitleMention[], top: RankedPhrase[], type: InsightType, positive: boolean, who: TitleSubject): string | undefined {
  if (!top.length || !members.length) return undefined;
  const subjectKeys = subjectPhrases(top).map((p) => p.key);
  // A theme one voice dominates (≥ 75% of its mentions: a participant plus a few interviewer lines) is that
  // participant's: sharing is counted between passages, as for a single voice.
  const perVoice = new Map<string, number>();
  for (const m of members) perVoice.set(m.voice, (perVoice.get(m.voice) ?? 0) + 1);
  const multiVoice = perVoice.size > 1 && Math.max(...perVoice.values()) < 0.75 * members.length;
  // Who uses each content lemma and each keyphrase: voices, or passages (mention index) for a one-voice theme.
  const usersOf = new Map<string, Set<string>>();
  members.forEach((m, k) => {
    const who = multiVoice ? m.voice : String(k);
    for (const l of new Set(contentLemmas(m.span.tokens))) {
      const s = usersOf.get(l) ?? new Set<string>();
      s.add(who);
      usersOf.set(l, s);
    }
  });
  const shared = (l: string) => (usersOf.get(l)?.size ?? 0) >= 2;
  const phraseUsers = (key: string) => new Set(members.filter((m) => containsPhrase(m.span.tokens, key)).map((m, k) => (multiVoice ? m.voice : String(k)))).size;
  // Two mentions of one voice (a short note's theme) need not repeat a word: the clause carrying the theme's name
  // is the title, as long as it is the participant's own.
  const pair = !multiVoice && members.length <= 2;
  const keys = pair ? top.slice(0, 1).map((p) => p.key) : top.map((p) => p.key).filter((k) => phraseUsers(k) >= 2);
  if (!keys.length) return undefined;
  const pool = members
    .map((m, i) => ({ m, i }))
    .sort((a, b) => b.m.sim - a.m.sim || a.i - b.i)
    .slice(0, 40);
  const collect = (verbless: boolean): TitleCandidate[] => {
    const seen = new Set<string>();
    const out: TitleCandidate[] = [];
    for (const { m } of pool) {
      if (REDACTION_RE.test(m.span.text)) continue;
      const qNorm = m.question ? m.question.toLowerCase().replace(/[^a-z ]/g, "") : "";
      for (const clause of clausesOf(m.span, verbless)) {
        const hasKey = (toks: Token[]) => keys.some((k) => containsPhrase(toks, k));
        if (!hasKey(clause)) continue;
        // A link cut out of a clause leaves a fragment ("open notebook file from any http").
        if (clause.some((x) => x.type === "url" || /^(?:https?|www)$/i.test(x.value))) continue;
        const text = compressClause(clause, who, hasKey, type === "feature_request", verbless);
        if (!text || seen.has(text.toLowerCase())) continue;
        seen.add(text.toLowerCase());
        // Two sentences glued by the tokenizer ("… sign back in. It's not good") are not one title.
        if (REDACTION_RE.test(text) || /https?:|www\.|@\w|\d{1,2}:\d{2}|\w[.!?]\s/.test(text)) continue;
        const lower = text.toLowerCase().replace(/[^a-z ]/g, "");
        if (qNorm && (qNorm.includes(lower) || lower.includes(qNorm))) continue;
        const lemmas = contentLemmas(clause);
        if (!lemmas.length) continue;
        const sharedShare = lemmas.filter(shared).length / lemmas.length;
        if (sharedShare < 0.25 && !pair) continue;
        const cue = mentionCues(clause, clause.map((x) => x.value).join(" "));
        // The title must not contradict the type: no praise naming a problem theme, no complaint naming praise.
        if (((type === "pain_point" || type === "opportunity") && cue.positive && !cue.pain && !cue.unmet) || (positive && cue.pain)) continue;
        const agrees =
          (type === "pain_point" && cue.pain) ||
          (type === "feature_request" && cue.request) ||
          (type === "opportunity" && (cue.unmet || cue.pain)) ||
          (type === "behavior" && cue.behavior) ||
          (positive && cue.positive) ||
          (type === "feedback_theme" && !positive);
        const words = text.split(" ").length;
        const score =
          m.sim +
          (subjectKeys.some((k) => containsPhrase(clause, k)) ? 0.25 : 0.1) +
          (containsPhrase(clause, top[0].key) ? 0.1 : 0) +
          0.3 * sharedShare +
          (agrees ? 0.3 : 0) -
          (VAGUE_START.test(text) ? 0.2 : 0) -
          0.015 * Math.max(0, words - 10) -
          (words < 5 ? 0.05 : 0);
        out.push({ text, score, agrees });
      }
    }
    return out;
  };
  // A survey question's answers are mostly noun phrases: when none of them reads as a sentence, the most central
  // answer that names the theme is its label, as on a researcher's affinity note ("Quick data exploration and
  // visualization"), rather than a template over its keywords.
  let out = collect(false);
  if (!out.length && members.filter((m) => m.question).length * 2 > members.length) out = collect(true);
  out.sort((a, b) => b.score - a.score || a.text.localeCompare(b.text));
  return out[0]?.text;
}

/**
 * The insight's title: a sentence from its evidence (`sentenceTitle`), or the keyphrase template (`titleFor`) when
 * no clause qualifies.
 */
export function insightTitle(members: TitleMention[], top: RankedPhrase[], type: InsightType, positive: boolean, who: TitleSubject): string {
  return sentenceTitle(members, top, type, positive, who) ?? titleFor(type, positive, top);
}
