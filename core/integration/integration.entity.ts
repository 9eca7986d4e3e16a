import { Entity } from "electrodb";

const KINDS = ["codehost", "planner", "tickets", "filestore"] as const;

/**
 * A workspace's connection to one provider (spec 02 Integration, per workspace and kind). Tokens are one encrypted
 * blob (core/integration/crypto.ts): never an attribute in clear. `token_version` is bumped by every token write, and
 * a refresh writes only where the version it read is still there (one writer at a time, DESIGN.md 6.4).
 */
export const buildIntegrationEntity = () => new Entity({
  model: { entity: "integration", version: "1", service: "r2d" },
  attributes: {
    workspace_id: { type: "string", required: true },
    kind: { type: KINDS, required: true },
    /** False after the ticket tool's soft disconnect (the row is kept for audit, the token cleared). */
    is_active: { type: "boolean", required: true, default: true },
    /** Set when the provider refused the grant (expired or revoked): the status says reconnect. */
    needs_reconnect: { type: "boolean", required: true, default: false },
    /** AWS Encryption SDK message (base64) of the token set, encryption context {workspace_id, kind}. */
    token_ciphertext: { type: "string" },
    token_version: { type: "number", required: true, default: 0 },
    /** When the access token expires (ISO), when the provider says; no refresh is attempted without it. */
    token_expires_at: { type: "string" },
    /** Epoch ms until which one writer holds the right to refresh (the others use the token they have, or wait). */
    refresh_claimed_until: { type: "number" },
    scope: { type: "string" },
    /** The provider's account details shown by status (login, avatar, user and org names, e-mail). */
    account: { type: "any" },
    /** codehost: "owner/repo" names the user selected. */
    selected_repos: { type: "list", items: { type: "string" } },
    /** planner: the selected team and project. */
    selected_team_id: { type: "string" },
    selected_team_name: { type: "string" },
    selected_project_id: { type: "string" },
    selected_project_name: { type: "string" },
    /** tickets: the Atlassian site. */
    cloud_id: { type: "string" },
    connected_by: { type: "string", required: true },
    connected_at: { type: "string", required: true },
    last_synced_at: { type: "string" },
    updated_at: { type: "string", required: true, default: () => new Date().toISOString(), set: () => new Date().toISOString(), watch: "*" },
  },
  indexes: {
    byWorkspace: {
      pk: { field: "pk", composite: ["workspace_id"], template: "ws#${workspace_id}", casing: "none" },
      sk: { field: "sk", composite: ["kind"], template: "integration#${kind}", casing: "none" },
    },
  },
});
export type IntegrationEntity = ReturnType<typeof buildIntegrationEntity>;

/**
 * An OAuth state row (spec 02 Authentication 4): single-use (consumed by a conditional delete at the callback), valid
 * 600 s from `created_at_ms` (checked in code; `ttl` only lets DynamoDB clean up later). Looked up by the state alone,
 * since the provider's redirect carries nothing else.
 */
export const buildOAuthStateEntity = () => new Entity({
  model: { entity: "oauth_state", version: "1", service: "r2d" },
  attributes: {
    state: { type: "string", required: true },
    workspace_id: { type: "string", required: true },
    kind: { type: KINDS, required: true },
    user_id: { type: "string", required: true },
    /** PKCE S256 verifier (absent for providers without PKCE); lives only as long as the state. */
    code_verifier: { type: "string" },
    redirect_uri: { type: "string", required: true },
    created_at_ms: { type: "number", required: true },
    ttl: { type: "number", required: true },
  },
  indexes: {
    byState: {
      pk: { field: "pk", composite: ["state"], template: "oauth_state#${state}", casing: "none" },
      sk: { field: "sk", composite: [], template: "oauth_state", casing: "none" },
    },
  },
});
export type OAuthStateEntity = ReturnType<typeof buildOAuthStateEntity>;

/**
 * A recommendation's link to an issue in a tracker (spec 02 Integration, Links). The sort key groups links by kind
 * and recommendation, so "links of a recommendation" and "every link of a kind" (sync) are partition queries.
 */
export const buildIssueLinkEntity = () => new Entity({
  model: { entity: "issue_link", version: "1", service: "r2d" },
  attributes: {
    id: { type: "string", required: true },
    workspace_id: { type: "string", required: true },
    kind: { type: ["codehost", "planner"] as const, required: true },
    recommendation_id: { type: "string", required: true },
    /** codehost: "owner/repo" and the issue number; planner: the issue id and identifier (ENG-12). */
    repo_full_name: { type: "string" },
    issue_number: { type: "number" },
    issue_id: { type: "string" },
    identifier: { type: "string" },
    issue_url: { type: "string", required: true },
    title: { type: "string", required: true },
    /** codehost: open or closed (with state_reason); planner: the state's name and type. */
    state: { type: "string", required: true },
    state_reason: { type: "string" },
    state_type: { type: "string" },
    pull_request_url: { type: "string" },
    /** The ETag of the last issue read, for a conditional request (a 304 costs no rate limit). */
    etag: { type: "string" },
    created_by: { type: "string" },
    pending_action_id: { type: "string" },
    last_synced_at: { type: "string" },
    /**
     * The `started_at` of the last sync run whose read of this issue failed (gone, out of reach): that run's queued
     * continuations skip the link instead of reading it again from the start, so a run ends however many links fail.
     */
    sync_failed_run: { type: "string" },
    created_at: { type: "string", required: true, readOnly: true, default: () => new Date().toISOString() },
  },
  indexes: {
    byWorkspace: {
      pk: { field: "pk", composite: ["workspace_id"], template: "ws#${workspace_id}", casing: "none" },
      sk: { field: "sk", composite: ["kind", "recommendation_id", "id"], template: "issue_link#${kind}#${recommendation_id}#${id}", casing: "none" },
    },
  },
});
export type IssueLinkEntity = ReturnType<typeof buildIssueLinkEntity>;
