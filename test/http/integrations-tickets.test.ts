/**
 * The ticket tool, Jira Cloud (issue #20 point 5; spec 02 "Ticket-tool integration", Authentication 4-5), through the
 * public API with real oauth4webapi and jira.js (`onSchemaMismatch: 'throw'`) against the stand-in Atlassian:
 * connect (3LO: audience, consent, offline access, no PKCE), callback (state single-use, 600 s, kind-bound, forged
 * states refused; the cloud_id of the Jira site; exchange failure rolls back with tickets=error&reason=exchange_failed),
 * status, projects (pages, search, 429, a revoked grant), the soft disconnect, and the rotating refresh token: a refresh
 * racing itself refreshes once, and a replaced refresh token is never what the framework sends.
 */
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { db } from "../../core/db/service";
import { openTokens, sealTokens } from "../../core/integration/crypto";
import * as OAuth from "../../core/integration/oauth";
import { call, newWorkspace } from "../support/api";
import { ATLASSIAN_API, ATLASSIAN_AUTH, JiraStandIn } from "../support/jira-standin";
import { expectEnvelope, partitionItems, withEnv } from "./_helpers";

const API_URL = "https://api.r2d.test";
const APP_URL = "https://app.r2d.test";
const jira = new JiraStandIn(60);

beforeAll(() => {
  Object.assign(process.env, {
    ATLASSIAN_AUTH_URL: ATLASSIAN_AUTH,
    ATLASSIAN_API_URL: ATLASSIAN_API,
    ATLASSIAN_CLIENT_ID: jira.clientId,
    ATLASSIAN_CLIENT_SECRET: jira.clientSecret,
    JIRA_SCHEMA_MISMATCH: "throw",
    API_URL,
    APP_URL,
    TOKEN_KEY_FILE: join(mkdtempSync(join(tmpdir(), "r2d-keys-")), "integration-tokens.key"),
  });
  jira.listen();
});
afterAll(() => jira.close());

const settings = (outcome: string, reason?: string) => `${APP_URL}/settings/integrations?tickets=${outcome}${reason ? `&reason=${reason}` : ""}`;
const ctx = (workspaceId: string) => ({ workspace_id: workspaceId, kind: "tickets" as const });

async function startConnect() {
  const { owner, workspace } = await newWorkspace("Jira");
  const res = await call("POST", "/api/integrations/tickets/connect", { token: owner.token, body: { workspace_id: workspace.id } });
  expect(res.status, res.text).toBe(200);
  return { owner, workspace, auth_url: res.body.auth_url as string, state: res.body.state as string };
}

/** A workspace connected to the stand-in site through connect → authorize → callback. */
async function connected() {
  const started = await startConnect();
  const { code, state } = jira.authorize(started.auth_url);
  const cb = await call("GET", "/api/integrations/tickets/callback", { query: { code, state } });
  expect(cb.headers.location).toBe(settings("connected"));
  return started;
}

/** Make the stored access token look expired (as an hour later), keeping its refresh token. */
async function expireStoredToken(workspaceId: string): Promise<string> {
  const row = (await OAuth.findIntegration(workspaceId, "tickets"))!;
  const tokens = await openTokens(row.token_ciphertext!, ctx(workspaceId));
  const sealed = await sealTokens({ ...tokens, expires_at: Date.now() - 1000 }, ctx(workspaceId));
  await db().entities.integration.patch({ workspace_id: workspaceId, kind: "tickets" }).set({ token_ciphertext: sealed }).go();
  return sealed;
}

const projects = (token: string, workspaceId: string, query: Record<string, string | number> = {}) =>
  call("GET", "/api/integrations/tickets/projects", { token, query: { workspace_id: workspaceId, ...query } });

describe("connect", () => {
  it("answers Atlassian's 3LO authorization URL: audience, consent, offline access, the exact redirect URI, no PKCE", async () => {
    const { auth_url, state, workspace } = await startConnect();
    const url = new URL(auth_url);
    expect(`${url.origin}${url.pathname}`).toBe(`${ATLASSIAN_AUTH}/authorize`);
    expect(Object.fromEntries(url.searchParams)).toMatchObject({
      audience: "api.atlassian.com", prompt: "consent", response_type: "code", client_id: jira.clientId, state,
      redirect_uri: `${API_URL}/api/integrations/tickets/callback`,
    });
    expect(url.searchParams.get("scope")!.split(" ")).toEqual(expect.arrayContaining(["read:jira-work", "write:jira-work", "offline_access"]));
    expect(url.searchParams.has("code_challenge")).toBe(false);
    const { data: row } = await db().entities.oauthState.get({ state }).go();
    expect(row).toMatchObject({ workspace_id: workspace.id, kind: "tickets" });
    expect(row!.code_verifier).toBeUndefined();
  });

  it("answers 503 naming the Atlassian settings when the client credentials are not configured", async () => {
    const { owner, workspace } = await newWorkspace("No creds");
    const res = await withEnv({ ATLASSIAN_CLIENT_ID: undefined, ATLASSIAN_CLIENT_SECRET: undefined }, () =>
      call("POST", "/api/integrations/tickets/connect", { token: owner.token, body: { workspace_id: workspace.id } }));
    expectEnvelope(res, 503, "SERVICE_UNAVAILABLE");
    expect(res.body.settings).toEqual(["ATLASSIAN_CLIENT_ID", "ATLASSIAN_CLIENT_SECRET"]);
  });

  it("refuses a non-member with 403", async () => {
    const { workspace } = await newWorkspace("Theirs");
    const { owner: stranger } = await newWorkspace("Mine");
    expectEnvelope(await call("POST", "/api/integrations/tickets/connect", { token: stranger.token, body: { workspace_id: workspace.id } }), 403, "FORBIDDEN");
  });
});

describe("callback", () => {
  it("exchanges the code, resolves the Jira site's cloud_id (not another product's site), stores tokens encrypted only, with scope", async () => {
    const { owner, workspace } = await connected();
    const items = await partitionItems(`ws#${workspace.id}`);
    const row = items.find((i) => i.sk === "integration#tickets")!;
    expect(row).toMatchObject({ cloud_id: jira.cloudId, is_active: true, scope: expect.stringContaining("read:jira-work") });
    const tokens = await openTokens(row.token_ciphertext, ctx(workspace.id));
    expect(tokens.access_token).toMatch(/^atl_at_/);
    expect(tokens.refresh_token).toMatch(/^atl_rt_/);
    for (const secret of [tokens.access_token, tokens.refresh_token!]) expect(JSON.stringify(row)).not.toContain(secret.slice(7));
    const status = await call("GET", "/api/integrations/tickets/status", { token: owner.token, query: { workspace_id: workspace.id } });
    expect(status.status, status.text).toBe(200);
    expect(status.body).toEqual({
      connected: true, connected_at: row.connected_at, cloud_id: jira.cloudId, needs_reconnect: false, site_name: "acme", site_url: jira.siteUrl,
    });
  });

  it("a refused exchange rolls back: tickets=error&reason=exchange_failed, and an earlier connection is left as it was", async () => {
    const { owner, workspace } = await connected();
    const before = (await OAuth.findIntegration(workspace.id, "tickets"))!;
    const again = await call("POST", "/api/integrations/tickets/connect", { token: owner.token, body: { workspace_id: workspace.id } });
    const { state } = jira.authorize(again.body.auth_url);
    const cb = await call("GET", "/api/integrations/tickets/callback", { query: { code: "not-the-code", state } });
    expect(cb.headers.location).toBe(settings("error", "exchange_failed"));
    const after = (await OAuth.findIntegration(workspace.id, "tickets"))!;
    expect(after.token_ciphertext).toBe(before.token_ciphertext);
    expect(after.token_version).toBe(before.token_version);

    const fresh = await startConnect();
    const bad = await call("GET", "/api/integrations/tickets/callback", { query: { code: "nope", state: fresh.state } });
    expect(bad.headers.location).toBe(settings("error", "exchange_failed"));
    expect(await OAuth.findIntegration(fresh.workspace.id, "tickets")).toBeNull();
  });

  it("a grant that reaches no Jira site stores nothing (account_failed)", async () => {
    const saved = jira.sites;
    jira.sites = saved.filter((s) => !s.scopes.includes("read:jira-work"));
    try {
      const { workspace, auth_url } = await startConnect();
      const { code, state } = jira.authorize(auth_url);
      const cb = await call("GET", "/api/integrations/tickets/callback", { query: { code, state } });
      expect(cb.headers.location).toBe(settings("error", "account_failed"));
      expect(await OAuth.findIntegration(workspace.id, "tickets")).toBeNull();
    } finally {
      jira.sites = saved;
    }
  });

  it("state handling: single-use, 600 s, forged and missing refused, another kind's state refused and left, a decline consumes it", async () => {
    const { workspace, auth_url } = await startConnect();
    const { code, state } = jira.authorize(auth_url);
    expect((await call("GET", "/api/integrations/tickets/callback", { query: { code, state } })).headers.location).toBe(settings("connected"));
    const connected = (await OAuth.findIntegration(workspace.id, "tickets"))!.token_version;
    const reused = await call("GET", "/api/integrations/tickets/callback", { query: { code, state } });
    expect(reused.headers.location).toBe(settings("error", "invalid_state"));
    expect((await OAuth.findIntegration(workspace.id, "tickets"))!.token_version).toBe(connected);

    const old = await startConnect();
    const oldGrant = jira.authorize(old.auth_url);
    await db().entities.oauthState.patch({ state: old.state }).set({ created_at_ms: Date.now() - 601_000 }).go();
    expect((await call("GET", "/api/integrations/tickets/callback", { query: oldGrant })).headers.location).toBe(settings("error", "expired_state"));
    expect(await OAuth.findIntegration(old.workspace.id, "tickets")).toBeNull();

    expect((await call("GET", "/api/integrations/tickets/callback", { query: { code: "c", state: "forged" } })).headers.location).toBe(settings("error", "invalid_state"));
    expect((await call("GET", "/api/integrations/tickets/callback", { query: { code: "c" } })).headers.location).toBe(settings("error", "invalid_state"));

    const other = await newWorkspace("Other kind");
    const drive = await withEnv({ GOOGLE_CLIENT_ID: "g-id", GOOGLE_CLIENT_SECRET: "g-secret" }, () => OAuth.connect(other.owner.id, "filestore", other.workspace.id));
    expect((await call("GET", "/api/integrations/tickets/callback", { query: { code: "c", state: drive.state } })).headers.location).toBe(settings("error", "invalid_state"));
    expect((await db().entities.oauthState.get({ state: drive.state }).go()).data).toMatchObject({ kind: "filestore" });

    const declined = await startConnect();
    const cb = await call("GET", "/api/integrations/tickets/callback", { query: { error: "access_denied", state: declined.state } });
    expect(cb.headers.location).toBe(settings("error", "access_denied"));
    expect((await db().entities.oauthState.get({ state: declined.state }).go()).data).toBeNull();
  });
});

describe("projects", () => {
  it("pages of 50 with has_more and total; search is Jira's on key and name", async () => {
    const { owner, workspace } = await connected();
    const first = await projects(owner.token, workspace.id);
    expect(first.status, first.text).toBe(200);
    expect(first.body).toMatchObject({ page: 1, has_more: true, total: 60 });
    expect(first.body.projects).toHaveLength(50);
    expect(first.body.projects[0]).toEqual({
      id: "10000", key: "P001", name: "Project 1", project_type_key: "software", style: "classic",
      avatar_url: `${jira.siteUrl}/rest/api/3/universal_avatar/view/type/project/avatar/10400`,
    });
    const second = await projects(owner.token, workspace.id, { page: 2 });
    expect(second.body).toMatchObject({ page: 2, has_more: false, total: 60 });
    expect(second.body.projects.map((p: { key: string }) => p.key)).toEqual(Array.from({ length: 10 }, (_, i) => `P0${51 + i}`));
    const search = await projects(owner.token, workspace.id, { search: "project 3" });
    expect(search.body.projects.map((p: { key: string }) => p.key)).toEqual(["P003", "P030", "P031", "P032", "P033", "P034", "P035", "P036", "P037", "P038", "P039"]);
    expect(search.body.projects.find((p: { key: string }) => p.key === "P003")).toMatchObject({ project_type_key: "business", style: "next-gen" });
    // Every call went to the cloud id's gateway path with the page Jira was asked for.
    expect(jira.requests.filter((r) => r.path.startsWith(`/ex/jira/${jira.cloudId}/rest/api/3/project/search?`)).map((r) => new URL(r.path, ATLASSIAN_API).searchParams.get("startAt"))).toEqual(expect.arrayContaining(["0", "50"]));
  });

  it("a 429 answers 429 RATE_LIMITED with Atlassian's Retry-After; a Jira answer outside jira.js's schema fails loudly", async () => {
    const { owner, workspace } = await connected();
    jira.fail({ match: /project\/search/, status: 429, headers: { "retry-after": "17" }, body: { errorMessages: ["Rate limit exceeded"], errors: {} } });
    const limited = await projects(owner.token, workspace.id);
    expectEnvelope(limited, 429, "RATE_LIMITED");
    expect(limited.headers["retry-after"]).toBe("17");
    expect(limited.body.retry_after_seconds).toBe(17);

    // A field the service does not even read, of the wrong type: only jira.js's schema check can notice it.
    const drifted = { self: `${ATLASSIAN_API}/p`, startAt: 0, maxResults: 50, total: 1, isLast: true, values: [{ id: "1", key: "X", name: "X", isPrivate: "no" }] };
    jira.fail({ match: /project\/search/, status: 200, body: drifted });
    expect((await projects(owner.token, workspace.id)).status).toBe(500);
    jira.fail({ match: /project\/search/, status: 200, body: drifted });
    const tolerated = await withEnv({ JIRA_SCHEMA_MISMATCH: undefined }, () => projects(owner.token, workspace.id));
    expect(tolerated.status, tolerated.text).toBe(200);
    expect(tolerated.body.projects).toEqual([{ id: "1", key: "X", name: "X", project_type_key: null, style: null, avatar_url: null }]);
  });

  it("a revoked grant answers 424 TICKETS_TOKEN_ERROR with the reconnect hint, and status says needs_reconnect", async () => {
    const { owner, workspace } = await connected();
    jira.fail({ match: /project\/search/, status: 401, body: { code: 401, message: "Unauthorized" } });
    const res = await projects(owner.token, workspace.id);
    expectEnvelope(res, 424, "TICKETS_TOKEN_ERROR");
    expect(res.body.reconnect).toBe("POST /api/integrations/tickets/connect");
    const status = await call("GET", "/api/integrations/tickets/status", { token: owner.token, query: { workspace_id: workspace.id } });
    expect(status.body).toMatchObject({ connected: false, needs_reconnect: true, cloud_id: jira.cloudId });
    expectEnvelope(await projects(owner.token, workspace.id), 424, "TICKETS_TOKEN_ERROR");
  });

  it("without an integration: 404 NO_ACTIVE_INTEGRATION; status says not connected", async () => {
    const { owner, workspace } = await newWorkspace("None");
    expectEnvelope(await projects(owner.token, workspace.id), 404, "NO_ACTIVE_INTEGRATION");
    const status = await call("GET", "/api/integrations/tickets/status", { token: owner.token, query: { workspace_id: workspace.id } });
    expect(status.body).toEqual({ connected: false, connected_at: null, cloud_id: null, needs_reconnect: false, site_name: null, site_url: null });
  });
});

describe("disconnect", () => {
  it("is soft: is_active false, the token cleared, the row (cloud_id, connected_at) kept; projects then 404", async () => {
    const { owner, workspace } = await connected();
    const before = (await OAuth.findIntegration(workspace.id, "tickets"))!;
    const off = await call("POST", "/api/integrations/tickets/disconnect", { token: owner.token, body: { workspace_id: workspace.id } });
    expect(off.status, off.text).toBe(200);
    expect(off.body).toEqual({ disconnected: true });
    const row = (await partitionItems(`ws#${workspace.id}`)).find((i) => i.sk === "integration#tickets")!;
    expect(row).toMatchObject({ is_active: false, cloud_id: jira.cloudId, connected_at: before.connected_at, token_version: before.token_version + 1 });
    expect(row.token_ciphertext).toBeUndefined();
    expect(row.token_expires_at).toBeUndefined();
    expectEnvelope(await projects(owner.token, workspace.id), 404, "NO_ACTIVE_INTEGRATION");
    const status = await call("GET", "/api/integrations/tickets/status", { token: owner.token, query: { workspace_id: workspace.id } });
    expect(status.body).toMatchObject({ connected: false, needs_reconnect: false, cloud_id: jira.cloudId });
    // A reconnect makes it active again under a newer version.
    const again = await call("POST", "/api/integrations/tickets/connect", { token: owner.token, body: { workspace_id: workspace.id } });
    const grant = jira.authorize(again.body.auth_url);
    expect((await call("GET", "/api/integrations/tickets/callback", { query: grant })).headers.location).toBe(settings("connected"));
    expect((await projects(owner.token, workspace.id)).status).toBe(200);
  });
});

describe("refresh (Jira rotates the refresh token on every refresh)", () => {
  it("requests racing on an expired token refresh once; every one answers with the new token", async () => {
    const { owner, workspace } = await connected();
    await expireStoredToken(workspace.id);
    const version = (await OAuth.findIntegration(workspace.id, "tickets"))!.token_version;
    const before = { ...jira.tokenCalls };
    // The refresh is held in flight so the other requests really meet the claim.
    jira.onRefresh = () => new Promise((r) => setTimeout(r, 150));
    try {
      const results = await Promise.all(Array.from({ length: 6 }, () => projects(owner.token, workspace.id)));
      for (const r of results) expect(r.status, r.text).toBe(200);
    } finally {
      jira.onRefresh = undefined;
    }
    expect(jira.tokenCalls.refresh_token - before.refresh_token).toBe(1);
    expect(jira.tokenCalls.refused_reuse).toBe(before.refused_reuse);
    const row = (await OAuth.findIntegration(workspace.id, "tickets"))!;
    expect(row.token_version).toBe(version + 1);
    expect(row.refresh_claimed_until).toBeUndefined();
    const tokens = await openTokens(row.token_ciphertext!, ctx(workspace.id));
    expect(tokens.expires_at!).toBeGreaterThan(Date.now() + 3000_000);
  });

  it("grants read at once by many callers: one refresh, all the same new access token", async () => {
    const { workspace } = await connected();
    await expireStoredToken(workspace.id);
    const before = jira.tokenCalls.refresh_token;
    const grants = await Promise.all(Array.from({ length: 8 }, () => OAuth.grantOf(workspace.id, "tickets")));
    expect(jira.tokenCalls.refresh_token - before).toBe(1);
    expect(new Set(grants.map((g) => g.accessToken)).size).toBe(1);
    const stored = await openTokens((await OAuth.findIntegration(workspace.id, "tickets"))!.token_ciphertext!, ctx(workspace.id));
    expect(grants[0]!.accessToken).toBe(stored.access_token);
  });

  it("a refresh refused for our client credentials (a wrong secret in the settings): 503, the grant not marked, fine once they are fixed", async () => {
    const { owner, workspace } = await connected();
    await expireStoredToken(workspace.id);
    const refused = await withEnv({ ATLASSIAN_CLIENT_SECRET: "a-rotated-secret" }, () => projects(owner.token, workspace.id));
    expectEnvelope(refused, 503, "SERVICE_UNAVAILABLE");
    const row = (await OAuth.findIntegration(workspace.id, "tickets"))!;
    expect(row.needs_reconnect).toBeFalsy();
    expect(row.refresh_claimed_until).toBeUndefined();
    expect((await projects(owner.token, workspace.id)).status).toBe(200);
  });

  it("a refresh refused (a replaced refresh token: the provider revokes the grant) marks the integration: 424, needs_reconnect", async () => {
    const { owner, workspace } = await connected();
    const stale = await expireStoredToken(workspace.id);
    expect((await projects(owner.token, workspace.id)).status).toBe(200);
    // A lost write: the row holds the refresh token that was just replaced.
    await db().entities.integration.patch({ workspace_id: workspace.id, kind: "tickets" }).set({ token_ciphertext: stale }).go();
    const before = jira.tokenCalls.refused_reuse;
    const res = await projects(owner.token, workspace.id);
    expectEnvelope(res, 424, "TICKETS_TOKEN_ERROR");
    expect(jira.tokenCalls.refused_reuse - before).toBe(1);
    // Marked: the next request does not present the replaced token again.
    expectEnvelope(await projects(owner.token, workspace.id), 424, "TICKETS_TOKEN_ERROR");
    expect(jira.tokenCalls.refused_reuse - before).toBe(1);
    const status = await call("GET", "/api/integrations/tickets/status", { token: owner.token, query: { workspace_id: workspace.id } });
    expect(status.body).toMatchObject({ connected: false, needs_reconnect: true });
  });
});
