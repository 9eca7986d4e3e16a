/**
 * The copilot's streaming model (DESIGN.md 6.1), chosen in the agent layer. A model engine (Bedrock,
 * openai-compatible) comes from core/ai/select.ts; the local engine is the deterministic agent engine, which plans
 * over the agent's tools, so it is built here and handed those tools. Choosing it here, not in core/ai, keeps the
 * imports pointing down (DESIGN.md 4, convention 11): the AI layer never reaches up into the agent's tools.
 */
import type { StreamingModel } from "../ai/ports";
import { isModelEngine, streamingModel } from "../ai/select";
import { TOOLS } from "./tools";

let local: Promise<StreamingModel> | undefined;

/**
 * The streaming Model port every copilot run drives: the model engine's (`streamingModel()`) when AI_ENGINE names
 * one, else the local agent engine over every tool (TOOLS), loaded on first use and kept for the process, so its
 * description vectors and recent goals are computed once.
 * @throws what `streamingModel()` throws for a misconfigured model engine (the missing setting, named).
 */
export function agentModel(): Promise<StreamingModel> {
  if (isModelEngine()) return streamingModel();
  if (!local) {
    local = import("./local-engine").then(({ LocalAgentModel }) => new LocalAgentModel(TOOLS));
    // A failed load is not kept: the next request tries again.
    local.catch(() => (local = undefined));
  }
  return local;
}

/**
 * Tell the copilot's model the prompt it is about to get, before the run's reads, so work that depends on the prompt
 * alone can overlap them (the local engine embeds it: ./local-engine.ts `prefetch`). Model engines need nothing.
 */
export function prefetchPrompt(model: StreamingModel, prompt: string): void {
  (model as Partial<{ prefetch(said: string): void }>).prefetch?.(prompt);
}
