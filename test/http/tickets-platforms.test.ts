/**
 * Execution tickets pushed to and synced from the planner (Linear) and the ticket tool (Jira Cloud) (issue #20 point 7;
 * spec 02 "Execution tickets" and the priority mapping): one issue per ticket with the platform's priority, a retried
 * push after a lost answer finds the first issue (Linear: the id derived from the ticket; Jira: the marker label,
 * searched by JQL), sync by category only (Linear state `type`, Jira `statusCategory`; renamed states are read by
 * their category), batched reads, and the errors of each. Real `@linear/sdk` and `jira.js` (schema mismatch: throw)
 * over the stand-ins.
 */
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { db } from "../../core/db/service";
import { dynamoClient } from "../../core/db/client";
import * as Tickets from "../../core/ticket";
import { call, newWorkspace } from "../support/api";
import { sourceWith } from "../support/sources";
import { LinearStandIn, connectLinear, useLinearSettings } from "../support/linear-standin";
import { JiraStandIn, connectJira, useJiraSettings } from "../support/jira-standin";
import { listenTogether } from "../support/standins";
import { expireLease } from "../support/integrations";
import type { SetupServer } from "msw/node";
import { localIntegrationsQueue } from "../../local/events";
import { expectEnvelope } from "./_helpers";
import * as OAuth from "../../core/integration/oauth";
import { openTokens, sealTokens } from "../../core/integration/crypto";

const linear = new LinearStandIn();
const jira = new JiraStandIn(3);
const QUOTE = "I lost a two gigabyte upload twice and gave up on the product.";

let server: SetupServer;
beforeAll(() => {
  useLinearSettings(linear);
  useJiraSettings(jira);
  server = listenTogether(linear, jira);
});
afterAll(() => server.close());

interface Setup {
  token: string;
  userId: string;
  workspaceId: string;
  documentId: string;
  recommendationId: string;
}

/** A workspace with a grounded insight, a recommendation, and a PRD with a user story, a solution and a risk. */
async function setup(): Promise<Setup> {
  const { owner, workspace } = await newWorkspace("Tickets elsewhere");
  const token = owner.token;
  const sourceId = await sourceWith(token, workspace.id, ["# Interview", QUOTE], "Interview with Ana.md");
  const insight = await call("POST", "/api/insights", {
    token,
    body: { workspace_id: workspace.id, insight_type: "pain_point", title: "Large uploads fail", description: "Uploads over 1 GB fail.", severity: "high", source_ids: [sourceId], quotes: [{ text: QUOTE, source_id: sourceId, speaker: "Ana" }] },
  });
  expect(insight.status, insight.text).toBe(201);
  const rec = await call("POST", "/api/recommendations", { token, body: { workspace_id: workspace.id, title: "Resumable uploads", description: "Let uploads resume.", addresses_insight_ids: [insight.body.id] } });
  const doc = await call("POST", "/api/documents", {
    token,
    body: { workspace_id: workspace.id, document_type: "prd", title: "Resumable uploads", content: "# Resumable uploads\n", related_recommendation_id: rec.body.id, related_insight_ids: [insight.body.id] },
  });
  expect(doc.status, doc.text).toBe(201);
  const block = async (block_type: string, title: string, content: Record<string, unknown>) => {
    const res = await call("POST", `/api/documents/${doc.body.id}/blocks`, { token, body: { block_type, title, content } });
    expect(res.status, res.text).toBe(201);
  };
  await block("user_story", "User story", { as_a: "analyst", i_want: "to resume an interrupted upload [I1]", so_that: "I do not start over", acceptance_criteria: ["Resumes from the last chunk"], priority: "must" });
  await block("solution", "Chunked uploads", { summary: "Upload in chunks and keep the offset [I1].", details: ["Chunk endpoint"] });
  await block("risk", "Risk", { risk: "Partial uploads fill the bucket.", likelihood: "medium", impact: "low", mitigation: "Expire partial uploads after a day" });
  return { token, userId: owner.id, workspaceId: workspace.id, documentId: doc.body.id, recommendationId: rec.body.id };
}

/** Generate and review every ticket: story P1 (labels edited to name a Linear label), solution P1, risk P3. */
async function reviewed(s: Setup) {
  const gen = await call("POST", "/api/execution/generate", { token: s.token, body: { workspace_id: s.workspaceId, document_id: s.documentId } });
  expect(gen.status, gen.text).toBe(200);
  const tickets = gen.body.tickets as any[];
  for (const t of tickets) {
    const res = await call("PATCH", `/api/execution/tickets/${t.id}`, { token: s.token, body: t.block_type === "user_story" ? { labels: ["feature", "pain point"] } : {} });
    expect(res.status, res.text).toBe(200);
  }
  const by = (type: string) => tickets.find((t) => t.block_type === type)!;
  return { tickets, story: by("user_story"), solution: by("solution"), risk: by("risk") };
}

const push = (s: Setup, extra: Record<string, unknown>) => call("POST", "/api/execution/push", { token: s.token, body: { workspace_id: s.workspaceId, document_id: s.documentId, ...extra } });
const sync = (s: Setup) => call("POST", "/api/execution/sync", { token: s.token, body: { workspace_id: s.workspaceId, document_id: s.documentId } });
const listed = async (s: Setup) => (await call("GET", `/api/execution/${s.documentId}/tickets`, { token: s.token })).body.tickets as any[];
/** Run `fn` with PROVIDER_REQUEST_TIMEOUT_SECONDS set to `seconds`, then put the setting back. */
async function withRequestTimeout<T>(seconds: string, fn: () => Promise<T>): Promise<T> {
  const before = process.env.PROVIDER_REQUEST_TIMEOUT_SECONDS;
  process.env.PROVIDER_REQUEST_TIMEOUT_SECONDS = seconds;
  try {
    return await fn();
  } finally {
    if (before === undefined) delete process.env.PROVIDER_REQUEST_TIMEOUT_SECONDS;
    else process.env.PROVIDER_REQUEST_TIMEOUT_SECONDS = before;
  }
}
/** A retry at once after a create that got no answer: refused while the kept lease holds (nothing is sent). */
const expectHeld = async (s: Setup, id: string, extra: Record<string, unknown>) => {
  const res = await push(s, { ticket_ids: [id], ...extra });
  expect(res.status, res.text).toBe(200);
  expect(res.body).toMatchObject({ pushed: 0, failed: 1 });
  expect(res.body.results[0]).toMatchObject({ ticket_id: id, status: "push_failed", error: expect.stringMatching(/^another push holds this ticket \(until /) });
};
const recStatus = async (s: Setup) => (await call("GET", `/api/recommendations/${s.recommendationId}`, { token: s.token })).body.status;

describe("planner (Linear)", () => {
  async function connected(opts: { project?: boolean } = {}) {
    const s = await setup();
    await connectLinear(linear, s.token, s.workspaceId);
    const team = linear.team("ENG");
    const sel = await call("POST", "/api/integrations/planner/teams/select", { token: s.token, body: { workspace_id: s.workspaceId, team_id: team.id, team_name: team.name, ...(opts.project ? { project_id: team.projects[0]!.id } : {}) } });
    expect(sel.status, sel.text).toBe(200);
    return s;
  }

  it("pushes one issue per ticket into the selected team and project, with Linear's priority and the team's labels; sync reads state types", async () => {
    const s = await connected({ project: true });
    const { story, solution, risk } = await reviewed(s);
    const res = await push(s, { platform: "planner" });
    expect(res.status, res.text).toBe(200);
    expect(res.body).toMatchObject({ pushed: 3, failed: 0, queued: 0 });
    const team = linear.team("ENG");
    const issueOf = (t: any) => [...linear.issues.values()].find((i) => i.title === t.title && i.teamId === team.id && i.description?.includes(`r2d:ticket:${t.id}`))!;
    // Spec 02 priority mapping: P1 → 2 (high), P3 → 4 (low).
    expect(issueOf(story)).toMatchObject({ priority: 2, projectId: team.projects[0]!.id, labelIds: [team.labels.find((l) => l.name === "Feature")!.id] });
    expect(issueOf(story).description).toContain(QUOTE);
    expect(issueOf(solution).priority).toBe(2);
    expect(issueOf(risk)).toMatchObject({ priority: 4, labelIds: [] });
    const stored = (await listed(s)).find((t) => t.id === story.id);
    expect(stored).toMatchObject({ status: "pushed", platform: "planner", external_id: issueOf(story).id, external_url: expect.stringMatching(/^https:\/\/linear\.test\/acme\/issue\/ENG-\d+$/) });

    // Sync: all three read in one batched GraphQL query; the default state (Backlog) is todo.
    const mark = linear.requests.length;
    const first = await sync(s);
    expect(first.body).toMatchObject({ synced: 3, unchanged: 0, errors: 0, recommendation_implemented: false });
    expect(linear.requests.slice(mark).map((r) => r.operation)).toEqual(["PlannerIssues"]);
    // Categories come from the state's type: "In Review" is a started state (in progress), "Canceled" cancelled.
    linear.moveTo(issueOf(story).id, "In Review");
    linear.moveTo(issueOf(risk).id, "Canceled");
    const second = await sync(s);
    expect(second.body).toMatchObject({ synced: 2, unchanged: 1, recommendation_implemented: false });
    const cats = async () => Object.fromEntries((await listed(s)).map((t) => [t.block_type, t.synced_status]));
    expect(await cats()).toEqual({ user_story: "in_progress", solution: "todo", risk: "cancelled" });
    // A team that renamed its completed state: still done by its type.
    const done = team.states.find((st) => st.type === "completed")!;
    done.name = "Shipped";
    linear.moveTo(issueOf(story).id, "Shipped");
    linear.moveTo(issueOf(solution).id, "Shipped");
    // Linear archives closed issues (after a while, or a person does): a read by id still sees them.
    linear.archive(issueOf(story).id);
    linear.archive(issueOf(solution).id);
    const last = await sync(s);
    expect(last.body).toMatchObject({ synced: 2, recommendation_implemented: true });
    expect(await cats()).toEqual({ user_story: "done", solution: "done", risk: "cancelled" });
    expect(await recStatus(s)).toBe("implemented");
    // One-way: sync sent only queries.
    expect(linear.requests.slice(mark).every((r) => r.operation === "PlannerIssues")).toBe(true);
  });

  it("a queued continuation whose team is no longer the selected one fails its tickets with the reason and sends nothing", async () => {
    const s = await connected();
    const { story } = await reviewed(s);
    const eng = linear.team("ENG");
    const des = linear.team("DES");
    expect((await call("POST", "/api/integrations/planner/teams/select", { token: s.token, body: { workspace_id: s.workspaceId, team_id: des.id, team_name: des.name } })).status).toBe(200);
    const mark = linear.requests.length;
    const res = await Tickets.push(s.userId, { workspace_id: s.workspaceId, document_id: s.documentId, platform: "planner", ticket_ids: [story.id] }, eng.id);
    expect(res.results[0]).toMatchObject({ ticket_id: story.id, status: "push_failed", error: expect.stringMatching(/Linear team or project selected for this workspace changed/) });
    expect(linear.requests.length).toBe(mark);
  });

  it("a push retried after its answer was lost finds the issue by the id derived from the ticket: one issue", async () => {
    const s = await connected();
    const { story } = await reviewed(s);
    linear.fail({ operation: "PlannerIssueCreate", kind: "lost" });
    const first = await push(s, { platform: "planner", ticket_ids: [story.id] });
    expect(first.body).toMatchObject({ pushed: 0, failed: 1 });
    expect(first.body.results[0]).toMatchObject({ status: "push_failed", error: expect.stringMatching(/outcome unknown/) });
    const mine = () => [...linear.issues.values()].filter((i) => i.description?.includes(`r2d:ticket:${story.id}`));
    expect(mine()).toHaveLength(1); // Linear did create it

    // No answer: the create may still be under way at Linear, so the ticket stays held and a retry at once is refused.
    const mark = linear.requests.length;
    await expectHeld(s, story.id, { platform: "planner" });
    expect(linear.requests.length).toBe(mark); // nothing sent
    await expireLease(s, story.id);
    const retry = await push(s, { platform: "planner", ticket_ids: [story.id] });
    expect(retry.body).toMatchObject({ pushed: 1, failed: 0 });
    expect(mine()).toHaveLength(1);
    expect(retry.body.results[0].external_id).toBe(mine()[0]!.id);
    expect(linear.count("PlannerIssueCreate", mark)).toBe(0);
  });

  it("a create Linear holds past PROVIDER_REQUEST_TIMEOUT_SECONDS is aborted: push_failed 'outcome unknown' within about the timeout; the retry finds the issue once Linear stores it", async () => {
    const s = await connected();
    const { story } = await reviewed(s);
    const mine = () => [...linear.issues.values()].filter((i) => i.description?.includes(`r2d:ticket:${story.id}`));
    await withRequestTimeout("0.4", async () => {
      linear.fail({ operation: "PlannerIssueCreate", kind: "held", holdMs: 5000 });
      const started = Date.now();
      const first = await push(s, { platform: "planner", ticket_ids: [story.id] });
      const took = Date.now() - started;
      expect(first.body, `${took} ms: ${first.text}`).toMatchObject({ pushed: 0, failed: 1 });
      expect(first.body.results[0]).toMatchObject({ status: "push_failed", error: expect.stringMatching(/^outcome unknown .*Linear did not answer within 400 ms/) });
      expect(took, `${took} ms: ${first.text}`).toBeLessThan(4000); // not the stand-in's 5 s
      expect(took).toBeLessThan(Tickets.PUSH_LEASE_MS);
      expect(mine()).toHaveLength(0); // still held
      // Retried at once, while Linear still holds the create: refused, so nothing searches before the issue lands.
      await expectHeld(s, story.id, { platform: "planner" });
      await expect.poll(() => mine().length, { timeout: 10_000, interval: 100 }).toBe(1);
    });
    await expireLease(s, story.id);
    const mark = linear.requests.length;
    const retry = await push(s, { platform: "planner", ticket_ids: [story.id] });
    expect(retry.body).toMatchObject({ pushed: 1, failed: 0 });
    expect(mine()).toHaveLength(1);
    expect(retry.body.results[0].external_id).toBe(mine()[0]!.id);
    expect(linear.count("PlannerIssueCreate", mark)).toBe(0);
  });

  it("a sync whose connection to Linear drops answers the ticket's error (unknown), as GitHub's and Jira's do, not a 500; the others and the next sync read on", async () => {
    const s = await connected();
    await reviewed(s);
    expect((await push(s, { platform: "planner" })).body).toMatchObject({ pushed: 3 });
    linear.fail({ operation: "PlannerIssues", kind: "lost" });
    const res = await sync(s);
    expect(res.status, res.text).toBe(200);
    // The batched read that lost its answer fails the ticket it was read for; the next ticket reads the rest again.
    expect(res.body).toMatchObject({ synced: 2, errors: 1, queued: 0 });
    const failed = res.body.results.find((r: { error: string | null }) => r.error);
    expect(failed).toMatchObject({ status: "pushed", changed: false, error: expect.stringMatching(/^unknown: no answer \(fetch failed/) });
    expect((await listed(s)).find((t) => t.id === failed.ticket_id).status).toBe("pushed");
    expect((await sync(s)).body).toMatchObject({ synced: 1, errors: 0 });
    expect((await listed(s)).map((t) => t.status)).toEqual(["synced", "synced", "synced"]);
  });

  it("errors: no team selected 422 NO_TEAM_SELECTED; a rate-limited sync queues the rest", async () => {
    const s = await setup();
    await reviewed(s);
    const created = linear.count("PlannerIssueCreate");
    expectEnvelope(await push(s, { platform: "planner" }), 404, "NO_ACTIVE_INTEGRATION");
    await connectLinear(linear, s.token, s.workspaceId);
    expectEnvelope(await push(s, { platform: "planner" }), 422, "NO_TEAM_SELECTED");
    expect(linear.count("PlannerIssueCreate")).toBe(created);

    const team = linear.team("DES");
    expect((await call("POST", "/api/integrations/planner/teams/select", { token: s.token, body: { workspace_id: s.workspaceId, team_id: team.id, team_name: team.name } })).status).toBe(200);
    expect((await push(s, { platform: "planner" })).body).toMatchObject({ pushed: 3 });
    // Linear's usual rate-limit answer (400 RATELIMITED): the sync answers at once with the rest queued.
    linear.fail({ operation: "PlannerIssues", kind: "ratelimited", headers: { "retry-after": "1" } });
    const res = await sync(s);
    expect(res.body).toMatchObject({ queued: 3, synced: 0 });
    await localIntegrationsQueue().idle();
    expect((await listed(s)).map((t) => [t.status, t.synced_status])).toEqual([["synced", "todo"], ["synced", "todo"], ["synced", "todo"]]);
  });
});

describe("ticket tool (Jira)", () => {
  async function connected() {
    const s = await setup();
    await connectJira(jira, s.token, s.workspaceId);
    return s;
  }
  const issuesFor = (ids: string[]) => [...jira.issues.values()].filter((i) => ids.some((id) => i.labels.includes(`r2d-ticket-${id}`)));

  it("pushes one issue per ticket into the named project: Jira's priority names, the marker label, the body as ADF with the quote verbatim; sync reads statusCategory", async () => {
    const s = await connected();
    const { tickets, story, risk } = await reviewed(s);
    const res = await push(s, { platform: "tickets", project_key: "P001" });
    expect(res.status, res.text).toBe(200);
    expect(res.body).toMatchObject({ pushed: 3, failed: 0, queued: 0 });
    const issues = issuesFor(tickets.map((t) => t.id));
    expect(issues).toHaveLength(3);
    const of = (t: any) => issues.find((i) => i.labels.includes(`r2d-ticket-${t.id}`))!;
    // P1 → High, P3 → Low; the ticket's labels without spaces; a story is a Story, a risk mitigation a Task.
    expect(of(story)).toMatchObject({ projectKey: "P001", priority: "High", summary: story.title, issueTypeId: "10001", labels: ["feature", "pain-point", `r2d-ticket-${story.id}`] });
    expect(of(risk)).toMatchObject({ priority: "Low", issueTypeId: "10002" });
    const adf = JSON.stringify(of(story).description);
    expect(adf).toContain(JSON.stringify(`“${QUOTE}” — Ana, *Interview with Ana.md*`).slice(1, -1));
    expect(adf).not.toContain("<!--");
    const stored = (await listed(s)).find((t) => t.id === story.id);
    expect(stored).toMatchObject({ status: "pushed", platform: "tickets", external_id: of(story).id, external_url: `${jira.siteUrl}/browse/${of(story).key}` });

    const mark = jira.requests.length;
    const first = await sync(s);
    expect(first.body).toMatchObject({ synced: 3, errors: 0, recommendation_implemented: false });
    // One JQL search for the three (Jira counts requests too), and nothing written.
    expect(jira.requests.slice(mark).map((r) => `${r.method} ${r.path.replace(/\?.*/, "")}`)).toEqual([`POST /ex/jira/${jira.cloudId}/rest/api/3/search/jql`]);
    expect((await listed(s)).map((t) => t.synced_status)).toEqual(["todo", "todo", "todo"]);
    // Statuses renamed by the team are read by category: "Shipped" and "Won't Do" are both done (Jira has no cancelled).
    jira.transition(of(story).key, "In Progress");
    expect((await sync(s)).body).toMatchObject({ synced: 1, unchanged: 2, recommendation_implemented: false });
    expect((await listed(s)).find((t) => t.id === story.id).synced_status).toBe("in_progress");
    for (const t of tickets) jira.transition(of(t).key, t.id === risk.id ? "Won't Do" : "Shipped");
    const done = await sync(s);
    expect(done.body).toMatchObject({ synced: 3, recommendation_implemented: true });
    expect((await listed(s)).map((t) => t.synced_status)).toEqual(["done", "done", "done"]);
    expect(await recStatus(s)).toBe("implemented");
    expect(jira.creations(mark)).toBe(0);
  });

  it("a ticket is held to the site it was pushed to: after a reconnect to another site (same issue ids), sync and a retried push refuse it instead of reading or creating there; a queued continuation fails its tickets", async () => {
    const s = await connected();
    const { story, solution, risk } = await reviewed(s);
    const first = await push(s, { platform: "tickets", project_key: "P001", ticket_ids: [story.id] });
    expect(first.body).toMatchObject({ pushed: 1, failed: 0 });
    const key = (id: string) => ({ workspace_id: s.workspaceId, document_id: s.documentId, id });
    expect((await db().entities.executionTicket.get(key(story.id)).go()).data).toMatchObject({ destination: `${jira.cloudId}/P001` });
    // The risk's create got no answer: its issue may exist on this site.
    jira.fail({ match: /^POST \/ex\/jira\/[^/]+\/rest\/api\/3\/issue$/, status: 0, lost: true });
    expect((await push(s, { platform: "tickets", project_key: "P001", ticket_ids: [risk.id] })).body.results[0]).toMatchObject({ status: "push_failed", error: expect.stringMatching(/outcome unknown/) });
    await expireLease(s, risk.id);
    // A ticket pushed before destinations named the site: the key alone.
    const legacy = await push(s, { platform: "tickets", project_key: "P001", ticket_ids: [solution.id] });
    expect(legacy.body).toMatchObject({ pushed: 1 });
    await db().entities.executionTicket.patch(key(solution.id)).set({ destination: "P001" }).go();

    // The workspace reconnects to another site, whose issues carry the same ids (every site numbers from 10000).
    const siteA = jira.cloudId;
    const siteB = "55667788-a1b2-4c3d-8e9f-000000000002";
    jira.cloudId = siteB;
    try {
      await db().entities.integration.patch({ workspace_id: s.workspaceId, kind: "tickets" })
        .set({ cloud_id: siteB, account: { site_name: "other", site_url: "https://other.atlassian.net", site_avatar_url: null } }).go();
      for (const i of issuesFor([story.id, solution.id])) jira.transition(i.key, "Shipped");
      const mark = jira.requests.length;
      const res = await sync(s);
      expect(res.status, res.text).toBe(200);
      const by = new Map((res.body.results as any[]).map((r) => [r.ticket_id, r]));
      expect(by.get(story.id)).toMatchObject({ changed: false, error: expect.stringMatching(/pushed to another Jira site/) });
      expect(by.get(solution.id)).toMatchObject({ changed: false, error: expect.stringMatching(/pushed to another Jira site \(acme\.atlassian\.net\)/) });
      expect(res.body).toMatchObject({ synced: 0, recommendation_implemented: false });
      // The ticket naming its site sent nothing; the legacy one was read once (its address shows the site) and not recorded.
      expect(jira.requests.length - mark).toBe(1);
      expect((await listed(s)).filter((t) => t.id !== risk.id).map((t) => t.synced_status)).toEqual([null, null]);
      expect(await recStatus(s)).not.toBe("implemented");

      // The risk's issue may exist on site A: a push to P001 on site B refuses instead of creating a second one.
      const retry = await push(s, { platform: "tickets", project_key: "P001", ticket_ids: [risk.id] });
      expect(retry.body.results[0]).toMatchObject({ status: "push_failed", error: expect.stringMatching(/may have created an issue there/) });
      expect(jira.creations(mark)).toBe(0);

      // A continuation queued while site A was connected: its tickets fail with the reason, nothing is sent.
      await db().entities.executionTicket.patch(key(risk.id)).set({ status: "reviewed" }).remove(["may_hold_issue_at", "push_started_at"]).go();
      const cont = await Tickets.push(s.userId, { workspace_id: s.workspaceId, document_id: s.documentId, platform: "tickets", ticket_ids: [risk.id] }, `${siteA}/P001`);
      expect(cont.results[0]).toMatchObject({ status: "push_failed", error: expect.stringMatching(/another Jira site/) });
      expect(jira.requests.length - mark).toBe(1);
    } finally {
      jira.cloudId = siteA;
    }
  });

  it("a push retried after its answer was lost finds the issue by its marker label: one issue", async () => {
    const s = await connected();
    const { story } = await reviewed(s);
    jira.fail({ match: /^POST \/ex\/jira\/[^/]+\/rest\/api\/3\/issue$/, status: 0, lost: true });
    const first = await push(s, { platform: "tickets", project_key: "P002", ticket_ids: [story.id] });
    expect(first.body).toMatchObject({ pushed: 0, failed: 1 });
    expect(first.body.results[0]).toMatchObject({ status: "push_failed", error: expect.stringMatching(/outcome unknown/) });
    expect(issuesFor([story.id])).toHaveLength(1);

    // No answer: the create may still be under way at Jira, so the ticket stays held and a retry at once is refused.
    const mark = jira.requests.length;
    await expectHeld(s, story.id, { platform: "tickets", project_key: "P002" });
    expect(jira.requests.length).toBe(mark); // nothing sent
    await expireLease(s, story.id);
    const retry = await push(s, { platform: "tickets", project_key: "P002", ticket_ids: [story.id] });
    expect(retry.body).toMatchObject({ pushed: 1, failed: 0 });
    expect(issuesFor([story.id])).toHaveLength(1);
    expect(retry.body.results[0]).toMatchObject({ external_id: issuesFor([story.id])[0]!.id, external_url: `${jira.siteUrl}/browse/${issuesFor([story.id])[0]!.key}` });
    expect(jira.creations(mark)).toBe(0);
  });

  it("a create Jira holds past PROVIDER_REQUEST_TIMEOUT_SECONDS is ended: push_failed 'outcome unknown' within about the timeout; the retry finds the issue by its label once Jira stores it", async () => {
    const s = await connected();
    const { story } = await reviewed(s);
    await withRequestTimeout("0.4", async () => {
      jira.fail({ match: /^POST \/ex\/jira\/[^/]+\/rest\/api\/3\/issue$/, status: 0, holdMs: 5000 });
      const started = Date.now();
      const first = await push(s, { platform: "tickets", project_key: "P002", ticket_ids: [story.id] });
      const took = Date.now() - started;
      expect(first.body, `${took} ms: ${first.text}`).toMatchObject({ pushed: 0, failed: 1 });
      expect(first.body.results[0]).toMatchObject({ status: "push_failed", error: expect.stringMatching(/^outcome unknown .*Jira did not answer within 400 ms/) });
      expect(took, `${took} ms: ${first.text}`).toBeLessThan(4000); // not the stand-in's 5 s
      expect(took).toBeLessThan(Tickets.PUSH_LEASE_MS);
      expect(issuesFor([story.id])).toHaveLength(0); // still held
      // Retried at once, while Jira still holds the create: refused, so nothing searches before the issue lands.
      await expectHeld(s, story.id, { platform: "tickets", project_key: "P002" });
      await expect.poll(() => issuesFor([story.id]).length, { timeout: 10_000, interval: 100 }).toBe(1);
    });
    await expireLease(s, story.id);
    const mark = jira.requests.length;
    const retry = await push(s, { platform: "tickets", project_key: "P002", ticket_ids: [story.id] });
    expect(retry.body).toMatchObject({ pushed: 1, failed: 0 });
    expect(issuesFor([story.id])).toHaveLength(1);
    expect(retry.body.results[0]).toMatchObject({ external_id: issuesFor([story.id])[0]!.id });
    expect(jira.creations(mark)).toBe(0);
  });

  it("a create Jira wrote but answered with a gateway timeout is sent once (the create client never retries), and the push retried later finds that issue: one issue", async () => {
    const s = await connected();
    const { story } = await reviewed(s);
    const mark = jira.requests.length;
    const creates = () => jira.requests.slice(mark).filter((r) => r.method === "POST" && /\/rest\/api\/3\/issue$/.test(r.path));
    // Jira creates the issue, then Atlassian's edge answers 504: a transient status jira.js retries, whatever the
    // method, on a client that retries at all. A second POST here would be a second issue.
    jira.fail({ match: /^POST \/ex\/jira\/[^/]+\/rest\/api\/3\/issue$/, status: 504, lost: true });
    const first = await push(s, { platform: "tickets", project_key: "P002", ticket_ids: [story.id] });
    expect(first.body).toMatchObject({ pushed: 0, failed: 1 });
    expect(first.body.results[0]).toMatchObject({ status: "push_failed", error: expect.stringMatching(/outcome unknown/) });
    // A gateway's 5xx says the edge stopped waiting, not that Jira stopped (here it made the issue): the lease stays.
    expect(first.body.results[0].error).toMatch(/held until/);
    expect(creates()).toHaveLength(1);
    expect(issuesFor([story.id])).toHaveLength(1);
    const atOnce = await push(s, { platform: "tickets", project_key: "P002", ticket_ids: [story.id] });
    expect(atOnce.body).toMatchObject({ pushed: 0, failed: 1 });
    expect(atOnce.body.results[0].error).toMatch(/^another push holds this ticket \(until /);
    expect(creates()).toHaveLength(1);
    await expireLease(s, story.id);

    // Pushed elsewhere (another project, or platform) it would leave that issue behind as a duplicate: refused.
    const elsewhere = await push(s, { platform: "tickets", project_key: "P001", ticket_ids: [story.id] });
    expect(elsewhere.body).toMatchObject({ pushed: 0, failed: 1 });
    expect(elsewhere.body.results[0]).toMatchObject({ status: "push_failed", error: expect.stringMatching(/may have created an issue there.*push it there again/) });
    expect(creates()).toHaveLength(1);

    // The retried push searches for the marker label first and records the issue Jira made: no second create.
    const retry = await push(s, { platform: "tickets", project_key: "P002", ticket_ids: [story.id] });
    expect(retry.body).toMatchObject({ pushed: 1, failed: 0 });
    const [issue] = issuesFor([story.id]);
    expect(issuesFor([story.id])).toHaveLength(1);
    expect(retry.body.results[0]).toMatchObject({ status: "pushed", external_id: issue!.id, external_url: `${jira.siteUrl}/browse/${issue!.key}` });
    expect(creates()).toHaveLength(1);
    expect(jira.requests.slice(mark).some((r) => r.method === "POST" && r.path.endsWith("/search/jql"))).toBe(true);
  });

  it("a push whose worker died after Jira created the issue (before it was recorded) is refused elsewhere once its lease ran out, and finds the issue when pushed there again", async () => {
    const s = await connected();
    const { story } = await reviewed(s);
    const name = "dieBeforePushedIsRecorded";
    let dead = false;
    // The worker dies at its write of `pushed`: every later call of it fails too.
    dynamoClient().middlewareStack.add(
      (next, context) => async (args) => {
        const text = JSON.stringify(args.input);
        if (!dead && /^Update/.test(context.commandName ?? "") && text.includes(story.id) && text.includes('"pushed"')) dead = true;
        if (dead) throw new Error("the worker died");
        return next(args);
      },
      { step: "initialize", name },
    );
    try {
      expect((await push(s, { platform: "tickets", project_key: "P002", ticket_ids: [story.id] })).status).toBe(500);
    } finally {
      dynamoClient().middlewareStack.remove(name);
    }
    expect(dead).toBe(true);
    expect(issuesFor([story.id])).toHaveLength(1);
    const key = { workspace_id: s.workspaceId, document_id: s.documentId, id: story.id };
    const left = (await db().entities.executionTicket.get(key).go({ consistent: true })).data!;
    expect(left).toMatchObject({ status: "reviewed", platform: "tickets", destination: `${jira.cloudId}/P002` });
    // Its lease runs out (time passes).
    await db().entities.executionTicket.patch(key).set({ push_claim_until: Date.now() - 1 }).go();

    const mark = jira.requests.length;
    const elsewhere = await push(s, { platform: "tickets", project_key: "P001", ticket_ids: [story.id] });
    expect(elsewhere.body.results[0]).toMatchObject({ status: "reviewed", error: expect.stringMatching(/may have created an issue there.*push it there again/) });
    expect(issuesFor([story.id])).toHaveLength(1);
    const again = await push(s, { platform: "tickets", project_key: "P002", ticket_ids: [story.id] });
    expect(again.body).toMatchObject({ pushed: 1, failed: 0 });
    const [issue] = issuesFor([story.id]);
    expect(issuesFor([story.id])).toHaveLength(1);
    expect(again.body.results[0]).toMatchObject({ status: "pushed", external_id: issue!.id });
    expect(jira.creations(mark)).toBe(0);
  });

  it("sync reads whole pages of Jira's search: 300 linked issues are three searches of 100 ids", async () => {
    const s = await connected();
    // 300 tickets already pushed (as the benchmark seeds them: pushing 300 would only test push again).
    const items = Array.from({ length: 300 }, (_, i) => {
      const issue = jira.addIssue("P001", `Seeded ${i + 1}`);
      return {
        id: randomUUID(), workspace_id: s.workspaceId, document_id: s.documentId, block_id: randomUUID(), block_type: "risk", title: `Seeded ${i + 1}`,
        body: "Seeded.", ticket_type: "task", estimated_effort: "S", status: "pushed" as const, platform: "tickets" as const, destination: "P001",
        external_id: issue.id, external_url: `${jira.siteUrl}/browse/${issue.key}`, created_by: s.userId,
      };
    });
    for (let i = 0; i < items.length; i += 25) await db().entities.executionTicket.put(items.slice(i, i + 25)).go();
    const mark = jira.idSearches.length;
    // Straight to the operation with a budget no machine exceeds, so the count cannot depend on when a request's
    // budget runs out (the HTTP sync answers the same; the tests above go through it).
    const res = await Tickets.sync(s.userId, { workspace_id: s.workspaceId, document_id: s.documentId }, undefined, { budgetMs: 600_000 });
    expect(res).toMatchObject({ synced: 300, errors: 0, queued: 0 });
    // A chunk that is not a whole number of pages (250 was) spends a short search in the middle: 100, 100, 50, 50.
    expect(jira.idSearches.slice(mark)).toEqual([100, 100, 100]);
  });

  it("errors: no integration 404; no project_key 422; an unknown project is push_failed with Jira's reason; a revoked grant 424", async () => {
    const s = await setup();
    const { story } = await reviewed(s);
    expectEnvelope(await push(s, { platform: "tickets", project_key: "P001" }), 404, "NO_ACTIVE_INTEGRATION");
    await connectJira(jira, s.token, s.workspaceId);
    expectEnvelope(await push(s, { platform: "tickets" }), 422, "VALIDATION_ERROR");
    expectEnvelope(await push(s, { platform: "tickets", project_key: "not a key" }), 422, "VALIDATION_ERROR");
    const unknown = await push(s, { platform: "tickets", project_key: "NOPE", ticket_ids: [story.id] });
    expect(unknown.body).toMatchObject({ pushed: 0, failed: 1 });
    expect(unknown.body.results[0]).toMatchObject({ status: "push_failed" });
    expect(issuesFor([story.id])).toHaveLength(0);
    jira.revokeAll();
    expectEnvelope(await push(s, { platform: "tickets", project_key: "P001", ticket_ids: [story.id] }), 424, "TICKETS_TOKEN_ERROR");
  });
});

describe("a document pushed to two platforms", () => {
  /** A reviewed document whose story went to Linear (team ENG) and whose solution and risk went to Jira (P001). */
  async function pushedToBoth() {
    const s = await setup();
    await connectLinear(linear, s.token, s.workspaceId);
    const team = linear.team("ENG");
    expect((await call("POST", "/api/integrations/planner/teams/select", { token: s.token, body: { workspace_id: s.workspaceId, team_id: team.id, team_name: team.name } })).status).toBe(200);
    await connectJira(jira, s.token, s.workspaceId);
    const { story, solution, risk } = await reviewed(s);
    expect((await push(s, { platform: "planner", ticket_ids: [story.id] })).body).toMatchObject({ pushed: 1 });
    expect((await push(s, { platform: "tickets", project_key: "P001", ticket_ids: [solution.id, risk.id] })).body).toMatchObject({ pushed: 2 });
    return { s, story, solution, risk };
  }

  it("syncs the platform it can read when the other's grant was revoked: those tickets name the reconnect error (it was a 424 for all)", async () => {
    const { s, story, solution, risk } = await pushedToBoth();
    linear.revokeAll();
    const res = await sync(s);
    expect(res.status, res.text).toBe(200);
    const by = new Map((res.body.results as { ticket_id: string; error: string | null }[]).map((r) => [r.ticket_id, r]));
    expect(by.get(story.id)!.error).toMatch(/^PLANNER_TOKEN_ERROR: /);
    expect(by.get(solution.id)!.error).toBeNull();
    expect(by.get(risk.id)!.error).toBeNull();
    expect(res.body.errors).toBe(1);
    // Read from Jira, as a sync records it.
    expect((await listed(s)).filter((t) => t.platform === "tickets").map((t) => t.status)).toEqual(["synced", "synced"]);
  });

  it("syncs the platform it can read when the other's token could not be refreshed just now: those tickets name the 503 (it was a 503 for all)", async () => {
    const { s, story, solution, risk } = await pushedToBoth();
    // Jira's token has expired and its token endpoint fails (a 500): the refresh is transient, a retryable 503.
    const ctx = { workspace_id: s.workspaceId, kind: "tickets" as const };
    const row = (await OAuth.findIntegration(s.workspaceId, "tickets"))!;
    const sealed = await sealTokens({ ...(await openTokens(row.token_ciphertext!, ctx)), expires_at: Date.now() - 1000 }, ctx);
    await db().entities.integration.patch({ workspace_id: s.workspaceId, kind: "tickets" }).set({ token_ciphertext: sealed }).go();
    jira.onRefresh = () => Promise.reject(new Error("stand-in Jira: token endpoint down"));
    let res;
    try {
      res = await sync(s);
    } finally {
      jira.onRefresh = undefined;
    }
    expect(res.status, res.text).toBe(200);
    const by = new Map((res.body.results as { ticket_id: string; error: string | null }[]).map((r) => [r.ticket_id, r]));
    expect(by.get(story.id)!.error).toBeNull();
    expect(by.get(solution.id)!.error).toMatch(/^SERVICE_UNAVAILABLE: /);
    expect(by.get(risk.id)!.error).toMatch(/^SERVICE_UNAVAILABLE: /);
    expect(res.body.errors).toBe(2);
    expect((await listed(s)).find((t) => t.id === story.id).status).toBe("synced");
  });
});
