/**
 * Which skills a request calls for (issue #22: "an installed, enabled skill whose trigger keywords or description
 * match the request"). Lexical, deterministic and fast, so every copilot run can afford it on any engine:
 *
 * 1. **keyword**: the content words of one of the skill's trigger keywords stand next to each other in the request, in
 *    any order ("release notes" matches "notes for the next release", not "a release date in the notes");
 * 2. **name**: the same for the skill's display name ("Kano survey analysis");
 * 3. **description**: at least {@link DESCRIPTION_TERMS} distinct, non-generic words of the request occur in the skill's
 *    name or description, found and ranked by BM25 (MiniSearch).
 *
 * Words are compared as Porter2 stems (the stemmer inside wink-eng-lite-web-model), after lower-casing, folding
 * accents, spelling -ise as -ize and dropping stop words, so "synthesise the interviews" meets "interview synthesis".
 * A match's score orders candidates: keyword words weigh most, then name words, then the BM25 score.
 */
import MiniSearch from "minisearch";
import stemWord from "wink-eng-lite-web-model/dist/porter-stemmer.js";

/** What matching needs of a skill. */
export interface MatchableSkill {
  slug: string;
  name: string;
  description: string;
  trigger_keywords: string[];
}

/** Why a skill matched, strongest first. */
export type MatchKind = "keyword" | "name" | "description";

export interface SkillMatch {
  slug: string;
  kind: MatchKind;
  score: number;
  /** The trigger keywords found in the request (kind keyword). */
  keywords: string[];
  /** The request's words found in the name or description (stems). */
  terms: string[];
}

/** Distinct request words a description must share for a description match. */
export const DESCRIPTION_TERMS = 3;
/** How much of the request is read: a pasted transcript must not make matching slow or match everything. */
export const PROMPT_CHARS = 4000;

/** Function words: never a reason to match. */
const STOP = new Set(
  ("a an the and or but nor of to in on at for from by with without about into onto over under as is are was were be been being am it its " +
    "this that these those there here then than so such if not no yes do does did done doing have has had having can could would should will " +
    "shall may might must i me my mine we us our ours you your yours he she him her his they them their theirs what which who whom whose when " +
    "where why how all any both each few more most other some own same too very just also only please let lets s t d ll m re ve new now up out " +
    "again once via per vs etc e g ie eg one two")
    .split(" "),
);

/** Stems already computed: the Porter2 stemmer is regex-heavy, and the same words recur across skills and requests. */
const STEM_CACHE_SIZE = 50_000;
const stemCache = new Map<string, string | null>();

/**
 * Words too common in requests and skill descriptions to count toward a description match (they still count in
 * trigger keywords and names, where the author chose them).
 */
const GENERIC = new Set(
  ["use", "user", "help", "write", "creat", "make", "want", "need", "ask", "skill", "work", "turn", "step", "product", "custom", "team", "document", "give", "get", "show", "tell", "thing", "way", "look", "find", "list", "good", "best", "like", "time", "year", "month", "week", "day"].map((w) => normalizeWord(w) ?? w),
);

/** The words of a text: lower case, accents folded, possessives dropped, split on anything but letters and digits. */
export function words(text: string): string[] {
  return text
    .toLowerCase()
    .normalize("NFKD")
    .replace(/[\u0300-\u036f]/g, "")
    .replace(/['’]s\b/g, "")
    .split(/[^a-z0-9]+/)
    .filter(Boolean);
}

/** A word as matching compares it (its stem), or null for a stop word. */
export function normalizeWord(word: string): string | null {
  let s = stemCache.get(word);
  if (s === undefined) {
    s = stemOf(word);
    if (stemCache.size >= STEM_CACHE_SIZE) stemCache.clear();
    stemCache.set(word, s);
  }
  return s;
}

function stemOf(word: string): string | null {
  if (STOP.has(word)) return null;
  // British -ise spellings stem apart from -ize ones ("prioritisation" / "prioritization"): fold them first.
  const american = word.replace(/is(e|es|ed|ing|ation|ations|er|ers)$/, "iz$1");
  let s = stemWord(american);
  // Porter2 leaves "synthesis" as "synthesi" and "synthesize" as "synthes": drop that trailing i on long stems.
  if (s.length > 5 && s.endsWith("i")) s = s.slice(0, -1);
  return s.length > 0 ? s : null;
}

/**
 * True when the phrase's stems stand together in the request's content stems, in any order: some run of
 * `phrase.length` consecutive stems holds each of them. Words of a phrase scattered over a request ("take the reviews
 * all the way to a PRD") are not the phrase ("review the PRD").
 */
export function adjacent(phrase: readonly string[], sequence: readonly string[], present: ReadonlySet<string>): boolean {
  if (phrase.length === 0 || !phrase.every((s) => present.has(s))) return false;
  const want = new Set(phrase);
  for (let i = 0; i + want.size <= sequence.length; i++) {
    let ok = true;
    for (let j = i; j < i + want.size && ok; j++) ok = want.has(sequence[j]!);
    if (ok && new Set(sequence.slice(i, i + want.size)).size === want.size) return true;
  }
  return false;
}

/** The content stems of a text, in order (stop words dropped). */
export function stems(text: string): string[] {
  return words(text).flatMap((w) => normalizeWord(w) ?? []);
}

interface Compiled {
  skill: MatchableSkill;
  /** Each trigger keyword and its content stems (a keyword left with none is ignored). */
  phrases: { keyword: string; stems: string[] }[];
  nameStems: string[];
}

/**
 * A matcher over a fixed set of skills: the index is built once (about a millisecond for 100 skills) and reused for
 * every request against the same set.
 */
export class SkillMatcher {
  private readonly compiled: Compiled[];
  private readonly index: MiniSearch<{ slug: string; name: string; description: string }>;

  constructor(skills: readonly MatchableSkill[]) {
    this.compiled = skills.map((skill) => ({
      skill,
      phrases: skill.trigger_keywords.map((keyword) => ({ keyword, stems: [...new Set(stems(keyword))] })).filter((p) => p.stems.length > 0),
      nameStems: [...new Set(stems(skill.name))],
    }));
    this.index = new MiniSearch({
      idField: "slug",
      fields: ["name", "description"],
      tokenize: words,
      processTerm: (term) => normalizeWord(term),
      searchOptions: { combineWith: "OR", boost: { name: 2 } },
    });
    this.index.addAll(skills.map((s) => ({ slug: s.slug, name: s.name, description: s.description })));
  }

  /** How many skills it matches over. */
  get size(): number {
    return this.compiled.length;
  }

  /**
   * The skills the request calls for, best first (empty when none).
   * @param prompt the user's request; only its first {@link PROMPT_CHARS} characters are read
   */
  match(prompt: string): SkillMatch[] {
    const text = prompt.slice(0, PROMPT_CHARS);
    const sequence = stems(text);
    const present = new Set(sequence);
    if (present.size === 0) return [];
    const lexical = new Map<string, { score: number; terms: string[] }>();
    for (const r of this.index.search(text)) {
      lexical.set(String(r.id), { score: r.score, terms: [...new Set(r.queryTerms)] });
    }
    const out: SkillMatch[] = [];
    for (const c of this.compiled) {
      const found = c.phrases.filter((p) => adjacent(p.stems, sequence, present));
      const bm25 = lexical.get(c.skill.slug);
      const nameHit = adjacent(c.nameStems, sequence, present);
      const specific = (bm25?.terms ?? []).filter((t) => !GENERIC.has(t));
      let kind: MatchKind | undefined;
      if (found.length) kind = "keyword";
      else if (nameHit) kind = "name";
      else if (specific.length >= DESCRIPTION_TERMS) kind = "description";
      if (!kind) continue;
      const score = 100 * found.reduce((n, p) => n + p.stems.length, 0) + (nameHit ? 50 * c.nameStems.length : 0) + (bm25?.score ?? 0);
      out.push({ slug: c.skill.slug, kind, score, keywords: found.map((p) => p.keyword), terms: specific });
    }
    return out.sort((a, b) => b.score - a.score || a.slug.localeCompare(b.slug));
  }
}

/** A sentence saying why a skill matched, for `skill_suggestion`'s `reason`. */
export function reasonOf(match: SkillMatch, skillName: string): string {
  if (match.kind === "keyword") {
    const ks = match.keywords.slice(0, 3).map((k) => `"${k}"`).join(", ");
    return `Your request mentions ${ks}, ${match.keywords.length > 1 ? "triggers" : "a trigger"} of the ${skillName} skill.`;
  }
  if (match.kind === "name") return `Your request asks for what the ${skillName} skill does.`;
  return `Your request matches the ${skillName} skill's description (${match.terms.slice(0, 5).join(", ")}).`;
}
