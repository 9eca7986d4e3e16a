import * as z from "zod";
import { defineRoutes, type RouteSpec } from "../lib/route";
import { IdpWebhookEvent, RedeemCodeInput, UserProfile, WebhookAck } from "../../core/user/schema";
import {
  AddMemberInput,
  AgentIntro,
  CreateWorkspaceInput,
  Member,
  MemberList,
  MemberParam,
  UpdateMemberInput,
  UpdateSettingsInput,
  UpdateWorkspaceInput,
  Workspace,
  WorkspaceIdParam,
  WorkspaceList,
  WorkspaceSettings,
} from "../../core/workspace/schema";
import { researchRoutes } from "./routes/research";
import { insightRoutes } from "./routes/insights";
import { recommendationRoutes } from "./routes/recommendations";
import { blockRoutes, documentRoutes } from "./routes/documents";

/**
 * The route table: method, path, group, schemas, access. Read by the stacks (one Lambda per group), the local
 * gateway, the OpenAPI generator and the tests. Adding a route here and its implementation in the group file
 * is all it takes to ship an endpoint.
 */
export const routes = defineRoutes({
  // --- auth (spec 01 Account; DESIGN.md section 5: redeem-code)
  "auth.me": {
    method: "GET", path: "/api/auth/me", group: "auth", access: "user",
    summary: "The caller's profile (snake_case plus camelCase aliases)",
    responses: { 200: UserProfile },
  },
  "auth.redeemCode": {
    method: "POST", path: "/api/auth/redeem-code", group: "auth", access: "user",
    summary: "Redeem an access code: a pending account becomes active",
    body: RedeemCodeInput,
    responses: { 200: UserProfile },
  },

  // --- workspaces (spec 01 Account and workspaces)
  "workspaces.create": {
    method: "POST", path: "/api/workspaces", group: "workspaces", access: "user",
    summary: "Create a workspace (needs product access); the caller becomes owner and a trial starts",
    body: CreateWorkspaceInput,
    responses: { 201: Workspace },
  },
  "workspaces.list": {
    method: "GET", path: "/api/workspaces", group: "workspaces", access: "user",
    summary: "The caller's workspaces, most recently updated first",
    responses: { 200: WorkspaceList },
  },
  "workspaces.get": {
    method: "GET", path: "/api/workspaces/{workspace_id}", group: "workspaces", access: "user", workspaceScope: "path",
    summary: "One workspace",
    params: WorkspaceIdParam,
    responses: { 200: Workspace },
  },
  "workspaces.update": {
    method: "PATCH", path: "/api/workspaces/{workspace_id}", group: "workspaces", access: "user", workspaceScope: "path",
    summary: "Change workspace fields (owner or admin)",
    params: WorkspaceIdParam,
    body: UpdateWorkspaceInput,
    responses: { 200: Workspace },
  },
  "workspaces.delete": {
    method: "DELETE", path: "/api/workspaces/{workspace_id}", group: "workspaces", access: "user", workspaceScope: "path",
    summary: "Delete a workspace and all its data and files (owner only)",
    params: WorkspaceIdParam,
    responses: { 204: null },
  },
  "workspaces.getSettings": {
    method: "GET", path: "/api/workspaces/{workspace_id}/settings", group: "workspaces", access: "user", workspaceScope: "path",
    summary: "Workspace settings (camelCase)",
    params: WorkspaceIdParam,
    responses: { 200: WorkspaceSettings },
  },
  "workspaces.updateSettings": {
    method: "PATCH", path: "/api/workspaces/{workspace_id}/settings", group: "workspaces", access: "user", workspaceScope: "path",
    summary: "Change settings (owner or admin); enabling research cycles has requirements (403 when unmet)",
    params: WorkspaceIdParam,
    body: UpdateSettingsInput,
    responses: { 200: WorkspaceSettings },
  },
  "workspaces.agentIntro": {
    method: "GET", path: "/api/workspaces/{workspace_id}/agent-intro", group: "workspaces", access: "user", workspaceScope: "path",
    summary: "The copilot's intro for the workspace's state, with the four counts",
    params: WorkspaceIdParam,
    responses: { 200: AgentIntro },
  },
  "workspaces.listMembers": {
    method: "GET", path: "/api/workspaces/{workspace_id}/members", group: "workspaces", access: "user", workspaceScope: "path",
    summary: "Members of the workspace with their roles",
    params: WorkspaceIdParam,
    responses: { 200: MemberList },
  },
  "workspaces.addMember": {
    method: "POST", path: "/api/workspaces/{workspace_id}/members", group: "workspaces", access: "user", workspaceScope: "path",
    summary: "Add a user by e-mail with a role (owner or admin)",
    params: WorkspaceIdParam,
    body: AddMemberInput,
    responses: { 201: Member },
  },
  "workspaces.updateMember": {
    method: "PATCH", path: "/api/workspaces/{workspace_id}/members/{user_id}", group: "workspaces", access: "user", workspaceScope: "path",
    summary: "Change a member's role (owner or admin; the owner's role cannot change)",
    params: MemberParam,
    body: UpdateMemberInput,
    responses: { 200: Member },
  },
  "workspaces.removeMember": {
    method: "DELETE", path: "/api/workspaces/{workspace_id}/members/{user_id}", group: "workspaces", access: "user", workspaceScope: "path",
    summary: "Remove a member (owner or admin, or yourself; the owner cannot be removed)",
    params: MemberParam,
    responses: { 204: null },
  },

  ...researchRoutes,
  ...insightRoutes,
  ...recommendationRoutes,
  ...documentRoutes,
  ...blockRoutes,

  // --- webhooks (spec 02 Webhooks)
  "webhooks.idp": {
    method: "POST", path: "/api/webhooks/idp", group: "webhooks", access: "webhook",
    summary: "Identity-provider user events, verified by Standard Webhooks signature",
    body: IdpWebhookEvent,
    bodyType: "raw",
    responses: { 200: WebhookAck },
  },

  // --- API description
  "docs.openapi": {
    method: "GET", path: "/api/openapi.json", group: "docs", access: "public",
    summary: "This API's OpenAPI 3.1 document",
    responses: { 200: z.record(z.string(), z.unknown()) },
  },
  "docs.page": {
    method: "GET", path: "/api/docs", group: "docs", access: "public",
    summary: "Browsable API documentation (Swagger UI)",
    responses: { 200: z.string() },
    produces: "text/html",
  },
  "docs.asset": {
    method: "GET", path: "/api/docs/{asset}", group: "docs", access: "public",
    summary: "Static assets of the documentation page",
    params: z.object({ asset: z.string() }),
    responses: { 200: z.string() },
    produces: "application/octet-stream",
  },
} satisfies Record<string, RouteSpec>);

export type Routes = typeof routes;
export type RouteId = keyof Routes;

/**
 * Lambda timeout in seconds per group (the stacks and the local gateway use the same figures). The AI groups block
 * for up to a minute (spec 01 typical durations), beyond API Gateway's 30 s integration limit, so the stacks also
 * give them Function URLs.
 */
export const GROUP_TIMEOUT_SECONDS: Record<string, number> = { synthesis: 180, generation: 120 };
export const DEFAULT_TIMEOUT_SECONDS = 29;
export const timeoutOf = (group: string): number => GROUP_TIMEOUT_SECONDS[group] ?? DEFAULT_TIMEOUT_SECONDS;

/** The endpoint groups, each one Lambda. */
export const groups = (): string[] => [...new Set(Object.values(routes).map((r) => r.group))].sort();

/** The routes of one group as [id, spec] pairs. */
export const routesOf = (group: string): [RouteId, RouteSpec][] =>
  (Object.entries(routes) as [RouteId, RouteSpec][]).filter(([, r]) => r.group === group);

const compiled = (Object.entries(routes) as [RouteId, RouteSpec][]).map(([id, r]) => ({
  id,
  spec: r,
  literalSegments: r.path.split("/").filter((s) => s && !s.startsWith("{")).length,
  regex: new RegExp(`^${r.path.replace(/\{([^/}]+)\}/g, "(?<$1>[^/]+)")}/?$`),
}));
// Static paths win over parameterised ones, as in API Gateway: more literal segments first.
compiled.sort((a, b) => b.literalSegments - a.literalSegments);

/**
 * Find the route for a request, as API Gateway does (the local gateway and the tests use this).
 * @returns the route and its path parameters, `methodMismatch` when the path exists under another method, or null.
 */
export function matchRoute(method: string, path: string) {
  let pathExists = false;
  for (const c of compiled) {
    const m = c.regex.exec(path);
    if (!m) continue;
    pathExists = true;
    if (c.spec.method === method.toUpperCase()) {
      return { id: c.id, spec: c.spec, pathParameters: { ...(m.groups ?? {}) } as Record<string, string> };
    }
  }
  return pathExists ? ("methodMismatch" as const) : null;
}
