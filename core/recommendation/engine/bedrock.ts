import * as z from "zod";
import type { CallUsage, Model, ModelTier } from "../../ai/ports";
import { Errors } from "../../error";
import { normaliseForMatch, truncate } from "./text";
import { SEVERITY_RANK } from "../../insight/severity";
import {
  EffortEstimate,
  GenerateRecommendationsInput,
  type GenerateRecommendationsResult,
  type InsightInput,
  type RecommendationDraft,
  effortFromWeeks,
} from "./types";

/**
 * Recommendation generation with the Model port (Bedrock Converse + tool use in AWS), spec 01
 * `POST /api/recommendations/generate`. Same input and result shapes as the local engine (./local.ts).
 *
 * Grounding is enforced in code through the tool schema, so the Bedrock adapter's repair loop (core/ai/bedrock.ts:
 * one repair turn, then fresh attempts, then AppError INTERNAL) handles violations like any malformed output:
 * - `addresses_insight_ids` must be non-empty and contain only ids that were sent;
 * - any text in “…” in a description or rationale must be a verbatim quote or title of a sent insight;
 * - 3 to 7 recommendations, impact_score 0..1, effort_weeks 0..52.
 * - titles are unique.
 * After validation, `effort_estimate` is recomputed from `effort_weeks` (buckets as in ./types.ts), so the two fields
 * can never disagree.
 */

const SYSTEM = [
  "You are a senior product manager. You receive research insights (each with an id, type, severity, the number of",
  "sources and mentions behind it, and verbatim user quotes) and turn them into 3 to 7 prioritized recommendations.",
  "Grounding rules: use only the insights given; every recommendation lists in addresses_insight_ids the exact ids of",
  "the insights it addresses (at least one, only ids from the list); cite insights by title in the description;",
  "never invent users, numbers, metrics values or quotes; text in “curly quotes” must be copied verbatim from an",
  "insight's quotes or title. Scoring rules: impact_score from 0.0 to 1.0 weighs severity, distinct sources and",
  "mentions, and favours the focus areas when given; effort_weeks is engineering weeks for one small team and",
  "effort_estimate is its bucket (trivial ≤ 0.5, small ≤ 2, medium ≤ 4, large ≤ 8, xlarge above); success_metrics are",
  "2 to 4 measurable statements tied to the insights (say 'baseline to be measured' rather than inventing one).",
  "Order recommendations best first by a RICE-like judgement (reach × impact × confidence ÷ effort) and explain that",
  "order, and what you left out, in prioritization_summary. Answer only by calling the tool.",
].join(" ");

/** The tool schema for one request: ids and quotes are checked against the insights that were sent. */
export function recommendationsToolSchema(insights: InsightInput[]) {
  const ids = new Set(insights.map((i) => i.id));
  const corpus = insights.flatMap((i) => [i.title, ...i.quotes.map((q) => q.text)]).map(normaliseForMatch);
  const insightId = z.string().refine((id) => ids.has(id), { message: "unknown insight id: cite only ids from the list" });
  const grounded = z.string().superRefine((text, ctx) => {
    for (const m of text.matchAll(/“([^“”]+)”/g)) {
      const span = normaliseForMatch(m[1]);
      if (span.length >= 12 && !corpus.some((c) => c.includes(span)))
        ctx.addIssue({ code: "custom", message: `“${m[1].slice(0, 80)}” is not a verbatim quote or title of a listed insight` });
    }
  });
  return z.object({
    recommendations: z
      .array(
        z.object({
          title: z.string().min(5).max(200).describe("Imperative, specific: what to do"),
          description: grounded.describe("What to do and why, naming the insights it addresses"),
          addresses_insight_ids: z.array(insightId).min(1).max(20),
          rationale: grounded.describe("Why this priority: severity, sources, mentions, effort"),
          effort_estimate: EffortEstimate,
          effort_weeks: z.number().min(0.25).max(52),
          impact_score: z.number().min(0).max(1),
          success_metrics: z.array(z.string().min(5).max(400)).min(1).max(5),
        }),
      )
      .min(3)
      .max(7)
      .superRefine((recs, ctx) => {
        const titles = recs.map((r) => r.title.trim().toLowerCase());
        titles.forEach((t, k) => {
          if (titles.indexOf(t) !== k) ctx.addIssue({ code: "custom", path: [k, "title"], message: "duplicate recommendation title" });
        });
      }),
    prioritization_summary: z.string().min(20).max(4000),
  });
}

/**
 * Room for the insights in one prompt, in characters (about 4 per token): some 40,000 tokens, well inside every
 * tier's context window with the system text, the tool schema and the answer. A request may name up to 200 insights,
 * each with a description up to 10,000 characters and quotes up to 5,000: sent whole, they pass the model's context
 * and Converse refuses the call (ValidationException, a 500 on every retry).
 */
export const INSIGHT_PROMPT_CHARS = 160_000;
/** Per insight, what one prompt line carries at most (characters): cut on a word boundary with "…". */
const LINE_CUTS = { title: 300, description: 2_000, quote: 600, quotes: 4 } as const;

function insightHeader(i: InsightInput): string {
  const sources = Math.max(i.frequency, new Set(i.quotes.map((q) => q.source_id)).size);
  return `- id ${i.id} | ${i.insight_type} | severity ${i.severity} | ${sources} sources | ${i.mention_count ?? i.quotes.length} mentions\n  title: ${truncate(i.title, LINE_CUTS.title)}`;
}

function insightLine(i: InsightInput): string {
  const quotes = i.quotes
    .slice(0, LINE_CUTS.quotes)
    .map((q) => `    - “${truncate(q.text, LINE_CUTS.quote)}”${q.speaker ? ` — ${truncate(q.speaker, 80)}` : ""}`)
    .join("\n");
  return `${insightHeader(i)}\n  description: ${truncate(i.description, LINE_CUTS.description)}${quotes ? `\n  quotes:\n${quotes}` : ""}`;
}

/**
 * The insights as prompt lines within `budget` characters, in the order given: the strongest (severity, then sources,
 * then mentions) with their description and quotes while the room lasts, the rest by their header and title alone,
 * and any beyond even that left out.
 * @returns `text` (the lines), `detailed` and `brief` (how many of each) and `omitted` (insights not shown)
 */
export function insightsForPrompt(insights: InsightInput[], budget = INSIGHT_PROMPT_CHARS): { text: string; detailed: number; brief: number; omitted: number } {
  const ranked = [...insights].sort(
    (a, b) => (SEVERITY_RANK[b.severity] ?? 0) - (SEVERITY_RANK[a.severity] ?? 0) || b.frequency - a.frequency || (b.mention_count ?? 0) - (a.mention_count ?? 0),
  );
  // Every insight's header first (so each can be cited), then details for the strongest while room is left.
  const shown = new Map<InsightInput, string>();
  let used = 0;
  for (const i of ranked) {
    const line = insightHeader(i);
    if (used + line.length + 1 > budget) break;
    shown.set(i, line);
    used += line.length + 1;
  }
  let detailed = 0;
  for (const i of ranked) {
    const brief = shown.get(i);
    if (brief === undefined) break;
    const full = insightLine(i);
    if (used + full.length - brief.length > budget) break; // strictly the strongest first, as the prompt says
    shown.set(i, full);
    used += full.length - brief.length;
    detailed++;
  }
  const text = insights.flatMap((i) => (shown.has(i) ? [shown.get(i)!] : [])).join("\n");
  return { text, detailed, brief: shown.size - detailed, omitted: insights.length - shown.size };
}

/** The line above the insights: how many, and how they were shortened to fit. */
function insightsHeading(shown: ReturnType<typeof insightsForPrompt>, total: number): string {
  if (!shown.brief && !shown.omitted) return `${total} insights:`;
  const parts = [`${total} insights, the ${shown.detailed} strongest with description and quotes`];
  if (shown.brief) parts.push(`${shown.brief} by title only`);
  if (shown.omitted) parts.push(`${shown.omitted} left out for room`);
  return `${parts.join(", ")} (long texts cut with "…"):`;
}

/**
 * Generates 3 to 7 recommendations with the model.
 *
 * @param model the Model port (Bedrock adapter in AWS; a replaying fake in tests)
 * @param input same as the local engine: insights (1+), focus_areas?, product?
 * @param opts.tier model tier, "mid" by default
 * @returns `{ result: { recommendations (3..7), prioritization_summary }, usage }` — usage is the call's tokens and
 *   cost for the agent-run record (spec 02)
 * @throws AppError VALIDATION_ERROR when there is no insight; AppError INTERNAL / SERVICE_UNAVAILABLE from the adapter
 *   when the model cannot produce grounded output
 */
export async function generateRecommendationsWithModel(
  model: Model,
  input: GenerateRecommendationsInput,
  opts: { tier?: ModelTier } = {},
): Promise<{ result: GenerateRecommendationsResult; usage: CallUsage }> {
  if (!input?.insights?.length) throw Errors.validation([{ loc: ["insight_ids"], msg: "At least one insight is required", type: "too_small" }]);
  const { insights, focus_areas, product } = GenerateRecommendationsInput.parse(input);
  const context = [
    product?.product_name ? `Product: ${product.product_name}` : "",
    product?.product_description ? `Description: ${product.product_description}` : "",
    product?.target_users ? `Target users: ${product.target_users}` : "",
    product?.current_stage ? `Stage: ${product.current_stage}` : "",
    focus_areas?.length ? `Focus areas: ${focus_areas.join("; ")}` : "",
  ].filter(Boolean);
  const shown = insightsForPrompt(insights);
  const { output, usage } = await model.structured({
    tier: opts.tier ?? "mid",
    system: SYSTEM,
    messages: [
      {
        role: "user",
        text: `${context.length ? `${context.join("\n")}\n\n` : ""}${insightsHeading(shown, insights.length)}\n\n${shown.text}\n\nReturn 3 to 7 prioritized recommendations.`,
      },
    ],
    tool: {
      name: "record_recommendations",
      description: "Record the prioritized recommendations, each citing the ids of the insights it addresses.",
      schema: recommendationsToolSchema(insights),
    },
    maxTokens: 6000,
  });
  const recommendations: RecommendationDraft[] = output.recommendations.map((r) => ({
    ...r,
    addresses_insight_ids: [...new Set(r.addresses_insight_ids)],
    effort_estimate: effortFromWeeks(r.effort_weeks),
  }));
  return { result: { recommendations, prioritization_summary: output.prioritization_summary }, usage };
}
