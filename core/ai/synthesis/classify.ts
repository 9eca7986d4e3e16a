/**
 * Steps 5–6 of synthesis: what kind of insight a cluster is, and how severe.
 *
 * Each mention is scanned for cue words (lemmas, wink-nlp) in five lexicons: pain (problems, failure, friction such
 * as "every time", "takes a while", "having to"),
 * request (wishes, asks, "would like", "should", "add"), positive (praise), behaviour (habits, frequency, "I use")
 * and unmet need (gaps, workarounds, "doesn't address", "missing"). Negation flips polarity: a negated positive
 * word ("not easy", "doesn't work") is a pain cue, a negated pain word ("not hard") is not. A survey answer also
 * gets a cue from its question ("What hinders you…" → pain, "What new features…" → request, "What makes it
 * pleasant…" → positive). The cluster's type is the kind with the largest share of cued mentions, with minimum
 * shares; otherwise `feedback_theme`.
 *
 * Severity combines how widespread the theme is (share of sources, share of mentions) with pain intensity: explicit
 * blocking failures written in the mentions (crashes, lost work, "can't log in", "locked out") weigh most, pain
 * with an intensifier ("very slow") a little; "critical" needs the explicit kind.
 */
import type { Token } from "./nlp";

export type InsightType = "pain_point" | "feature_request" | "opportunity" | "behavior" | "feedback_theme";
export type Severity = "low" | "medium" | "high" | "critical";

export interface Cues {
  pain: boolean;
  request: boolean;
  positive: boolean;
  behavior: boolean;
  unmet: boolean;
  /** Strong pain: crash, data loss, unusable, or pain with an intensifier. */
  intense: boolean;
  /**
   * Explicit blocking evidence, as written in the mention (lower-cased): "crashes", "lost my work", "can't log in",
   * "locked out", "not working". Only these justify "critical" and a description naming blocking failures.
   */
  strong: string[];
  /** Cues lent by the survey question only (weaker evidence: they count half). */
  fromQuestion: Partial<Record<"pain" | "request" | "positive" | "behavior" | "unmet", boolean>>;
}

const PAIN = new Set([
  "hard", "difficult", "difficulty", "confusing", "confuse", "confused", "slow", "slowly", "crash", "fail", "failure",
  "error", "bug", "buggy", "broken", "break", "lose", "lost", "loss", "frustrating", "frustrate", "frustrated",
  "frustration", "annoying", "annoy", "annoyed", "painful", "pain", "problem", "issue", "struggle", "cumbersome",
  "clunky", "unusable", "impossible", "hate", "awful", "terrible", "bad", "poor", "unreliable", "laggy", "lag", "freeze",
  "hang", "stuck", "timeout", "inconsistent", "tedious", "messy", "complicated", "unclear", "die", "dead", "corrupt",
  "overwrite", "unstable", "glitch", "glitchy", "horrible", "useless", "worse", "worst", "clumsy", "ugly", "limited",
  "limitation", "difficult", "trouble", "headache", "nightmare", "unintuitive", "counterintuitive", "disappointed",
  "disappointing", "irritating", "stressful", "fiddly", "awkward", "wrong", "delay", "wait", "waiting", "forget",
  "kick", "logout", "expire", "reset", "crashes", "complaint", "nuisance", "sucks", "suck", "pita", "flaky",
]);
const POSITIVE = new Set([
  "easy", "love", "great", "nice", "good", "helpful", "useful", "intuitive", "simple", "convenient", "awesome",
  "excellent", "fantastic", "enjoy", "fast", "quick", "clean", "pleasant", "best", "amazing", "happy", "perfect",
  "wonderful", "flexible", "powerful", "work", "works", "reliable", "smooth", "beautiful", "fun", "handy", "efficient",
  "straightforward", "appreciate", "like", "glad", "thank", "thanks", "interactive", "accessible",
]);
const REQUEST = new Set([
  "wish", "want", "please", "should", "add", "feature", "ability", "option", "allow", "integrate", "integration",
  "improve", "improvement", "request", "suggest", "suggestion", "hope", "prefer", "enable", "implement", "introduce",
]);
const BEHAVIOR = new Set([
  "usually", "always", "often", "daily", "weekly", "monthly", "mostly", "typically", "routinely", "habit", "workflow",
  "rely", "regularly", "sometimes", "every", "frequently", "mainly", "primarily", "teach", "teaching",
  "share", "sharing", "demo", "present", "explore", "prototype",
]);
const UNMET = new Set([
  "missing", "lack", "lacking", "workaround", "instead", "gap", "absent", "unavailable", "alternative", "switch",
  "outside", "elsewhere", "manually", "hack", "hacky",
]);
const INTENSE = new Set([
  "crash", "crashes", "lose", "lost", "loss", "unusable", "impossible", "corrupt", "useless", "terrible", "horrible",
  "awful", "nightmare", "never", "hate", "worst", "die", "dead", "broken", "data",
]);
/**
 * Explicit blocking failures: crashes and freezes, lost work or data, being unable to get in or do the task,
 * lock-outs, things that do not work. Matched on the mention text; a negated form ("never crashed", "didn't lose")
 * does not count.
 */
const STRONG_RE =
  /\b(?:crash(?:es|ed|ing)?|freez(?:es|ing|e)|froze(?:n)?|data loss|los(?:t|e|es|ing) (?:[\w'’]+ ){0,3}?(?:work|data|progress|changes|files?|notebooks?|everything|access)|(?:can ?not|can'?t|can’t|cannot|unable to|could ?n'?t|couldn’t|won'?t let (?:me|us)) (?:even )?(?:log ?in|sign ?in|login|access|open|use|get in(?:to)?|load|submit|save|connect|start|refill|see|view|send)|locked out|kick(?:s|ed)? (?:me |us )?out|blocked|blocks (?:me|us)|unusable|won'?t (?:open|load|start|work)|won’t (?:open|load|start|work)|(?:does|do|did|is|are)n'?t work(?:ing)?|(?:does|do|did|is|are)n’t work(?:ing)?|not working|stopped working|broken|corrupt(?:ed|s)?)\b/g;
const NEGATED_BEFORE = /\b(?:not|never|no|n'?t|n’t|without)\s+(?:\w+\s+)?$/;

/** The explicit blocking-failure phrases of a mention text (lower-cased), negated ones left out. */
export function strongPhrases(text: string): string[] {
  const lower = text.toLowerCase();
  const out: string[] = [];
  for (const m of lower.matchAll(STRONG_RE)) {
    const before = lower.slice(Math.max(0, m.index - 20), m.index);
    // "can't", "doesn't work" carry their own negation; a negation before "crash" or "lost" cancels it.
    if (!/^(?:can|could|won|does|do|did|is|are|not|unable)/.test(m[0]) && NEGATED_BEFORE.test(before)) continue;
    out.push(m[0]);
  }
  return out;
}

const INTENSIFIERS = new Set(["very", "really", "extremely", "so", "totally", "completely", "constantly", "always", "super", "incredibly", "significantly"]);

/** Multi-word request and unmet-need patterns over the lower-cased mention text. */
const REQUEST_RE = /\b(would (?:like|love|be (?:nice|great|good|awesome|helpful|useful|cool))|i'?d (?:like|love)|it'?d be|wish (?:there|it|i|we)|would appreciate|be able to|ability to|option to|support for|way to|can you|could you|needs? to|i need|we need|have to be|make it (?:easier|possible|faster|simpler)|more (?:support|options?) for|better support)\b/;
const UNMET_RE = /\b(does ?n[o']?t (?:address|support|have|allow|let)|do ?n[o']?t (?:have|support)|there (?:is|'s) no|no way to|not able to|unable to|can ?no?'?t (?:do|find|see|get)|i have to|we have to|end up|rather than|fall back)\b/;
/** Friction and effort: repetition, waiting, forced steps ("every time", "takes a while", "having to"). */
const EFFORT_RE = /\b(every (?:single )?time|too long|takes? (?:a while|forever|ages|too long)|over and over|all over again|again and again|keeps? (?:asking|saying|crashing|failing|logging|kicking|spinning)|having to|no point|waste of time|gave up|give up|stuck)\b/;
const BEHAVIOR_RE = /\b(i use|we use|i'm using|we're using|i usually|we usually|i always|i often|every (?:day|week|time|morning)|most of the time|for (?:teaching|demos|workshops|research|exploration|prototyping))\b/;

/** Cue words a survey question lends to its answers. */
function questionCues(q: string | undefined): Partial<Cues> {
  if (!q) return {};
  const s = q.toLowerCase();
  return {
    pain: /\b(?:hinders?|difficult|pain|problems?|challenges?|frustrat\w*|struggle|stressful|not address|get in the way)\b/.test(s),
    request: /\b(?:features?|changes?|like to see|would you like|enhancements?|improve|integrat\w*|wish|add)\b/.test(s),
    positive: /pleasant|like about|enjoy|best|love/.test(s) && !/not|difficult/.test(s),
    behavior: /how often|how do you (?:run|use|access)|use case|use .* for|what do you .*use|workflow .* address|primary/.test(s) && !/not address/.test(s),
    unmet: /not address|missing|would have made/.test(s),
  };
}

/**
 * Cues of one mention from its tokens (negation-aware) and, for survey answers, its question.
 * @param tokens the mention's wink tokens
 * @param text the mention text (for multi-word patterns)
 * @param question the survey question of a `response` unit, if any
 */
export function mentionCues(tokens: Token[], text: string, question?: string): Cues {
  const lower = text.toLowerCase();
  const c: Cues = { pain: false, request: false, positive: false, behavior: false, unmet: false, intense: false, strong: [], fromQuestion: {} };
  let intensifier = false;
  for (const t of tokens) {
    const l = t.lemma.toLowerCase();
    const v = t.normal;
    if (INTENSIFIERS.has(v)) intensifier = true;
    const isPain = PAIN.has(l) || PAIN.has(v);
    // "work" and "like" are praise only as verbs ("it works", "I like"), not in "my work" or "like RStudio".
    const isPos = (POSITIVE.has(l) || POSITIVE.has(v)) && !((l === "work" || l === "like") && t.pos !== "VERB");
    if (t.negated) {
      // "not easy", "doesn't work" -> pain; "not hard" -> neither.
      if (isPos && t.pos !== "NOUN") c.pain = true;
      continue;
    }
    if (isPain) c.pain = true;
    if (isPos) c.positive = true;
    if (REQUEST.has(l) || REQUEST.has(v)) c.request = true;
    if (BEHAVIOR.has(l) || BEHAVIOR.has(v)) c.behavior = true;
    if (UNMET.has(l) || UNMET.has(v)) c.unmet = true;
    if (INTENSE.has(l) || INTENSE.has(v)) c.intense = true;
  }
  // "not able", "can't", "doesn't work" have negated non-lexicon heads; catch them as patterns.
  if (/\b(can ?no?'?t|cannot|could ?n[o']?t|does ?n[o']?t work|do ?n[o']?t work|is ?n[o']?t working|not working|won'?t (?:load|start|work|open|let))\b/.test(lower)) c.pain = true;
  if (EFFORT_RE.test(lower)) c.pain = true;
  if (REQUEST_RE.test(lower)) c.request = true;
  if (UNMET_RE.test(lower)) c.unmet = true;
  if (BEHAVIOR_RE.test(lower)) c.behavior = true;
  c.strong = strongPhrases(text);
  if (c.strong.length) c.pain = true;
  if (c.pain && intensifier) c.intense = true;
  if (c.strong.length) c.intense = true;
  if (!c.pain) c.intense = false;
  c.fromQuestion = questionCues(question);
  return c;
}

export interface CueShares {
  pain: number;
  request: number;
  positive: number;
  behavior: number;
  unmet: number;
  intense: number;
  /** Share of mentions with explicit blocking evidence (`Cues.strong`). */
  strong: number;
  /** Number of mentions with explicit blocking evidence. */
  strongMentions: number;
}

/** Share (0..1) of mentions carrying each cue; a cue lent only by the survey question counts half. */
export function cueShares(cues: Cues[]): CueShares {
  const n = Math.max(1, cues.length);
  const share = (k: "pain" | "request" | "positive" | "behavior" | "unmet" | "intense") =>
    cues.reduce((a, c) => a + (c[k] ? 1 : k !== "intense" && c.fromQuestion[k] ? 0.5 : 0), 0) / n;
  return {
    pain: share("pain"),
    request: share("request"),
    positive: share("positive"),
    behavior: share("behavior"),
    unmet: share("unmet"),
    intense: share("intense"),
    strong: cues.filter((c) => c.strong.length).length / n,
    strongMentions: cues.filter((c) => c.strong.length).length,
  };
}

/**
 * What the description may say about impact, from the mentions' own words: "; 3 of 12 mentions describe blocking
 * failures (“can't log in”, “locked out”)", or "" when none does. Never names a failure nobody reported.
 * @param cues the cues of the insight's mentions
 */
export function impactClause(cues: Cues[]): string {
  const counts = new Map<string, number>();
  for (const c of cues) for (const p of new Set(c.strong)) counts.set(p, (counts.get(p) ?? 0) + 1);
  const n = cues.filter((c) => c.strong.length).length;
  if (!n) return "";
  const top = [...counts.entries()].sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0])).slice(0, 3).map(([p]) => `“${p}”`);
  return `; ${n} of ${cues.length} describe a blocking failure (${top.join(", ")})`;
}

/**
 * Insight type from cue shares: the kind with the largest share wins when it reaches its minimum share
 * (pain 0.25, request 0.3, unmet need 0.2 → opportunity, behaviour 0.3, positive 0.35 → feedback_theme);
 * problems outrank wishes and praise when close (pain ≥ 0.2 and ≥ 0.6 × the winning share), because a wish that
 * follows a problem is mostly a fix for it. Otherwise `feedback_theme`.
 */
export function classifyType(s: CueShares): { type: InsightType; positive: boolean } {
  const candidates: [InsightType | "positive", number, number][] = [
    ["pain_point", s.pain, 0.25],
    ["feature_request", s.request, 0.3],
    ["opportunity", s.unmet * 1.2, 0.24],
    ["behavior", s.behavior * 0.9, 0.27],
    ["positive", s.positive, 0.35],
  ];
  const eligible = candidates.filter(([, v, min]) => v >= min).sort((a, b) => b[1] - a[1]);
  if (!eligible.length) return { type: "feedback_theme", positive: false };
  let [top, topShare] = eligible[0];
  // Problems outrank wishes and praise when close: a wish after a problem is mostly its fix, and praise mixed
  // with complaints about the same thing still leaves a problem to solve.
  if (top !== "pain_point" && s.pain >= 0.2 && s.pain >= 0.6 * topShare && (top === "feature_request" || top === "positive")) top = "pain_point";
  if (top === "positive") return { type: "feedback_theme", positive: true };
  return { type: top, positive: false };
}

/**
 * Severity from reach, volume and (for problems) intensity, each 0..1:
 * - reach = share of the synthesis's sources that mention it (counted only from 3 sources up; with fewer, 0.5);
 * - volume = mentions / (2 × the average cluster's mentions), capped at 1 (an average theme scores 0.5);
 * - intensity = pain share + 2 × blocking share (explicit: crash, lost work, can't log in, locked out) + 0.5 ×
 *   emphatic share (pain with an intensifier only), capped at 1.
 * Pain points and opportunities: score = 0.25·reach + 0.35·volume + 0.4·intensity; critical ≥ 0.7, for pain points
 * only and only with explicit blocking evidence in at least 2 mentions (and 10% of them): severity words must be
 * in the evidence; high ≥ 0.5, medium ≥ 0.3, else low. Other types (wishes, habits, feedback) are not urgent by themselves:
 * score = 0.4·reach + 0.6·volume, at most high (≥ 0.7), medium ≥ 0.4, else low.
 * @param sourceShare distinct sources of the insight / sources in the synthesis (0..1)
 * @param sources sources in the synthesis
 * @param relativeVolume the insight's mentions / average mentions per insight
 */
export function severityOf(type: InsightType, sourceShare: number, sources: number, relativeVolume: number, s: CueShares): Severity {
  const reach = sources >= 3 ? sourceShare : 0.5;
  const volume = Math.min(1, relativeVolume / 2);
  if (type === "pain_point" || type === "opportunity") {
    const intensity = Math.min(1, s.pain + 2 * s.strong + 0.5 * Math.max(0, s.intense - s.strong));
    const score = 0.25 * reach + 0.35 * volume + 0.4 * intensity;
    if (score >= 0.7 && type === "pain_point" && s.strongMentions >= 2 && s.strong >= 0.1) return "critical";
    if (score >= 0.5) return "high";
    if (score >= 0.3) return "medium";
    return "low";
  }
  const score = 0.4 * reach + 0.6 * volume;
  if (score >= 0.7) return "high";
  if (score >= 0.4) return "medium";
  return "low";
}
