import * as z from "zod";
import { defineRoutes, type RouteSpec } from "../../lib/route";
import { CallbackQuery, ConnectResult, WorkspaceBody, WorkspaceQuery } from "../../../core/integration/schema";
import { FilestoreStatus } from "../../../core/integration/filestore/schema";

const FilestoreDisconnected = z.object({ disconnected: z.boolean() }).meta({ id: "FilestoreDisconnected" });

/**
 * The file store, Google Drive (spec 02 "File-store integration"; DESIGN.md 6.4): its own endpoint group, so only
 * this Lambda (and the copilot's, for the tools) holds the Google client secret. Every route carries has_integrations
 * (spec 02 Authentication 5); the callback is gated on the state row's workspace (core/integration/oauth.ts). The
 * disconnect names the workspace in the query, as every DELETE here does (no DELETE takes a body).
 */
export const filestoreRoutes = defineRoutes({
  "filestore.connect": {
    method: "POST", path: "/api/integrations/filestore/connect", group: "filestore", access: "user", workspaceScope: "body",
    summary: "Start connecting Google Drive: the authorization URL (offline access, PKCE S256) and its single-use state (600 s)",
    body: WorkspaceBody, feature: "has_integrations",
    errors: ["SERVICE_UNAVAILABLE"],
    responses: { 200: ConnectResult },
  },
  "filestore.callback": {
    method: "GET", path: "/api/integrations/filestore/callback", group: "filestore", access: "public",
    summary: "Google's OAuth redirect: consumes the state, exchanges the code, stores the access and refresh tokens encrypted, redirects to the settings page",
    query: CallbackQuery, feature: "has_integrations", produces: "text/plain",
    responses: { 302: null },
  },
  "filestore.disconnect": {
    method: "DELETE", path: "/api/integrations/filestore/disconnect", group: "filestore", access: "user", workspaceScope: "query",
    summary: "Disconnect Google Drive: removes the integration and its stored tokens",
    query: WorkspaceQuery, feature: "has_integrations",
    responses: { 200: FilestoreDisconnected },
  },
  "filestore.status": {
    method: "GET", path: "/api/integrations/filestore/status", group: "filestore", access: "user", workspaceScope: "query",
    summary: "Google Drive connection status: the account's e-mail, name and picture; needs_reconnect after a refused grant",
    query: WorkspaceQuery, feature: "has_integrations",
    responses: { 200: FilestoreStatus },
  },
} satisfies Record<string, RouteSpec>);
