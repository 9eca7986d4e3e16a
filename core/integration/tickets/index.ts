/**
 * The ticket-tool integration (spec 02 "Ticket-tool integration", prefix /api/integrations/tickets): connect,
 * callback (the site's cloud_id resolved from the grant's accessible resources), soft disconnect, status, projects.
 * Jira Cloud through the `TicketTool` port (./jira.ts). No agent tools (spec 02): execution tickets use the port.
 */
import { requireMember } from "../../workspace";
import * as OAuth from "../oauth";
import { ProviderError, toAppError, tokenError } from "../errors";
import { logProviderFailure } from "../log";
import type { CallbackQuery, ConnectResult } from "../schema";
import { accessibleSites, jira } from "./jira";
import type { TicketTool } from "./port";
import type { TicketProjectList, TicketProjectsQuery, TicketsStatus } from "./schema";

export type { TicketTool, TicketProject, TicketSite, TicketIssueRef, TicketIssueStatus, TicketIssueType } from "./port";

/** Projects a page of `GET /projects` holds (Jira's own default page). */
export const PROJECTS_PAGE_SIZE = 50;

/**
 * Run `fn` with the workspace's Jira site. The access token comes from the OAuth framework, refreshed by one writer at
 * a time (Jira rotates the refresh token on every refresh). A refused grant marks the integration for reconnection
 * and answers TICKETS_TOKEN_ERROR (424); other provider failures become their HTTP errors (rate limits 429 with
 * Retry-After) unless `raw` asks for the ProviderError itself (queued work reads its retry-after).
 * @throws AppError NO_ACTIVE_INTEGRATION (404), TICKETS_TOKEN_ERROR (424), RATE_LIMITED (429), ...
 */
export async function withTicketTool<T>(workspaceId: string, fn: (tool: TicketTool, cloudId: string, integration: OAuth.IntegrationItem) => Promise<T>, opts: { raw?: boolean } = {}): Promise<T> {
  const grant = await OAuth.grantOf(workspaceId, "tickets");
  const cloudId = grant.integration.cloud_id;
  // A grant without a site cannot address any Jira API: only a new connection (which resolves one) mends it.
  if (!cloudId) throw tokenError("tickets", "no Atlassian site is recorded for the grant");
  try {
    return await fn(jira(grant.accessToken, cloudId), cloudId, grant.integration);
  } catch (err) {
    logProviderFailure("tickets", workspaceId, err);
    if (err instanceof ProviderError && err.failure === "auth_expired") {
      await OAuth.markNeedsReconnect(grant.integration);
      throw tokenError("tickets");
    }
    throw opts.raw ? err : toAppError("tickets", err);
  }
}

/** `POST /connect` (spec 02; Atlassian OAuth 2.0 3LO, audience api.atlassian.com, no PKCE). @throws SERVICE_UNAVAILABLE (503) naming ATLASSIAN_CLIENT_ID/_SECRET */
export const connect = (userId: string, workspaceId: string): Promise<ConnectResult> => OAuth.connect(userId, "tickets", workspaceId);

/**
 * `GET /callback`: consume the state, exchange the code (a refused exchange stores nothing and redirects with
 * `tickets=error&reason=exchange_failed`), resolve the site's cloud_id from the grant's accessible resources (the first
 * site granted Jira scopes; none: `account_failed`), and store the tokens encrypted with cloud_id and scope.
 */
export const callback = (query: CallbackQuery) =>
  OAuth.callback("tickets", query, async (token) => {
    const site = (await accessibleSites(token)).find((s) => s.scopes.some((scope) => scope.endsWith(":jira-work")));
    if (!site) throw new ProviderError("not_found", "the grant reaches no Jira site");
    return { account: { site_name: site.name, site_url: site.url, site_avatar_url: site.avatar_url }, cloud_id: site.cloud_id };
  });

/** `POST /disconnect` (soft, spec 02): is_active false, the token cleared, the row kept for audit. */
export const disconnect = (userId: string, workspaceId: string) => OAuth.disconnect(userId, "tickets", workspaceId);

/** `GET /status` (spec 02: connected, connected_at, cloud_id; plus needs_reconnect and the site's name and address). */
export async function status(userId: string, workspaceId: string): Promise<TicketsStatus> {
  await requireMember(userId, workspaceId);
  const row = await OAuth.findIntegration(workspaceId, "tickets");
  const account = (row?.account ?? {}) as { site_name?: string; site_url?: string };
  return {
    connected: Boolean(row?.is_active && row.token_ciphertext && !row.needs_reconnect),
    connected_at: row?.connected_at ?? null,
    cloud_id: row?.cloud_id ?? null,
    needs_reconnect: Boolean(row?.is_active && row.needs_reconnect),
    site_name: account.site_name ?? null,
    site_url: account.site_url ?? null,
  };
}

/**
 * `GET /projects`: one page (50) of the projects the connected account can browse, `search` matched by Jira against
 * the key and name. The frontend keeps the chosen projects (spec 02), the server none.
 * @throws AppError NO_ACTIVE_INTEGRATION (404), TICKETS_TOKEN_ERROR (424), RATE_LIMITED (429)
 */
export async function projects(userId: string, q: TicketProjectsQuery): Promise<TicketProjectList> {
  await requireMember(userId, q.workspace_id);
  const startAt = (q.page - 1) * PROJECTS_PAGE_SIZE;
  const page = await withTicketTool(q.workspace_id, (tool) => tool.listProjects({ startAt, maxResults: PROJECTS_PAGE_SIZE, query: q.search || undefined }));
  return { projects: page.projects, page: q.page, has_more: !page.isLast, total: page.total };
}
