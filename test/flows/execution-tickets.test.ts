/**
 * Execution tickets end to end on real research (issue #20 step 3), through the public API only: one real interview
 * is uploaded and synthesized, a recommendation generated and accepted, a PRD drafted and split into blocks; GitHub
 * (the stand-in, checked against GitHub's published schema) is connected and a repository selected; tickets are
 * generated, reviewed and pushed; the issues are closed in the tracker; a sync brings the status back and the
 * recommendation is implemented. The same runs for Linear (the planner) and Jira (the ticket tool), each with a
 * recommendation and PRD of its own drawn from the same research (done once: it is the slow part).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { SetupServer } from "msw/node";
import { call, newWorkspace } from "../support/api";
import { multipart, realFile, waitFor } from "../support/multipart";
import { GitHubStandIn } from "../support/github-standin";
import { LinearStandIn, connectLinear, useLinearSettings } from "../support/linear-standin";
import { JiraStandIn, connectJira, useJiraSettings } from "../support/jira-standin";
import { listenTogether } from "../support/standins";
import { connectGithub, useStandInSettings } from "../support/integrations";

const REPO = "va-mobile/va-mobile-app";
const github = new GitHubStandIn([REPO]);
const linear = new LinearStandIn();
const jira = new JiraStandIn(2);
const INTERVIEW = "va-mobile-app/interview-notes/2023-07-retention-study-participant-10.md";

let server: SetupServer;
beforeAll(() => {
  useStandInSettings(github);
  useLinearSettings(linear);
  useJiraSettings(jira);
  server = listenTogether(github, linear, jira);
});
afterAll(() => server.close());

type Research = { token: string; ws: string; file: { name: string }; source: any; syn: any; insights: Map<string, { title: string; quotes: { text: string }[] }> };
let researched: Promise<Research> | undefined;

/** One real interview, uploaded, extracted and synthesized into grounded insights: once for the three trackers. */
function research(): Promise<Research> {
  researched ??= (async () => {
    const { owner, workspace } = await newWorkspace("VA tickets");
    const token = owner.token;
    const ws = workspace.id;

    // Research: one real interview, extracted, synthesized into grounded insights.
    const file = await realFile(INTERVIEW);
    const up = await call("POST", "/api/research/upload", { token, raw: await multipart({ workspace_id: ws, source_type: "interview", title: file.name }, { ...file, type: "text/markdown" }) });
    expect(up.status, up.text).toBe(201);
    const source = await waitFor(async () => {
      const r = await call("GET", `/api/research/sources/${up.body.id}`, { token });
      return r.body.processing_status !== "pending" ? r.body : undefined;
    }, 60_000);
    expect(source.processing_status).toBe("completed");
    const syn = await call("POST", "/api/research/synthesize", { token, body: { workspace_id: ws, source_ids: [source.id] } });
    expect(syn.status, syn.text).toBe(200);
    expect(syn.body.insights.length).toBeGreaterThan(0);
    const insights = new Map<string, { title: string; quotes: { text: string }[] }>(syn.body.insights.map((i: any) => [i.id, i]));
    return { token, ws, file, source, syn, insights };
  })();
  return researched;
}

/** A recommendation drawn from the research, accepted, and its PRD split into typed blocks. */
async function prd({ token, ws, syn }: Research) {
  const gen = await call("POST", "/api/recommendations/generate", { token, body: { workspace_id: ws, insight_ids: syn.body.insight_ids } });
  expect(gen.status, gen.text).toBe(200);
  const rec = gen.body.recommendations[0];
  expect((await call("PATCH", `/api/recommendations/${rec.id}/status`, { token, body: { status: "accepted" } })).status).toBe(200);
  const doc = await call("POST", "/api/documents/draft", { token, body: { workspace_id: ws, document_type: "prd", recommendation_id: rec.id } });
  expect(doc.status, doc.text).toBe(200);
  const blocks = await call("POST", "/api/blocks/extract", { token, body: { workspace_id: ws, document_id: doc.body.id } });
  expect(blocks.status, blocks.text).toBe(200);
  return { rec, prd: doc, blocks };
}

/** Generate the PRD's tickets, review them all (the first edited), push them to `platform`; wait until all are pushed. */
async function generateReviewPush({ token, ws }: Research, documentId: string, platform: string, extra: Record<string, unknown> = {}) {
  const out = await call("POST", "/api/execution/generate", { token, body: { workspace_id: ws, document_id: documentId } });
  expect(out.status, out.text).toBe(200);
  const tickets = out.body.tickets as any[];
  expect(tickets.length).toBeGreaterThan(1);
  for (const [i, t] of tickets.entries()) {
    const res = await call("PATCH", `/api/execution/tickets/${t.id}`, { token, body: i === 0 ? { title: `${t.title} (reviewed)` } : {} });
    expect(res.status, res.text).toBe(200);
  }
  const pushed = await call("POST", "/api/execution/push", { token, body: { workspace_id: ws, document_id: documentId, platform, ...extra } });
  expect(pushed.status, pushed.text).toBe(200);
  expect(pushed.body.pushed + pushed.body.queued).toBe(tickets.length);
  expect(pushed.body.failed).toBe(0);
  await waitFor(async () => {
    const listed = await call("GET", `/api/execution/${documentId}/tickets`, { token, query: { status: "pushed" } });
    return listed.body.total === tickets.length;
  }, 120_000, 250);
  return tickets;
}

/** Sync after the tracker closed every issue: all done, the recommendation implemented. */
async function syncImplemented({ token, ws }: Research, documentId: string, recId: string, count: number) {
  const synced = await call("POST", "/api/execution/sync", { token, body: { workspace_id: ws, document_id: documentId } });
  expect(synced.status, synced.text).toBe(200);
  expect(synced.body).toMatchObject({ synced: count, errors: 0, recommendation_implemented: true });
  const after = await call("GET", `/api/execution/${documentId}/tickets`, { token, query: { status: "synced" } });
  expect(after.body.tickets.map((t: any) => t.synced_status)).toEqual(Array.from({ length: count }, () => "done"));
  expect((await call("GET", `/api/recommendations/${recId}`, { token })).body.status).toBe("implemented");
}

describe("research → PRD → tickets → tracker → implemented", () => {
  it("GitHub: carries one real interview to closed issues and an implemented recommendation", async () => {
    const r = await research();
    const { token, ws, file, source, insights } = r;
    const { rec, prd: doc, blocks } = await prd(r);

    // GitHub: connect (OAuth against the stand-in), callback, select the repository.
    await connectGithub(github, token, ws);
    expect((await call("POST", "/api/integrations/codehost/repos/select", { token, body: { workspace_id: ws, repos: [REPO] } })).status).toBe(200);

    // Tickets from the blocks: each traced to its block, the evidence quoted verbatim from the interview.
    const out = await call("POST", "/api/execution/generate", { token, body: { workspace_id: ws, document_id: doc.body.id } });
    expect(out.status, out.text).toBe(200);
    const tickets = out.body.tickets as any[];
    console.log(`Tickets:\n${tickets.map((t) => `  - [${t.priority} ${t.ticket_type} ${t.estimated_effort}] ${t.title} (${t.block_type}; ${t.evidence_insight_ids.length} insights)`).join("\n")}`);
    expect(tickets.length).toBeGreaterThan(1);
    const blockIds = new Set(blocks.body.blocks.map((b: any) => b.id));
    for (const t of tickets) {
      expect(blockIds.has(t.block_id)).toBe(true);
      expect(Object.keys(t.trace).sort()).toEqual(["acceptance_criteria", "body", "estimated_effort", "labels", "priority", "ticket_type", "title"]);
    }
    const cited = tickets.filter((t) => t.evidence_insight_ids.length);
    expect(cited.length, "some ticket carries evidence").toBeGreaterThan(0);
    for (const t of cited) {
      for (const id of t.evidence_insight_ids) {
        const quote = insights.get(id)?.quotes[0]?.text;
        if (quote) expect(t.body, `${t.title} quotes its insight`).toContain(`“${quote}”`);
      }
      expect(t.body, "the source is named").toContain(`*${file.name}*`);
      expect(source.extracted_text).toContain(insights.get(t.evidence_insight_ids[0])!.quotes[0]!.text);
    }

    // Review every ticket (one edited), push them: one issue each, with the spec's priority label.
    for (const [i, t] of tickets.entries()) {
      const res = await call("PATCH", `/api/execution/tickets/${t.id}`, { token, body: i === 0 ? { title: `${t.title} (reviewed)` } : {} });
      expect(res.status, res.text).toBe(200);
    }
    const pushed = await call("POST", "/api/execution/push", { token, body: { workspace_id: ws, document_id: doc.body.id, platform: "codehost" } });
    expect(pushed.status, pushed.text).toBe(200);
    expect(pushed.body.pushed + pushed.body.queued).toBe(tickets.length);
    expect(pushed.body.failed).toBe(0);
    await waitFor(async () => {
      const listed = await call("GET", `/api/execution/${doc.body.id}/tickets`, { token, query: { status: "pushed" } });
      return listed.body.total === tickets.length;
    }, 120_000, 250);
    const issues = github.repos.get(REPO)!.issues;
    expect(issues).toHaveLength(tickets.length);
    expect(issues.some((i) => i.title.endsWith("(reviewed)"))).toBe(true);
    for (const i of issues) expect(i.labels.some((l) => l.startsWith("priority:"))).toBe(true);

    // The developers close every issue; a sync reads it back and the recommendation is implemented.
    for (const i of issues) github.close_(REPO, i.number, "completed");
    const synced = await call("POST", "/api/execution/sync", { token, body: { workspace_id: ws, document_id: doc.body.id } });
    expect(synced.status, synced.text).toBe(200);
    expect(synced.body).toMatchObject({ synced: tickets.length, errors: 0, recommendation_implemented: true });
    const after = await call("GET", `/api/execution/${doc.body.id}/tickets`, { token, query: { status: "synced" } });
    expect(after.body.tickets.map((t: any) => t.synced_status)).toEqual(tickets.map(() => "done"));
    expect((await call("GET", `/api/recommendations/${rec.id}`, { token })).body.status).toBe("implemented");
  }, 240_000);

  it("Linear: the tickets become issues in the selected team with Linear's priority; moved to a completed state, the recommendation is implemented", async () => {
    const r = await research();
    const { rec, prd: doc } = await prd(r);
    await connectLinear(linear, r.token, r.ws);
    const team = linear.team("ENG");
    const sel = await call("POST", "/api/integrations/planner/teams/select", { token: r.token, body: { workspace_id: r.ws, team_id: team.id, team_name: team.name } });
    expect(sel.status, sel.text).toBe(200);
    const tickets = await generateReviewPush(r, doc.body.id, "planner");
    const issues = [...linear.issues.values()].filter((i) => tickets.some((t) => i.description?.includes(`r2d:ticket:${t.id}`)));
    expect(issues).toHaveLength(tickets.length);
    expect(issues.every((i) => i.teamId === team.id)).toBe(true);
    const priority = { P0: 1, P1: 2, P2: 3, P3: 4 } as Record<string, number>;
    for (const t of tickets) expect(issues.find((i) => i.description?.includes(`r2d:ticket:${t.id}`))!.priority).toBe(t.priority ? priority[t.priority] : 0);

    // The developers finish every issue (a completed state, whatever its name); a sync reads the state types back.
    for (const i of issues) linear.moveTo(i.id, "Done");
    await syncImplemented(r, doc.body.id, rec.id, tickets.length);
  }, 240_000);

  it("Jira: the tickets become issues in the chosen project with Jira's priority names; moved to a done-category status, the recommendation is implemented", async () => {
    const r = await research();
    const { rec, prd: doc } = await prd(r);
    await connectJira(jira, r.token, r.ws);
    const tickets = await generateReviewPush(r, doc.body.id, "tickets", { project_key: "P002" });
    const issues = [...jira.issues.values()].filter((i) => tickets.some((t) => i.labels.includes(`r2d-ticket-${t.id}`)));
    expect(issues).toHaveLength(tickets.length);
    expect(issues.every((i) => i.projectKey === "P002")).toBe(true);
    const priority = { P0: "Highest", P1: "High", P2: "Medium", P3: "Low" } as Record<string, string>;
    for (const t of tickets) expect(issues.find((i) => i.labels.includes(`r2d-ticket-${t.id}`))!.priority).toBe(t.priority ? priority[t.priority] : null);

    // The developers ship every issue: "Shipped" is the team's name for a status in Jira's done category.
    for (const i of issues) jira.transition(i.key, "Shipped");
    await syncImplemented(r, doc.body.id, rec.id, tickets.length);
  }, 240_000);
});
