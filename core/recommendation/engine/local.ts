import { AppError, Errors } from "../../error";
import {
  GenerateRecommendationsInput,
  type GenerateRecommendationsResult,
  type InsightInput,
  type ProductContext,
  type RecommendationDraft,
  type Severity,
  effortFromWeeks,
} from "./types";
import { clamp, joinList, keywordSet, keywords, lowerFirst, roundTo, stripEndPunct, truncate } from "./text";

/**
 * The local recommendation engine: deterministic templates and heuristics, NOT a language model (DESIGN.md section 2:
 * "no LLM exists offline"). It is grounded by construction — every recommendation is built from, and cites, the
 * titles, counts and quotes of the insights it addresses — and it is reproducible byte-for-byte for the same input.
 *
 * Algorithm (spec 01 `POST /api/recommendations/generate`):
 *
 * 1. **Group** related insights of the same kind: greedy average-link clustering over keywords (stop words removed,
 *    light stemming, a few product-vocabulary synonyms such as sign in / log in → login), weighted 1.5 in the title,
 *    1 in the description, 0.5 in quotes, × IDF over the input. Similarity is weighted Jaccard (Σmin ÷ Σmax), +0.04
 *    for the same `insight_type`, and 0 unless a title/description keyword is shared. Kinds never mix: problems
 *    (pain_point, opportunity, feature_request), praise (feedback_theme) and behaviours (behavior, user_behavior) —
 *    praise grouped with a problem would hide the problem behind a "keep it" action. Insights are visited strongest
 *    first (severity, sources, mentions) and join the group with the highest mean similarity if it is ≥ 0.085 (groups
 *    hold at most 6), so each group is led by its strongest insight.
 * 2. **Value** = reach × severity × type weight, on these scales:
 *    - reach ∈ (0, 1] = 0.6 × distinct sources ÷ sources in the whole input + 0.4 × log(1+m) ÷ log(1+max m), m = Σ
 *      `mention_count` (default: number of quotes, at least `frequency`);
 *    - severity = the highest member severity on a doubling scale, low 1, medium 2, high 4, critical 8 (one level up
 *      is worth twice the reach), plus a quarter of each other member's;
 *    - type weight: how much the kind is a problem to act on now: pain_point 1, feature_request 0.8, opportunity
 *      0.6, behavior 0.4, feedback_theme (praise, or feedback without a problem) 0.25.
 *    `impact_score` = value ÷ 8 (0..1: a critical pain point every source raises is 1), × (1 + 0.5 × focus match)
 *    when focus areas are given (share of a focus area's keywords found in the group's titles and descriptions).
 * 3. **Effort** in weeks = base by dominant type (pain_point 2, feature_request 3, opportunity 5, behavior 1.5,
 *    feedback_theme 1, other 2) × (1 + 0.25 per extra insight, at most ×2) × 1.5 for broad-scope words (integration,
 *    migration, redesign, sync, security, scheduling…) or × 0.6 for narrow ones (copy, label, filter, detail, dark mode…),
 *    rounded to 0.5 and ≥ 0.5; `effort_estimate` is the bucket of those weeks (trivial ≤ 0.5 < small ≤ 2 < medium ≤ 4
 *    < large ≤ 8 < xlarge).
 * 4. **Order** by score = impact × confidence ÷ effort weeks (reach × severity ÷ effort, discounted for thin evidence),
 *    where confidence = 0.4 + 0.1 per quote (≤ 4) + 0.1 per distinct source (≤ 2). Praise (high, 1 week) therefore
 *    never outranks a critical problem of similar reach (2 weeks): 4 × 0.25 ÷ 1 < 8 × 1 ÷ 2. The best 7 groups become
 *    recommendations; the rest are named in `prioritization_summary` as "not recommended now".
 * 5. **Action** from the lead insight's own evidence: what breaks (a pain point's quote with a problem cue), what
 *    users ask for (a request's quote with a wish cue), the gap, the habit, or what they value — quoted verbatim.
 * 6. **At least 3**: with fewer than 3 groups, multi-insight groups are split into single insights first (each is real
 *    evidence); only when there are fewer than 3 insights does the engine add facet recommendations for the strongest
 *    insight — "Measure: …" (instrument and baseline it) and "Validate: …" (follow-up research) — which say so in their
 *    description. A single insight therefore yields fix + measure + validate.
 */

/** Grouping strength of an insight's severity (which insight leads a group). */
const SEVERITY_WEIGHT: Record<Severity, number> = { low: 0.2, medium: 0.45, high: 0.75, critical: 1 };
/** Ranking scale of severity: each level doubles ("critical" is worth eight "low"). */
const SEVERITY_SCALE: Record<Severity, number> = { low: 1, medium: 2, high: 4, critical: 8 };
/** How much an insight type is a problem to act on now (praise and habits inform, they do not demand a fix). */
const TYPE_WEIGHT: Record<string, number> = {
  pain_point: 1,
  feature_request: 0.8,
  opportunity: 0.6,
  behavior: 0.4,
  user_behavior: 0.4,
  feedback_theme: 0.25,
};

/** Kinds that never share a recommendation: problems (and the asks that fix them), praise, behaviours. */
function kindOf(type: string): "problem" | "praise" | "behavior" {
  if (type === "feedback_theme") return "praise";
  if (type === "behavior" || type === "user_behavior") return "behavior";
  return "problem";
}

const BASE_WEEKS: Record<string, number> = {
  pain_point: 2,
  feature_request: 3,
  opportunity: 5,
  behavior: 1.5,
  user_behavior: 1.5,
  feedback_theme: 1,
};

const BROAD_SCOPE = /\b(integrat\w*|migrat\w*|redesign\w*|rebuild\w*|re-?architect\w*|architecture|platform|sync\w*|offline|payments?|security|authenticat\w*|identity|infrastructure|schedul\w*|automat\w*|third[- ]party|api|workflow)\b/i;
const NARROW_SCOPE = /\b(copy|wording|label\w*|tooltip\w*|link\w*|colou?r\w*|dark mode|sort\w*|filter\w*|details?|descriptive|text|icon\w*|reminders?)\b/i;

const VERB: Record<string, string> = {
  pain_point: "Fix",
  feature_request: "Build",
  opportunity: "Pursue",
  behavior: "Support",
  user_behavior: "Support",
  feedback_theme: "Keep",
};

/** Product-vocabulary synonyms folded before keyword extraction (so "sign in" and "login" group together). */
function canonical(text: string): string {
  return text
    .replace(/\b(sign|log)(?:s|ged|ging)?[\s-]?(?:in|on)\b/gi, "login")
    .replace(/\b(sign|log)(?:s|ged|ging)?[\s-]?(?:\w+\s+)?out\b/gi, "logout")
    .replace(/\b(face ?id|touch ?id|fingerprints?|thumbprints?|thumb|biometrics?|facial recognition)\b/gi, "biometric")
    .replace(/\b(meds|medications?|prescriptions?|rx|refills?)\b/gi, "medication")
    .replace(/\b(msgs?|messages?|messaging)\b/gi, "message")
    .replace(/\b(notifications?|alerts?|reminders?|notices?)\b/gi, "notification")
    .replace(/\b(crash\w*|errors?|fails?|failed|failing|broken)\b/gi, "failure")
    .replace(/\b(slow\w*|lag\w*|performance|spin\w*)\b/gi, "slow");
}

interface Prepared {
  insight: InsightInput;
  index: number;
  kw: Set<string>;
  /** keyword → weight: 1.5 in the title, 1 in the description, 0.5 only in quotes (max of the three). */
  kwWeight: Map<string, number>;
  strength: number;
  sources: Set<string>;
  mentions: number;
}

interface Group {
  members: Prepared[];
}

interface Scored {
  group: Group;
  lead: Prepared;
  type: string;
  /** Doubling scale (1, 2, 4, 8) of the highest member severity, plus a quarter of the others'. */
  severity: number;
  typeWeight: number;
  reach: number;
  reachCount: number;
  mentions: number;
  mentionsNorm: number;
  focusMatch: number;
  focusAreas: string[];
  impact: number;
  confidence: number;
  weeks: number;
  baseWeeks: number;
  scopeNote: string;
  rice: number;
  facet?: "measure" | "validate";
}

function prepare(insights: InsightInput[]): Prepared[] {
  return insights.map((insight, index) => {
    const sources = new Set(insight.quotes.map((q) => q.source_id));
    const mentions = Math.max(insight.mention_count ?? insight.quotes.length, insight.frequency, insight.quotes.length);
    const strength = SEVERITY_WEIGHT[insight.severity] * 2 + Math.log1p(Math.max(insight.frequency, sources.size)) + Math.log1p(mentions) * 0.5;
    const kwWeight = new Map<string, number>();
    const add = (text: string, w: number) => {
      for (const k of keywords(canonical(text))) kwWeight.set(k, Math.max(kwWeight.get(k) ?? 0, w));
    };
    add(insight.title, 1.5);
    add(insight.description, 1);
    for (const q of insight.quotes) add(q.text, 0.5);
    return { insight, index, kw: new Set(kwWeight.keys()), kwWeight, strength, sources, mentions };
  });
}

/** Inverse document frequency of each keyword over the input insights: ln(1 + N / df). */
function idfOf(prepared: Prepared[]): Map<string, number> {
  const df = new Map<string, number>();
  for (const p of prepared) for (const k of p.kw) df.set(k, (df.get(k) ?? 0) + 1);
  const n = prepared.length;
  return new Map([...df].map(([k, d]) => [k, Math.log(1 + n / d)]));
}

/**
 * Weighted Jaccard (Ruzicka) of two insights' keyword weights × IDF: Σ min ÷ Σ max, plus 0.04 for the same
 * insight_type; 0 unless they share a keyword from a title or description, and 0 across kinds (`kindOf`).
 */
function similarity(a: Prepared, b: Prepared, idf: Map<string, number>): number {
  let inter = 0;
  let union = 0;
  let strongShared = false;
  for (const [k, wa] of a.kwWeight) {
    const f = idf.get(k) ?? 0;
    const wb = b.kwWeight.get(k) ?? 0;
    inter += Math.min(wa, wb) * f;
    union += Math.max(wa, wb) * f;
    if (wb > 0 && Math.max(wa, wb) >= 1) strongShared = true;
  }
  for (const [k, wb] of b.kwWeight) if (!a.kwWeight.has(k)) union += wb * (idf.get(k) ?? 0);
  if (!strongShared || union === 0) return 0;
  if (kindOf(a.insight.insight_type) !== kindOf(b.insight.insight_type)) return 0;
  return inter / union + (a.insight.insight_type === b.insight.insight_type ? 0.04 : 0);
}

const JOIN_THRESHOLD = 0.085;
const MAX_GROUP = 6;

function group(prepared: Prepared[]): Group[] {
  const idf = idfOf(prepared);
  const order = [...prepared].sort((x, y) => y.strength - x.strength || x.index - y.index);
  const groups: Group[] = [];
  for (const p of order) {
    let best: Group | undefined;
    let bestSim = 0;
    for (const g of groups) {
      if (g.members.length >= MAX_GROUP) continue;
      const s = g.members.reduce((sum, m) => sum + similarity(p, m, idf), 0) / g.members.length;
      if (s > bestSim) [best, bestSim] = [g, s];
    }
    if (best && bestSim >= JOIN_THRESHOLD) best.members.push(p);
    else groups.push({ members: [p] });
  }
  return groups;
}

/** The dominant insight type of a group: the lead's type unless another type has strictly more members. */
function dominantType(g: Group): string {
  const counts = new Map<string, number>();
  for (const m of g.members) counts.set(m.insight.insight_type, (counts.get(m.insight.insight_type) ?? 0) + 1);
  let best = g.members[0].insight.insight_type;
  for (const [t, c] of counts) if (c > (counts.get(best) ?? 0)) best = t;
  return best;
}

function score(groups: Group[], all: Prepared[], focusAreas: string[]): Scored[] {
  const totalSources = new Set(all.flatMap((p) => [...p.sources])).size;
  const maxFreq = Math.max(1, ...all.map((p) => p.insight.frequency));
  const groupMentions = groups.map((g) => g.members.reduce((s, m) => s + m.mentions, 0));
  const maxMentions = Math.max(1, ...groupMentions);
  const focus = focusAreas.map((f) => ({ area: f, kw: keywordSet(canonical(f)) })).filter((f) => f.kw.size);
  return groups.map((g, gi) => {
    const sev = g.members.map((m) => SEVERITY_SCALE[m.insight.severity]).sort((a, b) => b - a);
    const severity = Math.min(8, sev[0] + 0.25 * sev.slice(1).reduce((a, b) => a + b, 0));
    const sources = new Set(g.members.flatMap((m) => [...m.sources]));
    const reachCount = Math.max(sources.size, ...g.members.map((m) => m.insight.frequency));
    const sourceShare = totalSources > 0 ? clamp(reachCount / Math.max(totalSources, maxFreq), 0, 1) : reachCount / maxFreq;
    const mentions = groupMentions[gi];
    const mentionsNorm = Math.log1p(mentions) / Math.log1p(maxMentions);
    const reach = clamp(0.6 * sourceShare + 0.4 * mentionsNorm, 0.01, 1);
    const text = canonical(g.members.map((m) => `${m.insight.title} ${m.insight.description}`).join(" "));
    const textKw = keywordSet(text);
    let focusMatch = 0;
    const focusHit: string[] = [];
    for (const f of focus) {
      let hit = 0;
      for (const k of f.kw) if (textKw.has(k)) hit++;
      const frac = hit / f.kw.size;
      if (frac > 0) focusHit.push(f.area);
      focusMatch = Math.max(focusMatch, frac);
    }
    const type = dominantType(g);
    const typeWeight = TYPE_WEIGHT[type] ?? 0.5;
    const impact = roundTo(clamp(((reach * severity * typeWeight) / 8) * (1 + 0.5 * focusMatch), 0.01, 1), 0.01);
    const quotes = g.members.reduce((s, m) => s + m.insight.quotes.length, 0);
    const confidence = roundTo(clamp(0.4 + 0.1 * Math.min(quotes, 4) + 0.1 * Math.min(sources.size, 2), 0.4, 1), 0.01);
    const baseWeeks = BASE_WEEKS[type] ?? 2;
    const titles = g.members.map((m) => `${m.insight.title} ${m.insight.description}`).join(" ");
    const broad = BROAD_SCOPE.exec(titles)?.[0];
    const narrow = broad ? undefined : NARROW_SCOPE.exec(titles)?.[0];
    const sizeFactor = Math.min(2, 1 + 0.25 * (g.members.length - 1));
    const scopeFactor = broad ? 1.5 : narrow ? 0.6 : 1;
    const weeks = Math.max(0.5, roundTo(baseWeeks * sizeFactor * scopeFactor, 0.5));
    const scopeNote = [
      g.members.length > 1 ? `×${sizeFactor.toFixed(2)} for ${g.members.length} related insights` : "",
      broad ? `×1.5 for broad scope (“${broad.toLowerCase()}”)` : narrow ? `×0.6 for narrow scope (“${narrow.toLowerCase()}”)` : "",
    ]
      .filter(Boolean)
      .join(", ");
    const rice = (impact * confidence) / weeks;
    return {
      group: g,
      lead: g.members[0],
      type,
      severity,
      typeWeight,
      reach,
      reachCount,
      mentions,
      mentionsNorm,
      focusMatch,
      focusAreas: focusHit,
      impact,
      confidence,
      weeks,
      baseWeeks,
      scopeNote,
      rice,
    };
  });
}

const fmt = (x: number, d = 2) => x.toFixed(d);
const plural = (n: number, one: string, many = `${one}s`) => `${n} ${n === 1 ? one : many}`;

function cite(p: Prepared): string {
  const i = p.insight;
  return `“${i.title}” (${i.severity}, ${plural(Math.max(i.frequency, p.sources.size), "source")}, ${plural(p.mentions, "mention")})`;
}

/** Problem and wish cues, as in the synthesis lexicons (core/ai/synthesis/classify.ts), for picking evidence. */
const BREAK_RE =
  /\b(can'?t|can’t|cannot|could ?n[o'’]?t|won'?t|won’t|does ?n[o'’]?t|do ?n[o'’]?t|is ?n[o'’]?t|not working|unable|fail\w*|error\w*|crash\w*|broken|break\w*|stuck|lost|lose|locked|kick\w*|block\w*|slow\w*|spinning|loop\w*|every (?:single )?time|again and again|have to|having to|hard|difficult|confus\w*|frustrat\w*|annoy\w*|problem\w*|issue\w*|trouble|never)\b/i;
const ASK_RE =
  /\b(wish|would (?:like|love|be (?:nice|great|helpful|good))|i'?d (?:like|love)|please|should|could you|can you|need(?:s|ed)? (?:to|a|an|the|more)|want(?:s|ed)? (?:to|a|an|the|more)|add|allow|option to|ability to|be able to|would help|hope)\b/i;
const VALUE_RE = /\b(love|like|great|easy|easier|helpful|useful|convenient|best|awesome|excellent|appreciate|thank|works? (?:well|great)|nice|quick|fast|simple)\b/i;

/** The evidence cue that fits an insight type: what breaks, what users ask for, or what they value. */
function cueFor(type: string): RegExp | undefined {
  if (type === "pain_point" || type === "opportunity") return BREAK_RE;
  if (type === "feature_request") return ASK_RE;
  if (type === "feedback_theme") return VALUE_RE;
  return undefined;
}

/**
 * The quote shown in the description: the lead insight's first quote of 20+ characters that carries the cue of its
 * type (what breaks for a problem, the ask for a request, the praise for praise), else its first quote of 20+
 * characters (synthesis orders quotes best first), else any member's.
 */
function bestQuote(s: Scored): { text: string; speaker: string | null } | undefined {
  const cue = cueFor(s.lead.insight.insight_type);
  const lead = s.lead.insight.quotes;
  const withCue = cue ? lead.find((x) => x.text.length >= 20 && cue.test(x.text)) : undefined;
  if (withCue) return withCue;
  for (const m of s.group.members) {
    const q = m.insight.quotes.find((x) => x.text.length >= 20) ?? m.insight.quotes[0];
    if (q) return q;
  }
  return undefined;
}

function successMetrics(s: Scored): string[] {
  const lead = s.lead.insight;
  const n = s.group.members.length;
  const subject = `“${lead.title}”${n > 1 && !s.facet ? ` and ${plural(n - 1, "related insight")}` : ""}`;
  const baseline = `baseline today: ${plural(s.mentions, "mention")} across ${plural(s.reachCount, "source")}`;
  switch (s.facet) {
    case "measure":
      return [
        `An event or log metric for ${subject} is live and reported weekly before any fix ships`,
        `Baseline rate of the problem recorded for at least 2 weeks`,
      ];
    case "validate":
      return [
        `At least 5 more users interviewed or tested about ${subject} within 3 weeks`,
        `The insight is confirmed or refuted by at least 2 more independent sources`,
      ];
  }
  switch (s.type) {
    case "pain_point": {
      const m = [
        `New feedback and research mentioning ${subject} falls by 50% within 8 weeks of release (${baseline})`,
        `Task success in the flow behind ${subject} reaches 90% or more in a moderated test with 5+ users`,
      ];
      if (s.group.members.some((x) => x.insight.severity === "critical"))
        m.push(`Failure rate of the flow behind ${subject} stays below 1% of attempts (instrument before release to get the baseline)`);
      return m;
    }
    case "feature_request":
      return [
        `20% of active users use the capability requested in ${subject} within 30 days of launch`,
        `Requests matching ${subject} in new feedback fall by 50% within a quarter (${baseline})`,
      ];
    case "opportunity":
      return [
        `A first version is used by 20% of the target segment within a quarter`,
        `5 of 8 users interviewed after launch say it solves ${subject}`,
      ];
    case "behavior":
    case "user_behavior":
      return [
        `Median time to complete the path described in ${subject} falls by 30% from the pre-release baseline`,
        `Share of sessions that take this path grows by 20% within 8 weeks`,
      ];
    case "feedback_theme":
      return [
        `Positive mentions matching ${subject} hold or rise in the next research cycle (${baseline})`,
        `No new negative feedback theme about ${subject} appears after the change`,
      ];
    default:
      return [`New research mentioning ${subject} falls by 50% within a quarter (${baseline})`];
  }
}

/**
 * What to do, from the lead insight: a problem is fixed where it breaks, a request built as asked, a gap closed, a
 * habit supported, praise kept from regressing. The lead's finding is named, and the evidence quoted in the
 * description says what users reported; nothing generic like "build on the feedback theme".
 */
function actionSentence(s: Scored, product?: ProductContext): string {
  const lead = stripEndPunct(s.lead.insight.title);
  const where = product?.product_name ? ` in ${product.product_name}` : "";
  const more = s.group.members.length > 1 ? " and the related problems below" : "";
  switch (s.facet) {
    case "measure":
      return `Instrument the flow behind “${lead}”${where} and record a baseline, so the fix can be sized and its effect measured. This is a separate facet of the same insight, not separate evidence.`;
    case "validate":
      return `Run a short follow-up study on “${lead}” to confirm how widespread it is and which users it affects most, before or alongside the fix. This is a separate facet of the same insight, not separate evidence.`;
  }
  switch (s.type) {
    case "pain_point":
      return `Fix what breaks${where}: ${lowerFirst(lead)}${more}; verify the fix against the scenarios users reported.`;
    case "feature_request":
      return `Build what users ask for${where}: ${lowerFirst(lead)}${s.group.members.length > 1 ? ", with the related requests below" : ""}, scoped to what the requests describe.`;
    case "opportunity":
      return `Close the gap users describe${where}: ${lowerFirst(lead)}; ship a first, narrow version for the slice the evidence supports best.`;
    case "behavior":
    case "user_behavior":
      return `Support what users already do${where}: ${lowerFirst(lead)}; make that path faster and more reliable.`;
    case "feedback_theme":
      return `Keep what users value${where} working: ${lowerFirst(lead)}; guard it with regression tests while the problems ranked above are fixed.`;
    default:
      return `Address “${lead}”${where}.`;
  }
}

function toRecommendation(s: Scored, product?: ProductContext): RecommendationDraft {
  const members = s.group.members;
  const lead = s.lead.insight;
  const prefix = s.facet === "measure" ? "Measure" : s.facet === "validate" ? "Validate" : (VERB[s.type] ?? "Address");
  const more = !s.facet && members.length > 1 ? ` (+${members.length - 1} related)` : "";
  const title = truncate(`${prefix}: ${lead.title}`, 300 - more.length) + more;
  const quote = bestQuote(s);
  const description = [
    actionSentence(s, product),
    `Addresses ${plural(members.length, "insight")}: ${members.map(cite).join("; ")}.`,
    quote ? `In users' words: “${quote.text}”${quote.speaker ? ` — ${quote.speaker}` : ""}.` : "",
  ]
    .filter(Boolean)
    .join(" ");
  const effort = effortFromWeeks(s.weeks);
  const sevMax = members.reduce((m, x) => (SEVERITY_WEIGHT[x.insight.severity] > SEVERITY_WEIGHT[m] ? x.insight.severity : m), "low" as Severity);
  const rationale = [
    `Impact ${fmt(s.impact)} = reach ${fmt(s.reach)} (${plural(s.reachCount, "distinct source")}, ${plural(s.mentions, "mention")}) × severity ${fmt(s.severity, 1)} of 8 (highest: ${sevMax}) × type weight ${fmt(s.typeWeight)} (${s.type}) ÷ 8` +
      (s.focusMatch > 0 ? ` × (1 + 0.5 × focus match ${fmt(s.focusMatch)} (${joinList(s.focusAreas.map((f) => `“${f}”`))}))` : "") +
      ".",
    `Effort ${s.weeks} weeks (${effort}): ${s.baseWeeks} weeks base for a ${s.facet ? `${s.facet} task on a ${s.type}` : s.type}${s.scopeNote ? `, ${s.scopeNote}` : ""}.`,
    `Confidence ${fmt(s.confidence)} from ${plural(members.reduce((n, m) => n + m.insight.quotes.length, 0), "verbatim quote")}; score ${fmt(s.rice, 3)} = impact × confidence ÷ weeks.`,
  ].join(" ");
  return {
    title,
    description,
    addresses_insight_ids: members.map((m) => m.insight.id),
    rationale,
    effort_estimate: effort,
    effort_weeks: s.weeks,
    impact_score: s.impact,
    success_metrics: successMetrics(s),
  };
}

/** Splits the loosest multi-insight group (its last-joined member) until there are `want` groups or all are single. */
function splitToAtLeast(groups: Group[], want: number): Group[] {
  const out = groups.map((g) => ({ members: [...g.members] }));
  while (out.length < want) {
    const g = [...out].filter((x) => x.members.length > 1).sort((a, b) => b.members.length - a.members.length)[0];
    if (!g) break;
    out.push({ members: [g.members.pop()!] });
  }
  return out;
}

/**
 * Generates 3 to 7 prioritized recommendations from insights, locally and deterministically (see the module comment
 * for the algorithm). Implements spec 01 `POST /api/recommendations/generate` for the embedded runtime.
 *
 * @param input.insights 1+ insights (`InsightInput`), usually the request's `insight_ids` loaded from the workspace.
 * @param input.focus_areas optional themes to favour (each boosts matching groups' impact by up to 0.15).
 * @param input.product optional workspace product context (named in descriptions).
 * @returns `{ recommendations (3..7, best first), prioritization_summary }`; every recommendation's
 *   `addresses_insight_ids` ⊆ the input ids, `impact_score` ∈ [0, 1], `effort_weeks` ≥ 0.5 and consistent with
 *   `effort_estimate`.
 * @throws AppError `VALIDATION_ERROR` (422) when there is no insight or an insight is malformed.
 */
export function generateRecommendations(input: GenerateRecommendationsInput): GenerateRecommendationsResult {
  if (!input?.insights?.length) {
    throw Errors.validation([{ loc: ["insight_ids"], msg: "At least one insight is required", type: "too_small" }]);
  }
  const parsed = GenerateRecommendationsInput.safeParse(input);
  if (!parsed.success) {
    throw Errors.validation(
      parsed.error.issues.map((i) => ({ loc: i.path.map((p) => (typeof p === "number" ? p : String(p))), msg: i.message, type: i.code })),
    );
  }
  const { insights, focus_areas = [], product } = parsed.data;
  const ids = new Set<string>();
  for (const i of insights) {
    if (ids.has(i.id)) throw new AppError("VALIDATION_ERROR", `Duplicate insight id ${i.id}`, { errors: [{ loc: ["insight_ids"], msg: `duplicate ${i.id}`, type: "duplicate" }] });
    ids.add(i.id);
  }
  const prepared = prepare(insights);
  const groups = splitToAtLeast(group(prepared), 3);
  const scored = score(groups, prepared, focus_areas).sort(
    (a, b) => b.rice - a.rice || b.impact - a.impact || a.lead.index - b.lead.index,
  );
  const chosen = scored.slice(0, 7);
  const omitted = scored.slice(7);
  if (chosen.length < 3) {
    const top = chosen[0];
    const facets: ("measure" | "validate")[] = ["measure", "validate"];
    for (const f of facets) {
      if (chosen.length >= 3) break;
      const weeks = f === "measure" ? 1 : 1.5;
      chosen.push({
        ...top,
        facet: f,
        baseWeeks: weeks,
        weeks,
        scopeNote: "",
        impact: roundTo(top.impact * (f === "measure" ? 0.6 : 0.5), 0.01),
        rice: 0,
      });
      chosen[chosen.length - 1].rice = (chosen[chosen.length - 1].impact * top.confidence) / weeks;
    }
  }
  const recommendations = chosen.map((s) => toRecommendation(s, product));
  return { recommendations, prioritization_summary: summary(chosen, omitted, insights.length, focus_areas) };
}

function summary(chosen: Scored[], omitted: Scored[], insightCount: number, focusAreas: string[]): string {
  const lines: string[] = [];
  lines.push(
    `Ranked ${plural(chosen.length, "recommendation")} from ${plural(insightCount, "insight")} by reach × severity ÷ effort: ` +
      `impact = reach (60% distinct sources, 40% mentions) × severity (low 1, medium 2, high 4, critical 8) × type weight ` +
      `(pain point 1, request 0.8, opportunity 0.6, behaviour 0.4, praise 0.25) ÷ 8${focusAreas.length ? ", × up to 1.5 for focus-area matches" : ""}; ` +
      `score = impact × confidence (verbatim quotes and sources behind it) ÷ effort in weeks. Praise and problems are never grouped. ` +
      `Local heuristic engine: scores are comparable within this run only.`,
  );
  chosen.forEach((s, i) => {
    const n = s.group.members.length;
    const title = s.facet
      ? `${s.facet === "measure" ? "Measure" : "Validate"}: ${s.lead.insight.title}`
      : `${s.lead.insight.title}${n > 1 ? ` (+${n - 1} related)` : ""}`;
    lines.push(
      `${i + 1}. ${title} — impact ${fmt(s.impact)}, effort ${s.weeks} wk (${effortFromWeeks(s.weeks)}), confidence ${fmt(s.confidence)}, score ${fmt(s.rice, 3)}` +
        (s.focusAreas.length ? `; matches focus ${joinList(s.focusAreas.map((f) => `“${f}”`))}` : "") +
        (s.facet ? "; a facet of the same insight, added because fewer than 3 insights were given" : "") +
        ".",
    );
  });
  if (focusAreas.length) {
    const matched = new Set(chosen.flatMap((s) => s.focusAreas));
    const missed = focusAreas.filter((f) => !matched.has(f));
    if (missed.length) lines.push(`No selected insight matched focus area ${joinList(missed.map((f) => `“${f}”`))}.`);
  }
  if (omitted.length) {
    lines.push(
      `Not recommended now (lower score): ${omitted
        .map((s) => `“${s.lead.insight.title}”${s.group.members.length > 1 ? ` (+${s.group.members.length - 1})` : ""} score ${fmt(s.rice, 3)}`)
        .join("; ")}.`,
    );
  }
  return lines.join("\n");
}

/** @internal exposed for unit tests. */
export const _internal = { canonical, group, prepare, score, splitToAtLeast, similarity, idfOf };
