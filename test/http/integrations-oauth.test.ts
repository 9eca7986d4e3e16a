/**
 * The OAuth framework of the integrations (issue #20 step 1; spec 02 Authentication 4; DESIGN.md 6.4), driven through
 * the public API with real oauth4webapi against the stand-in GitHub: connect, callback (state single-use, 600 s,
 * kind-bound, forged states refused, PKCE S256, exact redirect URI), tokens stored only encrypted with the encryption
 * context {workspace_id, kind}, disconnect, and the 503 without client credentials.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readFileSync } from "node:fs";
import { db } from "../../core/db/service";
import { openTokens } from "../../core/integration/crypto";
import * as OAuth from "../../core/integration/oauth";
import { call, newWorkspace } from "../support/api";
import { GitHubStandIn } from "../support/github-standin";
import { API_URL, APP_URL, connectGithub, useStandInSettings } from "../support/integrations";
import { expectEnvelope, partitionItems, withEnv } from "./_helpers";

const github = new GitHubStandIn();

beforeAll(() => {
  useStandInSettings(github);
  github.listen();
});
afterAll(() => github.close());

const settings = (outcome: string, reason?: string) =>
  `${APP_URL}/settings/integrations?codehost=${outcome}${reason ? `&reason=${reason}` : ""}`;

async function startConnect() {
  const { owner, workspace } = await newWorkspace("OAuth");
  const res = await call("POST", "/api/integrations/codehost/connect", { token: owner.token, body: { workspace_id: workspace.id } });
  expect(res.status, res.text).toBe(200);
  return { owner, workspace, auth_url: res.body.auth_url as string, state: res.body.state as string };
}

describe("connect", () => {
  it("answers the provider's authorization URL with the exact redirect URI, the scopes, PKCE S256 and a fresh state", async () => {
    const { auth_url, state, workspace } = await startConnect();
    const url = new URL(auth_url);
    expect(`${url.origin}${url.pathname}`).toBe("https://ghe.test/login/oauth/authorize");
    expect(url.searchParams.get("redirect_uri")).toBe(`${API_URL}/api/integrations/codehost/callback`);
    expect(url.searchParams.get("client_id")).toBe(github.clientId);
    expect(url.searchParams.get("code_challenge_method")).toBe("S256");
    expect(url.searchParams.get("code_challenge")).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(url.searchParams.get("state")).toBe(state);
    const { data: row } = await db().entities.oauthState.get({ state }).go();
    expect(row).toMatchObject({ workspace_id: workspace.id, kind: "codehost" });
    // TTL only cleans up: it is set 600 s after creation, and the lifetime is checked in code.
    expect(row!.ttl - Math.floor(row!.created_at_ms / 1000)).toBe(600);
    // The challenge is S256 of the stored verifier, never the verifier itself.
    expect(url.searchParams.get("code_challenge")).not.toBe(row!.code_verifier);
  });

  it("answers 503 naming the settings when the client credentials are not configured", async () => {
    const { owner, workspace } = await newWorkspace("No creds");
    const res = await withEnv({ GITHUB_CLIENT_ID: undefined, GITHUB_CLIENT_SECRET: undefined }, () =>
      call("POST", "/api/integrations/codehost/connect", { token: owner.token, body: { workspace_id: workspace.id } }));
    expectEnvelope(res, 503, "SERVICE_UNAVAILABLE");
    expect(res.body.detail).toContain("GITHUB_CLIENT_ID");
    expect(res.body.settings).toEqual(["GITHUB_CLIENT_ID", "GITHUB_CLIENT_SECRET"]);
  });

  it("refuses a non-member with 403", async () => {
    const { workspace } = await newWorkspace("Theirs");
    const { owner: stranger } = await newWorkspace("Mine");
    expectEnvelope(await call("POST", "/api/integrations/codehost/connect", { token: stranger.token, body: { workspace_id: workspace.id } }), 403, "FORBIDDEN");
  });
});

describe("callback", () => {
  it("exchanges the code, stores the token encrypted only, reads the account, and redirects to the settings page", async () => {
    const { workspace, auth_url } = await startConnect();
    const { code, state } = github.authorize(auth_url);
    const cb = await call("GET", "/api/integrations/codehost/callback", { query: { code, state } });
    expect(cb.status).toBe(302);
    expect(cb.headers.location).toBe(settings("connected"));

    const items = await partitionItems(`ws#${workspace.id}`);
    const row = items.find((i) => i.sk === "integration#codehost")!;
    expect(row).toBeDefined();
    const tokens = await openTokens(row.token_ciphertext, { workspace_id: workspace.id, kind: "codehost" });
    expect(tokens.access_token).toMatch(/^gho_/);
    // The token appears nowhere in clear in the stored item, under any attribute.
    expect(JSON.stringify(row)).not.toContain(tokens.access_token);
    expect(JSON.stringify(row)).not.toContain(tokens.access_token.slice(4, 20));
    // The ciphertext is bound to its row: another workspace or kind cannot open it.
    await expect(openTokens(row.token_ciphertext, { workspace_id: workspace.id, kind: "planner" })).rejects.toThrow();
    await expect(openTokens(row.token_ciphertext, { workspace_id: "00000000-0000-4000-8000-000000000000", kind: "codehost" })).rejects.toThrow();
    // The key file is 32 random bytes, not the token store.
    expect(readFileSync(process.env.TOKEN_KEY_FILE!).length).toBe(32);
    // The state was consumed.
    expect((await db().entities.oauthState.get({ state }).go()).data).toBeNull();
  });

  it("a state is single-use: the second callback with it is refused and changes nothing", async () => {
    const { owner, workspace } = await newWorkspace("Reuse");
    const { state, code } = await connectGithub(github, owner.token, workspace.id);
    const before = (await OAuth.findIntegration(workspace.id, "codehost"))!;
    const again = await call("GET", "/api/integrations/codehost/callback", { query: { code, state } });
    expect(again.status).toBe(302);
    expect(again.headers.location).toBe(settings("error", "invalid_state"));
    const after = (await OAuth.findIntegration(workspace.id, "codehost"))!;
    expect(after.token_version).toBe(before.token_version);
    expect(after.token_ciphertext).toBe(before.token_ciphertext);
  });

  it("two callbacks racing with one state: exactly one connects", async () => {
    const { workspace, auth_url } = await startConnect();
    const { code, state } = github.authorize(auth_url);
    const started = Date.now();
    const results = await Promise.all([0, 1, 2].map(() => call("GET", "/api/integrations/codehost/callback", { query: { code, state } })));
    const outcomes = results.map((r) => r.headers.location).sort();
    expect(outcomes.filter((l) => l === settings("connected"))).toHaveLength(1);
    expect(outcomes.filter((l) => l === settings("error", "invalid_state"))).toHaveLength(2);
    // One grant written, with a version of its time (never a version an earlier grant had).
    const version = (await OAuth.findIntegration(workspace.id, "codehost"))!.token_version;
    expect(version).toBeGreaterThanOrEqual(started);
    expect(version).toBeLessThanOrEqual(Date.now());
  });

  it("an expired state (over 600 s) is refused even though its TTL has not removed it, and is consumed", async () => {
    const { workspace, auth_url } = await startConnect();
    const { code, state } = github.authorize(auth_url);
    await db().entities.oauthState.patch({ state }).set({ created_at_ms: Date.now() - 601_000 }).go();
    const cb = await call("GET", "/api/integrations/codehost/callback", { query: { code, state } });
    expect(cb.headers.location).toBe(settings("error", "expired_state"));
    expect(await OAuth.findIntegration(workspace.id, "codehost")).toBeNull();
    expect((await db().entities.oauthState.get({ state }).go()).data).toBeNull();
  });

  it("a state of 599 s is still accepted", async () => {
    const { workspace, auth_url } = await startConnect();
    const { code, state } = github.authorize(auth_url);
    await db().entities.oauthState.patch({ state }).set({ created_at_ms: Date.now() - 599_000 }).go();
    const cb = await call("GET", "/api/integrations/codehost/callback", { query: { code, state } });
    expect(cb.headers.location).toBe(settings("connected"));
    expect(await OAuth.findIntegration(workspace.id, "codehost")).not.toBeNull();
  });

  it("a forged state (never issued) and a missing state are refused; nothing is stored", async () => {
    const { workspace } = await startConnect();
    const forged = await call("GET", "/api/integrations/codehost/callback", { query: { code: "abc", state: "forged-state-value" } });
    expect(forged.headers.location).toBe(settings("error", "invalid_state"));
    const missing = await call("GET", "/api/integrations/codehost/callback", { query: { code: "abc" } });
    expect(missing.headers.location).toBe(settings("error", "invalid_state"));
    expect(await OAuth.findIntegration(workspace.id, "codehost")).toBeNull();
  });

  it("a state issued for another kind is refused here and left for its own callback (mismatch)", async () => {
    const { owner, workspace } = await newWorkspace("Mismatch");
    const planner = await withEnv({ LINEAR_CLIENT_ID: "lin-id", LINEAR_CLIENT_SECRET: "lin-secret" }, () => OAuth.connect(owner.id, "planner", workspace.id));
    const cb = await call("GET", "/api/integrations/codehost/callback", { query: { code: "abc", state: planner.state } });
    expect(cb.headers.location).toBe(settings("error", "invalid_state"));
    expect((await db().entities.oauthState.get({ state: planner.state }).go()).data).toMatchObject({ kind: "planner" });
    expect(await OAuth.findIntegration(workspace.id, "codehost")).toBeNull();
  });

  it("a code the provider refuses (wrong code, or a verifier that does not match) rolls back: exchange_failed, nothing stored", async () => {
    const { workspace, auth_url } = await startConnect();
    const { state } = github.authorize(auth_url);
    const cb = await call("GET", "/api/integrations/codehost/callback", { query: { code: "not-the-code", state } });
    expect(cb.headers.location).toBe(settings("error", "exchange_failed"));
    expect(await OAuth.findIntegration(workspace.id, "codehost")).toBeNull();
  });

  it("the user declining at the provider (error=access_denied) consumes the state and stores nothing", async () => {
    const { workspace, state } = await startConnect();
    const cb = await call("GET", "/api/integrations/codehost/callback", { query: { error: "access_denied", state } });
    expect(cb.headers.location).toBe(settings("error", "access_denied"));
    expect(await OAuth.findIntegration(workspace.id, "codehost")).toBeNull();
    expect((await db().entities.oauthState.get({ state }).go()).data).toBeNull();
  });
});

describe("status and disconnect", () => {
  it("status shows the account; disconnect removes the integration and its links", async () => {
    const { owner, workspace } = await newWorkspace("Status");
    const before = await call("GET", "/api/integrations/codehost/status", { token: owner.token, query: { workspace_id: workspace.id } });
    expect(before.body).toMatchObject({ connected: false, codehost_username: null, repos_count: 0, selected_repos: [] });
    await connectGithub(github, owner.token, workspace.id);
    const after = await call("GET", "/api/integrations/codehost/status", { token: owner.token, query: { workspace_id: workspace.id } });
    expect(after.status, after.text).toBe(200);
    expect(after.body).toMatchObject({
      connected: true, needs_reconnect: false, codehost_username: github.login, login: github.login,
      codehost_avatar_url: expect.stringMatching(/^https:\/\//), repos_count: 0, repos_selected: 0, last_synced_at: null,
    });
    const off = await call("DELETE", "/api/integrations/codehost/disconnect", { token: owner.token, query: { workspace_id: workspace.id } });
    expect(off.body).toEqual({ disconnected: true });
    expect(await OAuth.findIntegration(workspace.id, "codehost")).toBeNull();
    const items = await partitionItems(`ws#${workspace.id}`);
    expect(items.filter((i) => String(i.sk).startsWith("integration#") || String(i.sk).startsWith("issue_link#"))).toEqual([]);
  });

  it("a reconnect after a disconnect gets a version never given before: a request holding the old grant cannot mark the new one", async () => {
    const { owner, workspace } = await newWorkspace("Reconnect");
    await connectGithub(github, owner.token, workspace.id);
    const old = (await OAuth.findIntegration(workspace.id, "codehost"))!;
    await OAuth.disconnect(owner.id, "codehost", workspace.id);
    await connectGithub(github, owner.token, workspace.id);
    const fresh = (await OAuth.findIntegration(workspace.id, "codehost"))!;
    expect(fresh.token_version).toBeGreaterThan(old.token_version);
    // A request that read the old grant and saw it refused marks only that grant.
    await OAuth.markNeedsReconnect(old);
    expect((await OAuth.findIntegration(workspace.id, "codehost"))!).toMatchObject({ needs_reconnect: false, token_version: fresh.token_version });
  });

  it("a grant's version is above the stored one and at least the time in milliseconds", () => {
    expect(OAuth.grantVersion(undefined, 1_000)).toBe(1_000);
    expect(OAuth.grantVersion(5_000, 1_000)).toBe(5_001);
  });

  it("the ticket tool's disconnect is soft: is_active false, token cleared, row kept", async () => {
    const { owner, workspace } = await newWorkspace("Soft");
    await db().entities.integration.put({ workspace_id: workspace.id, kind: "tickets", token_ciphertext: "x", token_version: 3, connected_by: owner.id, connected_at: new Date().toISOString(), cloud_id: "site-1" }).go();
    expect(await OAuth.disconnect(owner.id, "tickets", workspace.id)).toEqual({ disconnected: true });
    const row = await OAuth.findIntegration(workspace.id, "tickets");
    expect(row).toMatchObject({ is_active: false, cloud_id: "site-1", token_version: 4 });
    expect(row!.token_ciphertext).toBeUndefined();
    await expect(OAuth.activeIntegration(workspace.id, "tickets")).rejects.toMatchObject({ code: "NO_ACTIVE_INTEGRATION" });
  });
});
