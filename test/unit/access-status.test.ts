/** The access status table (spec 01 "Access status"), every pair: only pending → active and active → suspended. */
import { describe, expect, it } from "vitest";
import { ACCESS_TRANSITIONS, AccessStatusTable } from "../../core/user/access";
import { AccessStatus } from "../../core/user/schema";

const ALLOWED = new Set(["pending->active", "active->suspended"]);
const pairs = AccessStatus.options.flatMap((from) => AccessStatus.options.map((to) => [from, to] as const));

describe("access status table", () => {
  it("has a row for every status and nothing else", () => {
    expect(Object.keys(ACCESS_TRANSITIONS).sort()).toEqual([...AccessStatus.options].sort());
  });

  it.each(pairs)("%s -> %s", (from, to) => {
    const allowed = ALLOWED.has(`${from}->${to}`);
    expect(AccessStatusTable.canTransition(from, to)).toBe(allowed);
    if (allowed) expect(() => AccessStatusTable.assertTransition(from, to)).not.toThrow();
    else expect(() => AccessStatusTable.assertTransition(from, to)).toThrow(expect.objectContaining({ code: "INVALID_TRANSITION", extra: expect.objectContaining({ valid_transitions: AccessStatusTable.validTransitions(from) }) }));
  });

  it("suspended is terminal and unknown states have no transitions", () => {
    expect(AccessStatusTable.validTransitions("suspended")).toEqual([]);
    expect(AccessStatusTable.validTransitions("deleted")).toEqual([]);
  });
});
