/**
 * The planner endpoints (issue #20 point 4; spec 02 "Planner integration"): real `@linear/sdk` and oauth4webapi over
 * the stand-in Linear, whose answers are typed by the SDK's schema types and cut to each document's selection.
 * OAuth (PKCE, the viewer's user and organization in status), teams (projects, states by position, labels), select,
 * issues (NO_TEAM_SELECTED, project fallback, priority), links, sync (one batched query for many links; completed or
 * cancelled → implemented), Linear's rate limits (HTTP 400 RATELIMITED and 429) and a revoked grant.
 */
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { dynamoClient } from "../../core/db/client";
import { call, newWorkspace } from "../support/api";
import { connectLinear, LinearStandIn, useLinearSettings } from "../support/linear-standin";
import { localIntegrationsQueue } from "../../local/events";
import { db } from "../../core/db/service";
import { retryAfterOf } from "../../core/integration/planner/linear";
import { expectEnvelope, headersOf, partitionItems } from "./_helpers";
import { deletedBeforeUpdate } from "../support/races";

const linear = new LinearStandIn();
const ENG = () => linear.team("ENG");

beforeAll(() => {
  useLinearSettings(linear);
  linear.listen();
});
afterAll(() => linear.close());

const q = (workspaceId: string, extra: Record<string, string | number> = {}) => ({ workspace_id: workspaceId, ...extra });

async function connected(opts: { select?: boolean; project?: boolean } = {}) {
  const { owner, workspace } = await newWorkspace("Planner");
  await connectLinear(linear, owner.token, workspace.id);
  if (opts.select !== false) {
    const body = { workspace_id: workspace.id, team_id: ENG().id, team_name: "Engineering", ...(opts.project ? { project_id: ENG().projects[0]!.id, project_name: "Mobile onboarding" } : {}) };
    const res = await call("POST", "/api/integrations/planner/teams/select", { token: owner.token, body });
    expect(res.status, res.text).toBe(200);
  }
  return { owner, workspace };
}

async function recommendation(token: string, workspaceId: string, title = "Let users resume an interrupted upload") {
  const res = await call("POST", "/api/recommendations", { token, body: { workspace_id: workspaceId, title, description: "Uploads over 50 MB fail on flaky connections." } });
  expect(res.status, res.text).toBe(201);
  return res.body as { id: string };
}

const statusOf = async (token: string, id: string) => (await call("GET", `/api/recommendations/${id}`, { token })).body.status as string;

describe("connection", () => {
  it("connect sends PKCE S256 and Linear's comma-separated scopes; the callback stores the viewer's user and organization", async () => {
    const { owner, workspace } = await newWorkspace("Connect");
    const before = await call("GET", "/api/integrations/planner/status", { token: owner.token, query: q(workspace.id) });
    expect(before.body).toMatchObject({ connected: false, planner_user_name: null, selected_team_id: null });
    await connectLinear(linear, owner.token, workspace.id);
    const status = await call("GET", "/api/integrations/planner/status", { token: owner.token, query: q(workspace.id) });
    expect(status.body).toEqual({
      connected: true, needs_reconnect: false, planner_user_name: "Ada Lovelace", planner_org_name: "Acme Robotics", planner_org_logo_url: "https://linear.test/logo.png",
      selected_team_id: null, selected_team_name: null, selected_project_id: null, selected_project_name: null, last_synced_at: null,
    });
    // The token is stored only encrypted.
    const { data } = await db().entities.integration.get({ workspace_id: workspace.id, kind: "planner" }).go();
    expect(JSON.stringify(data)).not.toMatch(/lin_oauth_/);
  });

  it("without Linear client credentials connect is a 503 naming them", async () => {
    const { owner, workspace } = await newWorkspace("No creds");
    const saved = process.env.LINEAR_CLIENT_SECRET;
    delete process.env.LINEAR_CLIENT_SECRET;
    try {
      const res = await call("POST", "/api/integrations/planner/connect", { token: owner.token, body: { workspace_id: workspace.id } });
      expectEnvelope(res, 503, "SERVICE_UNAVAILABLE");
      expect(res.body.detail).toContain("LINEAR_CLIENT_SECRET");
    } finally {
      process.env.LINEAR_CLIENT_SECRET = saved;
    }
  });

  it("without a connection: 404 NO_ACTIVE_INTEGRATION", async () => {
    const { owner, workspace } = await newWorkspace("Unconnected");
    expectEnvelope(await call("GET", "/api/integrations/planner/teams", { token: owner.token, query: q(workspace.id) }), 404, "NO_ACTIVE_INTEGRATION");
    expectEnvelope(await call("POST", "/api/integrations/planner/sync", { token: owner.token, body: q(workspace.id) }), 404, "NO_ACTIVE_INTEGRATION");
  });
});

describe("teams", () => {
  it("lists teams with projects, labels and workflow states sorted by position, the selected one marked", async () => {
    const { owner, workspace } = await connected();
    const res = await call("GET", "/api/integrations/planner/teams", { token: owner.token, query: q(workspace.id) });
    expect(res.status, res.text).toBe(200);
    expect(res.body.teams.map((t: { key: string }) => t.key)).toEqual(["ENG", "DES"]);
    const eng = res.body.teams[0];
    expect(eng.selected).toBe(true);
    expect(res.body.teams[1].selected).toBe(false);
    expect(eng.states.map((s: { name: string }) => s.name)).toEqual(["Triage", "Backlog", "Todo", "In Progress", "In Review", "Done", "Canceled", "Duplicate"]);
    expect(eng.states[5]).toMatchObject({ type: "completed", position: 4 });
    // Linear's `canceled` and `duplicate` in the spec's word.
    expect(eng.states.slice(6).map((s: { type: string }) => s.type)).toEqual(["cancelled", "cancelled"]);
    expect(eng.projects.map((p: { name: string }) => p.name)).toEqual(["Mobile onboarding", "Mobile payments"]);
    expect(eng.labels.map((l: { name: string }) => l.name)).toEqual(["Bug", "Feature", "Research"]);
  });

  it("select stores the team and project (status shows them); an unknown team or another team's project is 404", async () => {
    const { owner, workspace } = await connected({ project: true });
    const status = await call("GET", "/api/integrations/planner/status", { token: owner.token, query: q(workspace.id) });
    expect(status.body).toMatchObject({ selected_team_id: ENG().id, selected_team_name: "Engineering", selected_project_id: ENG().projects[0]!.id, selected_project_name: "Mobile onboarding" });
    const unknown = await call("POST", "/api/integrations/planner/teams/select", { token: owner.token, body: { workspace_id: workspace.id, team_id: "nope", team_name: "Nope" } });
    expectEnvelope(unknown, 404, "NOT_FOUND");
    const foreign = await call("POST", "/api/integrations/planner/teams/select", {
      token: owner.token, body: { workspace_id: workspace.id, team_id: ENG().id, team_name: "Engineering", project_id: linear.team("DES").projects[0]!.id },
    });
    expectEnvelope(foreign, 404, "NOT_FOUND");
    // Selecting without a project clears the project.
    await call("POST", "/api/integrations/planner/teams/select", { token: owner.token, body: { workspace_id: workspace.id, team_id: linear.team("DES").id, team_name: "Design" } });
    const after = await call("GET", "/api/integrations/planner/status", { token: owner.token, query: q(workspace.id) });
    expect(after.body).toMatchObject({ selected_team_name: "Design", selected_project_id: null, selected_project_name: null });
  });
});

describe("teams: a racing disconnect", () => {
  it("a disconnect landing while select reads Linear: 404 NO_ACTIVE_INTEGRATION, nothing recreated (it was a 500)", async () => {
    const { owner, workspace } = await connected({ select: false });
    const res = await deletedBeforeUpdate(
      "integration#planner",
      () => call("DELETE", "/api/integrations/planner/disconnect", { token: owner.token, query: q(workspace.id) }),
      () => call("POST", "/api/integrations/planner/teams/select", { token: owner.token, body: { workspace_id: workspace.id, team_id: ENG().id, team_name: "Engineering" } }),
    );
    expectEnvelope(res, 404, "NO_ACTIVE_INTEGRATION");
    expect((await partitionItems(`ws#${workspace.id}`)).filter((i) => String(i.sk).startsWith("integration#planner"))).toEqual([]);
  });
});

describe("issues and links", () => {
  it("creates an issue in the selected team for a recommendation (title, body from it; project from the selection; priority) and links it", async () => {
    const { owner, workspace } = await connected({ project: true });
    const rec = await recommendation(owner.token, workspace.id);
    const bug = ENG().labels[0]!;
    const todo = linear.stateOf("ENG", "Todo");
    const res = await call("POST", "/api/integrations/planner/issues", {
      token: owner.token, body: { workspace_id: workspace.id, recommendation_id: rec.id, label_ids: [bug.id], state_id: todo.id, priority: 2 },
    });
    expect(res.status, res.text).toBe(200);
    expect(res.body).toEqual({ issue_url: expect.stringMatching(/^https:\/\/linear\.test\/acme\/issue\/ENG-\d+$/), issue_identifier: expect.stringMatching(/^ENG-\d+$/), link_id: expect.any(String) });
    const stored = [...linear.issues.values()].find((i) => res.body.issue_url.endsWith(`ENG-${i.number}`) && i.teamId === ENG().id)!;
    expect(stored).toMatchObject({ title: "Let users resume an interrupted upload", description: "Uploads over 50 MB fail on flaky connections.", priority: 2, projectId: ENG().projects[0]!.id, labelIds: [bug.id], stateId: todo.id });
    const links = await call("GET", "/api/integrations/planner/links", { token: owner.token, query: q(workspace.id, { recommendation_id: rec.id }) });
    expect(links.body.links).toEqual([
      expect.objectContaining({ id: res.body.link_id, issue_id: stored.id, identifier: res.body.issue_identifier, state: "Todo", state_type: "unstarted", issue_url: res.body.issue_url }),
    ]);
  });

  it("an explicit project wins over the selected one; priority outside 0..4 is a 422", async () => {
    const { owner, workspace } = await connected({ project: true });
    const rec = await recommendation(owner.token, workspace.id);
    const other = ENG().projects[1]!;
    const res = await call("POST", "/api/integrations/planner/issues", { token: owner.token, body: { workspace_id: workspace.id, recommendation_id: rec.id, project_id: other.id, title: "T" } });
    expect(res.status, res.text).toBe(200);
    expect([...linear.issues.values()].find((i) => i.title === "T" && i.projectId === other.id)).toBeDefined();
    expectEnvelope(await call("POST", "/api/integrations/planner/issues", { token: owner.token, body: { workspace_id: workspace.id, recommendation_id: rec.id, priority: 5 } }), 422, "VALIDATION_ERROR");
  });

  it("no team selected: 422 NO_TEAM_SELECTED, and another team than the selected one likewise; nothing is created", async () => {
    const { owner, workspace } = await connected({ select: false });
    const rec = await recommendation(owner.token, workspace.id);
    const before = linear.issues.size;
    expectEnvelope(await call("POST", "/api/integrations/planner/issues", { token: owner.token, body: { workspace_id: workspace.id, recommendation_id: rec.id } }), 422, "NO_TEAM_SELECTED");
    await call("POST", "/api/integrations/planner/teams/select", { token: owner.token, body: { workspace_id: workspace.id, team_id: ENG().id, team_name: "Engineering" } });
    const other = await call("POST", "/api/integrations/planner/issues", { token: owner.token, body: { workspace_id: workspace.id, recommendation_id: rec.id, team_id: linear.team("DES").id } });
    expectEnvelope(other, 422, "NO_TEAM_SELECTED");
    expect(linear.issues.size).toBe(before);
  });

  it("a recommendation of another workspace is 404", async () => {
    const { owner, workspace } = await connected();
    const other = await newWorkspace("Elsewhere");
    const rec = await recommendation(other.owner.token, other.workspace.id);
    expect((await call("POST", "/api/integrations/planner/issues", { token: owner.token, body: { workspace_id: workspace.id, recommendation_id: rec.id } })).status).toBe(404);
  });
});

describe("sync", () => {
  async function linkedMany(n: number) {
    const ctx = await connected();
    const recs: { id: string; issueId: string }[] = [];
    for (let i = 0; i < n; i++) {
      const rec = await recommendation(ctx.owner.token, ctx.workspace.id, `Recommendation ${i}`);
      const res = await call("POST", "/api/integrations/planner/issues", { token: ctx.owner.token, body: { workspace_id: ctx.workspace.id, recommendation_id: rec.id } });
      expect(res.status, res.text).toBe(200);
      const links = await call("GET", "/api/integrations/planner/links", { token: ctx.owner.token, query: q(ctx.workspace.id, { recommendation_id: rec.id }) });
      recs.push({ id: rec.id, issueId: links.body.links[0].issue_id });
    }
    return { ...ctx, recs };
  }

  it("reads every linked issue in one GraphQL request; completed and cancelled implement, started does not; rejected stays", async () => {
    const { owner, workspace, recs } = await linkedMany(5);
    const mark = linear.requests.length;
    const first = await call("POST", "/api/integrations/planner/sync", { token: owner.token, body: q(workspace.id) });
    expect(first.body).toEqual({ synced_count: 5, updated_count: 0, queued_count: 0 });
    expect(linear.requests.slice(mark).map((r) => r.operation)).toEqual(["PlannerIssues"]);

    expect((await call("PATCH", `/api/recommendations/${recs[3]!.id}/status`, { token: owner.token, body: { status: "rejected" } })).status).toBe(200);
    linear.moveTo(recs[0]!.issueId, "Done");
    // Archived (Linear archives closed issues): the batched read by id still sees it.
    linear.archive(recs[0]!.issueId);
    linear.moveTo(recs[1]!.issueId, "Canceled");
    linear.moveTo(recs[2]!.issueId, "In Progress");
    linear.moveTo(recs[3]!.issueId, "Done");
    // Linear's own types: Canceled is `canceled`, Duplicate is `duplicate`; both close the issue (spec 02: cancelled).
    linear.moveTo(recs[4]!.issueId, "Duplicate");
    const mark2 = linear.requests.length;
    const res = await call("POST", "/api/integrations/planner/sync", { token: owner.token, body: q(workspace.id) });
    expect(res.body).toEqual({ synced_count: 5, updated_count: 5, queued_count: 0 });
    expect(linear.count("PlannerIssues", mark2)).toBe(1);
    expect(linear.requests.length - mark2).toBe(1);
    expect(await Promise.all(recs.map((r) => statusOf(owner.token, r.id)))).toEqual(["implemented", "implemented", "suggested", "rejected", "implemented"]);
    const links = await call("GET", "/api/integrations/planner/links", { token: owner.token, query: q(workspace.id, { recommendation_id: recs[1]!.id }) });
    expect(links.body.links[0]).toMatchObject({ state: "Canceled", state_type: "cancelled", last_synced_at: expect.any(String) });
    const status = await call("GET", "/api/integrations/planner/status", { token: owner.token, query: q(workspace.id) });
    expect(status.body.last_synced_at).toEqual(expect.any(String));
  });

  it("a sync that read the issue before another sync recorded it done does not move the link back", async () => {
    const { owner, workspace, recs } = await linkedMany(1);
    expect((await call("POST", "/api/integrations/planner/sync", { token: owner.token, body: q(workspace.id) })).status).toBe(200);
    linear.moveTo(recs[0]!.issueId, "In Progress");
    const name = "plannerSyncRace";
    let raced = false;
    dynamoClient().middlewareStack.add(
      (next, context) => async (args) => {
        if (!raced && /Update/.test(String(context.commandName)) && JSON.stringify(args.input).includes("In Progress")) {
          raced = true;
          linear.moveTo(recs[0]!.issueId, "Done");
          const other = await call("POST", "/api/integrations/planner/sync", { token: owner.token, body: q(workspace.id) });
          expect(other.body).toMatchObject({ updated_count: 1 });
        }
        return next(args);
      },
      { step: "initialize", name },
    );
    try {
      expect((await call("POST", "/api/integrations/planner/sync", { token: owner.token, body: q(workspace.id) })).status).toBe(200);
    } finally {
      dynamoClient().middlewareStack.remove(name);
    }
    expect(raced).toBe(true);
    const links = await call("GET", "/api/integrations/planner/links", { token: owner.token, query: q(workspace.id, { recommendation_id: recs[0]!.id }) });
    expect(links.body.links[0]).toMatchObject({ state: "Done", state_type: "completed" });
    expect(await statusOf(owner.token, recs[0]!.id)).toBe("implemented");
  });

  it("an issue created straight into Done (or Canceled) implements its recommendation; sync keeps it implemented, and rejected stays", async () => {
    const { owner, workspace } = await connected();
    const create = (recId: string, state: string) =>
      call("POST", "/api/integrations/planner/issues", { token: owner.token, body: { workspace_id: workspace.id, recommendation_id: recId, state_id: linear.stateOf("ENG", state).id } });
    const done = await recommendation(owner.token, workspace.id, "Created done");
    const canceled = await recommendation(owner.token, workspace.id, "Created canceled");
    const rejected = await recommendation(owner.token, workspace.id, "Rejected first");
    expect((await call("PATCH", `/api/recommendations/${rejected.id}/status`, { token: owner.token, body: { status: "rejected" } })).status).toBe(200);
    for (const [rec, state] of [[done, "Done"], [canceled, "Canceled"], [rejected, "Done"]] as const) {
      const res = await create(rec.id, state);
      expect(res.status, res.text).toBe(200);
    }
    const links = await call("GET", "/api/integrations/planner/links", { token: owner.token, query: q(workspace.id, { recommendation_id: done.id }) });
    expect(links.body.links[0]).toMatchObject({ state: "Done", state_type: "completed" });
    expect(await statusOf(owner.token, done.id)).toBe("implemented");
    expect(await statusOf(owner.token, canceled.id)).toBe("implemented");
    const res = await call("POST", "/api/integrations/planner/sync", { token: owner.token, body: q(workspace.id) });
    expect(res.body).toEqual({ synced_count: 3, updated_count: 0, queued_count: 0 });
    expect(await Promise.all([done, canceled, rejected].map((r) => statusOf(owner.token, r.id)))).toEqual(["implemented", "implemented", "rejected"]);
  });

  it("a link that already records a closed state while its recommendation never moved is caught up by the next sync", async () => {
    const { owner, workspace } = await connected();
    const rec = await recommendation(owner.token, workspace.id, "Closed before it was linked here");
    // The link as an earlier create left it (the recommendation was not moved then): state Done, recommendation suggested.
    const issue = linear.addIssue("ENG", { title: "Closed already", stateId: linear.stateOf("ENG", "Done").id });
    await db().entities.issueLink.put({
      id: randomUUID(), workspace_id: workspace.id, kind: "planner", recommendation_id: rec.id, issue_id: issue.id, identifier: `ENG-${issue.number}`,
      issue_url: `https://linear.test/acme/issue/ENG-${issue.number}`, title: issue.title, state: "Done", state_type: "completed", created_by: owner.id,
    }).go();
    expect(await statusOf(owner.token, rec.id)).toBe("suggested");
    const res = await call("POST", "/api/integrations/planner/sync", { token: owner.token, body: q(workspace.id) });
    expect(res.body).toEqual({ synced_count: 1, updated_count: 0, queued_count: 0 });
    expect(await statusOf(owner.token, rec.id)).toBe("implemented");
  });

  it("Linear rate-limiting the batched read (HTTP 400 RATELIMITED) queues the sync with Linear's reset as the delay", async () => {
    const { owner, workspace, recs } = await linkedMany(2);
    linear.moveTo(recs[0]!.issueId, "Done");
    linear.fail({ operation: "PlannerIssues", kind: "ratelimited", headers: { "x-ratelimit-requests-remaining": "0", "x-ratelimit-requests-reset": String(Date.now() + 1000) } });
    const started = Date.now();
    const res = await call("POST", "/api/integrations/planner/sync", { token: owner.token, body: q(workspace.id) });
    expect(res.body).toEqual({ synced_count: 0, updated_count: 0, queued_count: 2 });
    expect(Date.now() - started).toBeLessThan(1000);
    expect(await statusOf(owner.token, recs[0]!.id)).toBe("suggested");
    await localIntegrationsQueue().idle();
    expect(await statusOf(owner.token, recs[0]!.id)).toBe("implemented");
  });
});

describe("Linear's answers", () => {
  it("HTTP 400 with the RATELIMITED code is a 429 whose wait is the spent budget's reset (epoch ms)", async () => {
    const { owner, workspace } = await connected();
    const reset = Date.now() + 300_000;
    linear.fail({ operation: "PlannerTeams", kind: "ratelimited", headers: { "x-ratelimit-complexity-remaining": "0", "x-ratelimit-complexity-reset": String(reset), "x-ratelimit-requests-remaining": "120", "x-ratelimit-requests-reset": String(Date.now() + 1000) } });
    const res = await call("GET", "/api/integrations/planner/teams", { token: owner.token, query: q(workspace.id) });
    expectEnvelope(res, 429, "RATE_LIMITED");
    expect(res.body.retry_after_seconds).toBeGreaterThanOrEqual(298);
    expect(res.body.retry_after_seconds).toBeLessThanOrEqual(301);
  });

  it("HTTP 429 with retry-after is a 429 with that wait", async () => {
    const { owner, workspace } = await connected();
    const rec = await recommendation(owner.token, workspace.id);
    linear.fail({ operation: "PlannerIssueCreate", kind: "429", headers: { "retry-after": "42" } });
    const res = await call("POST", "/api/integrations/planner/issues", { token: owner.token, body: { workspace_id: workspace.id, recommendation_id: rec.id } });
    expectEnvelope(res, 429, "RATE_LIMITED");
    expect(res.body.retry_after_seconds).toBe(42);
    expect(headersOf(res)["retry-after"]).toBe("42");
  });

  it("a dropped connection (no answer) is 503 SERVICE_UNAVAILABLE, as GitHub's and Jira's are: teams, issues and sync", async () => {
    const { owner, workspace } = await connected();
    linear.fail({ operation: "PlannerTeams", kind: "lost" });
    const teams = await call("GET", "/api/integrations/planner/teams", { token: owner.token, query: q(workspace.id) });
    expectEnvelope(teams, 503, "SERVICE_UNAVAILABLE");
    expect(teams.body.detail).toMatch(/Linear failed: no answer \(fetch failed/);
    // The grant is not blamed: the integration stays connected.
    expect((await call("GET", "/api/integrations/planner/status", { token: owner.token, query: q(workspace.id) })).body).toMatchObject({ connected: true, needs_reconnect: false });

    const rec = await recommendation(owner.token, workspace.id);
    linear.fail({ operation: "PlannerIssueCreate", kind: "lost" });
    expectEnvelope(await call("POST", "/api/integrations/planner/issues", { token: owner.token, body: { workspace_id: workspace.id, recommendation_id: rec.id } }), 503, "SERVICE_UNAVAILABLE");

    expect((await call("POST", "/api/integrations/planner/issues", { token: owner.token, body: { workspace_id: workspace.id, recommendation_id: rec.id } })).status).toBe(200);
    linear.fail({ operation: "PlannerIssues", kind: "lost" });
    expectEnvelope(await call("POST", "/api/integrations/planner/sync", { token: owner.token, body: q(workspace.id) }), 503, "SERVICE_UNAVAILABLE");
    // The connection back, the next sync reads the link.
    expect((await call("POST", "/api/integrations/planner/sync", { token: owner.token, body: q(workspace.id) })).body).toMatchObject({ synced_count: 1 });
  });

  it("retryAfterOf: retry-after first, then the exhausted budget's reset in ms or s, else 60", () => {
    const now = 1_700_000_000_000;
    const h = (o: Record<string, string>) => (n: string) => o[n] ?? null;
    expect(retryAfterOf(h({ "retry-after": "7" }), now)).toBe(7);
    expect(retryAfterOf(h({ "x-ratelimit-requests-remaining": "0", "x-ratelimit-requests-reset": String(now + 90_000) }), now)).toBe(90);
    expect(retryAfterOf(h({ "x-ratelimit-requests-remaining": "0", "x-ratelimit-requests-reset": String(now / 1000 + 30) }), now)).toBe(30);
    expect(retryAfterOf(h({}), now)).toBe(60);
  });

  it("a revoked grant: 424 PLANNER_TOKEN_ERROR with the reconnect hint; status says reconnect; reconnecting keeps the selection", async () => {
    const { owner, workspace } = await connected();
    linear.revokeAll();
    const res = await call("GET", "/api/integrations/planner/teams", { token: owner.token, query: q(workspace.id) });
    expectEnvelope(res, 424, "PLANNER_TOKEN_ERROR");
    expect(res.body.reconnect).toBe("POST /api/integrations/planner/connect");
    const status = await call("GET", "/api/integrations/planner/status", { token: owner.token, query: q(workspace.id) });
    expect(status.body).toMatchObject({ connected: false, needs_reconnect: true, selected_team_id: ENG().id });
    await connectLinear(linear, owner.token, workspace.id);
    const back = await call("GET", "/api/integrations/planner/status", { token: owner.token, query: q(workspace.id) });
    expect(back.body).toMatchObject({ connected: true, needs_reconnect: false, selected_team_id: ENG().id });
  });

  it("disconnect removes the integration and every planner link", async () => {
    const { owner, workspace } = await connected();
    const rec = await recommendation(owner.token, workspace.id);
    expect((await call("POST", "/api/integrations/planner/issues", { token: owner.token, body: { workspace_id: workspace.id, recommendation_id: rec.id } })).status).toBe(200);
    const res = await call("DELETE", "/api/integrations/planner/disconnect", { token: owner.token, query: q(workspace.id) });
    expect(res.body).toEqual({ disconnected: true });
    const links = await call("GET", "/api/integrations/planner/links", { token: owner.token, query: q(workspace.id, { recommendation_id: rec.id }) });
    expect(links.body.links).toEqual([]);
    expect((await call("GET", "/api/integrations/planner/status", { token: owner.token, query: q(workspace.id) })).body.connected).toBe(false);
  });
});
