/**
 * The execution ticket state table (spec 02 "Execution ticket"; DESIGN.md 4.7), checked on every (from, to) pair,
 * and the mappings that cross to a tracker: the spec's priority mapping per platform, and the status category a sync
 * reads (GitHub state/state_reason, Linear state type, Jira statusCategory), never the status name.
 */
import { describe, expect, it } from "vitest";
import { itFollowsTheTable } from "../support/state-table";
import * as S from "../../core/ticket/status";
import { githubCategory, jiraCategory, linearCategory, priorityFor, TicketPriority } from "../../core/ticket/mapping";

/** Written out independently of the module, so a change to the table fails here. */
const EXPECTED: Record<string, string[]> = {
  generated: ["reviewed"],
  reviewed: ["reviewed", "pushed", "push_failed"],
  push_failed: ["reviewed", "pushed", "push_failed"],
  pushed: ["synced"],
  synced: ["synced"],
};

describe("execution ticket status table", () => {
  const states = S.TicketStatus.options;

  it("has the spec's five states, a row for each, and starts generated", () => {
    expect([...states].sort()).toEqual(["generated", "push_failed", "pushed", "reviewed", "synced"]);
    expect(Object.keys(S.TICKET_TRANSITIONS).sort()).toEqual([...states].sort());
    expect(S.INITIAL_TICKET_STATUS).toBe("generated");
  });

  itFollowsTheTable(S, states, EXPECTED, (from, to, allowed) => {
    // A batch reports a refused move per item instead of throwing (spec 02 review and push of many tickets).
    expect(S.checkBatchTransition(from, to)).toEqual(allowed ? null : { error: `invalid_transition: ${from} -> ${to}`, valid_transitions: EXPECTED[from] });
  });

  it("only a reviewed or failed ticket can be pushed, and a pushed one is never edited again", () => {
    expect(states.filter((s) => S.canTransition(s, "pushed")).sort()).toEqual(["push_failed", "reviewed"]);
    expect(states.filter((s) => S.canTransition(s, "reviewed")).sort()).toEqual(["generated", "push_failed", "reviewed"]);
  });

  it("refuses unknown states", () => {
    expect(S.canTransition("bogus", "reviewed")).toBe(false);
    expect(S.canTransition("generated", "bogus")).toBe(false);
    expect(S.validTransitions("bogus")).toEqual([]);
  });
});

describe("priority mapping at push (spec 02)", () => {
  it.each([
    ["P0", "priority:critical", 1, "Highest"],
    ["P1", "priority:high", 2, "High"],
    ["P2", "priority:medium", 3, "Medium"],
    ["P3", "priority:low", 4, "Low"],
  ] as const)("%s: code host %s, planner %i, ticket tool %s", (p, label, linear, jira) => {
    expect(priorityFor("codehost", p)).toBe(label);
    expect(priorityFor("planner", p)).toBe(linear);
    expect(priorityFor("tickets", p)).toBe(jira);
  });

  it("covers every priority, and sends none when a ticket has none", () => {
    expect(TicketPriority.options).toEqual(["P0", "P1", "P2", "P3"]);
    for (const platform of ["codehost", "planner", "tickets"] as const) expect(priorityFor(platform as "codehost", null)).toBeNull();
  });
});

describe("status categories, never names", () => {
  it("GitHub: open is todo; closed as completed (or with no reason) done; not_planned and duplicate cancelled", () => {
    expect(githubCategory({ state: "open", state_reason: null })).toBe("todo");
    expect(githubCategory({ state: "open", state_reason: "reopened" })).toBe("todo");
    expect(githubCategory({ state: "closed", state_reason: "completed" })).toBe("done");
    expect(githubCategory({ state: "closed", state_reason: null })).toBe("done");
    expect(githubCategory({ state: "closed", state_reason: "not_planned" })).toBe("cancelled");
    expect(githubCategory({ state: "closed", state_reason: "duplicate" })).toBe("cancelled");
    expect(githubCategory({ state: "locked" })).toBeNull();
  });

  it("Linear: by the workflow state's type, whatever the state is called", () => {
    const cases: [string, string, string | null][] = [
      ["triage", "Done", "todo"],
      ["backlog", "Shipped", "todo"],
      ["unstarted", "Todo", "todo"],
      ["started", "Done-ish", "in_progress"],
      ["completed", "In Progress", "done"],
      ["canceled", "Done", "cancelled"],
      ["cancelled", "Open", "cancelled"],
      ["archived", "Done", null],
    ];
    for (const [type, name, category] of cases) expect(linearCategory({ type, name }), `${type} named ${name}`).toBe(category);
  });

  it("Jira: by the statusCategory key (or its fixed id), never the status name", () => {
    expect(jiraCategory({ name: "Done", statusCategory: { key: "new" } })).toBe("todo");
    expect(jiraCategory({ name: "To Do", statusCategory: { key: "indeterminate" } })).toBe("in_progress");
    expect(jiraCategory({ name: "Won't do", statusCategory: { key: "done" } })).toBe("done");
    expect(jiraCategory({ name: "Shipped", statusCategory: { id: 3 } })).toBe("done");
    expect(jiraCategory({ name: "Open", statusCategory: { id: 2 } })).toBe("todo");
    expect(jiraCategory({ name: "Doing", statusCategory: { id: 4 } })).toBe("in_progress");
    expect(jiraCategory({ name: "Done", statusCategory: { key: "undefined", id: 1 } })).toBeNull();
    expect(jiraCategory({ name: "Done", statusCategory: {} })).toBeNull();
  });
});
