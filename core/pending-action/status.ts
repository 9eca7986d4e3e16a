import * as z from "zod";
import { stateTable } from "../state-table";

/**
 * Pending action status machine (spec 01 "States and transitions → Pending action status"; DESIGN.md 6.2), as ONE
 * table `from → allowed to[]` (DESIGN.md section 4.7). Every write that moves a row is a conditional write on the
 * state it was read in (core/pending-action/index.ts, executor.ts); this module is the single source of the pairs.
 *
 * One internal state beyond the spec's five: `executing`, a row claimed by an executor under a lease. It shows as
 * `approved` on the wire (the spec's state until the execution ends). An executing row whose lease expired (its
 * executor crashed) may be claimed again, hence `executing → executing`. An execution that met a transient failure
 * (a busy model or table, a synthesis lock held by another run) puts the row back, `executing → approved`, with a
 * time before which it is not retried: "not now" is not a failure (spec 01: approved → failed when it "errors").
 */
export const PendingActionStatus = z
  .enum(["pending", "approved", "rejected", "executed", "failed"])
  .meta({ id: "PendingActionStatus" });
/** A status on the wire (spec 01 Pending action `status`). */
export type PendingActionStatus = z.infer<typeof PendingActionStatus>;

/** Every stored status: the spec's plus `executing`. */
export const STORED_STATUSES = ["pending", "approved", "rejected", "executing", "executed", "failed"] as const;
export type StoredStatus = (typeof STORED_STATUSES)[number];

/** New pending actions start here. */
export const INITIAL_PENDING_ACTION_STATUS: StoredStatus = "pending";

/** The table: state → next allowed states. rejected, executed and failed are terminal. */
export const PENDING_ACTION_TRANSITIONS: Readonly<Record<StoredStatus, readonly StoredStatus[]>> = {
  // approve / reject (single or batch)
  pending: ["approved", "rejected"],
  // an executor claims the row under a lease
  approved: ["executing"],
  // the execution ends; or it is deferred after a transient failure (approved, with a retry time); or the lease
  // expired and another executor claims it again (or gives up: failed)
  executing: ["executed", "failed", "executing", "approved"],
  rejected: [],
  executed: [],
  failed: [],
};

const table = stateTable(PENDING_ACTION_TRANSITIONS);

/** The states reachable from `from` in one step, in table order; none for terminal and unknown states. */
export const validTransitions = table.validTransitions;
/** True when the table allows `from -> to`. */
export const canTransition = table.canTransition;
/** @throws AppError INVALID_TRANSITION (422) unless `from -> to` is allowed (a defect guard: callers check first). */
export const assertTransition = table.assertTransition;

/** The stored status as the spec shows it: `executing` is still `approved` until the execution ends. */
export const wireStatus = (status: StoredStatus): PendingActionStatus => (status === "executing" ? "approved" : status);

/** The stored statuses a wire status filter matches (`approved` also matches rows being executed). */
export const storedStatusesOf = (status: PendingActionStatus): StoredStatus[] =>
  status === "approved" ? ["approved", "executing"] : [status];
