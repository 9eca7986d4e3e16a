/**
 * Tokens are never logged in clear (issue #20; spec 02 Authentication 4): for each of the four kinds, every log line
 * written while connecting, calling back, refreshing an expiring token, failing at the provider and having a refresh
 * refused is read (the Powertools loggers raised to DEBUG, and anything else that reaches stdout, stderr or the
 * console), and none carries an access token, a refresh token, the client secret, the authorization code or the PKCE
 * verifier. The lines themselves are checked too, so the test cannot pass on a silent log. Real oauth4webapi, Octokit,
 * @linear/sdk, jira.js and @googleapis/drive over the stand-ins; the stored items are checked in the kinds' own tests.
 */
import { format } from "node:util";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { logger as httpLogger } from "../../functions/lib/http";
import { db } from "../../core/db/service";
import { openTokens } from "../../core/integration/crypto";
import { integrationLog } from "../../core/integration/log";
import * as Filestore from "../../core/integration/filestore";
import type { IntegrationKind } from "../../core/integration/schema";
import { call, newWorkspace } from "../support/api";
import { GitHubStandIn } from "../support/github-standin";
import { LinearStandIn, useLinearSettings } from "../support/linear-standin";
import { JiraStandIn, useJiraSettings } from "../support/jira-standin";
import { DriveStandIn, useDriveSettings } from "../support/drive-standin";
import { listenTogether } from "../support/standins";
import { APP_URL, useStandInSettings } from "../support/integrations";
import type { SetupServer } from "msw/node";

const REPO = "octokit-fixture-org/hello-world";
const github = new GitHubStandIn([REPO]);
const linear = new LinearStandIn();
const jira = new JiraStandIn(2);
const drive = new DriveStandIn();

let server: SetupServer;
beforeAll(() => {
  useStandInSettings(github);
  useLinearSettings(linear);
  useJiraSettings(jira);
  useDriveSettings(drive);
  // Every kind issues expiring tokens with refresh tokens (GitHub: a GitHub App's user tokens), living less than the
  // minute before expiry at which a token is refreshed: each use after the callback refreshes.
  github.userTokenTtlSeconds = 30;
  linear.accessTtlSeconds = 30;
  jira.accessTtlSeconds = 30;
  drive.accessTtlSeconds = 30;
  server = listenTogether(github, linear, jira, drive);
});
afterAll(() => server.close());

/** Everything written to the log while `fn` runs: the loggers at DEBUG, stdout, stderr and the console. */
async function captureLogs(fn: () => Promise<void>): Promise<string[]> {
  const lines: string[] = [];
  const take = (chunk: unknown) => {
    lines.push(...String(chunk).split("\n").filter(Boolean));
    return true;
  };
  const spies = [
    vi.spyOn(process.stdout, "write").mockImplementation(take),
    vi.spyOn(process.stderr, "write").mockImplementation(take),
    ...(["log", "info", "warn", "error", "debug", "trace"] as const).map((m) => vi.spyOn(console, m).mockImplementation((...args: unknown[]) => void take(format(...args)))),
  ];
  const loggers = [httpLogger, integrationLog()];
  for (const l of loggers) l.setLogLevel("DEBUG");
  try {
    await fn();
  } finally {
    for (const l of loggers) l.setLogLevel("SILENT");
    for (const s of spies) s.mockRestore();
  }
  return lines;
}

interface Kind {
  kind: IntegrationKind;
  clientSecret: string;
  authorize(url: string): { code: string; state: string };
  /** A call through the provider's API (with an expiring token: it refreshes first). */
  use(token: string, workspaceId: string): Promise<void>;
  /** Make the next API call fail at the provider, and the call that then fails. */
  failNext(): void;
  revokeAll(): void;
}

const expectOk = (res: { status: number; text: string }) => expect(res.status, res.text).toBe(200);
const KINDS: Kind[] = [
  {
    kind: "codehost", clientSecret: github.clientSecret, authorize: (u) => github.authorize(u), revokeAll: () => github.revokeAll(),
    use: async (token, ws) => expectOk(await call("GET", "/api/integrations/codehost/repos", { token, query: { workspace_id: ws } })),
    // Octokit's retry plugin tries a 5xx twice.
    failNext: () => github.fail({ match: /^GET \/user\/repos$/, status: 502, message: "Server Error", times: 2 }),
  },
  {
    kind: "planner", clientSecret: linear.clientSecret, authorize: (u) => linear.authorize(u), revokeAll: () => linear.revokeAll(),
    use: async (token, ws) => expectOk(await call("GET", "/api/integrations/planner/teams", { token, query: { workspace_id: ws } })),
    failNext: () => linear.fail({ operation: "PlannerTeams", kind: "ratelimited", headers: { "retry-after": "5" } }),
  },
  {
    kind: "tickets", clientSecret: jira.clientSecret, authorize: (u) => jira.authorize(u), revokeAll: () => jira.revokeAll(),
    use: async (token, ws) => expectOk(await call("GET", "/api/integrations/tickets/projects", { token, query: { workspace_id: ws } })),
    failNext: () => jira.fail({ match: /\/project\/search$/, status: 500 }),
  },
  {
    // The file store's API calls are the copilot's tools: the port the tools call, through the same framework.
    kind: "filestore", clientSecret: drive.clientSecret, authorize: (u) => drive.authorize(u), revokeAll: () => drive.revokeAll(),
    use: async (_token, ws) => void (await Filestore.withFileStore(ws, (store) => store.search("roadmap", 5))),
    failNext: () => drive.fail({ match: /^GET \/drive\/v3\/files$/, status: 500, times: 2 }),
  },
];

const connectPath = (kind: IntegrationKind) => `/api/integrations/${kind}/connect`;
const callbackPath = (kind: IntegrationKind) => `/api/integrations/${kind}/callback`;

describe("integration logs", () => {
  it.each(KINDS)("$kind: connect, callback, refresh, a failing provider call and a refused refresh log what happened and no secret", async (k) => {
    const { owner, workspace } = await newWorkspace(`Logs ${k.kind}`);
    const secrets = new Set<string>([k.clientSecret]);
    const tokensNow = async () => {
      const row = (await db().entities.integration.get({ workspace_id: workspace.id, kind: k.kind }).go({ consistent: true })).data!;
      const t = await openTokens(row.token_ciphertext!, { workspace_id: workspace.id, kind: k.kind });
      secrets.add(t.access_token);
      if (t.refresh_token) secrets.add(t.refresh_token);
      return t;
    };

    const lines = await captureLogs(async () => {
      const connect = await call("POST", connectPath(k.kind), { token: owner.token, body: { workspace_id: workspace.id } });
      expectOk(connect);
      const verifier = (await db().entities.oauthState.get({ state: connect.body.state }).go()).data?.code_verifier;
      if (verifier) secrets.add(verifier);
      const { code, state } = k.authorize(connect.body.auth_url);
      secrets.add(code);
      const cb = await call("GET", callbackPath(k.kind), { query: { code, state } });
      expect(cb.headers.location).toBe(`${APP_URL}/settings/integrations?${k.kind}=connected`);
      const first = await tokensNow();
      expect(first.refresh_token, "the stand-in issues a refresh token").toEqual(expect.any(String));

      // The token expires within the minute: this use refreshes it first.
      await k.use(owner.token, workspace.id);
      const second = await tokensNow();
      expect(second.access_token).not.toBe(first.access_token);

      // A provider failure: answered in the envelope (or thrown to the tool), and logged.
      k.failNext();
      await k.use(owner.token, workspace.id).then(
        () => expect.fail("the provider call should have failed"),
        () => undefined,
      );
      await tokensNow();

      // The user revokes the app at the provider: the next refresh is refused; the grant needs reconnecting.
      k.revokeAll();
      await k.use(owner.token, workspace.id).then(
        () => expect.fail("a revoked grant should be refused"),
        () => undefined,
      );
    });

    // What the flows wrote, as JSON log lines of the integrations' logger and the HTTP stack.
    const entries = lines.flatMap((l) => {
      try {
        return [JSON.parse(l) as Record<string, unknown>];
      } catch {
        return [];
      }
    });
    const mine = entries.filter((e) => e.kind === k.kind);
    const messages = mine.map((e) => e.message);
    expect(messages).toEqual(
      expect.arrayContaining([
        "integration connect started",
        "integration connected",
        "integration token refreshed",
        "integration provider call failed",
        "integration grant refused at refresh; it needs reconnecting",
      ]),
    );
    expect(mine.find((e) => e.message === "integration grant refused at refresh; it needs reconnecting")).toMatchObject({ workspace_id: workspace.id, provider_error: expect.any(String) });

    // No secret anywhere in what was written, whole or in part.
    const text = lines.join("\n");
    expect(secrets.size).toBeGreaterThanOrEqual(5);
    for (const secret of secrets) {
      expect(text, `a secret of ${k.kind} in the log`).not.toContain(secret);
      expect(text, `part of a secret of ${k.kind} in the log`).not.toContain(secret.slice(Math.floor(secret.length / 2) - 6, Math.floor(secret.length / 2) + 6));
    }
  });
});
