/**
 * The code-host endpoints (issue #20 step 2; spec 02 "Code-host integration"): real Octokit (rest, retry, throttling
 * plugins) over the stand-in GitHub whose answers are checked against GitHub's published schema. Repos (pages,
 * search), select, issues (REPO_NOT_SELECTED, link), links, sync (closed → implemented unless not_planned, rejected or
 * implemented; pull request URL kept; ETag: an unchanged issue is a 304), a revoked grant (424, needs reconnect), and
 * GitHub's limits (403 secondary rate limit, 429) answered as 429 with GitHub's wait, or queued for sync.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { call, newWorkspace } from "../support/api";
import { GitHubStandIn } from "../support/github-standin";
import { connectGithub, useStandInSettings } from "../support/integrations";
import { localIntegrationsQueue } from "../../local/events";
import { dynamoClient } from "../../core/db/client";
import { db } from "../../core/db/service";
import { expectEnvelope, headersOf, partitionItems } from "./_helpers";
import { deletedBeforeUpdate } from "../support/races";
import * as Codehost from "../../core/integration/codehost";

const REPO = "octokit-fixture-org/hello-world";
const OTHER = "octokit-fixture-org/other";
const github = new GitHubStandIn([REPO, OTHER, ...Array.from({ length: 120 }, (_, i) => `many-org/repo-${String(i).padStart(3, "0")}`)]);

beforeAll(() => {
  useStandInSettings(github);
  github.listen();
});
afterAll(() => github.close());

async function connected(select: string[] = [REPO]) {
  const { owner, workspace } = await newWorkspace("Code host");
  await connectGithub(github, owner.token, workspace.id);
  if (select.length) {
    const res = await call("POST", "/api/integrations/codehost/repos/select", { token: owner.token, body: { workspace_id: workspace.id, repos: select } });
    expect(res.status, res.text).toBe(200);
  }
  return { owner, workspace };
}

async function recommendation(token: string, workspaceId: string, title = "Let users resume an interrupted upload") {
  const res = await call("POST", "/api/recommendations", { token, body: { workspace_id: workspaceId, title, description: "Uploads over 50 MB fail on flaky connections." } });
  expect(res.status, res.text).toBe(201);
  return res.body as { id: string; status: string };
}

const q = (workspaceId: string, extra: Record<string, string | number> = {}) => ({ workspace_id: workspaceId, ...extra });

describe("repositories", () => {
  it("lists the account's repositories 100 a page, filtered by search, with the selection marked", async () => {
    const { owner, workspace } = await connected([REPO]);
    const page1 = await call("GET", "/api/integrations/codehost/repos", { token: owner.token, query: q(workspace.id) });
    expect(page1.status, page1.text).toBe(200);
    expect(page1.body.repos).toHaveLength(100);
    expect(page1.body.has_more).toBe(true);
    const page2 = await call("GET", "/api/integrations/codehost/repos", { token: owner.token, query: q(workspace.id, { page: 2 }) });
    expect(page2.body.repos).toHaveLength(22);
    expect(page2.body.has_more).toBe(false);
    const all = [...page1.body.repos, ...page2.body.repos].map((r: { full_name: string }) => r.full_name);
    expect(new Set(all).size).toBe(122);
    // The filter applies to the page asked for (one provider request per call): hello-world sorts onto page 2.
    const none = await call("GET", "/api/integrations/codehost/repos", { token: owner.token, query: q(workspace.id, { search: "HELLO" }) });
    expect(none.body).toMatchObject({ repos: [], total: 0, has_more: true });
    const found = await call("GET", "/api/integrations/codehost/repos", { token: owner.token, query: q(workspace.id, { search: "HELLO", page: 2 }) });
    expect(found.body.repos.map((r: { full_name: string }) => r.full_name)).toEqual([REPO]);
    expect(found.body.repos[0]).toMatchObject({ selected: true, owner: "octokit-fixture-org", name: "hello-world", html_url: `https://ghe.test/${REPO}` });
  });

  it("select keeps the named repositories, deduplicated; status counts them", async () => {
    const { owner, workspace } = await connected([]);
    const sel = await call("POST", "/api/integrations/codehost/repos/select", { token: owner.token, body: { workspace_id: workspace.id, repos: [REPO, OTHER, REPO] } });
    expect(sel.body).toEqual({ selected_repos: [REPO, OTHER] });
    const status = await call("GET", "/api/integrations/codehost/status", { token: owner.token, query: q(workspace.id) });
    expect(status.body).toMatchObject({ repos_count: 2, repos_selected: 2, selected_repos: [REPO, OTHER] });
    const bad = await call("POST", "/api/integrations/codehost/repos/select", { token: owner.token, body: { workspace_id: workspace.id, repos: ["not a repo"] } });
    expectEnvelope(bad, 422, "VALIDATION_ERROR");
  });

  it("a disconnect landing just before select writes: 404 NO_ACTIVE_INTEGRATION, nothing recreated (it was a 500)", async () => {
    const { owner, workspace } = await connected([]);
    const res = await deletedBeforeUpdate(
      "integration#codehost",
      () => call("DELETE", "/api/integrations/codehost/disconnect", { token: owner.token, query: q(workspace.id) }),
      () => call("POST", "/api/integrations/codehost/repos/select", { token: owner.token, body: { workspace_id: workspace.id, repos: [REPO] } }),
    );
    expectEnvelope(res, 404, "NO_ACTIVE_INTEGRATION");
    expect((await partitionItems(`ws#${workspace.id}`)).filter((i) => String(i.sk).startsWith("integration#codehost"))).toEqual([]);
  });

  it("without a connection: 404 NO_ACTIVE_INTEGRATION", async () => {
    const { owner, workspace } = await newWorkspace("Unconnected");
    expectEnvelope(await call("GET", "/api/integrations/codehost/repos", { token: owner.token, query: q(workspace.id) }), 404, "NO_ACTIVE_INTEGRATION");
    expectEnvelope(await call("POST", "/api/integrations/codehost/sync", { token: owner.token, body: q(workspace.id) }), 404, "NO_ACTIVE_INTEGRATION");
  });
});

describe("issues and links", () => {
  it("creates an issue for a recommendation in a selected repository and links them (title and body default to the recommendation's)", async () => {
    const { owner, workspace } = await connected();
    const rec = await recommendation(owner.token, workspace.id);
    const res = await call("POST", "/api/integrations/codehost/issues", { token: owner.token, body: { workspace_id: workspace.id, recommendation_id: rec.id, repo_full_name: REPO, labels: ["research"] } });
    expect(res.status, res.text).toBe(200);
    expect(res.body).toMatchObject({ issue_url: expect.stringMatching(new RegExp(`^https://ghe.test/${REPO}/issues/\\d+$`)), issue_number: expect.any(Number), link_id: expect.any(String) });
    const issue = github.issue(REPO, res.body.issue_number);
    // The body ends with the request's marker (how a retry finds the issue: integrations-codehost-retry.test.ts).
    expect(issue).toMatchObject({ title: "Let users resume an interrupted upload", body: expect.stringMatching(/^Uploads over 50 MB fail on flaky connections\.\n\n<!-- r2d:issue:[0-9a-f]{32} -->$/), labels: ["research"] });
    const links = await call("GET", "/api/integrations/codehost/links", { token: owner.token, query: q(workspace.id, { recommendation_id: rec.id }) });
    expect(links.body.links).toEqual([
      expect.objectContaining({ id: res.body.link_id, repo_full_name: REPO, issue_number: res.body.issue_number, issue_url: res.body.issue_url, state: "open", pull_request_url: null }),
    ]);
  });

  it("a repository that is not selected: 422 REPO_NOT_SELECTED naming the selection; nothing is created", async () => {
    const { owner, workspace } = await connected([REPO]);
    const rec = await recommendation(owner.token, workspace.id);
    const before = github.creations();
    const res = await call("POST", "/api/integrations/codehost/issues", { token: owner.token, body: { workspace_id: workspace.id, recommendation_id: rec.id, repository: OTHER, title: "T" } });
    expectEnvelope(res, 422, "REPO_NOT_SELECTED");
    expect(res.body.selected_repos).toEqual([REPO]);
    expect(github.creations()).toBe(before);
  });

  it("a recommendation of another workspace is 404", async () => {
    const { owner, workspace } = await connected();
    const other = await newWorkspace("Elsewhere");
    const rec = await recommendation(other.owner.token, other.workspace.id);
    const res = await call("POST", "/api/integrations/codehost/issues", { token: owner.token, body: { workspace_id: workspace.id, recommendation_id: rec.id, repo: REPO } });
    expect(res.status).toBe(404);
  });
});

describe("sync", () => {
  async function linked(title?: string) {
    const ctx = await connected();
    const rec = await recommendation(ctx.owner.token, ctx.workspace.id, title);
    const res = await call("POST", "/api/integrations/codehost/issues", { token: ctx.owner.token, body: { workspace_id: ctx.workspace.id, recommendation_id: rec.id, repo: REPO } });
    expect(res.status, res.text).toBe(200);
    return { ...ctx, rec, issueNumber: res.body.issue_number as number };
  }
  const statusOf = async (token: string, id: string) => (await call("GET", `/api/recommendations/${id}`, { token })).body.status as string;

  it("past its time budget a sync answers with the rest queued, and the queue syncs them (it ran past the API's 29 s)", async () => {
    const { owner, workspace, rec: first } = await linked();
    const recs = [first.id];
    for (const title of ["Second", "Third"]) {
      const rec = await recommendation(owner.token, workspace.id, title);
      recs.push(rec.id);
      expect((await call("POST", "/api/integrations/codehost/issues", { token: owner.token, body: { workspace_id: workspace.id, recommendation_id: rec.id, repo: REPO } })).status).toBe(200);
    }
    const me = (await call("GET", "/api/auth/me", { token: owner.token })).body.id as string;
    const res = await Codehost.sync(me, workspace.id, undefined, { budgetMs: 1 });
    expect(res).toEqual({ synced_count: 1, updated_count: 0, queued_count: 2 });
    await localIntegrationsQueue().idle();
    for (const id of recs) {
      const links = await call("GET", "/api/integrations/codehost/links", { token: owner.token, query: q(workspace.id, { recommendation_id: id }) });
      expect(links.body.links[0].last_synced_at).toEqual(expect.any(String));
    }
  });

  it("a disconnect while a sync runs: the sync answers what it did, and writes nothing back (it was a 500)", async () => {
    const { owner, workspace } = await linked();
    expect((await call("POST", "/api/integrations/codehost/sync", { token: owner.token, body: q(workspace.id) })).status).toBe(200);
    // The issue is unchanged (304): the sync notes the link synced, just after the disconnect removed it.
    const res = await deletedBeforeUpdate(
      "issue_link#codehost",
      () => call("DELETE", "/api/integrations/codehost/disconnect", { token: owner.token, query: q(workspace.id) }),
      () => call("POST", "/api/integrations/codehost/sync", { token: owner.token, body: q(workspace.id) }),
    );
    expect(res.status, res.text).toBe(200);
    expect(res.body).toEqual({ synced_count: 1, updated_count: 0, queued_count: 0 });
    expect((await partitionItems(`ws#${workspace.id}`)).filter((i) => /^(integration#codehost|issue_link#codehost)/.test(String(i.sk)))).toEqual([]);
  });

  it("a disconnect deletes every link though DynamoDB left part of the batch delete unprocessed (it was left behind)", async () => {
    const { owner, workspace } = await linked();
    // Two more links (seeded: creating issues through Octokit is paced 3 s apart).
    for (const n of [1, 2]) {
      await db().entities.issueLink.put({
        id: `seeded-${n}`, workspace_id: workspace.id, kind: "codehost", recommendation_id: `rec-${n}`, repo_full_name: REPO, issue_number: 900 + n,
        issue_url: `https://github.test/${REPO}/issues/${900 + n}`, title: `Seeded ${n}`, state: "open",
      }).go();
    }
    // The first BatchWriteItem of these links writes all but its last request, which DynamoDB answers as unprocessed.
    const name = "unprocessedLinkDelete";
    let withheld = 0;
    dynamoClient().middlewareStack.add(
      (next, context) => async (args) => {
        const input = args.input as { RequestItems?: Record<string, unknown[]> };
        const [table, requests] = Object.entries(input.RequestItems ?? {})[0] ?? [];
        if (!withheld && /BatchWrite/.test(String(context.commandName)) && table && requests && requests.length > 1 && JSON.stringify(requests).includes("issue_link#codehost")) {
          withheld++;
          const out = (await next({ ...args, input: { ...input, RequestItems: { [table]: requests.slice(0, -1) } } })) as { output: Record<string, unknown> };
          return { ...out, output: { ...out.output, UnprocessedItems: { [table]: requests.slice(-1) } } } as never;
        }
        return next(args);
      },
      { step: "initialize", name },
    );
    try {
      const res = await call("DELETE", "/api/integrations/codehost/disconnect", { token: owner.token, query: q(workspace.id) });
      expect(res.status, res.text).toBe(200);
    } finally {
      dynamoClient().middlewareStack.remove(name);
    }
    expect(withheld).toBe(1);
    expect((await partitionItems(`ws#${workspace.id}`)).filter((i) => /^(integration#codehost|issue_link#codehost)/.test(String(i.sk)))).toEqual([]);
  });

  it("a closed issue moves its recommendation to implemented and keeps the pull request URL; an unchanged issue is a 304", async () => {
    const { owner, workspace, rec, issueNumber } = await linked();
    const first = await call("POST", "/api/integrations/codehost/sync", { token: owner.token, body: q(workspace.id) });
    expect(first.body).toEqual({ synced_count: 1, updated_count: 0, queued_count: 0 });
    expect(await statusOf(owner.token, rec.id)).toBe("suggested");

    // Nothing changed: the conditional request (If-None-Match) is answered 304, which GitHub does not count.
    const mark = github.requests.length;
    const again = await call("POST", "/api/integrations/codehost/sync", { token: owner.token, body: q(workspace.id) });
    expect(again.body).toEqual({ synced_count: 1, updated_count: 0, queued_count: 0 });
    expect(github.requests.slice(mark).filter((r) => r.path.includes(`/issues/${issueNumber}`)).map((r) => r.status)).toEqual([304]);

    github.close_(REPO, issueNumber, "completed", 77);
    const closed = await call("POST", "/api/integrations/codehost/sync", { token: owner.token, body: q(workspace.id) });
    expect(closed.body).toEqual({ synced_count: 1, updated_count: 1, queued_count: 0 });
    expect(await statusOf(owner.token, rec.id)).toBe("implemented");
    const links = await call("GET", "/api/integrations/codehost/links", { token: owner.token, query: q(workspace.id, { recommendation_id: rec.id }) });
    expect(links.body.links[0]).toMatchObject({ state: "closed", state_reason: "completed", pull_request_url: `https://ghe.test/${REPO}/pull/77`, last_synced_at: expect.any(String) });
    const status = await call("GET", "/api/integrations/codehost/status", { token: owner.token, query: q(workspace.id) });
    expect(status.body.last_synced_at).toEqual(expect.any(String));
  });

  it("closed as not_planned does not implement the recommendation", async () => {
    const { owner, workspace, rec, issueNumber } = await linked();
    github.close_(REPO, issueNumber, "not_planned");
    const res = await call("POST", "/api/integrations/codehost/sync", { token: owner.token, body: q(workspace.id) });
    expect(res.body.updated_count).toBe(1);
    expect(await statusOf(owner.token, rec.id)).toBe("suggested");
  });

  it("a rejected recommendation stays rejected when its issue closes", async () => {
    const { owner, rec, workspace, issueNumber } = await linked();
    expect((await call("PATCH", `/api/recommendations/${rec.id}/status`, { token: owner.token, body: { status: "rejected" } })).status).toBe(200);
    github.close_(REPO, issueNumber, "completed");
    await call("POST", "/api/integrations/codehost/sync", { token: owner.token, body: q(workspace.id) });
    expect(await statusOf(owner.token, rec.id)).toBe("rejected");
  });

  it("a deleted issue (410) keeps its link's last state and the other links still sync", async () => {
    const ctx = await linked();
    const other = await recommendation(ctx.owner.token, ctx.workspace.id, "Show upload progress");
    const made = await call("POST", "/api/integrations/codehost/issues", { token: ctx.owner.token, body: { workspace_id: ctx.workspace.id, recommendation_id: other.id, repo: REPO } });
    expect(made.status, made.text).toBe(200);
    github.close_(REPO, made.body.issue_number, "completed");
    // Links sync oldest first: the deleted one comes before the closed one.
    github.fail({ match: new RegExp(`^GET /repos/${REPO}/issues/${ctx.issueNumber}$`), status: 410, message: "This issue was deleted" });
    const res = await call("POST", "/api/integrations/codehost/sync", { token: ctx.owner.token, body: q(ctx.workspace.id) });
    expect(res.status, res.text).toBe(200);
    expect(res.body).toEqual({ synced_count: 1, updated_count: 1, queued_count: 0 });
    expect(await statusOf(ctx.owner.token, other.id)).toBe("implemented");
    expect(await statusOf(ctx.owner.token, ctx.rec.id)).toBe("suggested");
  });

  it("a recommendation deleted after its issue was linked does not break the sync", async () => {
    const { owner, workspace, rec, issueNumber } = await linked();
    expect((await call("DELETE", `/api/recommendations/${rec.id}`, { token: owner.token })).status).toBe(204);
    github.close_(REPO, issueNumber, "completed");
    for (let i = 0; i < 2; i++) {
      const res = await call("POST", "/api/integrations/codehost/sync", { token: owner.token, body: q(workspace.id) });
      expect(res.status, res.text).toBe(200);
      expect(res.body.synced_count).toBe(1);
    }
  });

  it("a sync that fails while implementing the recommendation is caught up by the next one (the link does not record the issue first)", async () => {
    const { owner, workspace, rec, issueNumber } = await linked();
    github.close_(REPO, issueNumber, "completed");
    // The recommendation's first step (suggested → accepted) fails once.
    const name = "failRecommendationWriteOnce";
    let failed = false;
    dynamoClient().middlewareStack.add(
      (next, context) => async (args) => {
        if (!failed && /Update|TransactWrite/.test(String(context.commandName)) && JSON.stringify(args.input).includes(rec.id) && JSON.stringify(args.input).includes('"accepted"')) {
          failed = true;
          throw Object.assign(new Error("lost connection"), { name: "NetworkingError" });
        }
        return next(args);
      },
      { step: "initialize", name },
    );
    try {
      const first = await call("POST", "/api/integrations/codehost/sync", { token: owner.token, body: q(workspace.id) });
      expect(failed).toBe(true);
      expect(first.status).toBeGreaterThanOrEqual(500);
    } finally {
      dynamoClient().middlewareStack.remove(name);
    }
    expect(await statusOf(owner.token, rec.id)).toBe("suggested");
    const second = await call("POST", "/api/integrations/codehost/sync", { token: owner.token, body: q(workspace.id) });
    expect(second.status, second.text).toBe(200);
    expect(await statusOf(owner.token, rec.id)).toBe("implemented");
  });

  it("a sync that read the issue before another sync recorded it closed does not reopen the link", async () => {
    const { owner, workspace, rec, issueNumber } = await linked();
    expect((await call("POST", "/api/integrations/codehost/sync", { token: owner.token, body: q(workspace.id) })).status).toBe(200);
    github.issue(REPO, issueNumber).version++; // edited, still open: the next read is not a 304
    const name = "linkSyncRace";
    let raced = false;
    dynamoClient().middlewareStack.add(
      (next, context) => async (args) => {
        const input = JSON.stringify(args.input);
        if (!raced && /Update/.test(String(context.commandName)) && input.includes("etag") && input.includes('"open"')) {
          raced = true;
          github.close_(REPO, issueNumber, "completed");
          const other = await call("POST", "/api/integrations/codehost/sync", { token: owner.token, body: q(workspace.id) });
          expect(other.body).toMatchObject({ updated_count: 1 });
        }
        return next(args);
      },
      { step: "initialize", name },
    );
    try {
      const res = await call("POST", "/api/integrations/codehost/sync", { token: owner.token, body: q(workspace.id) });
      expect(res.status, res.text).toBe(200);
    } finally {
      dynamoClient().middlewareStack.remove(name);
    }
    expect(raced).toBe(true);
    const links = await call("GET", "/api/integrations/codehost/links", { token: owner.token, query: q(workspace.id, { recommendation_id: rec.id }) });
    expect(links.body.links[0]).toMatchObject({ state: "closed", state_reason: "completed" });
    expect(await statusOf(owner.token, rec.id)).toBe("implemented");
  });

  it("GitHub rate-limiting part-way queues the rest with GitHub's retry-after instead of waiting in the request", async () => {
    const { owner, workspace, rec, issueNumber } = await linked();
    github.close_(REPO, issueNumber, "completed");
    github.fail({ match: new RegExp(`^GET /repos/${REPO}/issues/${issueNumber}$`), status: 403, headers: { "retry-after": "1" }, message: "You have exceeded a secondary rate limit. Please wait a few minutes before you try again." });
    const started = Date.now();
    const res = await call("POST", "/api/integrations/codehost/sync", { token: owner.token, body: q(workspace.id) });
    expect(res.body).toEqual({ synced_count: 0, updated_count: 0, queued_count: 1 });
    expect(Date.now() - started).toBeLessThan(1000);
    expect(await statusOf(owner.token, rec.id)).toBe("suggested");
    await localIntegrationsQueue().idle();
    expect(Date.now() - started).toBeGreaterThanOrEqual(1000);
    expect(await statusOf(owner.token, rec.id)).toBe("implemented");
  });
});

describe("GitHub's answers", () => {
  it("a 403 secondary rate limit on a write is a 429 with GitHub's retry-after", async () => {
    const { owner, workspace } = await connected();
    const rec = await recommendation(owner.token, workspace.id);
    github.fail({ match: /^POST \/repos\/.*\/issues$/, status: 403, headers: { "retry-after": "42" }, message: "You have exceeded a secondary rate limit and have been temporarily blocked from content creation." });
    const res = await call("POST", "/api/integrations/codehost/issues", { token: owner.token, body: { workspace_id: workspace.id, recommendation_id: rec.id, repo: REPO } });
    expectEnvelope(res, 429, "RATE_LIMITED");
    expect(res.body.retry_after_seconds).toBe(42);
    expect(headersOf(res)["retry-after"]).toBe("42");
  });

  it("a 429 with the primary limit spent waits until x-ratelimit-reset", async () => {
    const { owner, workspace } = await connected();
    const reset = Math.floor(Date.now() / 1000) + 300;
    github.fail({ match: /^GET \/user\/repos$/, status: 429, headers: { "x-ratelimit-remaining": "0", "x-ratelimit-reset": String(reset) }, message: "API rate limit exceeded" });
    const res = await call("GET", "/api/integrations/codehost/repos", { token: owner.token, query: q(workspace.id) });
    expectEnvelope(res, 429, "RATE_LIMITED");
    expect(res.body.retry_after_seconds).toBeGreaterThanOrEqual(298);
    expect(res.body.retry_after_seconds).toBeLessThanOrEqual(301);
  });

  it("a revoked grant: 424 CODEHOST_TOKEN_ERROR with the reconnect hint, and status says reconnect", async () => {
    const { owner, workspace } = await connected();
    github.revokeAll();
    const res = await call("GET", "/api/integrations/codehost/repos", { token: owner.token, query: q(workspace.id) });
    expectEnvelope(res, 424, "CODEHOST_TOKEN_ERROR");
    expect(res.body.reconnect).toBe("POST /api/integrations/codehost/connect");
    const status = await call("GET", "/api/integrations/codehost/status", { token: owner.token, query: q(workspace.id) });
    expect(status.body).toMatchObject({ connected: false, needs_reconnect: true, selected_repos: [REPO] });
    // Reconnecting replaces the grant and keeps the selection.
    await connectGithub(github, owner.token, workspace.id);
    const back = await call("GET", "/api/integrations/codehost/status", { token: owner.token, query: q(workspace.id) });
    expect(back.body).toMatchObject({ connected: true, needs_reconnect: false, selected_repos: [REPO] });
  });
});
