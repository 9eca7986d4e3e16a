import * as z from "zod";
import { InsightInput, ProductContext, RecommendationDraft } from "../../recommendation/engine/types";
import { BlockType } from "../blocks";

/** Spec 01 Document.document_type. */
export const DocumentType = z
  .enum(["prd", "spec", "memo", "user_story", "roadmap_update", "release_notes"])
  .meta({ id: "DocumentType" });
export type DocumentType = z.infer<typeof DocumentType>;

/** The recommendation a document is drafted from: the generated fields plus its id when stored. */
export const DraftRecommendation = RecommendationDraft.extend({ id: z.string().optional() });
export type DraftRecommendation = z.infer<typeof DraftRecommendation>;

/** Input of drafting (spec 01 `POST /api/documents/draft`, after the recommendation and insights are loaded). */
export const DraftDocumentInput = z.object({
  document_type: DocumentType,
  recommendation: DraftRecommendation.optional(),
  insights: z.array(InsightInput),
  user_instructions: z.string().max(5_000).optional(),
  product: ProductContext.optional(),
});
export type DraftDocumentInput = z.infer<typeof DraftDocumentInput>;

/** A drafted document: title and Markdown content (the caller stores it as a draft document). */
export const DocumentDraft = z
  .object({ title: z.string().min(1).max(300), content: z.string().min(1) })
  .meta({ id: "DocumentDraft" });
export type DocumentDraft = z.infer<typeof DocumentDraft>;

/** A block as the block actions see it (stored blocks have more fields; they are ignored). */
export const ActionBlock = z.object({
  id: z.string().optional(),
  block_type: BlockType,
  title: z.string().nullish(),
  content: z.unknown(),
  position: z.int().min(0),
});
export type ActionBlock = z.infer<typeof ActionBlock>;

/** Result of `POST /api/blocks/{id}/expand`: the block's new content (same type) and what was added, in words. */
export const ExpandResult = z
  .object({
    block_type: BlockType,
    title: z.string(),
    content: z.record(z.string(), z.unknown()),
    added: z.array(z.string()),
  })
  .meta({ id: "BlockExpandResult" });
export type ExpandResult = z.infer<typeof ExpandResult>;

/** Result of `POST /api/blocks/{id}/challenge` (spec 01: the four lists). */
export const ChallengeResult = z
  .object({
    strengths: z.array(z.string()),
    weaknesses: z.array(z.string()),
    questions: z.array(z.string()),
    suggestions: z.array(z.string()),
  })
  .meta({ id: "BlockChallengeResult" });
export type ChallengeResult = z.infer<typeof ChallengeResult>;

export const Likelihood = z.enum(["low", "medium", "high"]);

/** One explored real-world scenario. */
export const SimulationScenario = z.object({
  name: z.string().min(1),
  description: z.string().min(1),
  likelihood: Likelihood,
  consequences: z.array(z.string()),
});
export type SimulationScenario = z.infer<typeof SimulationScenario>;

/** Result of `POST /api/blocks/{id}/simulate`: scenarios, the assumptions they rest on, and signals to watch. */
export const SimulateResult = z
  .object({
    scenarios: z.array(SimulationScenario).min(1),
    assumptions: z.array(z.string()),
    signals_to_watch: z.array(z.string()),
  })
  .meta({ id: "BlockSimulateResult" });
export type SimulateResult = z.infer<typeof SimulateResult>;

/** Spec 01 Limits: block actions use up to 8 surrounding blocks as context. */
export const BLOCK_CONTEXT_LIMIT = 8;

export { InsightInput, ProductContext };
