import type { CallUsage, Model, ModelTier } from "../../ai/ports";
import type { InsightInput } from "../../recommendation/engine/types";
import { challengeBlock, expandBlock, simulateBlock } from "./actions";
import { challengeBlockWithModel, draftDocumentWithModel, expandBlockWithModel, simulateBlockWithModel } from "./bedrock";
import { draftDocument } from "./local";
import type { ActionBlock, ChallengeResult, DocumentDraft, DraftDocumentInput, ExpandResult, SimulateResult } from "./types";

export * from "./types";
export { draftDocument, parseInstructions } from "./local";
export { expandBlock, challengeBlock, simulateBlock, selectContext } from "./actions";
export { checkGrounding, sourcesSection, refLabel } from "./grounding";
export {
  DOCUMENT_OUTLINES,
  draftDocumentWithModel,
  expandBlockWithModel,
  challengeBlockWithModel,
  simulateBlockWithModel,
  draftToolSchema,
  expandToolSchema,
} from "./bedrock";

type Out<T> = Promise<{ result: T; usage: CallUsage | null }>;

/**
 * One interface over both document engines (drafting and the three block actions). Block actions take the block,
 * the document's other blocks (the engine keeps the 8 nearest by position, spec 01 Limits) and optional insights.
 * `usage` is null for the local engine.
 */
export interface DocumentEngine {
  readonly kind: "local" | "model";
  draft(input: DraftDocumentInput): Out<DocumentDraft>;
  expand(block: ActionBlock, context: ActionBlock[], insights?: InsightInput[]): Out<ExpandResult>;
  challenge(block: ActionBlock, context: ActionBlock[], insights?: InsightInput[]): Out<ChallengeResult>;
  simulate(block: ActionBlock, context: ActionBlock[], insights?: InsightInput[]): Out<SimulateResult>;
}

/** The local engine (templates, heuristics and rules; see ./local.ts and ./actions.ts). */
export const localDocumentEngine: DocumentEngine = {
  kind: "local",
  draft: async (input) => ({ result: draftDocument(input), usage: null }),
  expand: async (b, ctx, ins) => ({ result: expandBlock(b, ctx, ins), usage: null }),
  challenge: async (b, ctx, ins) => ({ result: challengeBlock(b, ctx, ins), usage: null }),
  simulate: async (b, ctx, ins) => ({ result: simulateBlock(b, ctx, ins), usage: null }),
};

/** The model-backed engine (see ./bedrock.ts); tiers: draft "mid", block actions "small" unless overridden. */
export const modelDocumentEngine = (model: Model, tiers: { draft?: ModelTier; actions?: ModelTier } = {}): DocumentEngine => ({
  kind: "model",
  draft: (input) => draftDocumentWithModel(model, input, { tier: tiers.draft }),
  expand: (b, ctx, ins) => expandBlockWithModel(model, b, ctx, ins, { tier: tiers.actions }),
  challenge: (b, ctx, ins) => challengeBlockWithModel(model, b, ctx, ins, { tier: tiers.actions }),
  simulate: (b, ctx, ins) => simulateBlockWithModel(model, b, ctx, ins, { tier: tiers.actions }),
});

/** Picks the engine: the model when one is configured (`core/ai/select.ts` `model()` returns null locally). */
export const documentEngine = (model: Model | null): DocumentEngine => (model ? modelDocumentEngine(model) : localDocumentEngine);
