import { crashPoint } from "../../core/crash-point";
import * as Research from "../../core/research";
import { deleteObject } from "../../core/storage";
import { StaleExecutionError, type StepState } from "./common";

/**
 * Complete step: pending -> completed with the extraction's figures. A superseded attempt (reprocessed or deleted
 * meanwhile) writes nothing and stops here, so it does not go on to index a source that is not its own. A source
 * deleted after the extraction step's last check (Parse, or a Textract/Transcribe job's) may have got the extraction
 * stored after its files were removed: it is removed here, so nothing is left behind.
 */
export async function handler(state: StepState): Promise<StepState> {
  const written = await Research.markCompleted(state.workspace_id, state.source_id, state.attempt, state.stats!);
  if (!written) {
    if (!(await Research.getItem(state.workspace_id, state.source_id))) {
      await deleteObject(Research.extractionKey(state.workspace_id, state.source_id));
    }
    throw new StaleExecutionError(`source ${state.source_id} attempt ${state.attempt} is no longer current`);
  }
  crashPoint("source-after-complete");
  return state;
}
