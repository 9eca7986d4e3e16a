import * as z from "zod";
import { defineRoutes, type RouteSpec } from "../../lib/route";
import {
  CallbackQuery,
  CodehostLinkList,
  CodehostStatus,
  ConnectResult,
  CreateIssueBody,
  CreateIssueResult,
  LinksQuery,
  RepoList,
  ReposQuery,
  SelectReposBody,
  SelectReposResult,
  SyncResult,
  WorkspaceBody,
  WorkspaceQuery,
} from "../../../core/integration/schema";

const Disconnected = z.object({ disconnected: z.boolean() }).meta({ id: "IntegrationDisconnected" });

/**
 * Integrations (spec 02 "Code-host integration" and the other integration sections; DESIGN.md 6.4). Every route
 * carries its kind's plan gate (spec 02 Authentication 5): has_codehost for the code host. The callback is the
 * provider's browser redirect, so it has no bearer token: its state row names the workspace, and the gate is checked
 * there (core/integration/oauth.ts); it answers a redirect to the frontend's settings page.
 */
export const codehostRoutes = defineRoutes({
  "codehost.connect": {
    method: "POST", path: "/api/integrations/codehost/connect", group: "codehost", access: "user", workspaceScope: "body",
    summary: "Start connecting GitHub: the authorization URL and its single-use state (600 s; PKCE S256)",
    body: WorkspaceBody, feature: "has_codehost",
    errors: ["SERVICE_UNAVAILABLE"],
    responses: { 200: ConnectResult },
  },
  "codehost.callback": {
    method: "GET", path: "/api/integrations/codehost/callback", group: "codehost", access: "public",
    summary: "GitHub's OAuth redirect: consumes the state, exchanges the code, stores the token encrypted, redirects to the settings page",
    query: CallbackQuery, feature: "has_codehost", produces: "text/plain",
    responses: { 302: null },
  },
  "codehost.disconnect": {
    method: "DELETE", path: "/api/integrations/codehost/disconnect", group: "codehost", access: "user", workspaceScope: "query",
    summary: "Disconnect GitHub: removes the integration and every issue link of the workspace",
    query: WorkspaceQuery, feature: "has_codehost",
    responses: { 200: Disconnected },
  },
  "codehost.status": {
    method: "GET", path: "/api/integrations/codehost/status", group: "codehost", access: "user", workspaceScope: "query",
    summary: "GitHub connection status: login, avatar, selected repositories, last sync; needs_reconnect after a refused grant",
    query: WorkspaceQuery, feature: "has_codehost",
    responses: { 200: CodehostStatus },
  },
  "codehost.repos": {
    method: "GET", path: "/api/integrations/codehost/repos", group: "codehost", access: "user", workspaceScope: "query",
    summary: "Repositories the connected account reaches, 100 a page, filtered by `search`",
    query: ReposQuery, feature: "has_codehost",
    errors: ["NO_ACTIVE_INTEGRATION", "CODEHOST_TOKEN_ERROR", "RATE_LIMITED", "SERVICE_UNAVAILABLE"],
    responses: { 200: RepoList },
  },
  "codehost.selectRepos": {
    method: "POST", path: "/api/integrations/codehost/repos/select", group: "codehost", access: "user", workspaceScope: "body",
    summary: "Save the selected repositories (org/repo): issues, tools and pushes use only these",
    body: SelectReposBody, feature: "has_codehost",
    errors: ["NO_ACTIVE_INTEGRATION"],
    responses: { 200: SelectReposResult },
  },
  "codehost.createIssue": {
    method: "POST", path: "/api/integrations/codehost/issues", group: "codehost", access: "user", workspaceScope: "body",
    summary: "Create an issue for a recommendation in a selected repository, and link them",
    body: CreateIssueBody, feature: "has_codehost",
    errors: ["REPO_NOT_SELECTED", "NO_ACTIVE_INTEGRATION", "CODEHOST_TOKEN_ERROR", "RATE_LIMITED", "SERVICE_UNAVAILABLE"],
    responses: { 200: CreateIssueResult },
  },
  "codehost.links": {
    method: "GET", path: "/api/integrations/codehost/links", group: "codehost", access: "user", workspaceScope: "query",
    summary: "A recommendation's issue links: number, URL, title, state, pull request URL, last sync",
    query: LinksQuery, feature: "has_codehost",
    responses: { 200: CodehostLinkList },
  },
  "codehost.sync": {
    method: "POST", path: "/api/integrations/codehost/sync", group: "codehost", access: "user", workspaceScope: "body",
    summary: "Refresh every linked issue (conditional requests); a closed issue moves its recommendation to implemented",
    body: WorkspaceBody, feature: "has_codehost",
    errors: ["NO_ACTIVE_INTEGRATION", "CODEHOST_TOKEN_ERROR", "SERVICE_UNAVAILABLE"],
    counts: "integration_sync",
    responses: { 200: SyncResult },
  },
} satisfies Record<string, RouteSpec>);
