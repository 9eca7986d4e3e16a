import * as Research from "../../core/research";
import { StaleExecutionError, type StepState } from "./common";

/**
 * Complete step: pending -> completed with the extraction's figures. A superseded attempt (reprocessed or deleted
 * meanwhile) writes nothing and stops here, so it does not go on to index a source that is not its own.
 */
export async function handler(state: StepState): Promise<StepState> {
  const written = await Research.markCompleted(state.workspace_id, state.source_id, state.attempt, state.stats!);
  if (!written) throw new StaleExecutionError(`source ${state.source_id} attempt ${state.attempt} is no longer current`);
  return state;
}
