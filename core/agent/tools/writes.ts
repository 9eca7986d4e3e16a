import * as z from "zod";
import { Errors } from "../../error";
import { getAll } from "../../db/bulk";
import { db } from "../../db/service";
import { idFor, type AgentWrite } from "../../db/agent-write";
import * as Insight from "../../insight";
import * as Recommendation from "../../recommendation";
import { validTransitions } from "../../recommendation/status";
import * as Document from "../../document";
import { blockOps } from "./lazy";
import { requireUsage } from "../../billing/gates";
import { inWorkspace } from "./scope";
import type { ExecutionContext, GatedTool } from "./types";

/** Before/after of each field an update changes (fields it leaves alone are not listed). */
function changes(before: Record<string, unknown>, after: Record<string, unknown>) {
  return Object.entries(after)
    .filter(([field, value]) => value !== undefined && JSON.stringify(before[field]) !== JSON.stringify(value))
    .map(([field, value]) => ({ field, before: before[field] ?? null, after: value }));
}

/**
 * The exactly-once options of a gated tool's core operation (DESIGN.md 6.2): the action's id, written on every item
 * the operation writes, and the settlement, given what the operation writes, as the tool will report it (`result`),
 * so the row's stored result is exactly what `execute` returns.
 */
function agentWrite<W, R extends Record<string, unknown>>(ctx: ExecutionContext, result: (written: W) => R): AgentWrite<W> {
  const settle = ctx.settle;
  return { pendingActionId: ctx.actionId, ...(settle ? { settle: (written: W) => settle(result(written)) } : {}) };
}

/** A long text in a preview: enough to judge, not the whole document. */
const clipText = (s: string, n = 4000) => (s.length > n ? `${s.slice(0, n)}…` : s);

const CreateInsightToolInput = Insight.CreateInsightInput.omit({ workspace_id: true });
export const createInsight: GatedTool<z.infer<typeof CreateInsightToolInput>> = {
  name: "create_insight",
  description: "Create a new insight (a research finding, with verbatim quotes from sources) in the workspace. Waits for a member's approval.",
  cues: ["create an insight", "create insight", "add an insight", "add insight", "record a finding", "save this as an insight", "new insight"],
  gated: true,
  input: CreateInsightToolInput,
  async preview(_ctx, input) {
    return {
      summary: `Create insight "${input.title}"`,
      target: "insight",
      operation: "create",
      fields: { insight_type: input.insight_type, title: input.title, description: input.description, severity: input.severity, quotes: input.quotes },
    };
  },
  async execute(ctx, input) {
    const result = (w: { id: string; title: string }) => ({ insight_id: w.id, title: w.title });
    const insight = await Insight.create(ctx.userId, { ...input, workspace_id: ctx.workspaceId }, { id: idFor(ctx.actionId, "insight"), ...agentWrite(ctx, result) });
    return result(insight);
  },
};

const UpdateInsightToolInput = z.object({ insight_id: z.uuid() }).extend(Insight.UpdateInsightInput.shape).strict();
export const updateInsight: GatedTool<z.infer<typeof UpdateInsightToolInput>> = {
  name: "update_insight",
  description: "Change an insight's title, description, severity, archived flag, notes or rating. Waits for approval.",
  cues: ["update insight", "rename insight", "change the severity", "archive insight", "edit insight"],
  gated: true,
  input: UpdateInsightToolInput,
  async preview(ctx, { insight_id, ...fields }) {
    const before = inWorkspace(ctx, await Insight.get(ctx.userId, insight_id), "Insight");
    return { summary: `Update insight "${before.title}"`, target: "insight", operation: "update", changes: changes(before, fields) };
  },
  async execute(ctx, { insight_id, ...fields }) {
    inWorkspace(ctx, await Insight.get(ctx.userId, insight_id), "Insight");
    const result = (w: { id: string; title: string }) => ({ insight_id: w.id, title: w.title });
    return result(await Insight.update(ctx.userId, insight_id, fields, agentWrite(ctx, result)));
  },
};

const CreateRecommendationToolInput = Recommendation.CreateRecommendationInput.omit({ workspace_id: true });
export const createRecommendation: GatedTool<z.infer<typeof CreateRecommendationToolInput>> = {
  name: "create_recommendation",
  description: "Create a recommendation (what to build and why, linked to the insights it addresses). Waits for approval.",
  cues: ["create a recommendation", "add a recommendation", "recommend that", "new recommendation"],
  gated: true,
  input: CreateRecommendationToolInput,
  async preview(_ctx, input) {
    return { summary: `Create recommendation "${input.title}"`, target: "recommendation", operation: "create", fields: { ...input } };
  },
  async execute(ctx, input) {
    const result = (w: { id: string; title: string }) => ({ recommendation_id: w.id, title: w.title });
    const rec = await Recommendation.create(ctx.userId, { ...input, workspace_id: ctx.workspaceId }, {}, { id: idFor(ctx.actionId, "recommendation"), ...agentWrite(ctx, result) });
    return result(rec);
  },
};

const StatusToolInput = z.object({ recommendation_id: z.uuid() }).extend(Recommendation.StatusChangeInput.shape).strict();
export const updateRecommendationStatus: GatedTool<z.infer<typeof StatusToolInput>> = {
  name: "update_recommendation_status",
  description: "Move a recommendation to another status (suggested, accepted, in_progress, implemented, rejected). Waits for approval.",
  cues: ["accept the recommendation", "accept recommendation", "reject the recommendation", "mark as implemented", "mark as in progress", "change the status"],
  gated: true,
  input: StatusToolInput,
  async preview(ctx, input) {
    const before = inWorkspace(ctx, await Recommendation.get(ctx.userId, input.recommendation_id), "Recommendation");
    return {
      summary: `Move recommendation "${before.title}" from ${before.status} to ${input.status}`,
      target: "recommendation",
      operation: "status_change",
      changes: [{ field: "status", before: before.status, after: input.status }],
      fields: { valid_transitions: validTransitions(before.status), ...(input.user_notes ? { user_notes: input.user_notes } : {}) },
    };
  },
  async execute(ctx, input) {
    const before = inWorkspace(ctx, await Recommendation.get(ctx.userId, input.recommendation_id), "Recommendation");
    const result = (w: { id: string; status: string }) => ({ recommendation_id: w.id, status: w.status });
    // Already there (moved by someone else meanwhile): nothing to write, not an invalid transition.
    if (before.status === input.status) return result(before);
    return result(await Recommendation.changeStatus(ctx.userId, input.recommendation_id, { status: input.status, user_notes: input.user_notes }, agentWrite(ctx, result)));
  },
};

const DraftToolInput = Document.DraftInput.omit({ workspace_id: true });
export const draftDocument: GatedTool<z.infer<typeof DraftToolInput>> = {
  name: "draft_document",
  description:
    "Draft a product document (prd, spec, memo, user_story, roadmap_update, release_notes) from a recommendation and its insights. Waits for approval; the draft is written when approved.",
  cues: ["draft", "write a prd", "prd", "spec", "memo", "user story", "release notes", "roadmap update", "document for"],
  gated: true,
  input: DraftToolInput,
  async preview(ctx, input) {
    const rec = input.recommendation_id ? inWorkspace(ctx, await Recommendation.get(ctx.userId, input.recommendation_id), "Recommendation") : undefined;
    return {
      summary: `Draft a ${input.document_type.toUpperCase().replace("_", " ")}${rec ? ` for "${rec.title}"` : ""}`,
      target: "document",
      operation: "create",
      fields: {
        document_type: input.document_type,
        ...(rec ? { recommendation: { id: rec.id, title: rec.title } } : {}),
        ...(input.insight_ids ? { insight_ids: input.insight_ids } : {}),
        ...(input.user_instructions ? { user_instructions: input.user_instructions } : {}),
      },
    };
  },
  async execute(ctx, input) {
    const id = idFor(ctx.actionId, "document");
    const result = (w: { id: string; title: string; document_type: string; status: string }) => ({ document_id: w.id, title: w.title, document_type: w.document_type, status: w.status });
    // The draft is an AI call: should this action's document exist (its write committed, the row not finished), it
    // is the answer instead of drafting again.
    const { data: existing } = await db().entities.document.get({ workspace_id: ctx.workspaceId, id }).go({ consistent: true });
    if (existing) return result(existing);
    // The route's documents-per-month gate, for the copilot's drafts too (the tool does not pass through the route).
    await requireUsage({ userId: ctx.userId, workspaceId: ctx.workspaceId }, "documents");
    // The operations load when an approved action first runs them, not with every chat (the stream's cold start).
    const { draft } = await import("../../document/draft");
    return result(await draft(ctx.userId, { ...input, workspace_id: ctx.workspaceId }, { id, ...agentWrite(ctx, result) }));
  },
};

const UpdateDocumentToolInput = z
  .object({ document_id: z.uuid(), title: z.string().trim().min(1).max(300).optional(), content: z.string().max(1_000_000).optional() })
  .strict()
  .refine((v) => v.title !== undefined || v.content !== undefined, "give title or content");
export const updateDocument: GatedTool<z.infer<typeof UpdateDocumentToolInput>> = {
  name: "update_document",
  description: "Edit a document's title or replace its Markdown content. Waits for approval.",
  cues: ["edit the document", "update the document", "rewrite", "change the title of the document", "revise the prd"],
  gated: true,
  input: UpdateDocumentToolInput,
  async preview(ctx, { document_id, ...fields }) {
    const before = inWorkspace(ctx, await Document.get(ctx.userId, document_id), "Document");
    return {
      summary: `Edit document "${before.title}"`,
      target: "document",
      operation: "update",
      changes: changes({ title: before.title, content: clipText(before.content) }, { title: fields.title, content: fields.content === undefined ? undefined : clipText(fields.content) }),
    };
  },
  async execute(ctx, { document_id, ...fields }) {
    inWorkspace(ctx, await Document.get(ctx.userId, document_id), "Document");
    const result = (w: { id: string; title: string; version: number }) => ({ document_id: w.id, title: w.title, version: w.version });
    return result(await Document.update(ctx.userId, document_id, fields, agentWrite(ctx, result)));
  },
};

const UpdateBlockToolInput = z
  .object({ document_id: z.uuid(), block_id: z.uuid(), title: z.string().max(300).optional(), content: Document.BlockContentInput.optional() })
  .strict()
  .refine((v) => v.title !== undefined || v.content !== undefined, "give title or content");
export const updateBlockTool: GatedTool<z.infer<typeof UpdateBlockToolInput>> = {
  name: "update_block",
  description: "Edit one typed block of a document (its title or its content object, which must match the block type). Waits for approval.",
  cues: ["edit the block", "update the block", "change the problem statement", "change the persona", "edit the metrics"],
  gated: true,
  input: UpdateBlockToolInput,
  async preview(ctx, { document_id, block_id, ...fields }) {
    const doc = inWorkspace(ctx, await Document.get(ctx.userId, document_id), "Document");
    const block = (await (await blockOps()).listBlocks(ctx.userId, doc.id)).blocks.find((b) => b.id === block_id);
    if (!block) throw Errors.notFound("Block");
    return { summary: `Edit the ${block.block_type} block "${block.title}" of "${doc.title}"`, target: "block", operation: "update", changes: changes(block, fields) };
  },
  async execute(ctx, { document_id, block_id, ...fields }) {
    inWorkspace(ctx, await Document.get(ctx.userId, document_id), "Document");
    const result = (w: { id: string; block_type: string; title: string }) => ({ block_id: w.id, block_type: w.block_type, title: w.title });
    return result(await (await blockOps()).updateBlock(ctx.userId, document_id, block_id, fields, agentWrite(ctx, result)));
  },
};

const SynthesisToolInput = z.object({ source_ids: z.array(z.uuid()).min(1).max(20), synthesis_type: z.enum(["comprehensive", "quick"]).default("comprehensive") }).strict();
export const runSynthesis: GatedTool<z.infer<typeof SynthesisToolInput>> = {
  name: "run_synthesis",
  description: "Synthesize completed research sources into insights with verbatim quotes. Waits for approval.",
  cues: ["synthesize", "synthesise", "run synthesis", "analyze the sources", "find insights in"],
  gated: true,
  input: SynthesisToolInput,
  async preview(ctx, input) {
    const { data } = await db().entities.researchSource.get(input.source_ids.map((id) => ({ workspace_id: ctx.workspaceId, id }))).go();
    return {
      summary: `Synthesize ${input.source_ids.length} research source${input.source_ids.length === 1 ? "" : "s"} into insights`,
      target: "synthesis",
      operation: "run",
      fields: { synthesis_type: input.synthesis_type, sources: data.map((s) => ({ id: s.id, title: s.title, processing_status: s.processing_status })) },
    };
  },
  async execute(ctx, input) {
    const result = (w: { insight_ids: string[]; created_ids: string[]; summary: string }) => ({ insight_ids: w.insight_ids, created_ids: w.created_ids, summary: w.summary });
    const { synthesize } = await import("../../insight/synthesis");
    return result(await synthesize(ctx.userId, { ...input, workspace_id: ctx.workspaceId }, { ...agentWrite(ctx, result), rateLimited: false }));
  },
};

const GenerateToolInput = Recommendation.GenerateInput.omit({ workspace_id: true });
export const generateRecommendations: GatedTool<z.infer<typeof GenerateToolInput>> = {
  name: "generate_recommendations",
  description: "Generate 3 to 7 prioritized recommendations from given insights. Waits for approval.",
  cues: ["generate recommendations", "turn the insights into recommendations", "what should we build", "prioritize"],
  gated: true,
  input: GenerateToolInput,
  async preview(ctx, input) {
    const data = await getAll(input.insight_ids.map((id) => ({ workspace_id: ctx.workspaceId, id })), (keys) => db().entities.insight.get(keys).go({ consistent: true }));
    return {
      summary: `Generate recommendations from ${input.insight_ids.length} insight${input.insight_ids.length === 1 ? "" : "s"}`,
      target: "recommendation",
      operation: "run",
      fields: { insights: data.map((i) => ({ id: i.id, title: i.title })), ...(input.focus_areas?.length ? { focus_areas: input.focus_areas } : {}) },
    };
  },
  async execute(ctx, input) {
    const result = (w: { recommendation_ids: string[]; count: number; prioritization_summary: string }) => ({
      recommendation_ids: w.recommendation_ids,
      count: w.count,
      prioritization_summary: w.prioritization_summary,
    });
    const { generate } = await import("../../recommendation/generate");
    const res = await generate(ctx.userId, { ...input, workspace_id: ctx.workspaceId }, agentWrite(ctx, result));
    return result({ recommendation_ids: res.recommendations.map((r) => r.id), count: res.count, prioritization_summary: res.prioritization_summary });
  },
};

export const GATED_TOOLS: readonly GatedTool[] = [
  createInsight,
  updateInsight,
  createRecommendation,
  updateRecommendationStatus,
  draftDocument,
  updateDocument,
  updateBlockTool,
  runSynthesis,
  generateRecommendations,
];

