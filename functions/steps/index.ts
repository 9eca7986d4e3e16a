import * as Research from "../../core/research";
import { embedder } from "../../core/ai/select";
import { embedUnits } from "../../core/ai/synthesis";
import { encodeVector } from "../../core/ai/vectors";
import { deleteObject, putObject } from "../../core/storage";
import { requireCurrentAttempt, type StepState } from "./common";

/** What the Index step stores beside a source: per-unit mention vectors (see SynthesisSource.vectors). */
export interface StoredMentions {
  embedder_id: string;
  dimensions: number;
  /** One base64 Float32Array per extraction unit, same order. */
  vectors: string[];
}

/**
 * Index step: embed the source's mentions once, at ingestion, so synthesis only clusters and names. A failure here
 * does not fail the source (the state machine catches it; synthesis then embeds on the fly).
 */
export async function handler(state: StepState): Promise<StepState> {
  // MENTION_INDEXING=off skips the precomputation (tests that do not synthesize; synthesis embeds on the fly).
  if (process.env.MENTION_INDEXING === "off") return state;
  await requireCurrentAttemptOrCompleted(state);
  const extraction = await Research.readExtraction(state.workspace_id, state.source_id);
  if (!extraction) return state;
  const engine = await embedder();
  // Nobody waits on this: a synthesis a user started goes first (EmbedOptions.background).
  const vectors = await embedUnits(extraction.units, engine, { background: true });
  const stored: StoredMentions = { embedder_id: engine.id, dimensions: engine.dimensions, vectors: vectors.map(encodeVector) };
  // Re-check after the slow embedding: a source deleted or reprocessed meanwhile must not get (or keep) the file.
  const key = Research.mentionsKey(state.workspace_id, state.source_id);
  await requireCurrentAttemptOrCompleted(state);
  await putObject(key, JSON.stringify(stored), "application/json");
  try {
    await requireCurrentAttemptOrCompleted(state);
  } catch (err) {
    await deleteObject(key);
    throw err;
  }
  await Research.markIndexed(state.workspace_id, state.source_id);
  return state;
}

/** Index runs after Complete: the source must be this attempt's, and completed. */
async function requireCurrentAttemptOrCompleted(state: StepState): Promise<void> {
  const item = await Research.getItem(state.workspace_id, state.source_id);
  if (!item || item.processing_attempt !== state.attempt || item.processing_status !== "completed") {
    await requireCurrentAttempt(state); // throws StaleExecutionError with the reason
  }
}
