import * as z from "zod";
import { stateTable, transitionErrorString } from "../state-table";

/**
 * Execution ticket status machine (spec 02 "Execution ticket": generated, reviewed, pushed, push_failed, synced; the
 * spec shows no transition table, so this one is ours, docs/decisions.md "Execution tickets"), as ONE table
 * `from → allowed to[]` (DESIGN.md 4.7). Every write that moves a ticket is conditioned on the status it read.
 *
 * - generated → reviewed: the review (PATCH, with or without edits).
 * - reviewed → reviewed: a further edit after review; push_failed → reviewed: an edit to fix what the tracker refused.
 * - reviewed, push_failed → pushed | push_failed: a push attempt (a failed one may be retried).
 * - pushed → synced, synced → synced: a sync read the tracker's status (one-way: nothing is written back).
 * - pushed and synced tickets are not edited: the tracker holds the ticket now and we never write to it again.
 */
export const TicketStatus = z.enum(["generated", "reviewed", "pushed", "push_failed", "synced"]).meta({ id: "ExecutionTicketStatus" });
export type TicketStatus = z.infer<typeof TicketStatus>;

/** New tickets start here. */
export const INITIAL_TICKET_STATUS: TicketStatus = "generated";

export const TICKET_TRANSITIONS: Readonly<Record<TicketStatus, readonly TicketStatus[]>> = {
  generated: ["reviewed"],
  reviewed: ["reviewed", "pushed", "push_failed"],
  push_failed: ["reviewed", "pushed", "push_failed"],
  pushed: ["synced"],
  synced: ["synced"],
};

const table = stateTable(TICKET_TRANSITIONS);

/** The states reachable from `from` in one step, in table order; none for unknown states. */
export const validTransitions = table.validTransitions;
/** True when the table allows `from -> to`. */
export const canTransition = table.canTransition;
/** @throws AppError INVALID_TRANSITION (422) with `valid_transitions`, `from`, `to` unless `from -> to` is allowed. */
export const assertTransition = table.assertTransition;
/** Per-item check for batch operations (push): null when allowed, else `{error, valid_transitions}`. */
export const checkBatchTransition = table.checkBatchTransition;
export { transitionErrorString };
