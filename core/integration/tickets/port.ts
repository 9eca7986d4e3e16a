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

export interface TicketTool {
  /** One page of the projects the account can browse, `startAt` 0-based, filtered by Jira on key and name with `query`. */
  listProjects(opts: { startAt: number; maxResults: number; query?: string }): Promise<{ projects: TicketProject[]; total: number; isLast: boolean }>;
}
