/**
 * What crosses the boundary to a tracker, by platform (spec 02 "Execution tickets"): the priority mapping at push, and
 * the status category a sync reads back. Categories come from the tracker's own category field, never from a status
 * name (DESIGN.md 6.4): teams rename "Done" to "Shipped" or add "Won't do" inside the done category, and a name
 * match would misread them. Pure functions; the adapters call them.
 */
import * as z from "zod";

export const Platform = z.enum(["codehost", "planner", "tickets"]).meta({ id: "ExecutionPlatform" });
export type Platform = z.infer<typeof Platform>;

export const TicketPriority = z.enum(["P0", "P1", "P2", "P3"]).meta({ id: "ExecutionTicketPriority" });
export type TicketPriority = z.infer<typeof TicketPriority>;

/**
 * The category a synced ticket is in (`synced_status`): todo (not started: GitHub open, Linear triage / backlog /
 * unstarted, Jira "new"), in_progress (Linear started, Jira "indeterminate"), done, cancelled (closed without doing it).
 */
export const TicketCategory = z.enum(["todo", "in_progress", "done", "cancelled"]).meta({ id: "ExecutionTicketCategory" });
export type TicketCategory = z.infer<typeof TicketCategory>;

/** Categories after which nothing more happens to the issue. */
export const TERMINAL_CATEGORIES: readonly TicketCategory[] = ["done", "cancelled"];

/** Spec 02 priority mapping, code host column: a label. */
export const CODEHOST_PRIORITY_LABEL: Record<TicketPriority, string> = {
  P0: "priority:critical",
  P1: "priority:high",
  P2: "priority:medium",
  P3: "priority:low",
};

/** Spec 02 priority mapping, planner column: Linear's integer priority (0 none, 1 urgent, 2 high, 3 medium, 4 low). */
export const PLANNER_PRIORITY: Record<TicketPriority, 1 | 2 | 3 | 4> = { P0: 1, P1: 2, P2: 3, P3: 4 };

/** Spec 02 priority mapping, ticket-tool column: Jira's priority name. */
export const TICKETS_PRIORITY: Record<TicketPriority, "Highest" | "High" | "Medium" | "Low"> = {
  P0: "Highest",
  P1: "High",
  P2: "Medium",
  P3: "Low",
};

/**
 * The priority a push sends, per platform: a label (code host), an integer (planner), a priority name (ticket tool).
 * A ticket without a priority sends none (DESIGN.md 5: "Ticket tool with no priority: send none"; the same for all).
 */
export function priorityFor(platform: "codehost", p: TicketPriority | null | undefined): string | null;
export function priorityFor(platform: "planner", p: TicketPriority | null | undefined): 1 | 2 | 3 | 4 | null;
export function priorityFor(platform: "tickets", p: TicketPriority | null | undefined): "Highest" | "High" | "Medium" | "Low" | null;
export function priorityFor(platform: Platform, p: TicketPriority | null | undefined): string | number | null {
  if (!p) return null;
  if (platform === "codehost") return CODEHOST_PRIORITY_LABEL[p];
  if (platform === "planner") return PLANNER_PRIORITY[p];
  return TICKETS_PRIORITY[p];
}

/**
 * GitHub: `state` and `state_reason` (REST issue). Open (also reopened) is todo; closed as not_planned or duplicate
 * is cancelled; closed as completed, or with no reason (issues closed before GitHub recorded one), is done.
 */
export function githubCategory(issue: { state: string; state_reason?: string | null }): TicketCategory | null {
  if (issue.state === "open") return "todo";
  if (issue.state !== "closed") return null;
  return issue.state_reason === "not_planned" || issue.state_reason === "duplicate" ? "cancelled" : "done";
}

/**
 * Linear: the workflow state's `type` (triage, backlog, unstarted, started, completed, canceled). Linear spells it
 * "canceled"; "cancelled" (the spec's spelling) is read the same. Any other type is unknown: null.
 */
export function linearCategory(state: { type: string; name?: string }): TicketCategory | null {
  switch (state.type) {
    case "triage":
    case "backlog":
    case "unstarted":
      return "todo";
    case "started":
      return "in_progress";
    case "completed":
      return "done";
    case "canceled":
    case "cancelled":
    case "duplicate": // Linear's Duplicate state: closed without being done, as GitHub's state_reason duplicate
      return "cancelled";
    default:
      return null;
  }
}

/** Jira's fixed status category ids (GET /rest/api/3/statuscategory): 2 new, 4 indeterminate, 3 done; 1 is "No Category". */
const JIRA_CATEGORY_IDS: Record<number, TicketCategory> = { 2: "todo", 4: "in_progress", 3: "done" };

/**
 * Jira Cloud: the status's `statusCategory` (`key` new / indeterminate / done, or its fixed `id`). Jira has no
 * cancelled category: a "Won't do" status sits in done, and is read as done (a name would be the only clue, and
 * names are not read). "undefined" (No Category) and anything else is unknown: null.
 */
export function jiraCategory(status: { name?: string; statusCategory: { key?: string; id?: number } }): TicketCategory | null {
  const { key, id } = status.statusCategory;
  if (key === "new") return "todo";
  if (key === "indeterminate") return "in_progress";
  if (key === "done") return "done";
  if (key === undefined && typeof id === "number") return JIRA_CATEGORY_IDS[id] ?? null;
  return null;
}
