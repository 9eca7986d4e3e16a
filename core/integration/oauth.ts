/**
 * One OAuth 2.0 flow for the four integration kinds (spec 02 Authentication 4; DESIGN.md 6.4), on `oauth4webapi`:
 * connect, callback, disconnect, and the access token an adapter calls with (refreshed by one writer at a time).
 */
import * as oauth from "oauth4webapi";
import type { EntityItem } from "electrodb";
import { Config } from "../config";
import { AppError } from "../error";
import { db } from "../db/service";
import { writeAll } from "../db/bulk";
import { isConditionalFailure } from "../db/errors";
import { requireMember } from "../workspace";
import { requireFeature, type PlanFeature } from "../billing/gates";
import { openTokens, sealTokens, type TokenSet } from "./crypto";
import { tokenError } from "./errors";
import { integrationLog, oauthErrorInBody, oauthFailure } from "./log";
import { PROVIDERS, redirectUriOf, settingsPageOf, type OAuthProvider } from "./providers";
import type { CallbackQuery, ConnectResult, IntegrationKind } from "./schema";
import type { IntegrationEntity } from "./integration.entity";

export type IntegrationItem = EntityItem<IntegrationEntity>;

/** Spec 02 Authentication 4: a state row lives 10 minutes. */
export const OAUTH_STATE_TTL_SECONDS = 600;
/** An access token this close to its expiry is refreshed before use, ms. */
const REFRESH_MARGIN_MS = 60_000;
/** The token endpoint's answers that mean the refresh token will never work again: the user must reconnect. */
const REFUSED_GRANT = ["invalid_grant", "unauthorized_client", "bad_refresh_token"];
/** How long one writer holds the refresh claim, ms: longer than a token request may take (REFRESH_TIMEOUT_MS). */
const REFRESH_CLAIM_MS = 15_000;
/**
 * A token request is given up after this long, ms, well inside the claim: a request still running when the claim
 * lapsed would let a second writer send the same rotating refresh token, which Atlassian answers by revoking the grant.
 */
export const REFRESH_TIMEOUT_MS = 10_000;

/** The plan flag of each kind (spec 02 Authentication 5). */
export const FEATURE_OF: Record<IntegrationKind, PlanFeature> = {
  codehost: "has_codehost",
  planner: "has_integrations",
  tickets: "has_integrations",
  filestore: "has_integrations",
};

/**
 * A credential that is not configured: unset, or `none`. A deployed stage binds every kind's secrets (SST refuses to
 * deploy a function whose bound secret has no value), so an operator who does not use a provider sets its pair to
 * `none`, and connect then answers the same 503 as when they are unset.
 */
const unset = (value: string | undefined): boolean => !value || value.trim().toLowerCase() === "none";

function clientOf(provider: OAuthProvider) {
  const creds = Config.oauthClient(provider.settingPrefix);
  if (unset(creds.id) || unset(creds.secret)) {
    const missing = [`${provider.settingPrefix}_CLIENT_ID`, `${provider.settingPrefix}_CLIENT_SECRET`];
    throw new AppError("SERVICE_UNAVAILABLE", `The ${provider.name} integration is not configured: set ${missing.join(" and ")}`, { settings: missing });
  }
  const as: oauth.AuthorizationServer = {
    issuer: provider.issuer(),
    authorization_endpoint: provider.authorizationEndpoint(),
    token_endpoint: provider.tokenEndpoint(),
  };
  const client: oauth.Client = { client_id: creds.id! };
  // http only where the operator configured it (stand-in providers on loopback); the public defaults are https.
  const options = { [oauth.allowInsecureRequests]: new URL(as.token_endpoint!).protocol === "http:" };
  return { as, client, auth: oauth.ClientSecretPost(creds.secret!), options };
}

/**
 * `POST /api/integrations/<kind>/connect`: a single-use state (and a PKCE S256 verifier where the provider takes
 * one) stored for 600 s, and the provider's authorization URL carrying them and the exact redirect URI.
 * @returns `{auth_url, state}` (spec 02)
 * @throws AppError FORBIDDEN (403, not a member); SERVICE_UNAVAILABLE (503) naming the client settings when unset
 */
export async function connect(userId: string, kind: IntegrationKind, workspaceId: string): Promise<ConnectResult> {
  await requireMember(userId, workspaceId);
  const provider = PROVIDERS[kind];
  const { client } = clientOf(provider);
  const state = oauth.generateRandomState();
  const verifier = provider.pkce ? oauth.generateRandomCodeVerifier() : undefined;
  const redirectUri = redirectUriOf(kind);
  const now = Date.now();
  await db().entities.oauthState.create({
    state, workspace_id: workspaceId, kind, user_id: userId, code_verifier: verifier, redirect_uri: redirectUri,
    created_at_ms: now, ttl: Math.floor(now / 1000) + OAUTH_STATE_TTL_SECONDS,
  }).go();
  const url = new URL(provider.authorizationEndpoint());
  url.searchParams.set("client_id", client.client_id);
  url.searchParams.set("redirect_uri", redirectUri);
  url.searchParams.set("response_type", "code");
  url.searchParams.set("scope", provider.scopes.join(provider.scopeSeparator ?? " "));
  url.searchParams.set("state", state);
  if (verifier) {
    url.searchParams.set("code_challenge", await oauth.calculatePKCECodeChallenge(verifier));
    url.searchParams.set("code_challenge_method", "S256");
  }
  for (const [k, v] of Object.entries(provider.extraParams ?? {})) url.searchParams.set(k, v);
  integrationLog().info("integration connect started", { kind, workspace_id: workspaceId, pkce: Boolean(verifier) });
  return { auth_url: url.toString(), state };
}

/** What a kind's adapter learns about the connected account right after the exchange (shown by status). */
export interface AccountDetails {
  account: Record<string, string | null>;
  /** tickets: the Atlassian site the grant reaches. */
  cloud_id?: string;
}

/** Why a callback failed, as the `reason` of the redirect (`<kind>=error&reason=...`). */
export type CallbackFailure = "invalid_state" | "expired_state" | "access_denied" | "exchange_failed" | "account_failed" | "not_a_member";

const redirectTo = (kind: IntegrationKind, outcome: "connected" | "error", reason?: CallbackFailure, details: Record<string, unknown> = {}): string => {
  if (reason) integrationLog().warn("integration callback refused", { kind, reason, ...details });
  const url = new URL(settingsPageOf());
  url.searchParams.set(kind, outcome);
  if (reason) url.searchParams.set("reason", reason);
  return url.toString();
};

/**
 * `GET /api/integrations/<kind>/callback` (the provider's redirect): the state is read, checked to be of this kind,
 * consumed by a conditional delete (a second use finds nothing), checked against its 600 s lifetime, then the code is
 * exchanged (with the PKCE verifier and the same exact redirect URI), the tokens encrypted and stored, and the
 * account described by `describe`. On any failure nothing is stored (a failed exchange rolls the connection back).
 * @param describe the kind's adapter: reads the account's details with the new access token
 * @returns where to send the browser: the frontend's settings page with `<kind>=connected`, or `<kind>=error&reason=`
 * @throws AppError FORBIDDEN (403, a plan gate) when the workspace's plan lost the kind's feature since connect
 */
export async function callback(
  kind: IntegrationKind,
  query: CallbackQuery,
  describe: (accessToken: string) => Promise<AccountDetails>,
): Promise<{ location: string }> {
  if (!query.state) return { location: redirectTo(kind, "error", "invalid_state") };
  const stateKey = { state: query.state };
  const { data: row } = await db().entities.oauthState.get(stateKey).go({ consistent: true });
  // Forged, reused or meant for another kind: refused alike, and another kind's state is left for its own callback.
  if (!row || row.kind !== kind) return { location: redirectTo(kind, "error", "invalid_state") };
  // Who started the flow may have left the workspace since (the state lives 10 minutes): no grant of theirs is stored.
  try {
    await requireMember(row.user_id, row.workspace_id);
  } catch (err) {
    if (!(err instanceof AppError) || err.status >= 500) throw err;
    return { location: redirectTo(kind, "error", "not_a_member") };
  }
  await requireFeature({ userId: row.user_id, workspaceId: row.workspace_id }, FEATURE_OF[kind]);
  let consumed: typeof row | null = null;
  try {
    const res = await db().entities.oauthState.delete(stateKey).where((a, op) => op.exists(a.state)).go({ response: "all_old" });
    consumed = res.data as typeof row | null;
  } catch (err) {
    if (!isConditionalFailure(err)) throw err;
  }
  if (!consumed) return { location: redirectTo(kind, "error", "invalid_state") };
  if (Date.now() - consumed.created_at_ms > OAUTH_STATE_TTL_SECONDS * 1000) return { location: redirectTo(kind, "error", "expired_state") };
  if (query.error) return { location: redirectTo(kind, "error", "access_denied") };

  let tokens: TokenSet;
  try {
    // Inside the try: credentials removed since connect send the browser back with exchange_failed, not a JSON 503.
    const { as, client, auth, options } = clientOf(PROVIDERS[kind]);
    const params = oauth.validateAuthResponse(as, client, new URLSearchParams({ code: query.code ?? "", state: query.state }), consumed.state);
    const response = await oauth.authorizationCodeGrantRequest(as, client, auth, params, consumed.redirect_uri, consumed.code_verifier ?? oauth.nopkce, options);
    const result = await oauth.processAuthorizationCodeResponse(as, client, response);
    tokens = {
      access_token: result.access_token,
      ...(result.refresh_token ? { refresh_token: result.refresh_token } : {}),
      ...(typeof result.expires_in === "number" ? { expires_at: Date.now() + result.expires_in * 1000 } : {}),
      ...(typeof result.scope === "string" ? { scope: result.scope } : {}),
    };
  } catch (err) {
    return { location: redirectTo(kind, "error", "exchange_failed", { workspace_id: consumed.workspace_id, ...oauthFailure(err) }) };
  }
  let details: AccountDetails;
  try {
    details = await describe(tokens.access_token);
  } catch (err) {
    const failure = err instanceof Error ? { failure: (err as { failure?: string }).failure ?? err.name } : {};
    return { location: redirectTo(kind, "error", "account_failed", { workspace_id: consumed.workspace_id, ...failure }) };
  }
  const ctx = { workspace_id: consumed.workspace_id, kind };
  const token_ciphertext = await sealTokens(tokens, ctx);
  const { data: existing } = await db().entities.integration.get(ctx).go({ consistent: true });
  const now = new Date().toISOString();
  // A reconnect keeps the workspace's selections (repos, team) and replaces the grant; the version moves on so a
  // refresh racing the reconnect cannot overwrite the new grant. It is never reused, even after a hard disconnect
  // deleted the row: a request still holding the old grant's version must not mark or overwrite the new one.
  const token_version = grantVersion(existing?.token_version);
  await db().entities.integration.put({
    ...ctx,
    is_active: true,
    needs_reconnect: false,
    token_ciphertext,
    token_version,
    ...(tokens.expires_at ? { token_expires_at: new Date(tokens.expires_at).toISOString() } : {}),
    ...(tokens.scope ? { scope: tokens.scope } : {}),
    account: details.account,
    ...(details.cloud_id ? { cloud_id: details.cloud_id } : {}),
    selected_repos: existing?.selected_repos ?? [],
    ...(existing?.selected_team_id ? { selected_team_id: existing.selected_team_id, selected_team_name: existing.selected_team_name } : {}),
    ...(existing?.selected_project_id ? { selected_project_id: existing.selected_project_id, selected_project_name: existing.selected_project_name } : {}),
    connected_by: consumed.user_id,
    connected_at: now,
    ...(existing?.last_synced_at ? { last_synced_at: existing.last_synced_at } : {}),
  }).go();
  integrationLog().info("integration connected", {
    kind, workspace_id: consumed.workspace_id, token_version, reconnect: Boolean(existing), expires: Boolean(tokens.expires_at), refreshable: Boolean(tokens.refresh_token),
  });
  return { location: redirectTo(kind, "connected") };
}

/**
 * The `token_version` of a new grant: above the stored one and at least the current time in milliseconds, so a
 * version is not given again after a hard disconnect deleted the row (refreshes add 1 per refresh, far fewer than the
 * milliseconds between two grants).
 */
export function grantVersion(stored: number | undefined, nowMs = Date.now()): number {
  return Math.max((stored ?? 0) + 1, nowMs);
}

/** The workspace's integration of a kind, active or not, or null. */
export async function findIntegration(workspaceId: string, kind: IntegrationKind): Promise<IntegrationItem | null> {
  const { data } = await db().entities.integration.get({ workspace_id: workspaceId, kind }).go({ consistent: true });
  return data;
}

/**
 * The active integration of a kind (its token present).
 * @throws AppError NO_ACTIVE_INTEGRATION (404) when there is none (spec 02 Errors)
 */
export async function activeIntegration(workspaceId: string, kind: IntegrationKind): Promise<IntegrationItem> {
  const row = await findIntegration(workspaceId, kind);
  if (!row || !row.is_active || !row.token_ciphertext) {
    throw new AppError("NO_ACTIVE_INTEGRATION", `This workspace has no active ${PROVIDERS[kind].name} integration; connect it first`, { kind });
  }
  return row;
}

/**
 * Disconnect (spec 02): hard for codehost, planner and filestore (the row and every link of the kind deleted), soft
 * for the ticket tool (is_active false, token cleared, row kept for audit).
 * @throws AppError FORBIDDEN (403, not a member); SERVICE_UNAVAILABLE (503, retryable: links DynamoDB left unprocessed
 *   through every try)
 */
export async function disconnect(userId: string, kind: IntegrationKind, workspaceId: string): Promise<{ disconnected: boolean }> {
  await requireMember(userId, workspaceId);
  const key = { workspace_id: workspaceId, kind };
  if (kind === "tickets") {
    const row = await findIntegration(workspaceId, kind);
    if (!row) return { disconnected: false };
    await db().entities.integration.patch(key).set({ is_active: false, token_version: row.token_version + 1 }).remove(["token_ciphertext", "token_expires_at", "refresh_claimed_until"]).go();
    return { disconnected: true };
  }
  if (kind === "codehost" || kind === "planner") {
    const { data: links } = await db().entities.issueLink.query.byWorkspace({ workspace_id: workspaceId, kind }).go({ pages: "all" });
    // Links first: a failure part-way leaves an integration whose disconnect can be repeated. A batch delete hands
    // back what DynamoDB left unprocessed instead of sending it again: writeAll sends it again (then a 503), so no
    // link outlives its integration unnoticed.
    await writeAll(
      links.map((l) => ({ workspace_id: l.workspace_id, kind: l.kind, recommendation_id: l.recommendation_id, id: l.id })),
      (keys) => db().entities.issueLink.delete(keys).go(),
      (k: { recommendation_id: string; id: string }) => `${k.recommendation_id}#${k.id}`,
    );
  }
  const { data } = await db().entities.integration.delete(key).go({ response: "all_old" });
  return { disconnected: Boolean(data) };
}

/** Mark an integration as needing reconnection (the provider refused its grant), unless a newer grant replaced it. */
export async function markNeedsReconnect(row: Pick<IntegrationItem, "workspace_id" | "kind" | "token_version">): Promise<void> {
  try {
    await db().entities.integration.patch({ workspace_id: row.workspace_id, kind: row.kind })
      .set({ needs_reconnect: true })
      .where((a, op) => op.eq(a.token_version, row.token_version))
      .go();
  } catch (err) {
    if (!isConditionalFailure(err)) throw err;
  }
}

/** A usable access token of an integration, and the row version it came from (to mark that grant refused). */
export interface Grant {
  accessToken: string;
  integration: IntegrationItem;
}

/**
 * The access token to call the provider with, refreshed first when it expires within a minute and the provider
 * issued a refresh token. One writer refreshes at a time: it claims the refresh with a conditional write on the
 * version it read, and stores the new tokens only where that version is still current (Jira rotates its refresh
 * token on every use; a second refresh with a replaced token could revoke the grant). A caller that loses the claim
 * uses the token it has while it is valid, else reads the winner's.
 * @throws AppError NO_ACTIVE_INTEGRATION (404); `<KIND>_TOKEN_ERROR` (424) when the grant was refused (then marked)
 */
export async function grantOf(workspaceId: string, kind: IntegrationKind): Promise<Grant> {
  for (let attempt = 0; attempt < 20; attempt++) {
    const row = await activeIntegration(workspaceId, kind);
    if (row.needs_reconnect) throw tokenError(kind);
    const tokens = await openTokens(row.token_ciphertext!, { workspace_id: workspaceId, kind });
    const now = Date.now();
    const fresh = tokens.expires_at === undefined || tokens.expires_at - now > REFRESH_MARGIN_MS;
    if (fresh) return { accessToken: tokens.access_token, integration: row };
    if (!tokens.refresh_token) {
      if (tokens.expires_at! > now) return { accessToken: tokens.access_token, integration: row };
      integrationLog().warn("integration access token expired without a refresh token; it needs reconnecting", { kind, workspace_id: workspaceId, token_version: row.token_version });
      await markNeedsReconnect(row);
      throw tokenError(kind, "the access token expired and the provider issued no refresh token");
    }
    if (await claimRefresh(row, now)) return refresh(row, tokens);
    // Another writer is refreshing: the current token still serves if it has not expired yet.
    if (tokens.expires_at! > now) return { accessToken: tokens.access_token, integration: row };
    // Expired and being refreshed elsewhere: read again shortly (bounded; a refresh takes well under a second).
    await new Promise((r) => setTimeout(r, 150));
  }
  throw new AppError("SERVICE_UNAVAILABLE", `The ${PROVIDERS[kind].name} token is being refreshed; retry shortly`, { retry_after_seconds: 2 });
}

async function claimRefresh(row: IntegrationItem, now: number): Promise<boolean> {
  try {
    await db().entities.integration.patch({ workspace_id: row.workspace_id, kind: row.kind })
      .set({ refresh_claimed_until: now + REFRESH_CLAIM_MS })
      .where((a, op) => `${op.eq(a.token_version, row.token_version)} AND (${op.notExists(a.refresh_claimed_until)} OR ${op.lt(a.refresh_claimed_until, now)})`)
      .go();
    return true;
  } catch (err) {
    if (isConditionalFailure(err)) return false;
    throw err;
  }
}

/** Give up the refresh claim on this grant (its version), so the next caller may refresh; a failure is left to expire. */
async function releaseRefreshClaim(row: IntegrationItem): Promise<void> {
  await db()
    .entities.integration.patch({ workspace_id: row.workspace_id, kind: row.kind })
    .remove(["refresh_claimed_until"])
    .where((a, op) => op.eq(a.token_version, row.token_version))
    .go()
    .catch(() => undefined);
}

async function refresh(row: IntegrationItem, tokens: TokenSet): Promise<Grant> {
  const kind = row.kind;
  const { as, client, auth, options } = clientOf(PROVIDERS[kind]);
  let next: TokenSet;
  try {
    const response = await oauth.refreshTokenGrantRequest(as, client, auth, tokens.refresh_token!, { ...options, signal: AbortSignal.timeout(REFRESH_TIMEOUT_MS) });
    const result = await oauth.processRefreshTokenResponse(as, client, response);
    next = {
      access_token: result.access_token,
      // Providers that do not rotate (Google) send no new refresh token: the old one stays valid.
      refresh_token: result.refresh_token ?? tokens.refresh_token,
      ...(typeof result.expires_in === "number" ? { expires_at: Date.now() + result.expires_in * 1000 } : {}),
      ...(typeof result.scope === "string" ? { scope: result.scope } : tokens.scope ? { scope: tokens.scope } : {}),
    };
  } catch (err) {
    // Refused for good: invalid_grant (RFC 6749), Atlassian's 403 unauthorized_client for a refresh token that was
    // replaced or revoked, GitHub's bad_refresh_token (in a 200). Retrying would only spend the grant further (a
    // replaced token reused later revokes it all).
    const refused = (err instanceof oauth.ResponseBodyError && REFUSED_GRANT.includes(err.error)) || REFUSED_GRANT.includes(oauthErrorInBody(err) ?? "");
    // Our client refused (RFC 6749 5.2 invalid_client, a 401; GitHub's incorrect_client_credentials in a 200): a
    // wrong or rotated client secret in the settings. The grant is fine; marking it would send every workspace to
    // reconnect, which cannot help. An operator's fix, so it is logged as an error and the request answers 503.
    const clientRefused =
      (err instanceof oauth.ResponseBodyError && (err.status === 401 || err.error === "invalid_client")) || oauthErrorInBody(err) === "incorrect_client_credentials";
    if (clientRefused) {
      integrationLog().error("the provider refused our OAuth client credentials at refresh; check the client id and secret settings", { kind, workspace_id: row.workspace_id, ...oauthFailure(err) });
      await releaseRefreshClaim(row);
      throw new AppError("SERVICE_UNAVAILABLE", `${PROVIDERS[kind].name} refused this service's credentials; an operator must fix them`);
    }
    if (refused) {
      integrationLog().warn("integration grant refused at refresh; it needs reconnecting", { kind, workspace_id: row.workspace_id, token_version: row.token_version, ...oauthFailure(err) });
      await markNeedsReconnect(row);
      throw tokenError(kind);
    }
    integrationLog().warn("integration token refresh failed; the next use tries again", { kind, workspace_id: row.workspace_id, token_version: row.token_version, ...oauthFailure(err) });
    // A transient failure: release the claim so the next caller may try.
    await releaseRefreshClaim(row);
    throw new AppError("SERVICE_UNAVAILABLE", `${PROVIDERS[kind].name} did not refresh the token; retry shortly`);
  }
  const sealed = await sealTokens(next, { workspace_id: row.workspace_id, kind });
  try {
    const { data } = await db().entities.integration.patch({ workspace_id: row.workspace_id, kind })
      .set({ token_ciphertext: sealed, token_version: row.token_version + 1, ...(next.expires_at ? { token_expires_at: new Date(next.expires_at).toISOString() } : {}) })
      .remove(["refresh_claimed_until"])
      .where((a, op) => op.eq(a.token_version, row.token_version))
      .go({ response: "all_new" });
    integrationLog().info("integration token refreshed", { kind, workspace_id: row.workspace_id, token_version: row.token_version + 1, rotated: next.refresh_token !== tokens.refresh_token });
    return { accessToken: next.access_token, integration: data as IntegrationItem };
  } catch (err) {
    if (!isConditionalFailure(err)) throw err;
    // A reconnect replaced the grant meanwhile: use the new one.
    return grantOf(row.workspace_id, kind);
  }
}
