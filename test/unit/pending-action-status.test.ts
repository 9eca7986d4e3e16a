/**
 * The pending action state table (spec 01 "Pending action status"; DESIGN.md 4.7 and 6.2), checked on every
 * (from, to) pair: the spec's transitions plus the internal `executing` (claimed under a lease, reclaimable once the
 * lease expired, or back to approved when a transient failure defers it), which shows as `approved` on the wire.
 */
import { describe, expect, it } from "vitest";
import { itFollowsTheTable } from "../support/state-table";
import * as S from "../../core/pending-action/status";

/** Written out independently of the module, so a change to the table fails here. */
const EXPECTED: Record<string, string[]> = {
  pending: ["approved", "rejected"],
  approved: ["executing"],
  executing: ["executed", "failed", "executing", "approved"],
  rejected: [],
  executed: [],
  failed: [],
};

describe("pending action status table", () => {
  const states = S.STORED_STATUSES;

  it("stores the spec's five states plus executing, and starts pending", () => {
    expect([...states].sort()).toEqual(Object.keys(EXPECTED).sort());
    expect([...S.PendingActionStatus.options].sort()).toEqual(["approved", "executed", "failed", "pending", "rejected"]);
    expect(S.INITIAL_PENDING_ACTION_STATUS).toBe("pending");
  });

  itFollowsTheTable(S, states, EXPECTED);

  it("the terminal states are rejected, executed and failed", () => {
    expect(states.filter((s) => S.validTransitions(s).length === 0).sort()).toEqual(["executed", "failed", "rejected"]);
  });

  it("refuses unknown states", () => {
    expect(S.canTransition("bogus", "approved")).toBe(false);
    expect(S.canTransition("pending", "bogus")).toBe(false);
    expect(S.validTransitions("bogus")).toEqual([]);
  });

  it("shows executing as approved on the wire, every other state as itself", () => {
    for (const s of states) expect(S.wireStatus(s)).toBe(s === "executing" ? "approved" : s);
  });

  it("a wire status filter of approved matches rows being executed too", () => {
    expect(S.storedStatusesOf("approved").sort()).toEqual(["approved", "executing"]);
    for (const s of ["pending", "rejected", "executed", "failed"] as const) expect(S.storedStatusesOf(s)).toEqual([s]);
  });
});
