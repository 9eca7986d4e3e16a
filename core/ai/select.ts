import type { Embedder, Model, StreamingModel } from "./ports";

/**
 * Which AI engines run: "bedrock" (Converse + Titan embeddings) in deployed stages, "local" (the deterministic
 * engines: Universal Sentence Encoder embeddings, clustering, templates) on the embedded runtime. AI_ENGINE decides;
 * the stacks set it to "bedrock".
 */
export const aiEngine = (): "bedrock" | "local" => (process.env.AI_ENGINE === "bedrock" ? "bedrock" : "local");

let embedderPromise: Promise<Embedder> | undefined;
let modelPromise: Promise<Model | null> | undefined;
let streamingPromise: Promise<StreamingModel> | undefined;

/** The process-wide embedder, loaded lazily (the local model is only imported on the embedded runtime). */
export function embedder(): Promise<Embedder> {
  embedderPromise ??= (async () => {
    if (aiEngine() === "bedrock") {
      const { BedrockEmbedder } = await import("./bedrock");
      return new BedrockEmbedder();
    }
    const { LocalEmbedder } = await import("./local-embedder");
    return new LocalEmbedder();
  })();
  return embedderPromise;
}

/** The Model port for Bedrock; null on the local engine (which uses its own algorithms instead of a model). */
export function model(): Promise<Model | null> {
  modelPromise ??= (async () => {
    if (aiEngine() !== "bedrock") return null;
    const { BedrockModel } = await import("./bedrock");
    return new BedrockModel();
  })();
  return modelPromise;
}

/**
 * The streaming Model port of the copilot (DESIGN.md 6.1): Bedrock ConverseStream, or the deterministic local agent
 * engine on the embedded runtime. Loaded lazily, like the other ports.
 */
export function streamingModel(): Promise<StreamingModel> {
  streamingPromise ??= (async () => {
    if (aiEngine() === "bedrock") {
      const { BedrockStreamingModel } = await import("./bedrock-stream");
      return new BedrockStreamingModel();
    }
    const { LocalAgentModel } = await import("../agent/local-engine");
    return new LocalAgentModel();
  })();
  return streamingPromise;
}
