import { randomUUID } from "node:crypto";
import { recordRun } from "../agent";
import { reserveAlongside } from "../billing/charge";
import { model } from "../ai/select";
import { loadInsights, toEngineInput } from "../insight/inputs";
import { documentEngine } from "./engine";
import { contextFor, requireBlock, type BlockItem } from "./block-ops";

// ---- AI block actions (spec 01: expand, challenge, simulate; up to 8 surrounding blocks as context) ----

const asActionBlock = (b: BlockItem) => ({ id: b.id, block_type: b.block_type, title: b.title, content: b.content, position: b.position });

/**
 * Run one block action with the configured engine (local rules or the Model port), the 8 nearest blocks as context
 * and the document's related insights as evidence; recorded as a `block_action` agent run. Nothing is stored: the
 * result is a proposal (docs/decisions.md).
 */
export async function blockAction(userId: string, blockId: string, action: "expand" | "challenge" | "simulate") {
  const { doc, block } = await requireBlock(userId, blockId);
  const engine = documentEngine(await model());
  // The run's reservation is made while its context and evidence are read (both reads only).
  const {
    value: [context, insights],
    charge,
  } = await reserveAlongside({ workspaceId: doc.workspace_id, runId: randomUUID(), engine: engine.kind }, () =>
    Promise.all([
      contextFor(doc, block),
      loadInsights(doc.workspace_id, (doc.related_insight_ids ?? []).slice(0, 20), "related_insight_ids", { skipMissing: true }),
    ]),
  );
  const { result } = await recordRun(
    { workspaceId: doc.workspace_id, userId, agentType: "block_action", toolName: `${action}_block`, engine: engine.kind, input: { block_id: blockId, action }, charge },
    async (usage) => {
      const out = await engine[action](asActionBlock(block), context.map(asActionBlock), insights.map(toEngineInput));
      if (out.usage) await usage.add(out.usage);
      return out;
    },
  );
  return { block_id: block.id, block_type: block.block_type, action, context_block_ids: context.map((b) => b.id), ...result };
}
