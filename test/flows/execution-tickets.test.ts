/**
 * Execution tickets end to end on real research (issue #20 step 3), through the public API only: one real interview
 * is uploaded and synthesized, a recommendation generated and accepted, a PRD drafted and split into blocks; GitHub
 * (the stand-in, checked against GitHub's published schema) is connected and a repository selected; tickets are
 * generated, reviewed and pushed; the issues are closed in the tracker; a sync brings the status back and the
 * recommendation is implemented.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { call, newWorkspace } from "../support/api";
import { multipart, realFile, waitFor } from "../support/multipart";
import { GitHubStandIn } from "../support/github-standin";
import { connectGithub, useStandInSettings } from "../support/integrations";

const REPO = "va-mobile/va-mobile-app";
const github = new GitHubStandIn([REPO]);
const INTERVIEW = "va-mobile-app/interview-notes/2023-07-retention-study-participant-10.md";

beforeAll(() => {
  useStandInSettings(github);
  github.listen();
});
afterAll(() => github.close());

describe("research → PRD → tickets → GitHub → implemented", () => {
  it("carries one real interview to closed issues and an implemented recommendation", async () => {
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

    // A recommendation, accepted, and its PRD split into typed blocks.
    const gen = await call("POST", "/api/recommendations/generate", { token, body: { workspace_id: ws, insight_ids: syn.body.insight_ids } });
    expect(gen.status, gen.text).toBe(200);
    const rec = gen.body.recommendations[0];
    expect((await call("PATCH", `/api/recommendations/${rec.id}/status`, { token, body: { status: "accepted" } })).status).toBe(200);
    const prd = await call("POST", "/api/documents/draft", { token, body: { workspace_id: ws, document_type: "prd", recommendation_id: rec.id } });
    expect(prd.status, prd.text).toBe(200);
    const blocks = await call("POST", "/api/blocks/extract", { token, body: { workspace_id: ws, document_id: prd.body.id } });
    expect(blocks.status, blocks.text).toBe(200);

    // GitHub: connect (OAuth against the stand-in), callback, select the repository.
    await connectGithub(github, token, ws);
    expect((await call("POST", "/api/integrations/codehost/repos/select", { token, body: { workspace_id: ws, repos: [REPO] } })).status).toBe(200);

    // Tickets from the blocks: each traced to its block, the evidence quoted verbatim from the interview.
    const out = await call("POST", "/api/execution/generate", { token, body: { workspace_id: ws, document_id: prd.body.id } });
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
    const pushed = await call("POST", "/api/execution/push", { token, body: { workspace_id: ws, document_id: prd.body.id, platform: "codehost" } });
    expect(pushed.status, pushed.text).toBe(200);
    expect(pushed.body.pushed + pushed.body.queued).toBe(tickets.length);
    expect(pushed.body.failed).toBe(0);
    await waitFor(async () => {
      const listed = await call("GET", `/api/execution/${prd.body.id}/tickets`, { token, query: { status: "pushed" } });
      return listed.body.total === tickets.length;
    }, 120_000, 250);
    const issues = github.repos.get(REPO)!.issues;
    expect(issues).toHaveLength(tickets.length);
    expect(issues.some((i) => i.title.endsWith("(reviewed)"))).toBe(true);
    for (const i of issues) expect(i.labels.some((l) => l.startsWith("priority:"))).toBe(true);

    // The developers close every issue; a sync reads it back and the recommendation is implemented.
    for (const i of issues) github.close_(REPO, i.number, "completed");
    const synced = await call("POST", "/api/execution/sync", { token, body: { workspace_id: ws, document_id: prd.body.id } });
    expect(synced.status, synced.text).toBe(200);
    expect(synced.body).toMatchObject({ synced: tickets.length, errors: 0, recommendation_implemented: true });
    const after = await call("GET", `/api/execution/${prd.body.id}/tickets`, { token, query: { status: "synced" } });
    expect(after.body.tickets.map((t: any) => t.synced_status)).toEqual(tickets.map(() => "done"));
    expect((await call("GET", `/api/recommendations/${rec.id}`, { token })).body.status).toBe("implemented");
  }, 240_000);
});
