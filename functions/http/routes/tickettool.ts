import * as z from "zod";
import { defineRoutes, type RouteSpec } from "../../lib/route";
import { CallbackQuery, ConnectResult, WorkspaceBody, WorkspaceQuery } from "../../../core/integration/schema";
import { TicketProjectList, TicketProjectsQuery, TicketsStatus } from "../../../core/integration/tickets/schema";

const TicketsDisconnected = z.object({ disconnected: z.boolean() }).meta({ id: "TicketsDisconnected" });

/**
 * The ticket tool, Jira Cloud (spec 02 "Ticket-tool integration"; DESIGN.md 6.4): its own endpoint group, so only this
 * Lambda holds the Atlassian client secret. Every route carries has_integrations (spec 02 Authentication 5); the
 * callback, a browser redirect without a bearer token, is gated on the state row's workspace (core/integration/oauth.ts).
 * Not `tickets`: that name is the execution tickets' (/api/execution).
 */
export const tickettoolRoutes = defineRoutes({
  "tickettool.connect": {
    method: "POST", path: "/api/integrations/tickets/connect", group: "tickettool", access: "user", workspaceScope: "body",
    summary: "Start connecting Jira Cloud (OAuth 2.0 3LO): the authorization URL and its single-use state (600 s)",
    body: WorkspaceBody, feature: "has_integrations",
    errors: ["SERVICE_UNAVAILABLE"],
    responses: { 200: ConnectResult },
  },
  "tickettool.callback": {
    method: "GET", path: "/api/integrations/tickets/callback", group: "tickettool", access: "public",
    summary: "Atlassian's OAuth redirect: consumes the state, exchanges the code, resolves the site's cloud_id, stores the tokens encrypted, redirects to the settings page",
    query: CallbackQuery, feature: "has_integrations", produces: "text/plain",
    responses: { 302: null },
  },
  "tickettool.disconnect": {
    method: "POST", path: "/api/integrations/tickets/disconnect", group: "tickettool", access: "user", workspaceScope: "body",
    summary: "Disconnect Jira (soft): the integration is deactivated and its token cleared; the row is kept for audit",
    body: WorkspaceBody, feature: "has_integrations",
    responses: { 200: TicketsDisconnected },
  },
  "tickettool.status": {
    method: "GET", path: "/api/integrations/tickets/status", group: "tickettool", access: "user", workspaceScope: "query",
    summary: "Jira connection status: connected, connected_at and the site's cloud_id; needs_reconnect after a refused grant",
    query: WorkspaceQuery, feature: "has_integrations",
    responses: { 200: TicketsStatus },
  },
  "tickettool.projects": {
    method: "GET", path: "/api/integrations/tickets/projects", group: "tickettool", access: "user", workspaceScope: "query",
    summary: "Jira projects the connected account can browse, 50 a page, `search` on key and name (the frontend keeps the choice)",
    query: TicketProjectsQuery, feature: "has_integrations",
    errors: ["NO_ACTIVE_INTEGRATION", "TICKETS_TOKEN_ERROR", "RATE_LIMITED", "SERVICE_UNAVAILABLE"],
    responses: { 200: TicketProjectList },
  },
} satisfies Record<string, RouteSpec>);
