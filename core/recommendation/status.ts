import * as z from "zod";
import { stateTable, transitionErrorString } from "../state-table";

/**
 * Recommendation status machine (spec 01 "States and transitions → Recommendation status"), as ONE table
 * `from → allowed to[]` (DESIGN.md section 4.7). The entity layer enforces the same table with a conditional write
 * (`where status = from`); this module is the single source of the allowed pairs.
 *
 * A status never transitions to itself: a PATCH to the current status is an invalid transition.
 */
export const RecommendationStatus = z
  .enum(["suggested", "accepted", "in_progress", "implemented", "rejected"])
  .meta({ id: "RecommendationStatus" });
export type RecommendationStatus = z.infer<typeof RecommendationStatus>;

/** New recommendations start here (spec 01 Recommendation.status). */
export const INITIAL_RECOMMENDATION_STATUS: RecommendationStatus = "suggested";

/** The spec table, verbatim: state → next allowed states. */
export const RECOMMENDATION_TRANSITIONS: Readonly<Record<RecommendationStatus, readonly RecommendationStatus[]>> = {
  suggested: ["accepted", "rejected"],
  accepted: ["in_progress", "rejected", "suggested"],
  rejected: ["suggested"],
  in_progress: ["implemented", "accepted", "suggested"],
  implemented: ["suggested"],
};

const table = stateTable(RECOMMENDATION_TRANSITIONS);

/** The states reachable from `from` in one step, in table order; none for terminal and unknown states. */
export const validTransitions = table.validTransitions;
/** True when the table allows `from -> to`. */
export const canTransition = table.canTransition;
/** @throws AppError INVALID_TRANSITION (422) with `valid_transitions`, `from`, `to` unless `from -> to` is allowed. */
export const assertTransition = table.assertTransition;
/** Per-item check for batch updates (spec 01: an invalid item is reported, the others go on). */
export const checkBatchTransition = table.checkBatchTransition;
export { transitionErrorString };
