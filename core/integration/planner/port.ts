/**
 * The `Planner` port (DESIGN.md 6.4): what the planner endpoints, the copilot's planner tools and execution tickets
 * need from a planning tool. Failures are `ProviderError`s (core/integration/errors.ts). Ids are the provider's.
 */

/** A workflow state's category: what sync maps, never the state's name (DESIGN.md 6.4). */
export type StateType = "triage" | "backlog" | "unstarted" | "started" | "completed" | "cancelled";

/**
 * State types that close an issue: sync moves its recommendation to implemented (spec 02). Adapters give types in
 * these words (Linear's `canceled` and `duplicate` arrive as `cancelled`, core/integration/planner/linear.ts).
 */
export const CLOSED_STATE_TYPES: readonly string[] = ["completed", "cancelled"];

export interface PlannerState {
  id: string;
  name: string;
  type: string;
  position: number;
  color: string;
}

export interface PlannerTeam {
  id: string;
  key: string;
  name: string;
  projects: { id: string; name: string; state: string }[];
  /** Sorted by position (the order the planner shows its columns). */
  states: PlannerState[];
  labels: { id: string; name: string; color: string }[];
}

export interface PlannerIssue {
  id: string;
  identifier: string;
  title: string;
  description: string | null;
  url: string;
  /** 0 none, 1 urgent, 2 high, 3 medium, 4 low. */
  priority: number;
  priority_label: string;
  state: { id: string; name: string; type: string } | null;
  assignee: { id: string; name: string } | null;
  project: { id: string; name: string } | null;
  cycle: { id: string; number: number; name: string | null } | null;
  team: { id: string; key: string };
  labels: { id: string; name: string }[];
  due_date: string | null;
  created_at: string;
  updated_at: string;
}

export interface PlannerUser {
  id: string;
  name: string;
  display_name: string;
  email: string;
}

export interface PlannerCycle {
  id: string;
  number: number;
  name: string | null;
  starts_at: string;
  ends_at: string;
  /** 0..1, the planner's own figure. */
  progress: number;
}

export interface PlannerProject {
  id: string;
  name: string;
  state: string;
  description: string;
  url: string;
  progress: number;
  start_date: string | null;
  target_date: string | null;
}

/** Filter of `queryIssues`, already resolved to ids (names are resolved by the caller, server-side). */
export interface IssueQuery {
  teamId: string;
  stateTypes?: { in?: string[]; nin?: string[] };
  assigneeId?: string;
  projectId?: string;
  labelId?: string;
  cycleId?: string;
}

export interface IssueCreate {
  /** The issue's id, chosen by us (a UUID): a replayed create finds the issue instead of making a second one. */
  id?: string;
  teamId: string;
  title: string;
  description: string;
  projectId?: string;
  labelIds?: string[];
  stateId?: string;
  priority?: number;
}

export interface IssueUpdate {
  title?: string;
  description?: string;
  stateId?: string;
  assigneeId?: string;
  priority?: number;
  dueDate?: string;
  /** null unsets the cycle. */
  cycleId?: string | null;
}

export interface Planner {
  /** The connected user and organization (the status fields of spec 02). */
  viewer(): Promise<{ user_name: string; user_email: string | null; org_name: string; org_logo_url: string | null }>;
  /** Every team the account reaches, with projects, workflow states (by position) and labels: one query a page. */
  teams(): Promise<PlannerTeam[]>;
  team(teamId: string): Promise<PlannerTeam | null>;
  createIssue(input: IssueCreate): Promise<PlannerIssue>;
  /** An issue by id or identifier (ENG-12), or null. */
  getIssue(idOrIdentifier: string): Promise<PlannerIssue | null>;
  /** Many issues by id in one request (sync: Linear counts requests and complexity per hour). */
  issuesByIds(ids: string[]): Promise<PlannerIssue[]>;
  queryIssues(filter: IssueQuery, first: number): Promise<PlannerIssue[]>;
  searchIssues(term: string, opts: { teamId?: string; first: number }): Promise<PlannerIssue[]>;
  updateIssue(id: string, input: IssueUpdate): Promise<PlannerIssue>;
  /** `id` chosen by us, as for issues: a replay finds the comment (`getComment`). */
  createComment(input: { id: string; issueId: string; body: string }): Promise<{ id: string; url: string }>;
  getComment(id: string): Promise<{ id: string; url: string } | null>;
  users(): Promise<PlannerUser[]>;
  activeCycle(teamId: string): Promise<PlannerCycle | null>;
  cycle(id: string): Promise<{ cycle: PlannerCycle; issues: PlannerIssue[] } | null>;
  project(id: string): Promise<{ project: PlannerProject; milestones: { id: string; name: string; target_date: string | null }[]; issues: PlannerIssue[] } | null>;
  projects(teamId: string): Promise<PlannerProject[]>;
}
