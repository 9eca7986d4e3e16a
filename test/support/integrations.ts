import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { expect } from "vitest";
import { call } from "./api";
import { GHE_API, GHE_WEB, type GitHubStandIn } from "./github-standin";

/** Where the API and the frontend live in the integration tests (exact redirect URIs and settings pages). */
export const API_URL = "https://api.r2d.test";
export const APP_URL = "https://app.r2d.test";

/** Point the provider settings at the stand-ins and give tokens a key file of their own (a fresh temp dir). */
export function useStandInSettings(github: GitHubStandIn): void {
  Object.assign(process.env, {
    GITHUB_API_URL: GHE_API,
    GITHUB_WEB_URL: GHE_WEB,
    GITHUB_CLIENT_ID: github.clientId,
    GITHUB_CLIENT_SECRET: github.clientSecret,
    API_URL,
    APP_URL,
    TOKEN_KEY_FILE: join(mkdtempSync(join(tmpdir(), "r2d-keys-")), "integration-tokens.key"),
  });
}

/** Connect GitHub through the public API as a browser would: connect, authorize at the stand-in, callback. */
export async function connectGithub(github: GitHubStandIn, token: string, workspaceId: string) {
  const connect = await call("POST", "/api/integrations/codehost/connect", { token, body: { workspace_id: workspaceId } });
  expect(connect.status, connect.text).toBe(200);
  const { code, state } = github.authorize(connect.body.auth_url);
  expect(state).toBe(connect.body.state);
  const cb = await call("GET", "/api/integrations/codehost/callback", { query: { code, state } });
  expect(cb.status, cb.text).toBe(302);
  expect(cb.headers.location).toBe(`${APP_URL}/settings/integrations?codehost=connected`);
  return { state, code };
}
