/**
 * BEDROCK SYNTHESIS ENGINE (AWS runtime, DESIGN.md section 2): the same mentions as the local engine go to the
 * Model port (Claude on Bedrock, core/ai/bedrock.ts) with a zod tool schema; the model answers with insights that
 * cite mention ids. Nothing the model writes is used as a quote: quotes are rebuilt from the cited mentions' own
 * text (verbatim spans of the sources) and then checked by `groundQuotes`, exactly as for the local engine.
 * Counts (frequency, mention_count, source_ids) are computed from the citations, not taken from the model.
 *
 * Large corpora: at most `maxMentions` mentions are sent (default 400, roughly 15–25k input tokens). When there
 * are more, a representative sample is taken with spherical k-means (k = maxMentions / 5): each cluster
 * contributes its most central mentions in proportion to its size, so small themes still appear.
 */
import * as z from "zod";
import type { CallUsage, Embedder, Model, ModelTier } from "../ports";
import { dot, toMatrix, type Matrix } from "../vectors";
import { centroidOf, sphericalKMeans } from "./cluster";
import type { InsightType, Severity } from "./classify";
import { markDuplicates } from "./dedup";
import { collectMentions, DEFAULT_OPTIONS, totalMentions, unitsBySource, type Mention } from "./index";
import { groundQuotes, pickQuotes } from "./quotes";
import { surveyInsights } from "./survey";
import type { ExistingInsight, InsightDraft, SynthesisOptions, SynthesisOutput, SynthesisSource } from "./types";

export const INSIGHT_TYPES = ["pain_point", "feature_request", "opportunity", "behavior", "feedback_theme"] as const;
export const SEVERITIES = ["low", "medium", "high", "critical"] as const;

export interface ModelSynthesisInput {
  sources: SynthesisSource[];
  model: Model;
  /** Embeds mentions (for sampling, centroids and merge detection); precomputed vectors are reused. */
  embedder: Embedder;
  existing?: ExistingInsight[];
  /** Model tier (default "mid"). */
  tier?: ModelTier;
  /** Mentions sent to the model at most (default 400). */
  maxMentions?: number;
  options?: Partial<SynthesisOptions>;
}

/** The tool the model must call; mention ids are checked against the ones sent (unknown ids trigger a repair). */
export function insightsToolSchema(knownIds: Set<string>) {
  const mentionId = z.string().refine((id) => knownIds.has(id), { message: "unknown mention id: cite only ids from the list" });
  return z.object({
    insights: z
      .array(
        z.object({
          title: z.string().min(5).max(120).describe("Short statement of the theme, in the users' terms"),
          description: z.string().min(20).max(1200).describe("What users say and why it matters; no invented numbers"),
          insight_type: z.enum(INSIGHT_TYPES),
          severity: z.enum(SEVERITIES),
          mention_ids: z.array(mentionId).min(1).max(40).describe("Ids of the mentions that directly support it"),
        }),
      )
      .min(1)
      .max(30),
    summary: z.string().min(10).max(2000),
  });
}

export type InsightsToolOutput = z.infer<ReturnType<typeof insightsToolSchema>>;

const SYSTEM = [
  "You are a product researcher. You receive numbered mentions: verbatim excerpts of research sources",
  "(interviews, surveys, support tickets, reviews). Group them into distinct insights a product manager can act on.",
  "Rules: every insight must cite the ids of the mentions that directly support it; cite only ids from the list;",
  "never invent facts, numbers or quotes; do not make two insights about the same theme;",
  "insight_type is one of pain_point (a problem users have), feature_request (something users ask for),",
  "opportunity (an unmet need or workaround), behavior (how users work), feedback_theme (other recurring feedback);",
  "severity reflects how many sources and mentions raise it and how much it hurts (critical only for blocking problems).",
  "Answer only by calling the tool.",
].join(" ");

/** Pick at most `max` mentions spread over the semantic space (see file comment). Indices ascending. */
export function sampleMentions(x: Matrix, max: number, seed: number): number[] {
  const n = x.rows;
  if (n <= max) return Array.from({ length: n }, (_, i) => i);
  const km = sphericalKMeans(x, Math.max(2, Math.ceil(max / 5)), seed, 15);
  const groups: number[][] = Array.from({ length: km.centroids.rows }, () => []);
  for (let i = 0; i < n; i++) groups[km.assign[i]].push(i);
  const picked: number[] = [];
  for (const g of groups) {
    const quota = Math.max(1, Math.round((max * g.length) / n));
    picked.push(...[...g].sort((a, b) => km.sim[b] - km.sim[a] || a - b).slice(0, quota));
  }
  // Trim the overshoot of rounding by dropping the least central picks.
  return picked
    .sort((a, b) => km.sim[b] - km.sim[a] || a - b)
    .slice(0, max)
    .sort((a, b) => a - b);
}

function mentionLine(id: string, m: Mention, s: SynthesisSource): string {
  const who = m.speaker ? `; speaker: ${m.speaker}` : "";
  const q = m.question ? `; question: ${m.question.slice(0, 120)}` : "";
  return `${id} [${s.source_type}: ${s.title}${who}${q}] ${m.span.text.replace(/\s+/g, " ")}`;
}

/**
 * Synthesise insights with the Model port.
 * @returns the same output shape as the local engine, plus the model call's usage (for the agent run record)
 * @throws whatever the model or embedder throws (see BedrockModel.structured)
 */
export async function synthesizeWithModel(input: ModelSynthesisInput): Promise<SynthesisOutput & { usage: CallUsage | null }> {
  const t0 = performance.now();
  const opts: SynthesisOptions = { ...DEFAULT_OPTIONS, ...input.options };
  const { sources, embedder } = input;
  const corpus = await collectMentions(sources, embedder);
  const t1 = performance.now();
  const x = toMatrix(corpus.vectors, embedder.dimensions);
  const chosen = sampleMentions(x, input.maxMentions ?? 400, opts.seed);
  const ids = new Map<string, number>(chosen.map((i, k) => [`m${k + 1}`, i]));

  const baseStats = {
    sources: sources.length,
    ...corpus.stats,
    noise: 0,
    clusters_initial: 0,
    clusters_unnamed: 0,
    timings_ms: { mentions: Math.round(t1 - t0 - corpus.embedMs), embed: Math.round(corpus.embedMs), cluster: 0, name: 0, total: 0 },
  };
  if (!chosen.length) {
    return {
      insights: [],
      summary: `No usable mentions in ${sources.length} sources.`,
      usage: null,
      stats: { ...baseStats, clustered: 0, clusters_final: 0, quotes_proposed: 0, quotes_grounded: 0 },
    };
  }

  const lines = [...ids.entries()].map(([id, i]) => mentionLine(id, corpus.mentions[i], sources[corpus.mentions[i].sourceIndex]));
  const { output, usage } = await input.model.structured({
    tier: input.tier ?? "mid",
    system: SYSTEM,
    messages: [
      {
        role: "user",
        text: `${lines.length} mentions from ${sources.length} sources:\n\n${lines.join("\n")}\n\nReturn the insights.`,
      },
    ],
    tool: {
      name: "record_insights",
      description: "Record the insights found in the mentions, each citing the mention ids that support it.",
      schema: insightsToolSchema(new Set(ids.keys())),
    },
    maxTokens: 8000,
    temperature: 0,
  });
  const t2 = performance.now();

  const sourcesById = new Map(sources.map((s) => [s.id, s]));
  let quotesProposed = 0;
  let quotesGrounded = 0;
  type Draft = InsightDraft & { members: number[] };
  const drafts: Draft[] = [];
  for (const ins of output.insights) {
    const members = [...new Set(ins.mention_ids.map((id) => ids.get(id)!))].sort((a, b) => a - b);
    const centroid = centroidOf(x, members);
    const candidates = members.map((i) => {
      const m = corpus.mentions[i];
      const v = x.data.subarray(i * x.dims, (i + 1) * x.dims);
      let sim = 0;
      for (let t = 0; t < x.dims; t++) sim += v[t] * centroid[t];
      return { quote: { text: m.span.text, source_id: sources[m.sourceIndex].id, speaker: m.speaker }, sim, vector: v };
    });
    const proposed = pickQuotes(candidates, 3, 5);
    const quotes = groundQuotes(proposed, sourcesById);
    quotesProposed += proposed.length;
    quotesGrounded += quotes.length;
    if (!quotes.length) continue;
    const bySource = new Map<number, number>();
    for (const i of members) bySource.set(corpus.mentions[i].sourceIndex, (bySource.get(corpus.mentions[i].sourceIndex) ?? 0) + 1);
    const source_ids = [...bySource.entries()].sort((a, b) => b[1] - a[1] || a[0] - b[0]).map(([s]) => sources[s].id);
    const bySourceUnits = unitsBySource(members, (i) => corpus.mentions[i], sources);
    let cohesion = 0;
    for (const c of candidates) cohesion += c.sim;
    drafts.push({
      title: ins.title.trim(),
      description: ins.description.trim(),
      insight_type: ins.insight_type as InsightType,
      severity: ins.severity as Severity,
      quotes,
      source_ids,
      frequency: source_ids.length,
      mention_count: totalMentions(bySourceUnits),
      mentions_by_source: bySourceUnits,
      vector: centroid,
      embedder_id: embedder.id,
      cohesion: Math.round((cohesion / members.length) * 1000) / 1000,
      keyphrases: [],
      members,
    });
  }

  // The model is told not to repeat a theme; enforce it: same title, or near-identical centroids, are merged.
  const merged: Draft[] = [];
  for (const d of drafts) {
    const twin = merged.find(
      (m) =>
        m.title.toLowerCase() === d.title.toLowerCase() || dot(m.vector, d.vector) >= opts.mergeThreshold,
    );
    if (!twin) {
      merged.push(d);
      continue;
    }
    twin.members = [...new Set([...twin.members, ...d.members])].sort((a, b) => a - b);
    twin.vector = centroidOf(x, twin.members);
    twin.source_ids = [...new Set([...twin.source_ids, ...d.source_ids])];
    twin.frequency = twin.source_ids.length;
    twin.mentions_by_source = unitsBySource(twin.members, (i) => corpus.mentions[i], sources);
    twin.mention_count = totalMentions(twin.mentions_by_source);
    twin.quotes = groundQuotes([...twin.quotes, ...d.quotes], sourcesById).slice(0, 5);
  }
  // Closed survey questions: the same figures as the local engine, counted from the answers, never by the model.
  const insights: InsightDraft[] = [
    ...(await surveyInsights(sources, corpus, embedder)),
    ...merged
      .sort((a, b) => b.frequency - a.frequency || b.mention_count - a.mention_count || a.title.localeCompare(b.title))
      .slice(0, opts.maxInsights)
      .map(({ members: _members, ...d }) => d),
  ];

  await markDuplicates(insights, input.existing, embedder, opts);
  const t3 = performance.now();
  return {
    insights,
    summary: output.summary.trim(),
    usage,
    stats: {
      ...baseStats,
      clustered: new Set(merged.flatMap((d) => d.members)).size,
      clusters_final: insights.length,
      quotes_proposed: quotesProposed,
      quotes_grounded: quotesGrounded,
      timings_ms: { ...baseStats.timings_ms, cluster: Math.round(t2 - t1), name: Math.round(t3 - t2), total: Math.round(t3 - t0) },
    },
  };
}
