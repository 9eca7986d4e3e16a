import type { InsightInput } from "../../recommendation/engine/types";
import { normaliseForMatch } from "../../recommendation/engine/text";
import { insightHref } from "../blocks";

/**
 * Grounding rules for drafted documents, shared by the local and Bedrock engines and checked in code, not by trust
 * (DESIGN.md section 5: quotes must be verbatim):
 *
 * 1. Insights are cited as `[I1]`, `[I2]`, … in the order they are listed to the writer; each reference resolves to an
 *    insight through a Markdown link definition `[I1]: #insight-<id> "<title>"` written by code in the Sources section.
 * 2. Every quoted span (text in “…”) must be a verbatim quote of a cited insight (whitespace and quote styles
 *    normalised), or an insight / recommendation title, or the user's instructions.
 * 3. No reference may point at an insight that was not provided.
 */

/** Reference label of the n-th (0-based) insight: `I1`, `I2`, … */
export const refLabel = (index: number): string => `I${index + 1}`;

/** `[I1]: #insight-<id> "title"` lines plus a visible Sources list, for the given insights in reference order. */
export function sourcesSection(insights: InsightInput[], heading = "Sources"): string {
  if (!insights.length) return "";
  const items = insights.map((i, k) => {
    const n = Math.max(i.frequency, new Set(i.quotes.map((q) => q.source_id)).size);
    return `- [${refLabel(k)}] ${i.title} — ${i.insight_type.replace(/_/g, " ")}, ${i.severity}, ${n} source${n === 1 ? "" : "s"}, ${i.mention_count ?? i.quotes.length} mention${(i.mention_count ?? i.quotes.length) === 1 ? "" : "s"}`;
  });
  const defs = insights.map((i, k) => `[${refLabel(k)}]: ${insightHref(i.id)} "${i.title.replace(/"/g, "'")}"`);
  return `## ${heading}\n\n${items.join("\n")}\n\n${defs.join("\n")}`;
}

export interface GroundingProblem {
  kind: "unknown_reference" | "unverified_quote";
  detail: string;
}

/**
 * Checks a drafted Markdown document against the grounding rules.
 *
 * @param content the document Markdown (with or without the Sources section)
 * @param insights the insights in reference order (`[I1]` = insights[0])
 * @param allowedQuoted extra strings that may appear in “…” (recommendation title, user instructions)
 * @returns the problems found; empty when grounded. Quoted spans shorter than 12 characters are ignored (scare quotes).
 */
export function checkGrounding(content: string, insights: InsightInput[], allowedQuoted: string[] = []): GroundingProblem[] {
  const problems: GroundingProblem[] = [];
  for (const m of content.matchAll(/\[I(\d+)\]/g)) {
    const n = Number(m[1]);
    if (n < 1 || n > insights.length) problems.push({ kind: "unknown_reference", detail: `[I${n}] does not refer to a provided insight` });
  }
  const corpus = [
    ...insights.flatMap((i) => [...i.quotes.map((q) => q.text), i.title]),
    ...allowedQuoted,
  ].map(normaliseForMatch);
  for (const m of content.matchAll(/“([^“”]+)”/g)) {
    const span = normaliseForMatch(m[1]).replace(/^\.\.\.|\.\.\.$/g, "").trim();
    if (span.length < 12) continue;
    if (!corpus.some((c) => c.includes(span))) problems.push({ kind: "unverified_quote", detail: `“${m[1]}” is not a verbatim quote of a provided insight` });
  }
  const seen = new Set<string>();
  return problems.filter((p) => (seen.has(p.detail) ? false : (seen.add(p.detail), true)));
}
