/**
 * The validation kit's three documents (spec 02 Phases: assumption_map, research_plan, interview_guide), built by
 * rules from the evidence the task gathered: the workspace's insights (their type, severity, how many sources and
 * mentions back them, their verbatim quotes), the target document's own claims, and the product context. What it is:
 * a deterministic arrangement of that evidence into the three standard artefacts of assumption testing (a 2x2 of
 * importance and evidence, a plan for the riskiest, an interview guide with the users' own words as probes). What it
 * is not: it invents no finding, number or quote; every quote is an insight's stored quote, verbatim.
 */

/** An insight as the kit reads it. */
export interface KitInsight {
  id: string;
  title: string;
  description: string;
  insight_type: string;
  severity: string;
  frequency: number;
  mention_count: number;
  quotes: { text: string; source_id: string; speaker?: string | null }[];
}

/** What the kit is built from. */
export interface KitInput {
  /** What the kit validates: the target document's title, else the task's prompt. */
  subject: string;
  prompt: string;
  insights: KitInsight[];
  /** The target document, when the task names one: its claims become assumptions too. */
  document?: { id: string; title: string; content: string };
  product: { product_name: string | null; target_users: string | null };
  /** Research source types the workspace has, for the methods the plan proposes. */
  sourceTypes: string[];
}

export type Level = "high" | "medium" | "low";
export type Evidence = "strong" | "moderate" | "weak" | "none";
export type Quadrant = "test_first" | "validated" | "monitor" | "park";

export interface Assumption {
  n: number;
  statement: string;
  importance: Level;
  evidence: Evidence;
  quadrant: Quadrant;
  /** Where it comes from: an insight, or a sentence of the target document. */
  basis: { kind: "insight"; insight: KitInsight } | { kind: "document"; sentence: string; related: KitInsight[] };
}

const SEVERITY_LEVEL: Record<string, Level> = { critical: "high", high: "high", medium: "medium", low: "low" };

/** Evidence strength of an insight: how many sources and mentions back it. */
export function evidenceOf(i: Pick<KitInsight, "frequency" | "mention_count">): Evidence {
  if (i.frequency >= 3 || i.mention_count >= 8) return "strong";
  if (i.frequency >= 2 || i.mention_count >= 3) return "moderate";
  return "weak";
}

/** The 2x2: important and weakly backed assumptions are tested first. */
export function quadrantOf(importance: Level, evidence: Evidence): Quadrant {
  const important = importance !== "low";
  const backed = evidence === "strong";
  if (important) return backed ? "validated" : "test_first";
  return backed ? "monitor" : "park";
}

const lowerFirst = (s: string) => (/^[A-Z][a-z]/.test(s) ? s[0]!.toLowerCase() + s.slice(1) : s);
const trimDot = (s: string) => s.trim().replace(/[.!?]+$/, "");

/** The belief an insight implies, as a testable statement. */
export function statementOf(i: KitInsight, users: string): string {
  const t = lowerFirst(trimDot(i.title));
  switch (i.insight_type) {
    case "pain_point":
      return `${users} are held back by this problem and would change their behaviour if it went away: ${t}.`;
    case "feature_request":
      return `${users} would use this, and it would solve a real need rather than a wish: ${t}.`;
    case "opportunity":
      return `There is demand worth building for: ${t}.`;
    case "behavior":
    case "user_behavior":
      return `This is how most ${users.toLowerCase()} actually work, not only the ones we heard from: ${t}.`;
    default:
      return `This theme reflects what most ${users.toLowerCase()} think: ${t}.`;
  }
}

/** Sentences of a document that state a belief (we believe, we assume, users will, should, expect, hypothesis). */
export function claimsOf(content: string): string[] {
  // Headings are titles, not claims; every other line's markup goes, and sentences never run across paragraphs.
  const paragraphs = content.split(/\n\s*\n|\n(?=\s*(?:#|[-*]|\d+\.)\s)/).filter((p) => !/^\s*#/.test(p));
  const sentences = paragraphs.flatMap((p) => p.replace(/[#>*_`|]/g, " ").replace(/\s+/g, " ").trim().split(/(?<=[.!?])\s+/));
  const cue = /\b(we believe|we assume|we expect|we think|assum|hypothes|users? will|customers? will|people will|should|expect(s|ed)? to|likely|will (increase|reduce|improve|drive))\b/i;
  const seen = new Set<string>();
  const out: string[] = [];
  for (const s of sentences) {
    const sentence = s.trim();
    if (sentence.length < 20 || sentence.length > 300 || !cue.test(sentence)) continue;
    const k = sentence.toLowerCase();
    if (seen.has(k)) continue;
    seen.add(k);
    out.push(sentence);
    if (out.length >= 8) break;
  }
  return out;
}

const words = (s: string) => new Set(s.toLowerCase().split(/[^a-z0-9]+/).filter((w) => w.length > 3));

/** Insights sharing at least two content words with a sentence: its evidence. */
function relatedTo(sentence: string, insights: KitInsight[]): KitInsight[] {
  const w = words(sentence);
  return insights.filter((i) => [...words(`${i.title} ${i.description}`)].filter((x) => w.has(x)).length >= 2);
}

const ORDER: Quadrant[] = ["test_first", "validated", "monitor", "park"];
const LEVEL_RANK: Record<Level, number> = { high: 0, medium: 1, low: 2 };
const EVIDENCE_RANK: Record<Evidence, number> = { none: 0, weak: 1, moderate: 2, strong: 3 };

/** Every assumption of the kit, riskiest first (test_first, by importance, weakest evidence first). */
export function assumptionsOf(input: KitInput): Assumption[] {
  const users = input.product.target_users?.trim() || "Users";
  const list: Omit<Assumption, "n">[] = input.insights.slice(0, 12).map((i) => {
    const importance = SEVERITY_LEVEL[i.severity] ?? "medium";
    const evidence = evidenceOf(i);
    return { statement: statementOf(i, users), importance, evidence, quadrant: quadrantOf(importance, evidence), basis: { kind: "insight", insight: i } };
  });
  for (const sentence of input.document ? claimsOf(input.document.content) : []) {
    const related = relatedTo(sentence, input.insights);
    const evidence: Evidence = related.length === 0 ? "none" : related.reduce<Evidence>((best, r) => (EVIDENCE_RANK[evidenceOf(r)] > EVIDENCE_RANK[best] ? evidenceOf(r) : best), "weak");
    list.push({ statement: sentence, importance: "high", evidence, quadrant: quadrantOf("high", evidence), basis: { kind: "document", sentence, related } });
  }
  return list
    .sort((a, b) => ORDER.indexOf(a.quadrant) - ORDER.indexOf(b.quadrant) || LEVEL_RANK[a.importance] - LEVEL_RANK[b.importance] || EVIDENCE_RANK[a.evidence] - EVIDENCE_RANK[b.evidence])
    .map((a, n) => ({ ...a, n: n + 1 }));
}

const QUADRANT_TITLE: Record<Quadrant, string> = {
  test_first: "Test first (important, weakly backed)",
  validated: "Backed by evidence (important, strongly backed)",
  monitor: "Monitor (less important, strongly backed)",
  park: "Park (less important, weakly backed)",
};

const cell = (s: string) => s.replace(/\|/g, "\\|").replace(/\s+/g, " ");
const basisLabel = (a: Assumption) =>
  a.basis.kind === "insight"
    ? `insight ${a.basis.insight.id} (${a.basis.insight.frequency} source${a.basis.insight.frequency === 1 ? "" : "s"}, ${a.basis.insight.mention_count} mention${a.basis.insight.mention_count === 1 ? "" : "s"})`
    : `the target document${a.basis.related.length ? `; related: ${a.basis.related.map((r) => `insight ${r.id}`).join(", ")}` : "; no insight supports it yet"}`;

const quoteOf = (a: Assumption) => (a.basis.kind === "insight" ? a.basis.insight.quotes[0] : a.basis.related[0]?.quotes[0]);

/** The assumption map (Markdown). */
export function assumptionMap(input: KitInput, assumptions: Assumption[]): string {
  const lines = [
    `# Assumption map: ${input.subject}`,
    "",
    `What has to be true for "${input.subject}" to succeed, placed by how much it matters (importance) and how well the research backs it (evidence). Importance follows the severity of the insight behind each assumption; evidence follows how many sources and mentions back it. Built from ${input.insights.length} insight${input.insights.length === 1 ? "" : "s"} of this workspace${input.document ? ` and the claims of the document "${input.document.title}"` : ""}.`,
    "",
    "| # | Assumption | Importance | Evidence | Quadrant | Based on |",
    "|---|---|---|---|---|---|",
    ...assumptions.map((a) => `| ${a.n} | ${cell(a.statement)} | ${a.importance} | ${a.evidence} | ${QUADRANT_TITLE[a.quadrant].split(" (")[0]} | ${cell(basisLabel(a))} |`),
  ];
  for (const q of ORDER) {
    const inQ = assumptions.filter((a) => a.quadrant === q);
    if (!inQ.length) continue;
    lines.push("", `## ${QUADRANT_TITLE[q]}`, "");
    for (const a of inQ) {
      lines.push(`- **A${a.n}.** ${a.statement}`);
      const quote = quoteOf(a);
      if (quote) lines.push(`  > "${quote.text}"${quote.speaker ? ` (${quote.speaker})` : ""} [source ${quote.source_id}]`);
    }
  }
  if (assumptions.length === 0) lines.push("", "No insight or claim to map yet: synthesize the workspace's research sources, then run the kit again.");
  return lines.join("\n");
}

/** How an assumption is best tested, from what kind of belief it is and the research the workspace already has. */
export function methodFor(a: Assumption, sourceTypes: string[]): string {
  const type = a.basis.kind === "insight" ? a.basis.insight.insight_type : "claim";
  if (type === "behavior" || type === "user_behavior") return sourceTypes.includes("usage_data") ? "Usage data analysis (compare with the existing usage exports), then 3 to 5 interviews on the why" : "Usage data analysis or a diary study, then 3 to 5 interviews on the why";
  if (type === "feature_request" || type === "opportunity") return "Problem interviews (5 to 8), then a fake-door or concierge test to see whether people act on it";
  if (type === "feedback_theme") return sourceTypes.includes("survey") ? "A short survey to size the theme (the workspace already runs surveys), then interviews with respondents at both ends" : "A short survey to size the theme, then interviews with respondents at both ends";
  return "Problem interviews (5 to 8) with people who match the target users";
}

/** The research plan for the riskiest assumptions (Markdown). */
export function researchPlan(input: KitInput, assumptions: Assumption[], mapDocumentId: string | null): string {
  const risky = assumptions.filter((a) => a.quadrant === "test_first").slice(0, 5);
  const chosen = risky.length ? risky : assumptions.slice(0, 3);
  const users = input.product.target_users?.trim() || "people who match the product's target users";
  const speakers = [...new Set(chosen.flatMap((a) => (a.basis.kind === "insight" ? a.basis.insight.quotes : a.basis.related.flatMap((r) => r.quotes)).map((q) => q.speaker).filter((s): s is string => !!s)))].slice(0, 6);
  const lines = [
    `# Research plan: ${input.subject}`,
    "",
    "## Objective",
    "",
    `Find out, within three weeks, whether the riskiest assumptions behind "${input.subject}" hold${mapDocumentId ? ` (the assumption map: document ${mapDocumentId})` : ""}.`,
    "",
    "## Questions and methods",
    "",
  ];
  if (chosen.length === 0) lines.push("There is nothing to test yet: the workspace has no insights. Start with 5 exploratory interviews.");
  for (const a of chosen) {
    lines.push(
      `### A${a.n}. ${a.statement}`,
      "",
      `- Research question: is this true for most ${input.product.target_users?.trim().toLowerCase() || "users"}, and how much does it matter to them?`,
      `- Method: ${methodFor(a, input.sourceTypes)}.`,
      `- What we know now: ${a.evidence === "none" ? "nothing in the research supports it yet" : `${a.evidence} evidence (${basisLabel(a)})`}.`,
      `- It holds if: at least 5 of 8 participants describe it unprompted, or the measured behaviour matches it for most of the sample.`,
      `- It fails if: fewer than 2 of 8 participants recognise it, or the data contradicts it.`,
      "",
    );
  }
  lines.push(
    "## Participants",
    "",
    `8 to 10 ${users}${speakers.length ? `, including people like those already heard (${speakers.join(", ")})` : ""}; half recent, half long-standing.`,
    "",
    "## Timeline",
    "",
    "1. Week 1: recruit, schedule, pilot the interview guide once.",
    "2. Week 2: run the sessions and the data pulls.",
    "3. Week 3: synthesize the new sources in this workspace, update the assumption map, decide.",
  );
  return lines.join("\n");
}

/** Open questions for an assumption, from its kind. */
function questionsFor(a: Assumption): string[] {
  const type = a.basis.kind === "insight" ? a.basis.insight.insight_type : "claim";
  const topic = a.basis.kind === "insight" ? lowerFirst(trimDot(a.basis.insight.title)) : lowerFirst(trimDot(a.statement)).slice(0, 120);
  if (type === "pain_point") return [`Tell me about the last time you ran into ${topic}. What happened?`, "What did you do about it? What did that cost you?", "If this went away tomorrow, what would change for you?"];
  if (type === "feature_request" || type === "opportunity") return [`How do you handle ${topic} today?`, "Walk me through the last time you needed it. What did you use?", "What would make you switch from how you do it now?"];
  if (type === "behavior" || type === "user_behavior") return [`Walk me through how you usually go about ${topic}.`, "When did you last do it differently, and why?", "What would you miss if you could not do it this way?"];
  return [`What comes to mind when you think about ${topic}?`, "Can you give me a recent example?", "How important is that to you compared with the rest of your work?"];
}

/** The interview guide (Markdown). */
export function interviewGuide(input: KitInput, assumptions: Assumption[], planDocumentId: string | null): string {
  const chosen = (assumptions.filter((a) => a.quadrant === "test_first").length ? assumptions.filter((a) => a.quadrant === "test_first") : assumptions).slice(0, 5);
  const product = input.product.product_name ?? "the product";
  const lines = [
    `# Interview guide: ${input.subject}`,
    "",
    `For 45-minute interviews${planDocumentId ? ` under the research plan (document ${planDocumentId})` : ""}. Ask about past behaviour, not opinions about the future; do not pitch; let silences run.`,
    "",
    "## Introduction (5 minutes)",
    "",
    `- Thank them; explain that we are learning how people work, that there are no wrong answers and that nothing is being sold.`,
    "- Ask for consent to record and take notes.",
    "",
    "## Warm-up (5 minutes)",
    "",
    "- Tell me about your role and what a typical week looks like.",
    `- How does ${product} (or what you use instead) fit into that week?`,
    "",
  ];
  chosen.forEach((a, idx) => {
    lines.push(`## Part ${idx + 1}: A${a.n} (7 minutes)`, "", `Tests: ${a.statement}`, "");
    for (const q of questionsFor(a)) lines.push(`- ${q}`);
    const quote = quoteOf(a);
    if (quote) lines.push(`- Probe: another person told us "${quote.text}". How does that compare with your experience?`);
    lines.push("");
  });
  lines.push(
    "## Wrap-up (5 minutes)",
    "",
    "- Is there anything we should have asked but did not?",
    "- Who else should we talk to?",
    "",
    "## After the session",
    "",
    "- Upload the transcript or notes as a research source of this workspace, so the next synthesis (or tonight's research cycle) takes it in.",
  );
  return lines.join("\n");
}
