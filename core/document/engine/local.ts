import { Errors } from "../../error";
import type { InsightInput, ProductContext } from "../../recommendation/engine/types";
import { generateRecommendations } from "../../recommendation/engine/local";
import { effortFromWeeks } from "../../recommendation/engine/types";
import { keywordSet, lowerFirst, stripEndPunct, truncate, upperFirst } from "../../recommendation/engine/text";
import { type BlockType, blockMarker, classifyHeading } from "../blocks";
import { refLabel, sourcesSection } from "./grounding";
import { DraftDocumentInput, type DocumentDraft, type DocumentType, type DraftRecommendation } from "./types";
import { SEVERITY_RANK } from "../../insight/severity";

export { expandBlock, challengeBlock, simulateBlock, selectContext } from "./actions";

/**
 * The local document drafting engine (spec 01 `POST /api/documents/draft`) for the embedded runtime: deterministic
 * templates filled from the recommendation and the insights — NOT a language model. It writes a type-appropriate
 * structure for all six document types, and it is grounded by construction:
 *
 * - every research claim names an insight and cites it as `[I1]`, `[I2]`… ; the Sources section at the end lists
 *   the insights and defines each reference as a Markdown link to `#insight-<id>` (see ./grounding.ts);
 * - every quoted user statement is copied verbatim from the insight's stored quotes (whitespace collapsed only);
 * - numbers (sources, mentions, impact, effort) come from the inputs; nothing is estimated that the inputs do not hold,
 *   and unknowns (baselines, owners, dates) are written as open questions, not invented.
 *
 * The sections are written in the Markdown shapes that `extractBlocks` reads (core/document/markdown.ts), so the
 * drafted content extracts into typed blocks: Problem → problem (with Evidence merged in), Users → persona,
 * Goals & success metrics → metrics, Solution (+ Non-goals) → solution, User stories → user_story, Edge cases →
 * edge_case, Risks → risk, Timeline / Roadmap → timeline, the rest → free_text.
 *
 * `user_instructions` are honoured where the engine can recognise them — audience ("for executives/engineers/…"),
 * length ("brief", "one-page", "detailed"), "include/add a <name> section", "no/without <name> section", "focus on
 * <topic>" — and are always quoted in an "Instructions" note that says which parts were applied, so a reader knows
 * what the draft did not do.
 */

type Length = "brief" | "normal" | "detailed";

interface Options {
  audience?: string;
  length: Length;
  include: string[];
  exclude: string[];
  focus?: string;
  applied: string[];
}

interface Section {
  key: string;
  heading: string;
  body: string;
  /** Pins the block type with a `<!-- block:… -->` marker when the heading alone would classify differently. */
  marker?: BlockType;
  /** Mandatory sections are never removed by instructions (grounding needs them). */
  mandatory?: boolean;
}

const SECTION_ALIASES: Record<string, RegExp> = {
  summary: /\b(summary|tl;?dr|overview|executive summary)\b/i,
  problem: /\b(problem|background|context)\b/i,
  evidence: /\b(evidence|research|what we heard|quotes)\b/i,
  users: /\b(users?|personas?|audience)\b/i,
  metrics: /\b(metrics?|success|kpis?|goals)\b/i,
  solution: /\b(solution|proposal|requirements?|what'?s new)\b/i,
  stories: /\b(user stor(y|ies)|stories)\b/i,
  edge: /\b(edge cases?|error handling)\b/i,
  risks: /\b(risks?|dependencies)\b/i,
  timeline: /\b(timeline|milestones?|roll-?out|plan|roadmap)\b/i,
  questions: /\b(open questions|questions)\b/i,
  alternatives: /\b(alternatives?)\b/i,
};

const AUDIENCE_RE =
  /\b(?:for|audience(?: is)?:?|aimed at|targeted at|written for|to)\s+(?:the\s+|our\s+)?(executives?|leadership|execs?|c-suite|board|engineers?|engineering|developers?|designers?|design|stakeholders?|customers?|end users?|users|support(?: team)?|sales(?: team)?|marketing|investors?)\b/i;

/** Reads the parts of free-text instructions the local engine can act on. */
export function parseInstructions(text: string | undefined): Options {
  const o: Options = { length: "normal", include: [], exclude: [], applied: [] };
  if (!text?.trim()) return o;
  const t = text.replace(/\s+/g, " ");
  const aud = AUDIENCE_RE.exec(t);
  if (aud) {
    o.audience = aud[1].toLowerCase();
    o.applied.push(`audience: ${o.audience}`);
  }
  if (/\b(brief|short|concise|one[- ]pager?|tl;?dr|succinct|keep it tight)\b/i.test(t) || /^(exec|leader|c-suite|board|investor)/.test(o.audience ?? "")) {
    o.length = "brief";
    o.applied.push("length: brief");
  } else if (/\b(detailed|comprehensive|in[- ]depth|thorough|exhaustive|long)\b/i.test(t)) {
    o.length = "detailed";
    o.applied.push("length: detailed");
  }
  for (const m of t.matchAll(/\b(?:no|without|skip|omit|exclude|drop|remove|leave out)\s+(?:the\s+|a\s+|an\s+|any\s+)?([a-z][a-z &/-]{1,40}?)(?:\s+sections?)?(?=[.,;!]|\s+and\b|$)/gi)) {
    o.exclude.push(m[1].trim().toLowerCase());
  }
  for (const m of t.matchAll(/\b(?:include|add|with|need|want)\s+(?:a\s+|an\s+|the\s+)?([a-z][a-z &/-]{1,40}?)\s+sections?\b/gi)) {
    o.include.push(m[1].trim());
  }
  for (const m of t.matchAll(/\bsections?\s+(?:on|about|for|covering)\s+([a-z][a-z &/-]{1,40}?)(?=[.,;!]|$)/gi)) {
    o.include.push(m[1].trim());
  }
  const focus = /\bfocus(?:ed|ing)?\s+(?:more\s+)?on\s+([^.,;!]{2,80})/i.exec(t);
  if (focus) o.focus = focus[1].trim();
  return o;
}

const sectionKeyOf = (name: string): string | undefined => {
  for (const [key, re] of Object.entries(SECTION_ALIASES)) if (re.test(name)) return key;
  return undefined;
};

// ---------------------------------------------------------------------------------------------------------------
// Grounded building blocks
// ---------------------------------------------------------------------------------------------------------------

interface Ctx {
  type: DocumentType;
  rec?: DraftRecommendation;
  insights: InsightInput[];
  /** insight id → "[I1]" */
  ref: Map<string, string>;
  product?: ProductContext;
  opts: Options;
  persona: string;
  otherInsights: InsightInput[];
}

const oneLine = (s: string) => s.replace(/\s+/g, " ").trim();
const plural = (n: number, one: string, many = `${one}s`) => `${n} ${n === 1 ? one : many}`;
const sourcesOf = (i: InsightInput) => Math.max(i.frequency, new Set(i.quotes.map((q) => q.source_id)).size);
const mentionsOf = (i: InsightInput) => Math.max(i.mention_count ?? i.quotes.length, i.quotes.length);
const quotesPer = (o: Options) => (o.length === "brief" ? 1 : o.length === "detailed" ? 3 : 2);

function cite(c: Ctx, i: InsightInput): string {
  return `[${c.ref.get(i.id)}]`;
}

function quoteLine(c: Ctx, i: InsightInput, q: InsightInput["quotes"][number]): string {
  return `“${oneLine(q.text)}”${q.speaker ? ` — ${q.speaker}` : ""}, on *${i.title}* ${cite(c, i)}`;
}

/** Evidence list items: one per quote (up to the length setting), or the insight itself when it has no quote. */
function evidenceItems(c: Ctx, insights: InsightInput[], per = quotesPer(c.opts)): string[] {
  const out: string[] = [];
  for (const i of insights) {
    if (!i.quotes.length) {
      out.push(`*${i.title}* (${i.severity}, ${plural(sourcesOf(i), "source")}; no verbatim quote recorded) ${cite(c, i)}`);
      continue;
    }
    for (const q of i.quotes.slice(0, per)) out.push(quoteLine(c, i, q));
  }
  return out;
}

const bullets = (items: string[]) => items.map((i) => `- ${i}`).join("\n");

function subjectOf(c: Ctx): string {
  if (c.rec) return stripEndPunct(c.rec.title.replace(/^(Fix|Build|Pursue|Design for|Build on|Support|Keep|Measure|Validate|Address):\s*/i, "").replace(/\s*\(\+\d+ related\)$/, ""));
  return c.insights[0]?.title ?? "Untitled";
}

function problemStatement(c: Ctx): string {
  const [lead, ...rest] = c.insights;
  if (!lead) return c.rec ? oneLine(c.rec.description) : "";
  const where = c.product?.product_name ? ` in ${c.product.product_name}` : "";
  const first = `${upperFirst(c.persona)} report a problem${where}: ${lowerFirst(stripEndPunct(lead.title))} ${cite(c, lead)}. ${oneLine(lead.description)}`;
  const related = rest.length
    ? ` Related findings: ${rest
        .slice(0, c.opts.length === "brief" ? 2 : 5)
        .map((i) => `${lowerFirst(stripEndPunct(i.title))} ${cite(c, i)}`)
        .join("; ")}.`
    : "";
  return first + related;
}

function impactLine(c: Ctx): string {
  if (!c.insights.length) return c.rec?.impact_score !== undefined ? `Impact score ${c.rec.impact_score.toFixed(2)} (from the recommendation).` : "";
  const sources = new Set(c.insights.flatMap((i) => i.quotes.map((q) => q.source_id))).size;
  const maxFreq = Math.max(...c.insights.map(sourcesOf));
  const mentions = c.insights.reduce((s, i) => s + mentionsOf(i), 0);
  const top = [...c.insights].sort((a, b) => SEVERITY_RANK[b.severity] - SEVERITY_RANK[a.severity])[0];
  return `Reported in ${plural(Math.max(sources, maxFreq), "source")} and ${plural(mentions, "mention")}; highest severity ${top.severity} (${top.title} ${cite(c, top)})${c.rec?.impact_score !== undefined ? `; recommendation impact score ${c.rec.impact_score.toFixed(2)}` : ""}.`;
}

const PERSONA_ROLES =
  "veterans?|caregivers?|spouses?|patients?|clinicians?|nurses?|doctors?|physicians?|admins?|administrators?|managers?|developers?|engineers?|designers?|students?|teachers?|instructors?|educators?|parents?|customers?|members?|agents?|analysts?|operators?|owners?|buyers?|sellers?|shoppers?|drivers?|researchers?|scientists?|data scientists?|service members?|retirees?|volunteers?|maintainers?|contributors?|librarians?|pharmacists?|therapists?|new users|power users|first-time users";
/** A role noun, as a whole word. */
const ROLE_RE = new RegExp(`\\b(${PERSONA_ROLES})\\b`, "i");
/** Participants naming who they are: "I'm a veteran", "as a nurse", "we teachers", "my fellow veterans". */
const SELF_ID_RE = new RegExp(
  `\\b(?:i am|i'm|i’m|im|as|we are|we're|we’re|we|us|fellow|my fellow|other|being)\\s+(?:a |an |the )?(?:[\\w%-]+\\s+){0,2}?(${PERSONA_ROLES})\\b`,
  "gi",
);

const pluralRole = (n: string) => {
  const l = n.toLowerCase();
  return l.endsWith("s") || l.includes(" users") ? l : `${l}s`;
};

/**
 * Who the users are, from who the participants are: the workspace's target users first; then roles participants give
 * themselves in their quotes ("as a Veteran", "I'm a teacher"; 3 points each), roles in speaker labels ("Veteran 3",
 * "Nurse (P2)"; 3 each) and roles that are the subject of a finding, in a title or a sentence of a description
 * ("Caregivers manage medications …", "Veterans describe …"; 2 each). The caller passes every insight of the
 * research, not only the cited ones: who the participants are does not change from theme to theme.
 * A role that is only talked about ("the nurse told me", "Users struggle with nurse") is not a persona: participants
 * mention clinicians, family and staff all the time. "users" when nothing names them (an open question says so).
 */
function personaNames(insights: InsightInput[], product?: ProductContext): string[] {
  const counts = new Map<string, number>();
  const add = (n: string, w: number) => counts.set(pluralRole(n), (counts.get(pluralRole(n)) ?? 0) + w);
  for (const i of insights) {
    for (const q of i.quotes) {
      for (const m of q.text.matchAll(SELF_ID_RE)) add(m[1], 3);
      const sp = q.speaker ? ROLE_RE.exec(q.speaker) : null;
      if (sp) add(sp[1], 3);
    }
    // Findings whose subject is a role: the title, and sentences of the description ("Veterans describe …").
    const subjectRe = new RegExp(`^(?:the |our |many |most |some |several |all )?(${PERSONA_ROLES})\\b`, "i");
    for (const sentence of [i.title, ...i.description.split(/(?<=[.!?])\s+/)]) {
      const subject = subjectRe.exec(sentence.trim());
      if (subject) add(subject[1], 2);
    }
  }
  const found = [...counts.entries()].sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0])).map(([n]) => n);
  const target = product?.target_users?.trim();
  const names = target ? [truncate(target, 80), ...found.filter((f) => !target.toLowerCase().includes(f.replace(/s$/, "")))] : found;
  return names.length ? names.slice(0, 2) : ["users"];
}

function usersSection(c: Ctx, names: string[]): string {
  const about = (name: string) => c.insights.filter((i) => `${i.title} ${i.description}`.toLowerCase().includes(name.replace(/s$/, "")));
  // A further persona is shown only when a cited insight is about it (the section cites what it says).
  return names
    .filter((name, k) => k === 0 || about(name).length > 0)
    .map((name, k) => {
      const mention = (i: InsightInput) => k === 0 || `${i.title} ${i.description}`.toLowerCase().includes(name.replace(/s$/, ""));
      const about = c.insights.filter(mention);
      const pains = about.filter((i) => i.insight_type === "pain_point").map((i) => `${i.title} ${cite(c, i)}`);
      const goals = about
        .filter((i) => i.insight_type !== "pain_point")
        .map((i) => `${i.title} ${cite(c, i)}`);
      const q = about.flatMap((i) => i.quotes.map((x) => ({ i, x }))).find((p) => p.x.text.length >= 20);
      const desc =
        k === 0
          ? `${upperFirst(name)}${c.product?.product_name ? ` using ${c.product.product_name}` : ""}, as described in ${plural(about.length, "insight")}.`
          : `${upperFirst(name)}, named in ${plural(about.length, "insight")}.`;
      return [
        `### ${upperFirst(name)}`,
        `**Name:** ${upperFirst(name)}`,
        desc,
        q ? `> “${oneLine(q.x.text)}”${q.x.speaker ? ` — ${q.x.speaker}` : ""} ${cite(c, q.i)}` : "",
        goals.length ? `**Goals:**\n\n${bullets(goals)}` : "",
        pains.length ? `**Pain points:**\n\n${bullets(pains)}` : "",
      ]
        .filter(Boolean)
        .join("\n\n");
    })
    .join("\n\n");
}

function metricRows(c: Ctx): { name: string; kind: string; baseline: string; target: string; measurement: string }[] {
  const rows: { name: string; kind: string; baseline: string; target: string; measurement: string }[] = [];
  const metrics = c.rec?.success_metrics?.length
    ? c.rec.success_metrics
    : c.insights.slice(0, 3).map((i) => `New research mentioning “${i.title}” falls by 50% within a quarter (baseline today: ${plural(mentionsOf(i), "mention")} across ${plural(sourcesOf(i), "source")})`);
  for (const m of metrics) {
    const baseline = /\(baseline(?: today)?:\s*([^)]+)\)/i.exec(m)?.[1] ?? "not measured yet";
    const name = oneLine(m.replace(/\s*\(baseline[^)]*\)/i, "").replace(/\s*\(instrument[^)]*\)/i, ""));
    const target =
      /\b((?:falls?|grows?|drops?|rises?|increases?|decreases?) by [\d.]+%[^,;()]*|reaches [\d.]+%[^,;()]*|(?:stays )?below [\d.]+%[^,;()]*|at least \d+[^,;()]*|\d+ of \d+[^,;()]*|\d+% of [^,;()]+)/i.exec(m)?.[1] ??
      "see metric";
    const at = target !== "see metric" ? name.indexOf(target) : -1;
    const short = at > 10 ? name.slice(0, at).trim() : name;
    rows.push({ name: stripEndPunct(short).replace(/\|/g, "/"), kind: rows.length === 0 ? "primary" : "secondary", baseline: baseline.replace(/\|/g, "/"), target: stripEndPunct(target).replace(/\|/g, "/"), measurement: "product analytics and the next research cycle" });
  }
  rows.push({ name: "Support contacts and negative reviews about the changed flow", kind: "guardrail", baseline: "not measured yet", target: "no increase", measurement: "support tickets and app-store reviews" });
  return rows;
}

function metricsTable(c: Ctx): string {
  const rows = metricRows(c);
  return [
    "| Metric | Kind | Baseline | Target | Measurement |",
    "|---|---|---|---|---|",
    ...rows.map((r) => `| ${r.name} | ${r.kind} | ${r.baseline} | ${r.target} | ${r.measurement} |`),
  ].join("\n");
}

function iWant(i: InsightInput): { want: string; so: string } {
  const t = stripEndPunct(i.title);
  const should = /^(.+?)\s+should\s+(.+)$/i.exec(t);
  if (should) return { want: `${lowerFirst(should[1])} to ${should[2]}`, so: "I understand where I stand without calling or searching" };
  const requested = /^(.+?)\s+(?:is |are )?requested$/i.exec(t);
  if (requested) return { want: lowerFirst(requested[1]), so: "I don't need a workaround or another channel" };
  if (/^(add|allow|let|enable|support|show|make)\b/i.test(t)) return { want: `to ${lowerFirst(t)}`, so: "I can do it in one place" };
  switch (i.insight_type) {
    case "pain_point":
      return { want: `a fix for “${t}”`, so: "I can finish what I came to do without workarounds" };
    case "feature_request":
      return { want: `support for “${t}”`, so: "I don't need a workaround or another channel" };
    case "opportunity":
      return { want: `the product to address “${t}”`, so: "I get value I can't get today" };
    default:
      return { want: `the product to keep supporting “${t}”`, so: "my usual path stays quick and reliable" };
  }
}

function storyList(c: Ctx, max: number): string {
  const candidates = c.insights.filter((i) => i.insight_type !== "feedback_theme").slice(0, max);
  const list = candidates.length ? candidates : c.insights.slice(0, max);
  const as = c.persona.replace(/s$/, "");
  return list
    .map((i) => {
      const { want, so } = iWant(i);
      const q = i.quotes[0];
      const criteria = [
        q
          ? `Given the situation reported in ${cite(c, i)} (“${truncateQuote(q.text)}”), when the user repeats it after the change, then it completes without the reported problem`
          : `Given the situation described in ${cite(c, i)}, when the user repeats it after the change, then it completes without the reported problem`,
        `The change adds no extra step to the existing flow`,
        ...(i.severity === "critical" || i.severity === "high" ? [`The failure no longer occurs in the scenarios from ${plural(sourcesOf(i), "source")}; a regression test covers it`] : []),
        ...(c.opts.length === "detailed" ? [`Analytics record each attempt and its outcome so the success metrics can be read`] : []),
      ];
      // "an admin", "a user", "an unpaid …".
      const article = /^(?:[aeio]|u(?![sr]|ni))/i.test(as) ? "an" : "a";
      return [
        `### ${truncate(upperFirst(want.replace(/^to\s+/i, "").replace(/[“”]/g, "")), 100)}`,
        `As ${article} ${as}, I want ${want}, so that ${so}.`,
        `**Priority:** ${i.severity === "critical" || i.severity === "high" ? "must" : i.severity === "medium" ? "should" : "could"}`,
        `**Acceptance criteria:**\n\n${bullets(criteria.map((x) => `[ ] ${x}`))}`,
      ].join("\n\n");
    })
    .join("\n\n");
}

/** A verbatim prefix of a quote, cut on a word boundary (still a substring, so it stays verifiable). */
function truncateQuote(q: string, max = 90): string {
  const t = oneLine(q);
  if (t.length <= max) return t;
  const cut = t.slice(0, max);
  return cut.slice(0, cut.lastIndexOf(" ")) || cut;
}

/** Problem-specific checks worth raising, and the words in users' quotes that raise them. */
const EDGE_RULES: { re: RegExp; item: string }[] = [
  { re: /\b(login|log in|sign[- ]?in|password|token|biometric|face id|fingerprint|thumb)/i, item: "Biometrics unavailable or not enrolled → fall back to the standard sign-in without losing the user's place?" },
  { re: /\b(session|signed out|logged out|sign[- ]?out|log[- ]?out|kick(?:ed|s)? (?:me )?out)/i, item: "Session expires in the middle of a task → keep unsaved input and return to the same screen after sign-in?" },
  { re: /\b(loading|won'?t load|fails?|error|spinning|spin|crash|timeout|time out)/i, item: "A backend call errors or times out → a specific message with a retry instead of an endless spinner?" },
  { re: /\b(notification|remind|alert)/i, item: "Notifications are turned off → the same information is visible in the app?" },
  { re: /\b(draft|compose|composing)/i, item: "Composing is interrupted (app closed, signal lost) → the draft is kept and can be resumed?" },
  { re: /\b(discontinued|not refillable|expired prescription)/i, item: "An item is discontinued or not refillable → labelled as such and not requestable?" },
  { re: /\b(screen reader|vision|visually|larger screen|bigger screen|font|text size|magnif)/i, item: "The user relies on a screen reader or large text → every new element labelled, layout reflows at 200% text size?" },
  { re: /\b(caregiver|spouse|wife|husband|on behalf)/i, item: "A caregiver acts on the user's behalf → the flow works for them and shows whose data it is?" },
];

/** A condition a user reported: "when …", "if …", "after …", "every time …", "sometimes …", "on Android …". */
const CONDITION_RE = /\b(when|whenever|if|after|before|every (?:single )?time|each time|sometimes|while|unless|until|once|on (?:android|ios|iphone|ipad|tablets?|my phone))\b/i;

/**
 * Edge cases from the evidence: conditions users reported in the quotes of problems and requests (“… every time I
 * open it” → the scenario, quoted verbatim, with the expected behaviour left as an open question, since users
 * report failures, not fixes); then problem-specific checks raised by words in the quotes, marked as open
 * questions. Nothing is listed as settled that the research does not say.
 */
function edgeCases(c: Ctx): string[] {
  const max = c.opts.length === "brief" ? 3 : c.opts.length === "detailed" ? 10 : 6;
  const out: string[] = [];
  const problems = c.insights.filter((i) => i.insight_type !== "feedback_theme");
  for (const i of problems) {
    const q = i.quotes.find((x) => CONDITION_RE.test(x.text));
    if (q) out.push(`Reported: “${truncateQuote(q.text, 140)}” ${cite(c, i)} → expected behaviour: open question (the research reports the failure, not the fix)`);
  }
  const quoted = problems.flatMap((i) => i.quotes.map((q) => q.text)).join(" ");
  for (const r of EDGE_RULES) if (r.re.test(quoted)) out.push(`Open question, not reported by users: ${r.item}`);
  if (!out.length) out.push("Open question: the research reports no edge case → which conditions (first use, no network, assistive technology) must the flow handle?");
  return [...new Set(out)].slice(0, max);
}

function risks(c: Ctx): string[] {
  const out: string[] = [];
  const sources = new Set(c.insights.flatMap((i) => i.quotes.map((q) => q.source_id))).size;
  const maxFreq = Math.max(0, ...c.insights.map(sourcesOf));
  const n = Math.max(sources, maxFreq);
  if (n <= 2)
    out.push(`The evidence rests on ${plural(n, "source")}, so the problem may be narrower or different than it looks. Likelihood: medium; Impact: medium; Mitigation: confirm with 5 more users before building beyond the first slice`);
  const weeks = c.rec?.effort_weeks;
  if (weeks !== undefined && weeks > 4)
    out.push(`The ${weeks}-week estimate (${c.rec?.effort_estimate ?? effortFromWeeks(weeks)}) may slip as scope is discovered. Likelihood: medium; Impact: high; Mitigation: ship in phases and re-estimate after discovery`);
  const text = [c.rec?.title ?? "", ...c.insights.map((i) => `${i.title} ${i.description}`)].join(" ");
  if (/\b(login|sign[- ]?in|password|token|biometric|security|authenticat)/i.test(text))
    out.push("Reducing sign-in friction could weaken account security. Likelihood: medium; Impact: high; Mitigation: security review of the design in week 1");
  const valued = c.insights.find((i) => i.insight_type === "feedback_theme" || /\b(valued|love[sd]?|easier|helpful|prefer)\b/i.test(i.title));
  if (valued)
    out.push(`Changing the flow could break something users value: ${valued.title} ${cite(c, valued)}. Likelihood: low; Impact: medium; Mitigation: keep it covered by regression tests and watch the guardrail metric`);
  out.push("Users may not notice the change. Likelihood: medium; Impact: low; Mitigation: release note and an in-app hint at the changed step");
  return out;
}

function timelineItems(c: Ctx, deliverables: string[]): string {
  const weeks = Math.max(1, Math.ceil(c.rec?.effort_weeks ?? 2));
  const build = 1 + weeks;
  const ms = [
    { name: "Discovery and design", week: 1, d: ["Confirm scope against the cited insights", "Design review", "Instrument the success metrics to get baselines"] },
    { name: "Build", week: build, d: deliverables.length ? deliverables.slice(0, 4) : ["Implement the solution", "Automated tests for the acceptance criteria"] },
    { name: "Beta", week: build + 1, d: ["Release to a pilot group", "Read the success and guardrail metrics"] },
    { name: "General availability", week: build + 2, d: ["Full rollout", "Compare metrics with the baselines; re-run synthesis on new feedback"] },
  ];
  return ms.map((m) => `- **${m.name}** (week ${m.week})\n${m.d.map((d) => `  - ${d.replace(/\n/g, " ")}`).join("\n")}`).join("\n");
}

/** What users ask for, what breaks and what is missing, as cue patterns over their quotes. */
const ASK_RE = /\b(wish|would (?:like|love|be (?:nice|great|helpful|good))|i'?d (?:like|love)|please|should|could you|can you|need(?:s|ed)? (?:to|a|an|the|more)|want(?:s|ed)? (?:to|a|an|the|more)|add|allow|option to|ability to|be able to|would help|hope)\b/i;
const BREAK_RE =
  /\b(can'?t|can’t|cannot|could ?n[o'’]?t|won'?t|won’t|does ?n[o'’]?t|do ?n[o'’]?t|is ?n[o'’]?t|not working|unable|fail\w*|error\w*|crash\w*|broken|stuck|lost|lose|locked|kick\w*|block\w*|slow\w*|spinning|loop\w*|every (?:single )?time|have to|having to|hard|difficult|confus\w*|frustrat\w*|annoy\w*|problem\w*|issue\w*|trouble|never)\b/i;

/**
 * Solution details from the evidence: for each problem, what breaks (a quote with a problem cue), for each request
 * what users asked for (a quote with a wish), each falling back to the other, else an open question — the evidence
 * names a theme but no one said what would fix it. Praise is not a requirement.
 */
function solutionDetails(c: Ctx): string[] {
  return c.insights
    .filter((i) => i.insight_type !== "feedback_theme")
    .slice(0, c.opts.length === "brief" ? 3 : 8)
    .map((i) => {
      const ask = i.quotes.find((q) => ASK_RE.test(q.text));
      const breaks = i.quotes.find((q) => BREAK_RE.test(q.text));
      const askItem = ask && `Build what users ask for: “${truncateQuote(ask.text, 140)}” ${cite(c, i)}`;
      const breakItem = breaks && `Fix what breaks (${lowerFirst(stripEndPunct(i.title))}): “${truncateQuote(breaks.text, 140)}” ${cite(c, i)}`;
      // A problem is fixed where it breaks; a request is built as asked; either falls back to the other.
      const item = i.insight_type === "feature_request" ? (askItem ?? breakItem) : (breakItem ?? askItem);
      return item ?? `Open question: what should change for “${i.title}” ${cite(c, i)}? The research names the theme, not a fix`;
    });
}

/**
 * The solution in one sentence: the recommendation's action when there is one (the local recommendation engine
 * writes it from the lead insight's evidence); otherwise the lead insight's ask or failure, or an open question.
 */
function solutionSummary(c: Ctx): string {
  if (c.rec) return oneLine(c.rec.description.split(/(?<=[.!?])\s+/)[0] ?? c.rec.description);
  const lead = c.insights[0];
  const [first] = solutionDetails({ ...c, insights: [lead] });
  if (!first) return `Open question: the research behind “${lead.title}” ${cite(c, lead)} is praise or habit, not a problem to solve; decide what, if anything, should change.`;
  return `${first.replace(/^Open question: /, "Open question — ")}${c.insights.length > 1 ? "; then the related findings below." : "."}`;
}

function alternatives(c: Ctx): string[] {
  const lead = c.insights[0];
  const out = [
    `Do nothing — the ${plural(c.insights.length, "reported problem")} stay${c.insights.length === 1 ? "s" : ""} open${lead ? ` (${lead.title} ${cite(c, lead)})` : ""}`,
  ];
  if (c.insights.length > 1 && lead) out.push(`Smaller scope — address only “${lead.title}” ${cite(c, lead)} now and the rest later`);
  if (c.rec?.effort_weeks !== undefined && c.rec.effort_weeks > 4) out.push("Phased delivery — ship the smallest valuable slice first, then extend");
  return out;
}

function nonGoals(c: Ctx): string[] {
  const out = c.otherInsights.slice(0, 3).map((i) => `${i.title} (not among the insights this document addresses)`);
  return out.length ? out : ["Changes beyond the cited insights"];
}

function openQuestions(c: Ctx): string[] {
  const out: string[] = [];
  for (const i of c.insights) {
    if (!i.quotes.length) out.push(`${i.title} ${cite(c, i)} has no verbatim quote — can research confirm it?`);
    else if (sourcesOf(i) <= 1) out.push(`${i.title} ${cite(c, i)} comes from a single source — how widespread is it?`);
  }
  out.push("What are today's baselines for the success metrics (not measured yet)?");
  if (!c.product?.target_users) out.push("Who is the primary user segment? (no target users are set for this workspace)");
  out.push("Who owns delivery, and what are the target dates?");
  return out.slice(0, c.opts.length === "brief" ? 3 : 8);
}

function summaryPara(c: Ctx): string {
  const lead = c.insights[0];
  const rec = c.rec;
  const parts = [
    rec ? `**Recommendation:** ${rec.title}.` : "",
    lead ? `**Why:** ${lead.title} ${cite(c, lead)}${c.insights.length > 1 ? ` and ${plural(c.insights.length - 1, "related finding")}` : ""}.` : "",
    rec?.impact_score !== undefined ? `**Impact score:** ${rec.impact_score.toFixed(2)}.` : "",
    rec?.effort_weeks !== undefined ? `**Effort:** ${rec.effort_estimate ?? effortFromWeeks(rec.effort_weeks)}, about ${rec.effort_weeks} weeks.` : "",
  ].filter(Boolean);
  return parts.join(" ");
}

// ---------------------------------------------------------------------------------------------------------------
// Per-type structures
// ---------------------------------------------------------------------------------------------------------------

function prd(c: Ctx): Section[] {
  const stories = c.opts.length === "brief" ? 2 : c.opts.length === "detailed" ? 6 : 3;
  const s: Section[] = [];
  if (c.opts.audience && /^(exec|leader|c-suite|board|investor)/.test(c.opts.audience)) s.push({ key: "summary", heading: "Summary", body: summaryPara(c) });
  s.push(
    { key: "problem", heading: "Problem", body: `${problemStatement(c)}\n\n**Impact:** ${impactLine(c)}`, mandatory: true },
    { key: "evidence", heading: "Evidence", body: bullets(evidenceItems(c, c.insights)), mandatory: true },
    { key: "users", heading: "Users", body: usersSection(c, personaNames([...c.insights, ...c.otherInsights], c.product)) },
    { key: "metrics", heading: "Goals & success metrics", body: metricsTable(c) },
    {
      key: "solution",
      heading: "Solution",
      body: [solutionSummary(c), `**Details:**\n\n${bullets(solutionDetails(c))}`, `**Alternatives considered:**\n\n${bullets(alternatives(c))}`, `**Non-goals:**\n\n${bullets(nonGoals(c))}`].join("\n\n"),
    },
    { key: "stories", heading: "User stories", body: storyList(c, stories) },
    { key: "edge", heading: "Edge cases", body: bullets(edgeCases(c)) },
    { key: "risks", heading: "Risks", body: bullets(risks(c)) },
    { key: "timeline", heading: "Timeline", body: timelineItems(c, solutionDetails(c).map((d) => truncate(d.replace(/\s*\[I\d+\]$/, "").replace(/:\s*“.*$/, ""), 120))) },
    { key: "questions", heading: "Open questions", body: bullets(openQuestions(c)) },
  );
  return s;
}

function spec(c: Ctx): Section[] {
  const reqs = solutionDetails(c).map((d, k) => `R${k + 1}. ${d.replace(/^Resolve /, "Must resolve ")}`);
  return [
    { key: "summary", heading: "Overview", body: summaryPara(c) || solutionSummary(c) },
    { key: "problem", heading: "Background", body: `${problemStatement(c)}\n\n**Evidence:**\n\n${bullets(evidenceItems(c, c.insights))}`, mandatory: true },
    { key: "solution", heading: "Requirements", body: [solutionSummary(c), `**Details:**\n\n${bullets(reqs.length ? reqs : ["R1. " + solutionSummary(c)])}`, `**Non-goals:**\n\n${bullets(nonGoals(c))}`].join("\n\n") },
    { key: "edge", heading: "Edge cases and error handling", body: bullets(edgeCases(c)) },
    { key: "metrics", heading: "Success metrics", body: metricsTable(c) },
    { key: "risks", heading: "Risks", body: bullets(risks(c)) },
    { key: "timeline", heading: "Rollout plan", body: timelineItems(c, reqs.map((r) => truncate(r.replace(/\s*\[I\d+\]$/, ""), 120))) },
    { key: "questions", heading: "Open questions", body: bullets(openQuestions(c)) },
  ];
}

function memo(c: Ctx): Section[] {
  return [
    { key: "summary", heading: "Summary", body: summaryPara(c) || problemStatement(c) },
    { key: "problem", heading: "Context", body: `${problemStatement(c)}\n\n**Impact:** ${impactLine(c)}`, mandatory: true },
    { key: "evidence", heading: "What we heard", body: bullets(evidenceItems(c, c.insights, c.opts.length === "detailed" ? 2 : 1)), mandatory: true },
    { key: "solution", heading: "Proposal", body: [solutionSummary(c), `**Alternatives considered:**\n\n${bullets(alternatives(c))}`].join("\n\n") },
    { key: "risks", heading: "Risks", body: bullets(risks(c).slice(0, c.opts.length === "brief" ? 2 : 4)) },
    {
      key: "decision",
      heading: "Decision needed",
      body: c.rec
        ? `Approve “${c.rec.title}” for planning${c.rec.effort_weeks !== undefined ? ` (about ${c.rec.effort_weeks} weeks, ${c.rec.effort_estimate ?? effortFromWeeks(c.rec.effort_weeks)})` : ""}, or ask for the open questions to be answered first.`
        : "Decide whether to turn these findings into a recommendation and a PRD.",
    },
    { key: "questions", heading: "Open questions", body: bullets(openQuestions(c)) },
  ];
}

function userStories(c: Ctx): Section[] {
  const n = c.opts.length === "brief" ? 3 : c.opts.length === "detailed" ? 10 : 6;
  return [
    { key: "problem", heading: "Context", body: `${problemStatement(c)}\n\n**Evidence:**\n\n${bullets(evidenceItems(c, c.insights, 1))}`, mandatory: true },
    { key: "users", heading: "Users", body: usersSection(c, personaNames([...c.insights, ...c.otherInsights], c.product)) },
    { key: "stories", heading: "User stories", body: storyList(c, n) },
    { key: "edge", heading: "Edge cases", body: bullets(edgeCases(c)) },
    { key: "questions", heading: "Open questions", body: bullets(openQuestions(c)) },
  ];
}

function roadmap(c: Ctx): Section[] {
  const ranked =
    c.insights.length > 0
      ? generateRecommendations({ insights: c.insights, product: c.product ?? undefined }).recommendations
      : [];
  const items = [
    ...(c.rec ? [{ title: c.rec.title, impact: c.rec.impact_score, weeks: c.rec.effort_weeks, ids: c.rec.addresses_insight_ids ?? [] }] : []),
    ...ranked
      .filter((r) => {
        if (!c.rec) return true;
        const own = new Set(c.rec.addresses_insight_ids ?? []);
        return r.title !== c.rec.title && !(r.addresses_insight_ids ?? []).every((id) => own.has(id));
      })
      .map((r) => ({ title: r.title, impact: r.impact_score, weeks: r.effort_weeks, ids: r.addresses_insight_ids ?? [] })),
  ];
  const line = (x: (typeof items)[number]) => {
    const refs = x.ids.map((id) => c.ref.get(id)).filter(Boolean).map((r) => `[${r}]`).join("");
    return `${x.title}${x.impact !== undefined ? ` — impact ${x.impact.toFixed(2)}` : ""}${x.weeks !== undefined ? `, ~${x.weeks} wk` : ""}${refs ? ` ${refs}` : ""}`;
  };
  const now = items.slice(0, 2);
  const next = items.slice(2, 4);
  const later = items.slice(4, c.opts.length === "brief" ? 5 : 7);
  const bucket = (name: string, xs: typeof items) =>
    `- **${name}**\n${(xs.length ? xs.map(line) : ["Nothing planned yet"]).map((l) => `  - ${l}`).join("\n")}`;
  return [
    {
      key: "summary",
      heading: "Summary",
      body: `${c.product?.product_name ? `${c.product.product_name}: ` : ""}${plural(items.length, "item")} ranked from ${plural(c.insights.length, "insight")}. Now: ${now.map((x) => x.title).join("; ") || "nothing yet"}.`,
    },
    { key: "timeline", heading: "Roadmap: now / next / later", body: [bucket("Now", now), bucket("Next", next), bucket("Later", later)].join("\n") },
    { key: "problem", heading: "Why: what we heard", body: bullets(evidenceItems(c, c.insights, 1)), mandatory: true },
    { key: "risks", heading: "Risks and dependencies", body: bullets(risks(c).slice(0, 3)) },
    { key: "questions", heading: "Open questions", body: bullets(openQuestions(c)) },
  ];
}

function releaseNotes(c: Ctx): Section[] {
  const fixes = c.insights
    .filter((i) => i.insight_type !== "feedback_theme")
    .slice(0, c.opts.length === "brief" ? 3 : 8)
    .map((i) => `${i.insight_type === "pain_point" ? "Fixed" : "New"}: ${i.title} ${cite(c, i)}`);
  const heard = c.insights
    .filter((i) => i.quotes.length)
    .slice(0, c.opts.length === "brief" ? 2 : 4)
    .map((i) => `“${oneLine(i.quotes[0].text)}” ${cite(c, i)}`);
  return [
    {
      key: "solution",
      heading: "What's new",
      body: [`This release addresses ${plural(fixes.length || c.insights.length, "thing")} you reported${c.insights[0] ? `, starting with: ${lowerFirst(stripEndPunct(c.insights[0].title))} ${cite(c, c.insights[0])}` : ""}.`, fixes.length ? `**Details:**\n\n${bullets(fixes)}` : ""].filter(Boolean).join("\n\n"),
    },
    { key: "problem", heading: "Why we built it", body: [`You told us:`, bullets(heard.length ? heard : c.insights.map((i) => `${i.title} ${cite(c, i)}`))].join("\n\n"), mandatory: true },
    {
      key: "later",
      heading: "Still on our list",
      body: bullets(c.otherInsights.length ? c.otherInsights.slice(0, 3).map((i) => i.title) : ["Tell us what to improve next."]),
    },
    { key: "feedback", heading: "Feedback", body: "Tell us how this works for you through in-app feedback." },
  ];
}

const STRUCTURES: Record<DocumentType, (c: Ctx) => Section[]> = {
  prd,
  spec,
  memo,
  user_story: userStories,
  roadmap_update: roadmap,
  release_notes: releaseNotes,
};

const TITLE_PREFIX: Record<DocumentType, string> = {
  prd: "PRD",
  spec: "Spec",
  memo: "Memo",
  user_story: "User stories",
  roadmap_update: "Roadmap update",
  release_notes: "Release notes",
};

/** Orders insights: the recommendation's own first (in its order), then by severity, sources and mentions. */
function selectInsights(input: DraftDocumentInput, opts: Options): { chosen: InsightInput[]; others: InsightInput[] } {
  const byId = new Map(input.insights.map((i) => [i.id, i]));
  const addressed = (input.recommendation?.addresses_insight_ids ?? []).map((id) => byId.get(id)).filter((i): i is InsightInput => !!i);
  const rank = (a: InsightInput, b: InsightInput) =>
    SEVERITY_RANK[b.severity] - SEVERITY_RANK[a.severity] || sourcesOf(b) - sourcesOf(a) || mentionsOf(b) - mentionsOf(a) || a.id.localeCompare(b.id);
  let pool = addressed.length ? addressed : [...input.insights].sort(rank);
  if (input.document_type === "roadmap_update") {
    // A roadmap ranks the whole set: the recommendation's insights first, then every other one.
    const first = new Set(pool.map((i) => i.id));
    pool = [...pool, ...[...input.insights].sort(rank).filter((i) => !first.has(i.id))];
  }
  if (opts.focus) {
    const fk = keywordSet(opts.focus);
    const score = (i: InsightInput) => [...keywordSet(`${i.title} ${i.description}`)].filter((k) => fk.has(k)).length;
    const hits = pool.filter((i) => score(i) > 0);
    if (hits.length) {
      pool = [...hits, ...pool.filter((i) => score(i) === 0)];
      opts.applied.push(`focus: ${opts.focus}`);
    }
  }
  const cap = input.document_type === "roadmap_update" ? 40 : opts.length === "brief" ? 5 : opts.length === "detailed" ? 15 : 10;
  const chosen = pool.slice(0, cap);
  const chosenIds = new Set(chosen.map((i) => i.id));
  const others = [...input.insights].filter((i) => !chosenIds.has(i.id)).sort(rank);
  return { chosen, others };
}

/**
 * Drafts a document of any of the six types from a recommendation and/or insights, locally and deterministically.
 *
 * @param input.document_type prd | spec | memo | user_story | roadmap_update | release_notes
 * @param input.recommendation optional recommendation (its `addresses_insight_ids` pick and order the insights)
 * @param input.insights the workspace insights available for grounding (quotes must already be verbatim, DESIGN.md §5)
 * @param input.user_instructions optional free text; recognised parts are applied, and it is always quoted
 * @param input.product optional workspace product context
 * @returns `{ title, content }` — content is Markdown: `# title`, a status line, the instructions note, the type's
 *   sections, and a Sources section defining `[I1]…[In]`.
 * @throws AppError `VALIDATION_ERROR` (422) for malformed input, or when there is neither a recommendation nor an insight
 *   to ground the document on.
 */
export function draftDocument(input: DraftDocumentInput): DocumentDraft {
  const parsed = DraftDocumentInput.safeParse(input);
  if (!parsed.success) {
    throw Errors.validation(parsed.error.issues.map((i) => ({ loc: i.path.map((p) => (typeof p === "number" ? p : String(p))), msg: i.message, type: i.code })));
  }
  const inp = parsed.data;
  if (!inp.recommendation && !inp.insights.length) {
    throw Errors.validation([{ loc: ["recommendation_id"], msg: "Drafting needs a recommendation or at least one insight to ground the document on", type: "missing" }]);
  }
  const opts = parseInstructions(inp.user_instructions);
  const { chosen, others } = selectInsights(inp, opts);
  const ref = new Map(chosen.map((i, k) => [i.id, refLabel(k)]));
  const c: Ctx = {
    type: inp.document_type,
    rec: inp.recommendation,
    insights: chosen,
    ref,
    product: inp.product,
    opts,
    persona: personaNames(inp.insights, inp.product)[0],
    otherInsights: others,
  };
  const title = truncate(`${TITLE_PREFIX[inp.document_type]}: ${inp.document_type === "roadmap_update" ? (inp.product?.product_name ?? subjectOf(c)) : subjectOf(c)}`, 300);
  let sections = STRUCTURES[inp.document_type](c).filter((s) => s.body.trim());

  // Instructions: exclusions, then inclusions.
  const notApplied: string[] = [];
  for (const ex of opts.exclude) {
    const key = sectionKeyOf(ex);
    const hit = sections.find((s) => s.key === key && !s.mandatory);
    if (hit) {
      sections = sections.filter((s) => s !== hit);
      opts.applied.push(`removed section: ${hit.heading}`);
    } else if (key && sections.some((s) => s.key === key && s.mandatory)) notApplied.push(`kept “${ex}”: it carries the cited evidence`);
  }
  for (const inc of opts.include) {
    const key = sectionKeyOf(inc);
    if (key && sections.some((s) => s.key === key)) {
      opts.applied.push(`section already included: ${inc}`);
      continue;
    }
    const catalogue = STRUCTURES.prd(c).concat(STRUCTURES.spec(c));
    const fromCatalogue = key ? catalogue.find((s) => s.key === key) : undefined;
    if (fromCatalogue) {
      sections.splice(Math.max(0, sections.length - 1), 0, fromCatalogue);
      opts.applied.push(`added section: ${fromCatalogue.heading}`);
    } else {
      const heading = upperFirst(inc);
      sections.splice(Math.max(0, sections.length - 1), 0, {
        key: `custom:${inc}`,
        heading,
        marker: classifyHeading(heading) === "free_text" ? undefined : "free_text",
        body: "_Requested in the drafting instructions. The local engine has no research to write this section from; fill it in._",
      });
      opts.applied.push(`added placeholder section: ${heading}`);
    }
  }

  const meta = [
    // No status here: it lives in the document's `status` field, and a copy in the text would go stale on publish.
    `*Drafted by the local engine (templates and heuristics, not an LLM) from ${plural(chosen.length, "insight")}${inp.recommendation ? ` and the recommendation “${inp.recommendation.title}”` : ""}.${opts.audience ? ` Audience: ${opts.audience}.` : ""}*`,
  ];
  if (inp.user_instructions?.trim()) {
    const applied = opts.applied.length ? `Applied: ${opts.applied.join("; ")}.` : "Nothing in them could be applied automatically by the local engine.";
    const rest = notApplied.length ? ` Not applied: ${notApplied.join("; ")}.` : "";
    meta.push(`> **Instructions:** “${oneLine(inp.user_instructions)}”\n>\n> ${applied}${rest} Anything else in the instructions is left for the editor.`);
  }
  if (!chosen.length) meta.push("> No insights were provided, so this draft contains no research claims; link insights to ground it.");

  const body = sections.map((s) => `${s.marker ? `${blockMarker(s.marker)}\n` : ""}## ${s.heading}\n\n${s.body}`);
  const content = [`# ${title}`, ...meta, ...body, sourcesSection(chosen)].filter(Boolean).join("\n\n") + "\n";
  return { title, content };
}

/** @internal exposed for unit tests. */
export const _internal = { selectInsights, personaNames, iWant, metricRows };
