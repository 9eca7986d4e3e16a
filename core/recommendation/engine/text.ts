/**
 * Small, deterministic text helpers shared by the local delivery engines (recommendations, documents, block actions).
 *
 * These are heuristics, not NLP: lower-casing, a fixed English stop-word list, a light suffix-stripping stemmer and
 * `Intl.Segmenter` for sentences. They exist so that grouping, keyword matching and titles are reproducible
 * byte-for-byte across runs and runtimes (the local engine has no LLM, DESIGN.md section 2).
 */

const STOP_WORDS = new Set(
  (
    "a about above after again against all also am an and any are aren't as at be because been before being below " +
    "between both but by can can't cannot could couldn't did didn't do does doesn't doing don't down during each few for " +
    "from further get gets got had hadn't has hasn't have haven't having he her here hers herself him himself his how i " +
    "i'd i'll i'm i've if in into is isn't it it's its itself just let's like me more most much must my myself no nor not " +
    "now of off on once only or other ought our ours ourselves out over own really same she should shouldn't so some such " +
    "than that that's the their theirs them themselves then there there's these they they'd they'll they're they've this " +
    "those through to too under until up upon us very was wasn't we we'd we'll we're we've were weren't what what's when " +
    "where which while who whom why will with won't would wouldn't you you'd you'll you're you've your yours yourself " +
    "yourselves one two three many lot lots thing things way ways even still every also use used using user users app " +
    "want wants need needs make makes made time times able go going via per etc hard easy easier difficult find new good " +
    "great better lack lacks unclear problem problems issue issues keep keeps take takes long often"
  ).split(" "),
);

/**
 * Light stemmer: folds common English inflections so "refills", "refilling" and "refilled" share a key.
 * Deliberately conservative (never shortens a word below 4 characters).
 */
export function stem(word: string): string {
  let w = word.toLowerCase();
  const rules: [RegExp, string][] = [
    [/ies$/, "y"],
    [/(ss)es$/, "$1"],
    [/([^s])s$/, "$1"],
    [/ing$/, ""],
    [/ed$/, ""],
    [/ly$/, ""],
  ];
  for (const [re, rep] of rules) {
    const next = w.replace(re, rep);
    if (next !== w && next.length >= 4) {
      w = next;
      break;
    }
  }
  return w;
}

/** Lower-cased word tokens (letters, digits, inner apostrophes and hyphens), in order, duplicates kept. */
export function words(text: string): string[] {
  return (text.toLowerCase().match(/[\p{L}\p{N}]+(?:['’-][\p{L}\p{N}]+)*/gu) ?? []).map((w) => w.replace(/’/g, "'"));
}

/** Content keywords of a text: stemmed words without stop words, numbers or one/two-letter tokens. */
export function keywords(text: string): string[] {
  return words(text)
    .filter((w) => w.length > 2 && !STOP_WORDS.has(w) && !/^\d+$/.test(w))
    .map(stem);
}

/** The set of {@link keywords} of a text. */
export function keywordSet(text: string): Set<string> {
  return new Set(keywords(text));
}

/** Jaccard similarity |A∩B| / |A∪B| of two sets, 0 when both are empty. */
export function jaccard<T>(a: Set<T>, b: Set<T>): number {
  if (a.size === 0 && b.size === 0) return 0;
  let inter = 0;
  for (const x of a) if (b.has(x)) inter++;
  return inter / (a.size + b.size - inter);
}

/** Overlap coefficient |A∩B| / min(|A|,|B|), 0 when either is empty: "is the smaller set mostly inside the larger". */
export function overlap<T>(a: Set<T>, b: Set<T>): number {
  if (a.size === 0 || b.size === 0) return 0;
  let inter = 0;
  for (const x of a) if (b.has(x)) inter++;
  return inter / Math.min(a.size, b.size);
}

const sentenceSegmenter = new Intl.Segmenter("en", { granularity: "sentence" });

/** Sentences of a text (ICU sentence boundaries via `Intl.Segmenter`), trimmed, empty ones dropped. */
export function sentences(text: string): string[] {
  const out: string[] = [];
  for (const line of text.split(/\n\s*\n|\n(?=\s*[-*•]\s)/)) {
    for (const s of sentenceSegmenter.segment(line.replace(/\s+/g, " "))) {
      const t = s.segment.trim().replace(/^[-*•]\s+/, "");
      if (t) out.push(t);
    }
  }
  return out;
}

/** Cut a text to at most `max` characters on a word boundary, adding "…" when cut. */
export function truncate(text: string, max: number): string {
  const t = text.replace(/\s+/g, " ").trim();
  if (t.length <= max) return t;
  const cut = t.slice(0, max - 1);
  const sp = cut.lastIndexOf(" ");
  return (sp > max * 0.5 ? cut.slice(0, sp) : cut).replace(/[\s,;:.–—-]+$/, "") + "…";
}

/** Upper-case the first character. */
export const upperFirst = (s: string): string => (s ? s[0].toUpperCase() + s.slice(1) : s);

/** Lower-case the first character unless the first word looks like an acronym or proper noun in capitals. */
export const lowerFirst = (s: string): string =>
  s && !/^[A-Z]{2,}/.test(s) ? s[0].toLowerCase() + s.slice(1) : s;

/** Strip trailing sentence punctuation. */
export const stripEndPunct = (s: string): string => s.trim().replace(/[\s.!?;:,]+$/, "");

/** English list join: "a", "a and b", "a, b and c". */
export function joinList(items: string[], conj = "and"): string {
  if (items.length <= 1) return items[0] ?? "";
  return `${items.slice(0, -1).join(", ")} ${conj} ${items[items.length - 1]}`;
}

/** Round to a step (e.g. 0.5 weeks, 0.01 score). */
export const roundTo = (x: number, step: number): number => Number((Math.round(x / step) * step).toFixed(6));

/** Clamp to [lo, hi]. */
export const clamp = (x: number, lo: number, hi: number): number => Math.min(hi, Math.max(lo, x));

/** Normalise for verbatim comparison: unify quotes/dashes/whitespace and case. */
export function normaliseForMatch(s: string): string {
  return s
    .replace(/[“”„‟″]/g, '"')
    .replace(/[‘’‚‛′]/g, "'")
    .replace(/[–—]/g, "-")
    .replace(/…/g, "...")
    .replace(/\s+/g, " ")
    .trim()
    .toLowerCase();
}
