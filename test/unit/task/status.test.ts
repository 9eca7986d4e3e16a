/**
 * The background task state table (spec 02 "States and transitions → Background task"; DESIGN.md 4.7 and 6.5),
 * checked on every (from, to) pair: the spec's moves plus running → running (the worker's progress and heartbeat, a
 * resumed attempt) and pending → failed (the runner never started it).
 */
import { describe, expect, it } from "vitest";
import { itFollowsTheTable } from "../../support/state-table";
import * as S from "../../../core/task/status";
import { TASK_TIMEOUT_SECONDS, SpawnableTaskType, TaskType, timedOutError } from "../../../core/task/schema";

/** Written out independently of the module, so a change to the table fails here. */
const EXPECTED: Record<string, string[]> = {
  pending: ["running", "cancelled", "failed"],
  running: ["running", "completed", "failed", "cancelled"],
  completed: [],
  failed: [],
  cancelled: [],
};

describe("task status table", () => {
  const states = S.TaskStatus.options;

  it("has the spec's five states and starts pending", () => {
    expect([...states].sort()).toEqual(Object.keys(EXPECTED).sort());
    expect(S.INITIAL_TASK_STATUS).toBe("pending");
  });

  itFollowsTheTable(S, states, EXPECTED);

  it("completed, failed and cancelled are terminal; completed and failed cannot be cancelled", () => {
    expect(states.filter((s) => S.validTransitions(s).length === 0).sort()).toEqual(["cancelled", "completed", "failed"]);
    expect([...S.TERMINAL_STATUSES].sort()).toEqual(["cancelled", "completed", "failed"]);
    for (const s of states) expect(S.isTerminal(s)).toBe(EXPECTED[s]!.length === 0);
    expect(S.canTransition("completed", "cancelled")).toBe(false);
    expect(S.canTransition("failed", "cancelled")).toBe(false);
  });

  it("the guard of each write is every status the table lets move there", () => {
    expect(S.fromStatusesOf("cancelled").sort()).toEqual(["pending", "running"]);
    expect(S.fromStatusesOf("failed").sort()).toEqual(["pending", "running"]);
    expect(S.fromStatusesOf("completed")).toEqual(["running"]);
    expect(S.fromStatusesOf("running").sort()).toEqual(["pending", "running"]);
    expect(S.fromStatusesOf("pending")).toEqual([]);
  });

  it("refuses unknown states", () => {
    expect(S.canTransition("bogus", "running")).toBe(false);
    expect(S.canTransition("pending", "bogus")).toBe(false);
    expect(S.validTransitions("bogus")).toEqual([]);
  });
});

describe("task types and timeouts (spec 02)", () => {
  it("a client spawns the six named types; the service adds research_cycle", () => {
    expect([...SpawnableTaskType.options].sort()).toEqual(["drafting", "fs_research", "recommendation", "research", "synthesis", "validation_kit"]);
    expect(TaskType.options).toContain("research_cycle");
    expect(SpawnableTaskType.safeParse("research_cycle").success).toBe(false);
  });

  it("validation_kit 240 s, fs_research 600 s, the others 300 s; the failure text ends 'timed out after Ns'", () => {
    expect(TASK_TIMEOUT_SECONDS).toEqual({ validation_kit: 240, fs_research: 600, research: 300, synthesis: 300, recommendation: 300, drafting: 300, research_cycle: 300 });
    expect(timedOutError(240)).toMatch(/timed out after 240s$/);
  });
});
