/**
 * wink-nlp (English lite model) behind one small interface: tokens with their exact character offsets in the
 * analysed text, lemmas, parts of speech, stop-word and negation flags, sentence boundaries and noun-phrase
 * candidates. Offsets are recovered by locating each token's own characters in the text, so every span we cut
 * (a sentence, a phrase) is a verbatim substring of the input (needed for grounding, DESIGN.md section 5).
 */
import winkNLP from "wink-nlp";
import model from "wink-eng-lite-web-model";

export interface Token {
  /** Token text as written. */
  value: string;
  /** Lower-cased normal form. */
  normal: string;
  lemma: string;
  pos: string;
  stop: boolean;
  /** Inside the scope of a negation ("not easy", "doesn't work"). */
  negated: boolean;
  /** "word", "number", "punctuation", "emoji", "url", "email", "tabCRLF", ... */
  type: string;
  /** Character offsets in the analysed text, [start, end). */
  start: number;
  end: number;
}

export interface Analysis {
  text: string;
  tokens: Token[];
  /** Sentences as token ranges [first, last] (inclusive) with character offsets [start, end). */
  sentences: { first: number; last: number; start: number; end: number }[];
  /** Noun-phrase candidates as token ranges [first, last] (inclusive). */
  phrases: { first: number; last: number }[];
  /** False when token offsets could not be recovered; then only the whole text is usable as a span. */
  aligned: boolean;
}

type Wink = ReturnType<typeof winkNLP>;
let nlp: Wink | undefined;

/** Noun phrases: up to three nouns/proper nouns/adjectives ending in a noun, e.g. "variable inspector". */
const PHRASE_PATTERNS = [
  "[NOUN|PROPN]",
  "[ADJ|NOUN|PROPN] [NOUN|PROPN]",
  "[ADJ|NOUN|PROPN] [ADJ|NOUN|PROPN] [NOUN|PROPN]",
  "[VERB] [NOUN]",
];

function winkInstance(): Wink {
  if (!nlp) {
    nlp = winkNLP(model);
    nlp.learnCustomEntities([{ name: "np", patterns: PHRASE_PATTERNS }]);
  }
  return nlp;
}

/**
 * Analyse a text with wink-nlp. Pure and deterministic; about 10^5 tokens per second on one core.
 * @param text any string (may be empty)
 */
export function analyze(text: string): Analysis {
  const w = winkInstance();
  const its = w.its;
  const doc = w.readDoc(text);
  const toks = doc.tokens();
  const values = toks.out(its.value) as string[];
  const normals = toks.out(its.normal) as string[];
  const lemmas = toks.out(its.lemma as unknown as typeof its.value) as string[];
  const pos = toks.out(its.pos) as string[];
  const stops = toks.out(its.stopWordFlag) as unknown as boolean[];
  const negs = toks.out(its.negationFlag) as unknown as boolean[];
  const types = toks.out(its.type) as string[];

  const tokens: Token[] = [];
  let cursor = 0;
  let aligned = true;
  for (let i = 0; i < values.length; i++) {
    const v = values[i];
    let at = aligned ? text.indexOf(v, cursor) : -1;
    // The gap before a token may only be whitespace; otherwise alignment is lost.
    if (at < 0 || text.slice(cursor, at).trim() !== "") {
      aligned = false;
      at = cursor;
    }
    const start = at;
    const end = aligned ? at + v.length : at;
    cursor = end;
    tokens.push({
      value: v,
      normal: normals[i],
      lemma: lemmas[i],
      pos: pos[i],
      stop: stops[i],
      negated: negs[i],
      type: types[i],
      start,
      end,
    });
  }

  const sentences: Analysis["sentences"] = [];
  doc.sentences().each((s: { out(f: unknown): unknown }) => {
    const [first, last] = s.out(its.span) as unknown as number[];
    if (first === undefined || last === undefined || last < first) return;
    sentences.push({ first, last, start: tokens[first]?.start ?? 0, end: tokens[last]?.end ?? 0 });
  });
  const phrases: Analysis["phrases"] = [];
  doc.customEntities().each((e: { out(f: unknown): unknown }) => {
    const [first, last] = e.out(its.span) as unknown as number[];
    if (first !== undefined && last !== undefined) phrases.push({ first, last });
  });
  return { text, tokens, sentences, phrases, aligned };
}

/** Pronouns that may sit between "log"/"sign" and its particle ("logs me in"). */
const PARTICLE_GAP = new Set(["me", "him", "her", "them", "you", "us", "myself"]);

/**
 * Whether a way of writing signing in starts at token `i` ("log in", "logs me in", "logging into", "log-in",
 * "logins", "sign in", "sign-in", "signon"), and the index of its last token, or -1. Users and note-takers
 * alternate between these for one subject, so clustering and naming read them as one word, "login".
 */
export function signInAt(tokens: Token[], i: number): number {
  const k = tokens[i];
  if (!k || k.type !== "word") return -1;
  if (/^(log-?ins?|log-?ons?|sign-?ins?|sign-?ons?)$/.test(k.normal)) return i;
  if (!/^(log|sign)(s|ged|ging|ed|ing)?$/.test(k.normal)) return -1;
  let j = i + 1;
  if (tokens[j]?.value === "-" || PARTICLE_GAP.has(tokens[j]?.normal ?? "")) j++;
  return /^(in|into|on)$/.test(tokens[j]?.normal ?? "") ? j : -1;
}
