/**
 * The local engine's answers shaped on an activated skill's output template (issue #22 point 2: "the run's output
 * follows the skill's output template"; DESIGN.md 6.1). The skills hook (core/skill/hook.ts) puts the template into
 * the system prompt between `<skill-output-template slug="…">` tags; this file reads it back, says which evidence
 * its sections call for (so the engine reads it), and writes the answer section by section, in the template's order.
 *
 * How a section is filled is decided by its heading alone, from a fixed vocabulary (below): a heading naming themes
 * or findings gets the workspace's insights with their verbatim quotes, a summary or "what we already know" their
 * titles, a ranking or recommendations section the recommendations by priority, a sources section the sources. The
 * template's bodies (tables of {{placeholders}}, guidance comments) are never copied: a section the evidence cannot
 * fill says "Not enough evidence in the workspace for this section." (an optional one is left out), so the engine
 * never invents the reach of a RICE row, a Kano count or a competitor's pricing. Every line that quotes cites its
 * source, and every item its id, as the harness contract (core/harness/contract.ts) and verifier expect.
 */
import { templateSections } from "../skill/format";
import { SEVERITY_RANK } from "../insight/severity";

/** The line a section gets when the tool results hold nothing that fills it. */
export const NOT_ENOUGH = "Not enough evidence in the workspace for this section.";

/** What fills a section: insights with quotes, insight titles, recommendations, sources; null when nothing can. */
export type SectionKind = "themes" | "findings" | "recommendations" | "sources" | null;

/** An activated skill's output template, as the system prompt carries it. */
export interface ActiveTemplate {
  slug: string;
  template: string;
}

export type TemplateInsight = { id: string; title: string; severity: string; frequency: number; insight_type: string; quotes: { text: string; source_id: string; speaker: string | null }[] };
export type TemplateRecommendation = { id: string; title: string; status: string; priority_rank: number | null; impact_score: number | null };
export type TemplateSource = { id: string; title: string; source_type: string; processing_status: string };

/** The evidence an answer may draw on: what the run's tools returned, nothing else. */
export interface TemplateEvidence {
  insights: TemplateInsight[];
  recommendations: TemplateRecommendation[];
  sources: TemplateSource[];
  /** The goal's queued write, when it queued one: said after the title so the user knows it waits for approval. */
  pending?: { id: string; summary: string };
}

const TAG = /<skill-output-template slug="([^"]*)">\n?([\s\S]*?)\n?<\/skill-output-template>/;

/** The output template the system prompt carries (the skills hook's tag), or undefined when no skill with one is active. */
export function templateOf(system: string): ActiveTemplate | undefined {
  const m = TAG.exec(system);
  return m && m[2]!.trim() ? { slug: m[1]!, template: m[2]! } : undefined;
}

// Headings that ask for judgement the engine cannot make from evidence (what contradicts, what is missing, what a
// check concludes): checked first, so "Evidence check" or "Research gaps" is never filled with a list of insights.
const CANNOT = /\b(open questions?|contradictions?|outliers?|gaps?|checks?|caveats?|risks?|assumptions?|blockers?|verdict|method|timeline|what would change)\b/i;
const KINDS: [Exclude<SectionKind, null>, RegExp][] = [
  ["themes", /\b(themes?|key findings|findings|what we heard|pain points?|quotes|voice of the (customer|user)s?)\b/i],
  ["findings", /\b(summary|what we (already )?know|insights?|evidence)\b/i],
  ["recommendations", /\b(ranking|recommendations?|priorities|prioriti[sz]ation|opportunities to explore|next steps)\b/i],
  ["sources", /\b(sources?|evidence base|interviews read|data used)\b/i],
];

/** What a section of this heading is filled with (see the file's header), or null when the evidence cannot fill it. */
export function sectionKind(heading: string): SectionKind {
  if (CANNOT.test(heading)) return null;
  return KINDS.find(([, re]) => re.test(heading))?.[0] ?? null;
}

/** The template's text before its first `##` heading (its title and summary line). */
const preambleOf = (template: string) => template.split(/^##\s/m)[0] ?? "";

/**
 * The evidence a template calls for: the kinds its sections are filled with, and "sources" too when its opening
 * names what was read (sources, interviews, participants, respondents), for the answer's sources line.
 */
export function evidenceNeeded(template: string): Set<Exclude<SectionKind, null>> {
  const kinds = new Set(templateSections(template).map((s) => sectionKind(s.heading)).filter((k): k is Exclude<SectionKind, null> => k !== null));
  if (/\b(sources?|interviews?|participants?|respondents?)\b/i.test(preambleOf(template).replace(/\{\{[^}]*\}\}|<!--[\s\S]*?-->/g, ""))) kinds.add("sources");
  return kinds;
}

/** The template's `#` title up to its first placeholder ("# Interview synthesis: {{topic}}" → "Interview synthesis"), or "" when nothing is left. */
export function titleOf(template: string): string {
  const line = /^#\s+(.+)$/m.exec(preambleOf(template))?.[1] ?? "";
  return line.replace(/<!--.*?-->/g, "").split("{{")[0]!.replace(/[\s:—–\-(,·|]+$/u, "").trim();
}

/** Insights shown in a section; the rest are named by count so nothing is silently dropped. */
const MAX_ITEMS = 5;
/** Quotes shown per theme (the interview-synthesis template asks for two). */
const QUOTES_PER_THEME = 2;

const strongestFirst = (insights: TemplateInsight[]) =>
  [...insights].sort((a, b) => (SEVERITY_RANK[b.severity] ?? 0) - (SEVERITY_RANK[a.severity] ?? 0) || b.frequency - a.frequency);
const byPriority = (recs: TemplateRecommendation[]) => [...recs].sort((a, b) => (a.priority_rank ?? 99) - (b.priority_rank ?? 99) || (b.impact_score ?? 0) - (a.impact_score ?? 0));
const words = (s: string) => s.replace(/_/g, " ");
const more = (shown: number, total: number, what: string) => (total > shown ? `\n\n(${shown} of ${total} ${what} shown)` : "");
const quoteLine = (q: TemplateInsight["quotes"][number]) => `> "${q.text}"${q.speaker ? ` (${q.speaker})` : ""} [source ${q.source_id}]`;

/** A section's body from the evidence, or undefined when the evidence holds nothing for it. */
function sectionBody(kind: SectionKind, e: TemplateEvidence): string | undefined {
  if (kind === "themes" && e.insights.length) {
    const shown = strongestFirst(e.insights).slice(0, MAX_ITEMS);
    const blocks = shown.map((i, n) =>
      [`### ${n + 1}. ${i.title}`, `**Severity:** ${i.severity} · **Type:** ${words(i.insight_type)} [insight ${i.id}]`, ...i.quotes.slice(0, QUOTES_PER_THEME).map(quoteLine)].join("\n\n"),
    );
    return blocks.join("\n\n") + more(shown.length, e.insights.length, "insights");
  }
  if (kind === "findings" && e.insights.length) {
    const shown = strongestFirst(e.insights).slice(0, MAX_ITEMS);
    return shown.map((i) => `- **${i.title}** (${words(i.insight_type)}, ${i.severity}) [insight ${i.id}]`).join("\n") + more(shown.length, e.insights.length, "insights");
  }
  if (kind === "recommendations" && e.recommendations.length) {
    const shown = byPriority(e.recommendations).slice(0, MAX_ITEMS);
    const line = (r: TemplateRecommendation, n: number) =>
      `${n + 1}. **${r.title}** (${words(r.status)}${typeof r.impact_score === "number" ? `, impact score ${r.impact_score}` : ""}) [recommendation ${r.id}]`;
    return shown.map(line).join("\n") + more(shown.length, e.recommendations.length, "recommendations");
  }
  if (kind === "sources" && e.sources.length) {
    const shown = e.sources.slice(0, MAX_ITEMS * 2);
    return shown.map((s) => `- **${s.title}** (${words(s.source_type)}, ${s.processing_status}) [source ${s.id}]`).join("\n") + more(shown.length, e.sources.length, "sources");
  }
  return undefined;
}

/**
 * The answer on a template: its title (placeholders cut), the sources read and any write waiting for approval, then
 * each `##` section of the template in order, its heading as the template gives it (templateSections: placeholders
 * and guidance removed) and its body from the evidence, or {@link NOT_ENOUGH}; an optional section with nothing to
 * fill it is left out.
 * @param template the output template's Markdown (core/skill/format.ts templateSections reads its sections)
 * @param e what the run's tools returned
 * @returns Markdown; every quote is an insight's stored quote with its source id, every item carries its id
 */
export function composeTemplated(template: string, e: TemplateEvidence): string {
  const parts: string[] = [];
  const title = titleOf(template);
  if (title) parts.push(`# ${title}`);
  if (evidenceNeeded(template).has("sources") && e.sources.length) {
    const shown = e.sources.slice(0, MAX_ITEMS * 2);
    parts.push(`**Sources read:** ${shown.map((s) => `${s.title} [source ${s.id}]`).join("; ")}${e.sources.length > shown.length ? `; and ${e.sources.length - shown.length} more` : ""}`);
  }
  if (e.pending) parts.push(`I have prepared this for you: **${e.pending.summary}**. Nothing is written yet: it waits for your approval as pending action \`${e.pending.id}\`.`);
  for (const s of templateSections(template)) {
    if (!s.heading) continue;
    const body = sectionBody(sectionKind(s.heading), e);
    if (body === undefined && s.optional) continue;
    parts.push(`## ${s.heading}`, body ?? NOT_ENOUGH);
  }
  return parts.join("\n\n");
}
