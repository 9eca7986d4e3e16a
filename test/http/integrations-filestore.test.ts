/**
 * The file store, Google Drive (issue #20 point 6; spec 02 "File-store integration", Authentication 4-5), through the
 * public API with real oauth4webapi and @googleapis/drive against the stand-in Google: connect (PKCE S256, offline
 * access), callback (state single-use, 600 s, kind-bound, forged states refused; the account's e-mail for status;
 * access and refresh tokens stored encrypted only), status, the hard disconnect, and a refresh that keeps Google's
 * long-lived refresh token.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { db } from "../../core/db/service";
import { openTokens, sealTokens } from "../../core/integration/crypto";
import * as OAuth from "../../core/integration/oauth";
import { call, newUser, newWorkspace } from "../support/api";
import { DriveStandIn, GOOGLE_AUTH } from "../support/drive-standin";
import { APP_URL, connectDrive, useDriveSettings } from "../support/drive-standin";
import { expectEnvelope, partitionItems, withEnv } from "./_helpers";

const drive = new DriveStandIn();

beforeAll(() => {
  useDriveSettings(drive);
  drive.listen();
});
afterAll(() => drive.close());

const settings = (outcome: string, reason?: string) => `${APP_URL}/settings/integrations?filestore=${outcome}${reason ? `&reason=${reason}` : ""}`;
const ctx = (workspaceId: string) => ({ workspace_id: workspaceId, kind: "filestore" as const });

async function startConnect() {
  const { owner, workspace } = await newWorkspace("Drive");
  const res = await call("POST", "/api/integrations/filestore/connect", { token: owner.token, body: { workspace_id: workspace.id } });
  expect(res.status, res.text).toBe(200);
  return { owner, workspace, auth_url: res.body.auth_url as string, state: res.body.state as string };
}

describe("connect and callback", () => {
  it("asks for offline access with consent and PKCE S256; the callback stores both tokens encrypted and the account for status", async () => {
    const { owner, workspace, auth_url, state } = await startConnect();
    const url = new URL(auth_url);
    expect(`${url.origin}${url.pathname}`).toBe(`${GOOGLE_AUTH}/o/oauth2/v2/auth`);
    expect(Object.fromEntries(url.searchParams)).toMatchObject({ access_type: "offline", prompt: "consent", code_challenge_method: "S256", state, client_id: drive.clientId });
    const grant = drive.authorize(auth_url);
    const cb = await call("GET", "/api/integrations/filestore/callback", { query: grant });
    expect(cb.status).toBe(302);
    expect(cb.headers.location).toBe(settings("connected"));
    const row = (await partitionItems(`ws#${workspace.id}`)).find((i) => i.sk === "integration#filestore")!;
    const tokens = await openTokens(row.token_ciphertext, ctx(workspace.id));
    expect(tokens.access_token).toMatch(/^ya29\./);
    expect(tokens.refresh_token).toMatch(/^1\/\//);
    for (const secret of [tokens.access_token, tokens.refresh_token!]) expect(JSON.stringify(row)).not.toContain(secret.slice(5));
    const status = await call("GET", "/api/integrations/filestore/status", { token: owner.token, query: { workspace_id: workspace.id } });
    expect(status.body).toEqual({
      connected: true, needs_reconnect: false, account_email: drive.email, account_name: "Ada Lovelace",
      account_avatar_url: "https://lh3.googleusercontent.test/a/ada=s64", last_synced_at: null,
    });
  });

  it("a verifier that does not match (a code replayed into another connect) is exchange_failed; nothing stored", async () => {
    const first = await startConnect();
    const second = await startConnect();
    const { code } = drive.authorize(first.auth_url);
    // The code was issued against the first connect's challenge; the second state carries another verifier.
    const cb = await call("GET", "/api/integrations/filestore/callback", { query: { code, state: second.state } });
    expect(cb.headers.location).toBe(settings("error", "exchange_failed"));
    expect(await OAuth.findIntegration(second.workspace.id, "filestore")).toBeNull();
  });

  it("state handling: single-use, expired after 600 s, forged refused, another kind's state refused and left", async () => {
    const { owner, workspace } = await newWorkspace("States");
    const { code, state } = await connectDrive(drive, owner.token, workspace.id);
    const connected = (await OAuth.findIntegration(workspace.id, "filestore"))!.token_version;
    expect((await call("GET", "/api/integrations/filestore/callback", { query: { code, state } })).headers.location).toBe(settings("error", "invalid_state"));
    expect((await OAuth.findIntegration(workspace.id, "filestore"))!.token_version).toBe(connected);

    const old = await startConnect();
    const grant = drive.authorize(old.auth_url);
    await db().entities.oauthState.patch({ state: old.state }).set({ created_at_ms: Date.now() - 600_001 }).go();
    expect((await call("GET", "/api/integrations/filestore/callback", { query: grant })).headers.location).toBe(settings("error", "expired_state"));

    expect((await call("GET", "/api/integrations/filestore/callback", { query: { code: "c", state: "forged" } })).headers.location).toBe(settings("error", "invalid_state"));
    const tickets = await withEnv({ ATLASSIAN_CLIENT_ID: "a", ATLASSIAN_CLIENT_SECRET: "b" }, () => OAuth.connect(owner.id, "tickets", workspace.id));
    expect((await call("GET", "/api/integrations/filestore/callback", { query: { code: "c", state: tickets.state } })).headers.location).toBe(settings("error", "invalid_state"));
    expect((await db().entities.oauthState.get({ state: tickets.state }).go()).data).toMatchObject({ kind: "tickets" });
  });

  it("a member removed between connect and callback connects nothing (redirect not_a_member)", async () => {
    const { owner, workspace } = await newWorkspace("Removed member");
    const m = await newUser();
    expect((await call("POST", `/api/workspaces/${workspace.id}/members`, { token: owner.token, body: { email: m.email, role: "member" } })).status).toBe(201);
    const c = await call("POST", "/api/integrations/filestore/connect", { token: m.token, body: { workspace_id: workspace.id } });
    expect(c.status, c.text).toBe(200);
    expect((await call("DELETE", `/api/workspaces/${workspace.id}/members/${m.id}`, { token: owner.token })).status).toBe(204);
    const cb = await call("GET", "/api/integrations/filestore/callback", { query: drive.authorize(c.body.auth_url) });
    expect(cb.headers.location).toBe(settings("error", "not_a_member"));
    expect(await OAuth.findIntegration(workspace.id, "filestore")).toBeNull();
  });

  it("an over-long state, code or error description is still a redirect naming the reason, never a JSON 422", async () => {
    const long = await call("GET", "/api/integrations/filestore/callback", { query: { code: "c", state: "x".repeat(600) } });
    expect(long.status).toBe(302);
    expect(long.headers.location).toBe(settings("error", "invalid_state"));
    const { auth_url, state } = await startConnect();
    drive.authorize(auth_url);
    const declined = await call("GET", "/api/integrations/filestore/callback", { query: { error: "access_denied", error_description: "d".repeat(2100), state } });
    expect(declined.status).toBe(302);
    expect(declined.headers.location).toBe(settings("error", "access_denied"));
  });

  it("answers 503 naming the Google settings without client credentials", async () => {
    const { owner, workspace } = await newWorkspace("No creds");
    const res = await withEnv({ GOOGLE_CLIENT_ID: undefined, GOOGLE_CLIENT_SECRET: undefined }, () =>
      call("POST", "/api/integrations/filestore/connect", { token: owner.token, body: { workspace_id: workspace.id } }));
    expectEnvelope(res, 503, "SERVICE_UNAVAILABLE");
    expect(res.body.settings).toEqual(["GOOGLE_CLIENT_ID", "GOOGLE_CLIENT_SECRET"]);
  });
});

describe("refresh and disconnect", () => {
  it("an expired access token is refreshed once; Google's refresh token (not rotated) is kept", async () => {
    const { owner, workspace } = await newWorkspace("Refresh");
    await connectDrive(drive, owner.token, workspace.id);
    const row = (await OAuth.findIntegration(workspace.id, "filestore"))!;
    const tokens = await openTokens(row.token_ciphertext!, ctx(workspace.id));
    await db().entities.integration.patch({ workspace_id: workspace.id, kind: "filestore" }).set({ token_ciphertext: await sealTokens({ ...tokens, expires_at: Date.now() - 1 }, ctx(workspace.id)) }).go();
    const before = drive.tokenCalls.refresh_token;
    const grants = await Promise.all([0, 1, 2].map(() => OAuth.grantOf(workspace.id, "filestore")));
    expect(drive.tokenCalls.refresh_token - before).toBe(1);
    const after = await openTokens((await OAuth.findIntegration(workspace.id, "filestore"))!.token_ciphertext!, ctx(workspace.id));
    expect(after.refresh_token).toBe(tokens.refresh_token);
    expect(after.access_token).not.toBe(tokens.access_token);
    expect(new Set(grants.map((g) => g.accessToken))).toEqual(new Set([after.access_token]));
  });

  it("disconnect is hard: the row and its tokens are gone; status says not connected", async () => {
    const { owner, workspace } = await newWorkspace("Off");
    await connectDrive(drive, owner.token, workspace.id);
    const off = await call("DELETE", "/api/integrations/filestore/disconnect", { token: owner.token, query: { workspace_id: workspace.id } });
    expect(off.status, off.text).toBe(200);
    expect(off.body).toEqual({ disconnected: true });
    expect((await partitionItems(`ws#${workspace.id}`)).filter((i) => String(i.sk).startsWith("integration#"))).toEqual([]);
    const status = await call("GET", "/api/integrations/filestore/status", { token: owner.token, query: { workspace_id: workspace.id } });
    expect(status.body).toMatchObject({ connected: false, account_email: null });
    const again = await call("DELETE", "/api/integrations/filestore/disconnect", { token: owner.token, query: { workspace_id: workspace.id } });
    expect(again.body).toEqual({ disconnected: false });
  });
});
