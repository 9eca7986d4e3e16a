import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { expect, vi } from "vitest";
import { localIntegrationsQueue } from "../../local/events";
import { db } from "../../core/db/service";
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

/**
 * Count the sync continuations `act` queues on the local integrations queue until it is idle (jobs whose type ends
 * `.sync`, or only `type`). Past `limit` a continuation is dropped (not sent), so an endless chain ends the test
 * instead of running on: the count then says so.
 */
export async function continuationsOf(act: () => Promise<unknown>, limit: number, type?: string): Promise<number> {
  const q = localIntegrationsQueue();
  const send = q.send.bind(q);
  let sent = 0;
  const spy = vi.spyOn(q, "send").mockImplementation(async (m) => {
    const jobType = JSON.parse(m.body).type as string;
    if ((type ? jobType === type : jobType.endsWith(".sync")) && ++sent > limit) return;
    return send(m);
  });
  try {
    await act();
    await q.idle();
  } finally {
    spy.mockRestore();
  }
  return sent;
}

/**
 * Time passes: the lease a push kept after a create that got no answer (core/ticket PUSH_LEASE_MS) runs out, its
 * `push_claim_until` set into the past in the table, as a minute of waiting would leave it.
 */
export async function expireLease(s: { workspaceId: string; documentId: string }, id: string): Promise<void> {
  await db().entities.executionTicket.patch({ workspace_id: s.workspaceId, document_id: s.documentId, id }).set({ push_claim_until: Date.now() - 1 }).go();
}
