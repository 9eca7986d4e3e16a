import * as z from "zod";
import { defineRoutes, type RouteSpec } from "../../lib/route";
import { CallbackQuery, ConnectResult, LinksQuery, SyncResult, WorkspaceBody, WorkspaceQuery } from "../../../core/integration/schema";
import {
  CreatePlannerIssueBody,
  CreatePlannerIssueResult,
  PlannerLinkList,
  PlannerStatus,
  PlannerTeamList,
  SelectTeamBody,
  SelectTeamResult,
} from "../../../core/integration/planner/schema";

const Disconnected = z.object({ disconnected: z.boolean() }).meta({ id: "PlannerDisconnected" });

/**
 * The planner integration (spec 02 "Planner integration"; DESIGN.md 6.4), Linear. Every route carries the plan gate
 * has_integrations (spec 02 Authentication 5). The callback is Linear's browser redirect, with no bearer token: its
 * state row names the workspace, whose plan is checked there (core/integration/oauth.ts); it answers a redirect to
 * the frontend's settings page.
 */
export const plannerRoutes = defineRoutes({
  "planner.connect": {
    method: "POST", path: "/api/integrations/planner/connect", group: "planner", access: "user", workspaceScope: "body",
    summary: "Start connecting Linear: the authorization URL and its single-use state (600 s; PKCE S256)",
    body: WorkspaceBody, feature: "has_integrations",
    errors: ["SERVICE_UNAVAILABLE"],
    responses: { 200: ConnectResult },
  },
  "planner.callback": {
    method: "GET", path: "/api/integrations/planner/callback", group: "planner", access: "public",
    summary: "Linear's OAuth redirect: consumes the state, exchanges the code, stores the token encrypted with the viewer's user and organization, redirects to the settings page",
    query: CallbackQuery, feature: "has_integrations", produces: "text/plain",
    responses: { 302: null },
  },
  "planner.disconnect": {
    method: "DELETE", path: "/api/integrations/planner/disconnect", group: "planner", access: "user", workspaceScope: "query",
    summary: "Disconnect Linear: removes the integration and every planner link of the workspace",
    query: WorkspaceQuery, feature: "has_integrations",
    responses: { 200: Disconnected },
  },
  "planner.status": {
    method: "GET", path: "/api/integrations/planner/status", group: "planner", access: "user", workspaceScope: "query",
    summary: "Linear connection status: user, organization and logo, selected team and project, last sync; needs_reconnect after a refused grant",
    query: WorkspaceQuery, feature: "has_integrations",
    responses: { 200: PlannerStatus },
  },
  "planner.teams": {
    method: "GET", path: "/api/integrations/planner/teams", group: "planner", access: "user", workspaceScope: "query",
    summary: "Teams the connected account reaches, with their projects, workflow states (sorted by position) and labels",
    query: WorkspaceQuery, feature: "has_integrations",
    errors: ["NO_ACTIVE_INTEGRATION", "PLANNER_TOKEN_ERROR", "RATE_LIMITED", "SERVICE_UNAVAILABLE"],
    responses: { 200: PlannerTeamList },
  },
  "planner.selectTeam": {
    method: "POST", path: "/api/integrations/planner/teams/select", group: "planner", access: "user", workspaceScope: "body",
    summary: "Save the selected team (and optionally a project of it): create, query and state resolution use it",
    body: SelectTeamBody, feature: "has_integrations",
    errors: ["NO_ACTIVE_INTEGRATION", "NOT_FOUND", "PLANNER_TOKEN_ERROR", "RATE_LIMITED", "SERVICE_UNAVAILABLE"],
    responses: { 200: SelectTeamResult },
  },
  "planner.createIssue": {
    method: "POST", path: "/api/integrations/planner/issues", group: "planner", access: "user", workspaceScope: "body",
    summary: "Create a Linear issue for a recommendation in the selected team (project defaults to the selected one), and link them",
    body: CreatePlannerIssueBody, feature: "has_integrations",
    errors: ["NO_TEAM_SELECTED", "NO_ACTIVE_INTEGRATION", "NOT_FOUND", "PLANNER_TOKEN_ERROR", "RATE_LIMITED", "SERVICE_UNAVAILABLE"],
    responses: { 200: CreatePlannerIssueResult },
  },
  "planner.links": {
    method: "GET", path: "/api/integrations/planner/links", group: "planner", access: "user", workspaceScope: "query",
    summary: "A recommendation's Linear issue links: identifier, URL, title, state and state type, last sync",
    query: LinksQuery, feature: "has_integrations",
    responses: { 200: PlannerLinkList },
  },
  "planner.sync": {
    method: "POST", path: "/api/integrations/planner/sync", group: "planner", access: "user", workspaceScope: "body",
    summary: "Refresh every linked issue in one batched query; a state of type completed or cancelled moves its recommendation to implemented",
    body: WorkspaceBody, feature: "has_integrations",
    errors: ["NO_ACTIVE_INTEGRATION", "PLANNER_TOKEN_ERROR", "RATE_LIMITED", "SERVICE_UNAVAILABLE"],
    counts: "integration_sync",
    responses: { 200: SyncResult },
  },
} satisfies Record<string, RouteSpec>);
