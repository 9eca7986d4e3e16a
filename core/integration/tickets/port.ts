/**
 * The `TicketTool` port (DESIGN.md 6.4): what the ticket-tool endpoints need from a site-scoped ticket tool (Jira
 * Cloud). Failures are `ProviderError`s (core/integration/errors.ts). The tool is used only through execution tickets
 * (spec 02: no agent tools), so the port stays small.
 */

/** A site the grant reaches (Atlassian's accessible resources): its id is the `cloud_id` every API call is scoped to. */
export interface TicketSite {
  cloud_id: string;
  name: string;
  url: string;
  scopes: string[];
  avatar_url: string | null;
}

/** A project the connected account can browse. */
export interface TicketProject {
  id: string;
  key: string;
  name: string;
  /** software, service_desk, business, ... (Jira's own open set). */
  project_type_key: string | null;
  /** classic (company-managed) or next-gen (team-managed). */
  style: string | null;
  avatar_url: string | null;
}

export interface TicketTool extends TicketIssues {
  /** One page of the projects the account can browse, `startAt` 0-based, filtered by Jira on key and name with `query`. */
  listProjects(opts: { startAt: number; maxResults: number; query?: string }): Promise<{ projects: TicketProject[]; total: number; isLast: boolean }>;
}

/** An issue as created or found: Jira's stable numeric id, its key (which changes when the issue moves project). */
export interface TicketIssueRef {
  id: string;
  key: string;
}

/** An issue's status as read for sync: the category (key new / indeterminate / done, or its fixed id), never the name alone. */
export interface TicketIssueStatus extends TicketIssueRef {
  status: { name: string; category_key: string | null; category_id: number | null };
}

/** An issue type a project accepts on create. */
export interface TicketIssueType {
  id: string;
  name: string;
  subtask: boolean;
}

/** What execution tickets push (core/ticket/trackers.ts): the description is plain text with paragraphs, rendered to ADF here. */
export interface TicketIssueCreate {
  projectKey: string;
  issueTypeId: string;
  summary: string;
  description: string;
  labels: string[];
  /** Jira's priority name (spec 02 mapping), or none. */
  priority: string | null;
}

/** What execution tickets need beyond the endpoints: create, find by marker label, read status categories. */
export interface TicketIssues {
  /** The issue types a project accepts on create (GET /issue/createmeta/{project}/issuetypes). */
  issueTypes(projectKey: string): Promise<TicketIssueType[]>;
  createIssue(input: TicketIssueCreate): Promise<TicketIssueRef>;
  /** The issue of `projectKey` carrying `label` (the ticket's marker), or null: a JQL search. */
  findByLabel(projectKey: string, label: string): Promise<TicketIssueRef | null>;
  /** The status (with its category) of each issue id that still exists and is visible; at most 100 ids a call. */
  statuses(ids: string[]): Promise<TicketIssueStatus[]>;
}
