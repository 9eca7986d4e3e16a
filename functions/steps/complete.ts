import * as Research from "../../core/research";
import type { StepState } from "./common";

/** Complete step: pending -> completed with the extraction's figures (a superseded attempt writes nothing). */
export async function handler(state: StepState): Promise<StepState> {
  await Research.markCompleted(state.workspace_id, state.source_id, state.attempt, state.stats!);
  return state;
}
