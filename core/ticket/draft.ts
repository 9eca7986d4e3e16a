/**
 * A block becomes a ticket (spec 02 "Execution tickets": generate): pure functions, so every field's origin is a
 * rule over the block, the insights it cites and their sources, written down in `trace` and tested.
 *
 * | field | from |
 * |---|---|
 * | title | the block's own title, unless it is its type's default ("User story"); then the block's main sentence |
 * | body | the block's content as Markdown, then an Evidence section: each cited insight with its verbatim quotes and the names of their sources |
 * | ticket_type | the block type: user_story story; solution feature; problem and timeline epic; the others task |
 * | priority | the block's own rating (a story's MoSCoW, a risk's likelihood and impact), else the highest severity among the cited insights, else P2 |
 * | labels | the block type, and the types of the cited insights |
 * | acceptance_criteria | the block's testable list (a story's criteria, a solution's details, a metric's targets, a timeline's deliverables...) |
 * | estimated_effort | a T-shirt size from the number of acceptance criteria: ≤1 S, ≤3 M, ≤6 L, more XL |
 *
 * Cited insights: a problem's evidence `insight_id`s, `#insight-<id>` links anywhere in the block, and `[In]`
 * references resolved through the document's Sources definitions (`[I1]: #insight-<id>`, written by the drafting
 * engines), else the document's `related_insight_ids` in order ([I1] is the first, as drafting lists them).
 */
import { createHash } from "node:crypto";
import {
  DEFAULT_TITLES,
  GROUPED_TYPES,
  validateBlockContent,
  type BlockContent,
  type BlockType,
} from "../document/blocks";
import type { TicketPriority } from "./mapping";
import { TICKET_BODY_MAX, TICKET_CRITERION_MAX, TICKET_TEXT_MAX_BYTES, ticketTextBytes } from "./schema";

/** A cited insight as the body shows it; `quotes[].source_name` is the source's title (its file name otherwise). */
export interface EvidenceInsight {
  id: string;
  title: string;
  insight_type: string;
  severity: "low" | "medium" | "high" | "critical";
  frequency: number;
  quotes: { text: string; source_id: string; source_name: string | null; speaker: string | null }[];
}

export interface BlockForTicket {
  id: string;
  block_type: BlockType;
  title: string;
  content: unknown;
  position: number;
}

export interface DocumentForTicket {
  id: string;
  title: string;
  document_type: string;
}

export interface TicketDraft {
  title: string;
  body: string;
  ticket_type: string;
  priority: TicketPriority;
  labels: string[];
  acceptance_criteria: string[];
  estimated_effort: string;
  evidence_insight_ids: string[];
  trace: Record<string, string>;
}

/** At most this many insights, and quotes per insight, go into a body (GitHub takes 65,536 characters). */
export const MAX_EVIDENCE_INSIGHTS = 8;
export const MAX_QUOTES_PER_INSIGHT = 3;
/**
 * Characters the Evidence section may take in a body. Quotes are kept whole (never cut: they are verbatim), so a
 * quote that would pass this is left out and counted (quotes may be 5,000 characters: 24 of them pass GitHub's limit).
 */
export const EVIDENCE_MAX_CHARS = 20_000;
/** At most this many cited insight ids are kept on a ticket (the body shows the first MAX_EVIDENCE_INSIGHTS). */
export const MAX_EVIDENCE_IDS = 100;
/** Characters kept in the Evidence section for its note on what was left out (the note takes about 100). */
const NOTE_ROOM = 160;
/** What ends a summary cut to fit the body. */
const CUT_NOTE = "\n\n… (cut: the block is longer than a ticket holds; the document has the whole text)";
const TITLE_MAX = 120;

/** The ticket of a block has a fixed id (a UUID derived from the document and block ids): generating twice, or two
 * generations at once, cannot give one block two tickets. */
export function ticketIdOf(documentId: string, blockId: string): string {
  const h = createHash("sha256").update(`execution-ticket:${documentId}:${blockId}`).digest("hex");
  // RFC 9562 version 8 (custom) with the RFC variant: a valid UUID for every validator.
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-8${h.slice(13, 16)}-${((parseInt(h[16]!, 16) & 0x3) | 0x8).toString(16)}${h.slice(17, 20)}-${h.slice(20, 32)}`;
}

/** `[In]` → insight id, from the document's reference definitions, else from `related_insight_ids` in order. */
export function insightRefs(content: string, relatedInsightIds: string[]): Map<number, string> {
  const refs = new Map<number, string>();
  relatedInsightIds.forEach((id, i) => refs.set(i + 1, id));
  for (const m of content.matchAll(/^\s{0,3}\[I(\d+)\]:\s*<?#insight-([A-Za-z0-9_-]+)>?/gm)) refs.set(Number(m[1]), m[2]!);
  return refs;
}

/** The insight ids a block cites, in order of first mention. */
export function citedInsightIds(block: Pick<BlockForTicket, "block_type" | "content">, refs: Map<number, string>): string[] {
  const ids: string[] = [];
  const add = (id: string | undefined) => {
    if (id && !ids.includes(id)) ids.push(id);
  };
  if (block.block_type === "problem") {
    for (const e of ((block.content as { evidence?: { insight_id?: string }[] })?.evidence ?? [])) add(e.insight_id);
  }
  const text = JSON.stringify(block.content ?? {});
  for (const m of text.matchAll(/#insight-([A-Za-z0-9_-]+)|\[I(\d+)\]/g)) add(m[1] ?? refs.get(Number(m[2])));
  return ids;
}

const SEVERITY_PRIORITY: Record<EvidenceInsight["severity"], TicketPriority> = { critical: "P0", high: "P1", medium: "P2", low: "P3" };
const PRIORITY_RANK: Record<TicketPriority, number> = { P0: 0, P1: 1, P2: 2, P3: 3 };
const MOSCOW: Record<"must" | "should" | "could", TicketPriority> = { must: "P1", should: "P2", could: "P3" };
const LEVEL = { low: 1, medium: 2, high: 3 } as const;

/** A risk's priority from likelihood × impact (both: 9 P0, ≥6 P1, ≥3 P2, else P3; one: high P1, medium P2, low P3). */
export function riskPriority(likelihood?: keyof typeof LEVEL, impact?: keyof typeof LEVEL): TicketPriority | null {
  if (likelihood && impact) {
    const score = LEVEL[likelihood] * LEVEL[impact];
    return score >= 9 ? "P0" : score >= 6 ? "P1" : score >= 3 ? "P2" : "P3";
  }
  const one = likelihood ?? impact;
  return one ? (["P3", "P2", "P1"] as const)[LEVEL[one] - 1]! : null;
}

/** T-shirt size from the number of acceptance criteria (≤1 S, ≤3 M, ≤6 L, more XL). */
export function effortOf(criteria: number): "S" | "M" | "L" | "XL" {
  return criteria <= 1 ? "S" : criteria <= 3 ? "M" : criteria <= 6 ? "L" : "XL";
}

const kebab = (s: string) => s.replace(/_/g, "-");
const oneLine = (s: string) => s.replace(/\s+/g, " ").trim();
/** The first sentence of a text, at most TITLE_MAX characters (cut at a word). */
function headline(text: string): string {
  const flat = oneLine(text.replace(/\[I\d+\]/g, ""));
  const sentence = /^(.+?[.!?])(\s|$)/.exec(flat)?.[1] ?? flat;
  if (sentence.length <= TITLE_MAX) return sentence.replace(/[.!?]$/, "");
  const cut = sentence.slice(0, TITLE_MAX - 1);
  return `${cut.slice(0, Math.max(cut.lastIndexOf(" "), 40))}…`;
}
const capitalise = (s: string) => (s ? s[0]!.toUpperCase() + s.slice(1) : s);
const bullets = (items: string[]) => items.map((i) => `- ${oneLine(i)}`).join("\n");
const section = (heading: string, items: string[]) => (items.length ? `**${heading}:**\n\n${bullets(items)}` : "");
const join = (...parts: (string | false | null | undefined)[]) => parts.filter((p): p is string => !!p && p.trim() !== "").join("\n\n");

/** Titles that name only the type (the defaults and the grouped headings): the content then gives the title. */
const isGeneric = (title: string, type: BlockType) => {
  const t = title.trim().toLowerCase();
  return !t || t === DEFAULT_TITLES[type].toLowerCase() || t === (GROUPED_TYPES[type] ?? "").toLowerCase();
};

type Shape = { title: string; titleFrom: string; summary: string; ticket_type: string; criteria: string[]; criteriaFrom: string; own?: { priority: TicketPriority; from: string } | null; skip?: "wont_do" | "empty" };

/** What each block type contributes (see the table in the module comment). */
function shapeOf(block: BlockForTicket): Shape {
  const t = block.block_type;
  const c = validateBlockContent(t, block.content) as BlockContent;
  switch (t) {
    case "user_story": {
      const s = c as BlockContent<"user_story">;
      const article = /^[aeiou]/i.test(s.as_a) ? "an" : "a";
      const want = s.i_want.replace(/^to\s+/i, "");
      return {
        title: capitalise(headline(want)), titleFrom: "user_story.i_want",
        summary: `As ${article} ${s.as_a}, I want ${s.i_want}${s.so_that ? `, so that ${s.so_that}` : ""}.`,
        ticket_type: "story", criteria: s.acceptance_criteria, criteriaFrom: "user_story.acceptance_criteria",
        own: s.priority && s.priority !== "wont" ? { priority: MOSCOW[s.priority], from: `user_story.priority (MoSCoW ${s.priority})` } : null,
        ...(s.priority === "wont" ? { skip: "wont_do" as const } : !s.i_want.trim() ? { skip: "empty" as const } : {}),
      };
    }
    case "solution": {
      const s = c as BlockContent<"solution">;
      return {
        title: headline(s.summary), titleFrom: "solution.summary",
        summary: join(s.summary, section("Non-goals", s.non_goals), section("Alternatives considered", s.alternatives_considered)),
        ticket_type: "feature", criteria: s.details, criteriaFrom: "solution.details",
        ...(!s.summary.trim() && !s.details.length ? { skip: "empty" as const } : {}),
      };
    }
    case "edge_case": {
      const s = c as BlockContent<"edge_case">;
      return {
        title: `Handle: ${headline(s.scenario)}`, titleFrom: "edge_case.scenario",
        summary: join(`**Scenario:** ${s.scenario}`, s.expected_behavior && `**Expected behavior:** ${s.expected_behavior}`),
        ticket_type: "task", criteria: s.expected_behavior.trim() ? [`${oneLine(s.scenario)}: ${oneLine(s.expected_behavior)}`] : [], criteriaFrom: "edge_case.scenario + expected_behavior",
        ...(!s.scenario.trim() ? { skip: "empty" as const } : {}),
      };
    }
    case "risk": {
      const s = c as BlockContent<"risk">;
      const p = riskPriority(s.likelihood, s.impact);
      return {
        title: `Mitigate: ${headline(s.risk)}`, titleFrom: "risk.risk",
        summary: join(s.risk, bullets([s.likelihood && `Likelihood: ${s.likelihood}`, s.impact && `Impact: ${s.impact}`, s.owner && `Owner: ${s.owner}`].filter((x): x is string => !!x)), s.mitigation && `**Mitigation:** ${s.mitigation}`),
        ticket_type: "task", criteria: s.mitigation.trim() ? [s.mitigation] : [], criteriaFrom: "risk.mitigation",
        own: p ? { priority: p, from: `risk.likelihood ${s.likelihood ?? "-"} × risk.impact ${s.impact ?? "-"}` } : null,
        ...(!s.risk.trim() ? { skip: "empty" as const } : {}),
      };
    }
    case "metrics": {
      const s = c as BlockContent<"metrics">;
      const criteria = s.metrics.map((m) => `${m.name}: ${m.target}${m.baseline ? ` (baseline ${m.baseline})` : ""}${m.measurement ? `, measured by ${m.measurement}` : ""}`);
      return {
        title: `Measure ${s.metrics.map((m) => m.name).slice(0, 3).join(", ")}`.slice(0, TITLE_MAX), titleFrom: "metrics.metrics[].name",
        summary: "Instrument these metrics so the release can be judged against its targets.", ticket_type: "task",
        criteria, criteriaFrom: "metrics.metrics[] (name, target, baseline, measurement)",
        ...(!s.metrics.length ? { skip: "empty" as const } : {}),
      };
    }
    case "timeline": {
      const s = c as BlockContent<"timeline">;
      const criteria = s.milestones.flatMap((m) => (m.deliverables.length ? m.deliverables.map((d) => `${m.name}: ${d}`) : [m.name]));
      return {
        title: `Deliver ${s.milestones.map((m) => m.name).slice(0, 3).join(", ")}`.slice(0, TITLE_MAX), titleFrom: "timeline.milestones[].name",
        summary: bullets(s.milestones.map((m) => `${m.name}${m.target_date ? ` (by ${m.target_date})` : m.week !== undefined ? ` (week ${m.week})` : ""}`)),
        ticket_type: "epic", criteria, criteriaFrom: "timeline.milestones[].deliverables",
        ...(!s.milestones.length ? { skip: "empty" as const } : {}),
      };
    }
    case "problem": {
      const s = c as BlockContent<"problem">;
      return {
        title: headline(s.statement), titleFrom: "problem.statement",
        summary: join(s.statement, s.affected_users && `**Affected users:** ${s.affected_users}`, s.impact && `**Impact:** ${s.impact}`),
        ticket_type: "epic", criteria: [], criteriaFrom: "none (a problem states no criteria)",
        ...(!s.statement.trim() ? { skip: "empty" as const } : {}),
      };
    }
    case "persona": {
      const s = c as BlockContent<"persona">;
      return {
        title: `Support ${s.name}`.slice(0, TITLE_MAX), titleFrom: "persona.name",
        summary: join(s.description, section("Pain points", s.pain_points)),
        ticket_type: "task", criteria: s.goals, criteriaFrom: "persona.goals",
        ...(!s.name.trim() ? { skip: "empty" as const } : {}),
      };
    }
    case "free_text": {
      const s = c as BlockContent<"free_text">;
      const items = [...s.markdown.matchAll(/^\s*[-*]\s+(?:\[[ xX]\]\s+)?(.+)$/gm)].map((m) => m[1]!.trim());
      return {
        title: headline(s.markdown.replace(/^#+\s.*$/gm, "")), titleFrom: "free_text.markdown (first sentence)",
        summary: s.markdown.trim(), ticket_type: "task", criteria: items, criteriaFrom: "free_text.markdown list items",
        ...(!s.markdown.trim() ? { skip: "empty" as const } : {}),
      };
    }
  }
}

/** The Evidence section: each insight with its verbatim quotes and source names (quotes are never reworded). */
export function evidenceMarkdown(insights: EvidenceInsight[], maxChars = EVIDENCE_MAX_CHARS): string {
  if (!insights.length) return "";
  // Room is kept for the note that counts what was left out, so the whole section stays within `maxChars`.
  let used = "## Evidence\n\n".length + NOTE_ROOM;
  let left = 0;
  const items: string[] = [];
  for (const i of insights.slice(0, MAX_EVIDENCE_INSIGHTS)) {
    const head = `**${oneLine(i.title)}** (${i.insight_type.replace(/_/g, " ")}, ${i.severity} severity, ${i.frequency} source${i.frequency === 1 ? "" : "s"})`;
    // An item is its head, a blank line, its quotes, and the blank line that joins it to the next.
    if (used + head.length + 4 > maxChars) {
      left += Math.min(i.quotes.length, MAX_QUOTES_PER_INSIGHT);
      continue;
    }
    used += head.length + 4;
    const quotes: string[] = [];
    for (const q of i.quotes.slice(0, MAX_QUOTES_PER_INSIGHT)) {
      const who = [q.speaker, q.source_name ? `*${q.source_name}*` : null].filter(Boolean).join(", ");
      const line = `- “${q.text}”${who ? ` — ${who}` : ""}`;
      if (used + line.length + 1 > maxChars) {
        left++;
        continue;
      }
      used += line.length + 1;
      quotes.push(line);
    }
    items.push(join(head, quotes.join("\n")));
  }
  const more = left ? `\n\n(${left} more quote${left === 1 ? "" : "s"} of the cited insights left out: a ticket holds ${maxChars.toLocaleString("en")} characters of evidence)` : "";
  return `## Evidence\n\n${items.join("\n\n")}${more}`;
}

/** `summary` cut (at a character boundary, with a note) so that it fits in `max` characters; `max` ≥ the note. */
function cutSummary(summary: string, max: number): { text: string; cut: boolean } {
  if (summary.length <= max) return { text: summary, cut: false };
  let text = summary.slice(0, Math.max(0, max - CUT_NOTE.length));
  if (/[\uD800-\uDBFF]$/.test(text)) text = text.slice(0, -1);
  return { text: `${text}${CUT_NOTE}`, cut: true };
}

/** A criterion cut to {@link TICKET_CRITERION_MAX} characters (at a character boundary, ending "…"). */
function capCriterion(c: string): string {
  if (c.length <= TICKET_CRITERION_MAX) return c;
  let text = c.slice(0, TICKET_CRITERION_MAX - 1);
  if (/[\uD800-\uDBFF]$/.test(text)) text = text.slice(0, -1);
  return `${text}…`;
}

/**
 * The ticket of one block: every field by the rules above, and `trace` naming each one's origin.
 * @param insights the insights the block cites (see {@link citedInsightIds}), in citation order
 * @returns null with the reason when the block describes no work (an empty block, a "won't" story)
 * @throws AppError VALIDATION_ERROR when the stored content does not fit its type (stored blocks always do)
 */
export function draftTicket(doc: DocumentForTicket, block: BlockForTicket, insights: EvidenceInsight[]): TicketDraft | { skip: "wont_do" | "empty" } {
  const shape = shapeOf(block);
  if (shape.skip) return { skip: shape.skip };
  const ownTitle = !isGeneric(block.title, block.block_type);
  // An `[In]` reference means something only inside the document: the body cites the insight instead.
  const title = ownTitle ? oneLine(block.title.replace(/\s*\[I\d+\]/g, "")).slice(0, 256) : shape.title || DEFAULT_TITLES[block.block_type];
  let priority: TicketPriority = "P2";
  let priorityFrom = "default (the block rates nothing and cites no insight)";
  if (shape.own) {
    priority = shape.own.priority;
    priorityFrom = shape.own.from;
  } else if (insights.length) {
    const top = insights.map((i) => SEVERITY_PRIORITY[i.severity]).sort((a, b) => PRIORITY_RANK[a] - PRIORITY_RANK[b])[0]!;
    priority = top;
    priorityFrom = `highest severity of the cited insights (${insights.find((i) => SEVERITY_PRIORITY[i.severity] === top)!.severity})`;
  }
  const criteria = shape.criteria.map(oneLine).filter(Boolean).slice(0, 50).map(capCriterion);
  const labels = [kebab(block.block_type), ...new Set(insights.map((i) => kebab(i.insight_type)))].slice(0, 4);
  const footer = `---\n\nGenerated from the ${block.block_type.replace(/_/g, " ")} block “${oneLine(block.title || DEFAULT_TITLES[block.block_type])}” of *${oneLine(doc.title).slice(0, 500)}* (${doc.document_type}).`;
  // The body fits TICKET_BODY_MAX: evidence within its own budget, the footer whole, the summary cut to the rest.
  const evidence = evidenceMarkdown(insights);
  const summary = cutSummary(shape.summary, TICKET_BODY_MAX - evidence.length - footer.length - 4);
  const body = join(summary.text, evidence, footer);
  // Criteria in three-byte characters can pass the ticket's byte budget: the last ones are left out until it fits.
  let kept = criteria.length;
  while (kept > 0 && ticketTextBytes({ title, body, acceptance_criteria: criteria.slice(0, kept), labels }) > TICKET_TEXT_MAX_BYTES) kept--;
  const dropped = criteria.length - kept;
  criteria.length = kept;
  return {
    title,
    body,
    ticket_type: shape.ticket_type,
    priority,
    labels,
    acceptance_criteria: criteria,
    estimated_effort: effortOf(criteria.length),
    evidence_insight_ids: insights.slice(0, MAX_EVIDENCE_IDS).map((i) => i.id),
    trace: {
      title: ownTitle ? "block.title" : shape.titleFrom,
      body: `${block.block_type} content${summary.cut ? " (cut to fit)" : ""}${insights.length ? ` + quotes of ${insights.length} cited insight${insights.length === 1 ? "" : "s"}` : ""}`,
      ticket_type: `block_type ${block.block_type}`,
      priority: priorityFrom,
      labels: insights.length ? "block_type + cited insights' types" : "block_type",
      acceptance_criteria: dropped ? `${shape.criteriaFrom} (the last ${dropped} left out: the ticket's size limit)` : shape.criteriaFrom,
      estimated_effort: `${criteria.length} acceptance criteria`,
    },
  };
}
