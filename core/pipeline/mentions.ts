import * as Research from "../research";
import { embedder } from "../ai/select";
import { embedUnits } from "../ai/synthesis";
import { encodeVector } from "../ai/vectors";
import { deleteObject, putObject } from "../storage";

/** What indexing stores beside a source (`mentions.json`): per-unit mention vectors (see SynthesisSource.vectors). */
export interface StoredMentions {
  embedder_id: string;
  dimensions: number;
  /** One base64 Float32Array per extraction unit, same order. */
  vectors: string[];
}

/** Is mention indexing on? MENTION_INDEXING=off skips it (tests that do not synthesize; synthesis embeds on the fly). */
export const mentionIndexingEnabled = (): boolean => process.env.MENTION_INDEXING !== "off";

/**
 * Embed a completed source's mentions once and store them beside it, then mark it `indexed` (a field this service
 * adds to spec 01's research source; docs/decisions.md). Run by the extraction's Index step and by the recovery sweeper (core/pipeline/recovery.ts).
 * `stillCurrent` is checked after the slow embedding and again after the write: a source deleted or reprocessed
 * meanwhile must not get (or keep) the file; it throws to stop.
 * @returns false when the source has no stored extraction (nothing to index), true once indexed.
 * @throws whatever `stillCurrent` or the embedder throws (the vectors file is removed again if written).
 */
export async function indexMentions(workspaceId: string, sourceId: string, stillCurrent: () => Promise<void>): Promise<boolean> {
  const extraction = await Research.readExtraction(workspaceId, sourceId);
  if (!extraction) return false;
  const engine = await embedder();
  // Nobody waits on this: a synthesis a user started goes first (EmbedOptions.background).
  const vectors = await embedUnits(extraction.units, engine, { background: true });
  const stored: StoredMentions = { embedder_id: engine.id, dimensions: engine.dimensions, vectors: vectors.map(encodeVector) };
  const key = Research.mentionsKey(workspaceId, sourceId);
  await stillCurrent();
  await putObject(key, JSON.stringify(stored), "application/json");
  try {
    await stillCurrent();
  } catch (err) {
    await deleteObject(key);
    throw err;
  }
  await Research.markIndexed(workspaceId, sourceId);
  return true;
}
