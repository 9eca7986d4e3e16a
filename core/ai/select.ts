import { Config } from "../config";
import type { Embedder, Model, StreamingModel } from "./ports";

import { aiEngine, type AiEngine } from "./engine-setting";

export { aiEngine, type AiEngine } from "./engine-setting";

/**
 * True when the engine is a language model behind the Model port (Bedrock, openai-compatible), false for the local
 * algorithms. Every "use the model?" decision asks this, so a model engine takes the Bedrock paths, grounding included.
 */
export const isModelEngine = (engine: AiEngine = aiEngine()): boolean => engine !== "local";

/**
 * Checks the chosen engine's required settings, so a misconfiguration fails at startup rather than on the first AI
 * request. @throws Error with one sentence naming the missing setting (OPENAI_BASE_URL, OPENAI_MODEL).
 */
export function checkAiSettings(): void {
  if (aiEngine() === "openai-compatible") {
    Config.openaiBaseUrl();
    Config.openaiModel();
  }
}

let embedderPromise: Promise<Embedder> | undefined;
let modelPromise: Promise<Model | null> | undefined;
let streamingPromise: Promise<StreamingModel> | undefined;

/** Memoizes a port's loading, but not a failure: a server that was down, or a setting since fixed, is tried again. */
function settle<T>(promise: Promise<T>, forget: () => void): Promise<T> {
  promise.catch(forget);
  return promise;
}

/**
 * The process-wide embedder, loaded lazily (the local model is only imported on the embedded runtime). On the
 * openai-compatible engine: the server's embedding model when OPENAI_EMBEDDING_MODEL is set, else the local embedder.
 */
export function embedder(): Promise<Embedder> {
  embedderPromise ??= settle(
    (async () => {
      const engine = aiEngine();
      if (engine === "bedrock") {
        const { BedrockEmbedder } = await import("./bedrock");
        return new BedrockEmbedder();
      }
      if (engine === "openai-compatible" && Config.openaiEmbeddingModel()) {
        const { OpenAICompatibleEmbedder } = await import("./openai");
        return OpenAICompatibleEmbedder.create();
      }
      const { LocalEmbedder } = await import("./local-embedder");
      return new LocalEmbedder();
    })(),
    () => (embedderPromise = undefined),
  );
  return embedderPromise;
}

/** The Model port of a model engine (Bedrock, openai-compatible); null on the local engine (its own algorithms instead). */
export function model(): Promise<Model | null> {
  modelPromise ??= settle(
    (async () => {
      const engine = aiEngine();
      if (engine === "bedrock") {
        const { BedrockModel } = await import("./bedrock");
        return new BedrockModel();
      }
      if (engine === "openai-compatible") {
        const { OpenAICompatibleModel } = await import("./openai");
        return new OpenAICompatibleModel();
      }
      return null;
    })(),
    () => (modelPromise = undefined),
  );
  return modelPromise;
}

/**
 * The streaming Model port of a model engine (DESIGN.md 6.1): Bedrock ConverseStream, or streamed Chat Completions
 * from an OpenAI-compatible server. Loaded lazily, like the other ports. The local engine has no model to stream
 * from: its agent engine plans over the agent's tools, so the agent layer builds it (core/agent/engine.ts
 * `agentModel`), and this layer never imports the one above it.
 * @throws Error on the local engine (a caller that should have asked `isModelEngine()` first).
 */
export function streamingModel(): Promise<StreamingModel> {
  streamingPromise ??= settle(
    (async () => {
      const engine = aiEngine();
      if (engine === "bedrock") {
        const { BedrockStreamingModel } = await import("./bedrock-stream");
        return new BedrockStreamingModel();
      }
      if (engine === "openai-compatible") {
        const { OpenAICompatibleStreamingModel } = await import("./openai-stream");
        return new OpenAICompatibleStreamingModel();
      }
      throw new Error("streamingModel() serves the model engines (bedrock, openai-compatible); on the local engine, core/agent/engine.ts agentModel() builds the local agent engine");
    })(),
    () => (streamingPromise = undefined),
  );
  return streamingPromise;
}
