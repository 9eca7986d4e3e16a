/**
 * What an insight asserts, read with wink-nlp (core/ai/synthesis/nlp.ts) for the contradiction detector. Pure and
 * deterministic.
 *
 * A statement is cut into clauses (at sentence ends, commas, semicolons, colons, brackets and "but", "however",
 * "although", "though", "whereas", "while"). Per clause:
 * - its words: content lemmas (nouns, proper nouns, verbs, adjectives, adverbs; not stop words, not words every
 *   insight uses such as "user" or "participant"), with every word of an opposed scale replaced by the scale's name,
 *   so "shortcuts are easy to find" and "shortcuts are hard to find" use the same words;
 * - whether it is negated (a cue: not, n't, no, never, without, cannot, unable, lack) and the negation's head, the
 *   first content word after the cue with the noun it modifies ("not a major blocker" → major, blocker);
 * - its poles: per scale, the sum of its words' signs, flipped after a negation cue ("not easy" counts as hard);
 * - its stance: the sum of the evaluative scales' poles (praise positive, complaint negative).
 * Two statements disagree only through a pair of clauses that say nearly the same thing (at least half their words
 * shared): a whole insight shares a topic with many others, a claim is made in one clause.
 */
import { analyze, type Token } from "../ai/synthesis/nlp";

/** Opposed scales: the words at the positive end and at the negative end, as wink lemmas (and adverb forms). */
const SCALES: Record<string, { plus: string[]; minus: string[]; evaluative: boolean }> = {
  ease: {
    plus: ["easy", "easily", "simple", "simply", "straightforward", "intuitive", "effortless", "effortlessly"],
    minus: ["hard", "difficult", "difficulty", "complicated", "complex", "cumbersome", "tedious", "unintuitive", "tiring", "taxing"],
    evaluative: true,
  },
  speed: {
    plus: ["fast", "quick", "quickly", "instant", "instantly", "rapid", "responsive", "snappy"],
    minus: ["slow", "slowly", "sluggish", "laggy", "lag", "delay", "delayed"],
    evaluative: true,
  },
  clarity: {
    plus: ["clear", "clearly", "obvious", "understandable", "discoverable", "visible"],
    minus: ["unclear", "confusing", "confuse", "confused", "ambiguous", "obscure", "hidden", "invisible"],
    evaluative: true,
  },
  usefulness: {
    plus: ["useful", "helpful", "valuable", "indispensable", "essential", "handy"],
    minus: ["useless", "unhelpful", "pointless", "worthless"],
    evaluative: true,
  },
  reliability: {
    plus: ["reliable", "stable", "dependable", "robust"],
    minus: ["unreliable", "unstable", "flaky", "buggy", "crash", "crashes", "broken", "fail", "failure"],
    evaluative: true,
  },
  liking: {
    plus: ["like", "love", "enjoy", "appreciate", "praise", "positive", "positively", "satisfied", "happy", "pleased", "pleasant"],
    minus: ["dislike", "hate", "frustrate", "frustrated", "frustrating", "annoying", "annoyed", "unhappy", "dissatisfied", "complain", "negative", "negatively", "unpleasant"],
    evaluative: true,
  },
  success: {
    plus: ["succeed", "success", "successful", "successfully", "complete", "accomplish", "able", "manage"],
    minus: ["unable", "impossible", "stuck", "struggle", "block", "blocker", "prevent", "stop"],
    evaluative: true,
  },
  accessibility: { plus: ["accessible"], minus: ["inaccessible"], evaluative: true },
  quantity: {
    plus: ["more", "increase", "increased", "increasing", "grow", "growing", "higher", "rise"],
    minus: ["less", "fewer", "decrease", "decreased", "decline", "drop", "reduce", "reduced", "lower", "shrink"],
    evaluative: false,
  },
  frequency: {
    plus: ["often", "frequently", "always", "regularly", "usually", "commonly", "repeatedly"],
    minus: ["rarely", "seldom", "never", "occasionally", "infrequently"],
    evaluative: false,
  },
  importance: {
    plus: ["important", "critical", "crucial", "major", "significant", "key"],
    minus: ["unimportant", "minor", "trivial", "negligible", "insignificant"],
    evaluative: false,
  },
  awareness: {
    plus: ["aware", "familiar", "know", "notice"],
    minus: ["unaware", "unfamiliar", "overlook"],
    evaluative: false,
  },
};

const POLE = new Map<string, { scale: string; sign: 1 | -1 }>();
for (const [scale, { plus, minus }] of Object.entries(SCALES)) {
  for (const w of plus) POLE.set(w, { scale, sign: 1 });
  for (const w of minus) POLE.set(w, { scale, sign: -1 });
}

/** Words every insight of a research workspace uses: sharing them says nothing about sharing a topic. */
const GENERIC = new Set([
  "user", "users", "participant", "participants", "people", "person", "customer", "customers", "respondent",
  "respondents", "team", "thing", "things", "way", "lot", "time", "times", "insight", "feedback", "issue", "issues",
  "problem", "problems", "need", "needs", "one", "majority", "most", "some", "many", "%", "percent",
]);

/** Negation cues (lower-cased token normals). */
const NEGATION = new Set(["not", "n't", "n’t", "no", "never", "without", "cannot", "nor", "neither", "unable", "lack", "lacks", "lacking"]);
/** Words that end a clause besides punctuation. */
const CLAUSE_BREAK = new Set(["but", "however", "although", "though", "whereas", "while", "yet"]);
const BREAK_PUNCT = new Set([".", ",", ";", ":", "!", "?", "(", ")", "[", "]", "—", "–", "…"]);

const CONTENT_POS = new Set(["NOUN", "PROPN", "VERB", "ADJ", "ADV"]);
/** Parts of speech that modify the word after them: a negated modifier's noun is denied with it. */
const MODIFIER_POS = new Set(["ADJ", "ADV"]);
/** Least share of words two clauses must have in common (Jaccard) to be read as the same claim. */
export const CLAUSE_MIN_OVERLAP = 0.5;

/** One clause of a statement. */
export interface Clause {
  /** Its content words, scale words replaced by `scale:<name>`. */
  words: Set<string>;
  /** Its content lemmas as written (scale words too). */
  lemmas: Set<string>;
  negated: boolean;
  /** The negation's head lemmas (empty when not negated). */
  denied: string[];
  /** Scale → signed sum of its words in this clause. */
  poles: Map<string, number>;
  /** The scale words as written ("not easy" for a negated one), for explanations. */
  poleWords: Map<string, string[]>;
  stance: number;
}

export interface Statement {
  /** Topic lemmas (nouns, proper nouns) of the whole statement, generic words left out. */
  topics: Set<string>;
  clauses: Clause[];
}

const keyOf = (t: Token): string => {
  const lemma = (t.lemma || t.normal).toLowerCase();
  // wink tags a capitalised plural at the start of a sentence ("Users can…") as a proper noun and keeps its plural.
  return t.pos === "PROPN" && lemma.length > 3 && lemma.endsWith("s") && !lemma.endsWith("ss") ? lemma.slice(0, -1) : lemma;
};

const isContent = (t: Token) => t.type === "word" && CONTENT_POS.has(t.pos) && !t.stop && t.normal.length > 1;

/** Characters of an insight's text that are read: its claim is in the title and the description's opening. */
const MAX_CHARS = 1_000;

/**
 * Read one insight's text (title and description).
 * @param text any string (the first 1,000 characters are read); an empty one asserts nothing
 */
export function readStatement(text: string): Statement {
  const { tokens } = analyze(text.slice(0, MAX_CHARS));
  const topics = new Set<string>();
  const clauses: Clause[] = [];
  const fresh = (): Clause => ({ words: new Set(), lemmas: new Set(), negated: false, denied: [], poles: new Map(), poleWords: new Map(), stance: 0 });
  let clause = fresh();
  // Inside a negation from its cue to the clause's end; the head is its first content word (and the noun or
  // adjective right after it when that word is a modifier: "not a major blocker" → major, blocker).
  let negating = false;
  let expectHead = false;
  let head = -1;
  const close = () => {
    if (clause.words.size > 0 || clause.negated) {
      for (const [scale, v] of clause.poles) if (SCALES[scale]!.evaluative) clause.stance += Math.sign(v);
      clauses.push(clause);
    }
    clause = fresh();
    negating = expectHead = false;
    head = -1;
  };
  tokens.forEach((t, k) => {
    if (BREAK_PUNCT.has(t.value) || CLAUSE_BREAK.has(t.normal)) return close();
    if (NEGATION.has(t.normal)) {
      negating = expectHead = clause.negated = true;
      return;
    }
    const key = keyOf(t);
    const pole = POLE.get(key) ?? POLE.get(t.normal);
    if (pole) {
      const sign = negating ? -pole.sign : pole.sign;
      clause.poles.set(pole.scale, (clause.poles.get(pole.scale) ?? 0) + sign);
      clause.poleWords.set(pole.scale, [...(clause.poleWords.get(pole.scale) ?? []), negating ? `not ${t.normal}` : t.normal]);
    }
    if (!isContent(t) || GENERIC.has(key)) return;
    if (t.pos === "NOUN" || t.pos === "PROPN") topics.add(key);
    clause.words.add(pole ? `scale:${pole.scale}` : key);
    clause.lemmas.add(key);
    const modified = head >= 0 && head === k - 1 && MODIFIER_POS.has(tokens[head]!.pos) && (t.pos === "NOUN" || t.pos === "ADJ");
    if (expectHead || modified) {
      clause.denied.push(key);
      if (expectHead) head = k;
      expectHead = false;
    }
  });
  close();
  return { topics, clauses };
}

/** One reason two statements disagree. */
export interface Disagreement {
  /** `negation`: one denies what the other affirms; `opposite_scale`: opposite ends of one scale; `opposite_stance`: praise against complaint. */
  rule: "negation" | "opposite_scale" | "opposite_stance";
  terms: string[];
}

const overlap = (a: Set<string>, b: Set<string>) => {
  if (a.size === 0 || b.size === 0) return 0;
  let both = 0;
  for (const x of a) if (b.has(x)) both++;
  return both / (a.size + b.size - both);
};

/**
 * Why two statements disagree, strongest rules first: through clauses sharing at least half their words
 * (`CLAUSE_MIN_OVERLAP`) on a topic the statements share, one denies what the other affirms, or they sit at opposite
 * ends of one scale; failing both, one praises what the other criticises. Empty when they agree or talk about
 * different things. Symmetric.
 */
export function disagreements(a: Statement, b: Statement): Disagreement[] {
  if (![...a.topics].some((t) => b.topics.has(t))) return [];
  const denied = new Set<string>();
  const scales = new Map<string, Set<string>>();
  const stance = new Set<string>();
  for (const ca of a.clauses) {
    for (const cb of b.clauses) {
      if (overlap(ca.words, cb.words) < CLAUSE_MIN_OVERLAP) continue;
      if (ca.negated !== cb.negated) {
        const [neg, plain] = ca.negated ? [ca, cb] : [cb, ca];
        for (const w of neg.denied) if (plain.lemmas.has(w)) denied.add(w);
      }
      for (const [scale, va] of ca.poles) {
        const vb = cb.poles.get(scale);
        if (vb === undefined || va * vb >= 0) continue;
        const words = scales.get(scale) ?? new Set();
        for (const w of [...(ca.poleWords.get(scale) ?? []), ...(cb.poleWords.get(scale) ?? [])]) words.add(w);
        scales.set(scale, words);
      }
      if (ca.stance * cb.stance < 0) for (const w of ca.words) if (cb.words.has(w) && !w.startsWith("scale:")) stance.add(w);
    }
  }
  const out: Disagreement[] = [];
  if (denied.size) out.push({ rule: "negation", terms: [...denied].sort() });
  for (const [scale, words] of [...scales].sort(([x], [y]) => x.localeCompare(y))) out.push({ rule: "opposite_scale", terms: [scale, ...[...words].sort()] });
  if (out.length === 0 && stance.size) out.push({ rule: "opposite_stance", terms: [...stance].sort() });
  return out;
}
