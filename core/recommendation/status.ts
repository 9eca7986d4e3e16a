import * as z from "zod";
import { AppError } from "../error";

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

const isStatus = (s: string): s is RecommendationStatus => Object.hasOwn(RECOMMENDATION_TRANSITIONS, s);

/**
 * The states reachable from `from` in one step, in table order. Unknown states (e.g. corrupt stored data) have none.
 */
export function validTransitions(from: string): RecommendationStatus[] {
  return isStatus(from) ? [...RECOMMENDATION_TRANSITIONS[from]] : [];
}

/** True when the table allows `from → to`. Unknown states and self-transitions are never allowed. */
export function canTransition(from: string, to: string): boolean {
  return isStatus(from) && isStatus(to) && RECOMMENDATION_TRANSITIONS[from].includes(to);
}

/**
 * The batch-update error string of spec 01 `PATCH /api/recommendations/batch/status`:
 * `invalid_transition: <from> -> <to>`.
 */
export const transitionErrorString = (from: string, to: string): string => `invalid_transition: ${from} -> ${to}`;

/**
 * Throws unless `from → to` is allowed.
 *
 * @throws AppError `INVALID_TRANSITION` (HTTP 422, DESIGN.md section 5) with extra
 *   `{ valid_transitions: RecommendationStatus[], from, to }` and message `invalid_transition: <from> -> <to>`.
 */
export function assertTransition(from: string, to: string): void {
  if (!canTransition(from, to)) {
    throw new AppError("INVALID_TRANSITION", transitionErrorString(from, to), {
      valid_transitions: validTransitions(from),
      from,
      to,
    });
  }
}

/**
 * Per-item check for batch updates, which report an invalid transition for that item only (spec 01): `null` when
 * allowed, otherwise the item's `{ error, valid_transitions }` for the 200 body's `errors[]`.
 */
export function checkBatchTransition(
  from: string,
  to: string,
): null | { error: string; valid_transitions: RecommendationStatus[] } {
  return canTransition(from, to) ? null : { error: transitionErrorString(from, to), valid_transitions: validTransitions(from) };
}
