/**
 * Execution tickets (issue #20 step 3; spec 02 "Execution tickets"): generate (fields traced to blocks, evidence with
 * verbatim quotes and source names), list with the status filter, review, push to GitHub (the spec's priority label,
 * one issue per ticket, 404 NO_ACTIVE_INTEGRATION, push_failed, a retry after a lost answer finds the first issue by
 * its marker, a rate limit queues the rest), sync by category (one-way), and the plan gate per platform. Real
 * Octokit over the stand-in GitHub whose bodies are checked against GitHub's published schema.
 */
import { randomUUID } from "node:crypto";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { call, newUser, newWorkspace } from "../support/api";
import { GitHubStandIn } from "../support/github-standin";
import { connectGithub, expireLease, useStandInSettings } from "../support/integrations";
import { sourceWith } from "../support/sources";
import { setAccount } from "../support/billing";
import { PLANS } from "../../core/billing/plans";
import { localIntegrationsQueue } from "../../local/events";
import { dynamoClient } from "../../core/db/client";
import * as Tickets from "../../core/ticket";
import { db } from "../../core/db/service";
import { expectEnvelope } from "./_helpers";

const REPO = "octokit-fixture-org/hello-world";
const OTHER = "octokit-fixture-org/other";
const github = new GitHubStandIn([REPO, OTHER]);
const QUOTE = "I lost a two gigabyte upload twice and gave up on the product.";
const SOURCE = "Interview with Ana.md";

beforeAll(() => {
  useStandInSettings(github);
  github.listen();
});
afterAll(() => github.close());

interface Setup {
  token: string;
  workspaceId: string;
  documentId: string;
  recommendationId: string;
  insightId: string;
  blocks: Record<"story" | "solution" | "risk" | "persona", string>;
}

/** A workspace with a grounded insight, a recommendation, and a PRD with four typed blocks citing the insight as [I1]. */
async function setup(opts: { connect?: boolean; select?: string[] } = {}): Promise<Setup> {
  const { owner, workspace } = await newWorkspace("Tickets");
  const token = owner.token;
  const sourceId = await sourceWith(token, workspace.id, ["# Interview", QUOTE, "Everything else was fine."], SOURCE);
  const insight = await call("POST", "/api/insights", {
    token,
    body: { workspace_id: workspace.id, insight_type: "pain_point", title: "Large uploads fail", description: "Uploads over 1 GB fail.", severity: "high", source_ids: [sourceId], quotes: [{ text: QUOTE, source_id: sourceId, speaker: "Ana" }] },
  });
  expect(insight.status, insight.text).toBe(201);
  const rec = await call("POST", "/api/recommendations", { token, body: { workspace_id: workspace.id, title: "Resumable uploads", description: "Let uploads resume.", addresses_insight_ids: [insight.body.id] } });
  expect(rec.status, rec.text).toBe(201);
  const doc = await call("POST", "/api/documents", {
    token,
    body: { workspace_id: workspace.id, document_type: "prd", title: "Resumable uploads", content: "# Resumable uploads\n", related_recommendation_id: rec.body.id, related_insight_ids: [insight.body.id] },
  });
  expect(doc.status, doc.text).toBe(201);
  const block = async (block_type: string, title: string, content: Record<string, unknown>) => {
    const res = await call("POST", `/api/documents/${doc.body.id}/blocks`, { token, body: { block_type, title, content } });
    expect(res.status, res.text).toBe(201);
    return res.body.id as string;
  };
  const blocks = {
    story: await block("user_story", "User story", { as_a: "analyst", i_want: "to resume an interrupted upload [I1]", so_that: "I do not start over", acceptance_criteria: ["Resumes from the last chunk", "Shows progress"], priority: "must" }),
    solution: await block("solution", "Chunked uploads", { summary: "Upload in chunks and keep the offset [I1].", details: ["Chunk endpoint", "Offset store", "Client retry"] }),
    risk: await block("risk", "Risk", { risk: "Partial uploads fill the bucket.", likelihood: "medium", impact: "low", mitigation: "Expire partial uploads after a day" }),
    persona: await block("persona", "Analyst", { name: "Analyst", goals: ["Share results"] }),
  };
  if (opts.connect) {
    await connectGithub(github, token, workspace.id);
    const sel = await call("POST", "/api/integrations/codehost/repos/select", { token, body: { workspace_id: workspace.id, repos: opts.select ?? [REPO] } });
    expect(sel.status, sel.text).toBe(200);
  }
  return { token, workspaceId: workspace.id, documentId: doc.body.id, recommendationId: rec.body.id, insightId: insight.body.id, blocks };
}

const generate = async (s: Setup, include?: string[]) => {
  const res = await call("POST", "/api/execution/generate", { token: s.token, body: { workspace_id: s.workspaceId, document_id: s.documentId, ...(include ? { include_block_types: include } : {}) } });
  expect(res.status, res.text).toBe(200);
  return res.body as { tickets: any[]; total: number; skipped: any[] };
};
const review = (s: Setup, id: string, body: Record<string, unknown> = {}) => call("PATCH", `/api/execution/tickets/${id}`, { token: s.token, body });
const push = (s: Setup, extra: Record<string, unknown> = {}) =>
  call("POST", "/api/execution/push", { token: s.token, body: { workspace_id: s.workspaceId, document_id: s.documentId, platform: "codehost", ...extra } });
const sync = (s: Setup) => call("POST", "/api/execution/sync", { token: s.token, body: { workspace_id: s.workspaceId, document_id: s.documentId } });
const listed = async (s: Setup, status?: string) => {
  const res = await call("GET", `/api/execution/${s.documentId}/tickets`, { token: s.token, query: status ? { status } : {} });
  expect(res.status, res.text).toBe(200);
  return res.body.tickets as any[];
};
const issuesOf = (repo = REPO) => github.repos.get(repo)!.issues;
/** The issues of REPO whose body carries one of these tickets' markers (the stand-in's repositories are shared). */
const issuesFor = (ids: string[], repo = REPO) => issuesOf(repo).filter((i) => ids.some((id) => (i.body ?? "").includes(`r2d:ticket:${id}`)));
/**
 * An immediate retry while the kept lease holds: refused for that ticket, nothing sent to GitHub's create (not
 * counted while a held create may land meanwhile: `countCreates` false).
 */
const expectHeld = async (s: Setup, id: string, extra: Record<string, unknown> = {}, countCreates = true) => {
  const creations = github.creations();
  const res = await push(s, { ticket_ids: [id], ...extra });
  expect(res.status, res.text).toBe(200);
  expect(res.body).toMatchObject({ pushed: 0, failed: 1 });
  expect(res.body.results[0]).toMatchObject({ ticket_id: id, status: "push_failed", error: expect.stringMatching(/^another push holds this ticket \(until /) });
  if (countCreates) expect(github.creations()).toBe(creations);
};

describe("generate", () => {
  it("makes one ticket per block of the default types, each field traced, the body quoting the cited insight verbatim with its source", async () => {
    const s = await setup();
    const out = await generate(s);
    expect(out.total).toBe(3); // the persona is not a default type
    const story = out.tickets.find((t) => t.block_id === s.blocks.story)!;
    expect(story).toMatchObject({
      document_id: s.documentId, workspace_id: s.workspaceId, block_type: "user_story", status: "generated",
      title: "Resume an interrupted upload", ticket_type: "story", priority: "P1", labels: ["user-story", "pain-point"],
      acceptance_criteria: ["Resumes from the last chunk", "Shows progress"], estimated_effort: "M",
      evidence_insight_ids: [s.insightId], platform: null, external_id: null, external_url: null, synced_status: null,
    });
    expect(story.trace).toMatchObject({ title: "user_story.i_want", priority: "user_story.priority (MoSCoW must)" });
    expect(story.body).toContain(`“${QUOTE}” — Ana, *${SOURCE}*`);
    expect(story.body).toContain("**Large uploads fail** (pain point, high severity, 1 source)");
    const solution = out.tickets.find((t) => t.block_id === s.blocks.solution)!;
    // No rating of its own: the cited insight's severity (high) sets P1.
    expect(solution).toMatchObject({ title: "Chunked uploads", ticket_type: "feature", priority: "P1", estimated_effort: "M", acceptance_criteria: ["Chunk endpoint", "Offset store", "Client retry"] });
    const risk = out.tickets.find((t) => t.block_id === s.blocks.risk)!;
    expect(risk).toMatchObject({ title: "Mitigate: Partial uploads fill the bucket", priority: "P3", evidence_insight_ids: [], labels: ["risk"] });
    expect(risk.body).not.toContain("## Evidence");
  });

  it("include_block_types picks the blocks; generating again rewrites generated tickets and leaves reviewed ones", async () => {
    const s = await setup();
    const first = await generate(s, ["persona", "user_story"]);
    expect(first.tickets.map((t) => t.block_type).sort()).toEqual(["persona", "user_story"]);
    const story = first.tickets.find((t) => t.block_type === "user_story")!;
    const persona = first.tickets.find((t) => t.block_type === "persona")!;
    expect((await review(s, story.id, { title: "Resume uploads" })).status).toBe(200);
    const again = await generate(s, ["persona", "user_story"]);
    expect(again.tickets.map((t) => t.id)).toEqual([persona.id]);
    expect(again.skipped).toEqual([{ block_id: s.blocks.story, reason: "ticket_exists", ticket_id: story.id }]);
    expect((await listed(s)).map((t) => [t.id, t.title]).sort()).toEqual([[persona.id, persona.title], [story.id, "Resume uploads"]].sort());
  });

  it("errors: an unknown block type is 422; a document of another workspace is 404; a non-member is 403", async () => {
    const s = await setup();
    expectEnvelope(await call("POST", "/api/execution/generate", { token: s.token, body: { workspace_id: s.workspaceId, document_id: s.documentId, include_block_types: ["epic"] } }), 422, "VALIDATION_ERROR");
    const other = await newWorkspace("Elsewhere");
    expectEnvelope(await call("POST", "/api/execution/generate", { token: other.owner.token, body: { workspace_id: other.workspace.id, document_id: s.documentId } }), 404, "NOT_FOUND");
    expectEnvelope(await call("POST", "/api/execution/generate", { token: other.owner.token, body: { workspace_id: s.workspaceId, document_id: s.documentId } }), 403, "FORBIDDEN");
  });
});

describe("list and review", () => {
  it("lists by document with the status filter; review edits and marks reviewed; pushed tickets cannot be edited", async () => {
    const s = await setup({ connect: true });
    const { tickets } = await generate(s);
    const [a, b] = tickets;
    const reviewed = await review(s, a.id, { title: "Resume uploads", priority: "P0", labels: ["uploads"], acceptance_criteria: ["Resumes"], estimated_effort: "XL", body: "Edited body" });
    expect(reviewed.status, reviewed.text).toBe(200);
    expect(reviewed.body).toMatchObject({ status: "reviewed", title: "Resume uploads", priority: "P0", labels: ["uploads"], acceptance_criteria: ["Resumes"], estimated_effort: "XL", body: "Edited body" });
    expect((await review(s, a.id, { title: "Resume uploads again" })).body.status).toBe("reviewed");
    expect((await listed(s, "reviewed")).map((t) => t.id)).toEqual([a.id]);
    expect((await listed(s, "generated")).map((t) => t.id).sort()).toEqual(tickets.slice(1).map((t) => t.id).sort());
    expect(await listed(s, "pushed")).toEqual([]);

    expect((await push(s, { ticket_ids: [a.id] })).body.pushed).toBe(1);
    const refused = await review(s, a.id, { title: "Too late" });
    expectEnvelope(refused, 422, "INVALID_TRANSITION");
    expect(refused.body.valid_transitions).toEqual(["synced"]);
    expect((await listed(s, "pushed")).map((t) => t.id)).toEqual([a.id]);
    void b;
  });

  it("errors: unknown ids are 404 (also for a non-member), bad fields and filters 422", async () => {
    const s = await setup();
    const { tickets } = await generate(s);
    expectEnvelope(await review(s, randomUUID(), {}), 404, "NOT_FOUND");
    const outsider = await newUser();
    expectEnvelope(await call("PATCH", `/api/execution/tickets/${tickets[0].id}`, { token: outsider.token, body: {} }), 404, "NOT_FOUND");
    expectEnvelope(await call("GET", `/api/execution/${s.documentId}/tickets`, { token: outsider.token }), 404, "NOT_FOUND");
    expectEnvelope(await call("GET", `/api/execution/${randomUUID()}/tickets`, { token: s.token }), 404, "NOT_FOUND");
    expectEnvelope(await review(s, tickets[0].id, { priority: "P9" }), 422, "VALIDATION_ERROR");
    expectEnvelope(await review(s, tickets[0].id, { status: "pushed" }), 422, "VALIDATION_ERROR");
    expectEnvelope(await call("GET", `/api/execution/${s.documentId}/tickets`, { token: s.token, query: { status: "done" } }), 422, "VALIDATION_ERROR");
  });
});

describe("a ticket list heavier than one answer may be (Lambda: 6 MB)", () => {
  it("is paged by limit and offset; a page ends early past 5 MB and total counts every ticket", async () => {
    const { owner, workspace } = await newWorkspace("Heavy tickets");
    const token = owner.token;
    const doc = await call("POST", "/api/documents", { token, body: { workspace_id: workspace.id, document_type: "prd", title: "Big", content: "# Big\n" } });
    expect(doc.status, doc.text).toBe(201);
    for (let i = 0; i < 45; i++) {
      const r = await call("POST", `/api/documents/${doc.body.id}/blocks`, { token, body: { block_type: "risk", title: `Risk ${i}`, content: { risk: `Risk number ${i} happens.`, likelihood: "medium", impact: "low", mitigation: "Mitigate it" } } });
      expect(r.status, r.text).toBe(201);
    }
    const gen = await call("POST", "/api/execution/generate", { token, body: { workspace_id: workspace.id, document_id: doc.body.id } });
    expect(gen.body.total).toBe(45);
    // 50,000 characters is within a review's body; CJK text is 3 bytes a character: 45 of them are 6.8 MB.
    for (const t of gen.body.tickets) expect((await call("PATCH", `/api/execution/tickets/${t.id}`, { token, body: { body: "漢".repeat(50_000) } })).status).toBe(200);
    const seen = new Set<string>();
    for (let offset = 0, pages = 0; offset < 45 && pages < 4; pages++) {
      const page = await call("GET", `/api/execution/${doc.body.id}/tickets`, { token, query: { offset } });
      expect(page.status, page.text.slice(0, 200)).toBe(200);
      expect(Buffer.byteLength(page.text)).toBeLessThan(5 * 1024 * 1024 + 10_000);
      expect(page.body.total).toBe(45);
      for (const t of page.body.tickets) seen.add(t.id);
      offset += page.body.tickets.length;
    }
    expect(seen.size).toBe(45);
    expect((await call("GET", `/api/execution/${doc.body.id}/tickets`, { token, query: { limit: 2, offset: 44 } })).body.tickets).toHaveLength(1);
    expectEnvelope(await call("GET", `/api/execution/${doc.body.id}/tickets`, { token, query: { limit: 0 } }), 422, "VALIDATION_ERROR");
  }, 120_000);
});

describe("push", () => {
  it("pushes every reviewed ticket by default, one issue each, with the spec's priority label, the criteria and the marker", async () => {
    const s = await setup({ connect: true });
    const { tickets } = await generate(s);
    const story = tickets.find((t) => t.block_type === "user_story")!;
    const risk = tickets.find((t) => t.block_type === "risk")!;
    await review(s, story.id);
    await review(s, risk.id);
    const res = await push(s);
    expect(res.status, res.text).toBe(200);
    expect(res.body).toMatchObject({ pushed: 2, failed: 0, queued: 0 });
    expect(res.body.results.map((r: any) => r.ticket_id).sort()).toEqual([story.id, risk.id].sort());
    const issues = issuesFor(tickets.map((t) => t.id));
    expect(issues).toHaveLength(2);
    const storyIssue = issues.find((i) => i.title === story.title)!;
    expect(storyIssue.labels).toEqual(["user-story", "pain-point", "priority:high"]);
    expect(storyIssue.body).toContain(QUOTE);
    expect(storyIssue.body).toContain("- [ ] Resumes from the last chunk");
    expect(storyIssue.body).toContain(`<!-- r2d:ticket:${story.id} -->`);
    expect(issues.find((i) => i.title === risk.title)!.labels).toContain("priority:low");
    const stored = (await listed(s, "pushed")).find((t) => t.id === story.id)!;
    expect(stored).toMatchObject({ platform: "codehost", external_id: `${REPO}#${storyIssue.number}`, external_url: `https://ghe.test/${REPO}/issues/${storyIssue.number}` });
    // The generated solution ticket was not reviewed: not pushed. Named explicitly, it is refused for itself only.
    const solution = tickets.find((t) => t.block_type === "solution")!;
    const named = await push(s, { ticket_ids: [solution.id, story.id] });
    expect(named.body).toMatchObject({ pushed: 0, failed: 2 });
    expect(named.body.results).toEqual([
      expect.objectContaining({ ticket_id: solution.id, status: "generated", error: "invalid_transition: generated -> pushed" }),
      expect.objectContaining({ ticket_id: story.id, status: "pushed", error: "invalid_transition: pushed -> pushed" }),
    ]);
    expect(issuesFor(tickets.map((t) => t.id))).toHaveLength(2);
  });

  it("a review that lands on a later ticket while an earlier one is pushed is what its issue carries", async () => {
    const s = await setup({ connect: true });
    const { tickets } = await generate(s, ["user_story", "risk"]);
    const [first, second] = tickets;
    await review(s, first.id);
    await review(s, second.id);
    // While the first ticket's lease is taken (the push has read both), the second is edited.
    const name = "reviewDuringPush";
    let edited = false;
    dynamoClient().middlewareStack.add(
      (next, context) => async (args) => {
        const input = JSON.stringify(args.input);
        if (!edited && /Update/.test(String(context.commandName)) && input.includes(first.id) && input.includes("push_claim_until")) {
          edited = true;
          const res = await review(s, second.id, { title: "Expire partial uploads after a day" });
          expect(res.status, res.text).toBe(200);
        }
        return next(args);
      },
      { step: "initialize", name },
    );
    try {
      const res = await push(s);
      expect(res.body).toMatchObject({ pushed: 2, failed: 0 });
    } finally {
      dynamoClient().middlewareStack.remove(name);
    }
    expect(edited).toBe(true);
    expect(issuesFor([second.id]).map((i) => i.title)).toEqual(["Expire partial uploads after a day"]);
  });

  it("a push retried after its answer was lost finds the issue by its marker: one issue", async () => {
    const s = await setup({ connect: true });
    const { tickets } = await generate(s, ["user_story"]);
    await review(s, tickets[0].id);
    github.fail({ match: /^POST \/repos\/.*\/issues$/, status: 0, message: "lost", lost: true });
    const first = await push(s);
    expect(first.status, first.text).toBe(200);
    expect(first.body).toMatchObject({ pushed: 0, failed: 1 });
    expect(first.body.results[0]).toMatchObject({ status: "push_failed", error: expect.stringMatching(/outcome unknown/) });
    expect(first.body.results[0].error).toMatch(/the ticket is held until .*then a retry looks for the issue/);
    const mine = () => issuesFor([tickets[0].id]);
    expect(mine()).toHaveLength(1); // GitHub did create it; the answer never came back

    // No answer came, so the create might still have been under way at GitHub: the ticket stays held (its lease)
    // and a retry at once is refused instead of searching before the issue could have landed.
    await expectHeld(s, tickets[0].id);
    expect(mine()).toHaveLength(1);
    await expireLease(s, tickets[0].id);
    const retry = await push(s, { ticket_ids: [tickets[0].id] });
    expect(retry.body).toMatchObject({ pushed: 1, failed: 0 });
    expect(mine()).toHaveLength(1);
    expect(retry.body.results[0].external_id).toBe(`${REPO}#${mine()[0]!.number}`);
    expect((await listed(s))[0]).toMatchObject({ status: "pushed", push_error: null });
  });

  it("a create GitHub holds past PROVIDER_REQUEST_TIMEOUT_SECONDS is aborted: the push answers within about the timeout, push_failed 'outcome unknown', well inside its lease; the retry finds the issue once GitHub stores it", async () => {
    const s = await setup({ connect: true });
    const { tickets } = await generate(s, ["user_story"]);
    await review(s, tickets[0].id);
    const mine = () => issuesFor([tickets[0].id]);
    const before = process.env.PROVIDER_REQUEST_TIMEOUT_SECONDS;
    process.env.PROVIDER_REQUEST_TIMEOUT_SECONDS = "0.4";
    try {
      github.fail({ match: /^POST \/repos\/.*\/issues$/, status: 0, message: "held", holdMs: 5000, bodyIncludes: `r2d:ticket:${tickets[0].id}` });
      const started = Date.now();
      const first = await push(s);
      const took = Date.now() - started;
      expect(first.status, first.text).toBe(200);
      expect(first.body, `${took} ms: ${first.text}`).toMatchObject({ pushed: 0, failed: 1 });
      expect(first.body.results[0]).toMatchObject({ status: "push_failed", error: expect.stringMatching(/^outcome unknown/) });
      expect(took, `${took} ms: ${first.text}`).toBeLessThan(4000); // the timeout (0.4 s) and the push's own work, not GitHub's 5 s
      expect(took).toBeLessThan(Tickets.PUSH_LEASE_MS);
      const failed = (await listed(s))[0];
      expect(failed).toMatchObject({ status: "push_failed", push_error: expect.stringMatching(/^outcome unknown .*did not answer within 400 ms/) });
      expect(mine()).toHaveLength(0); // still held

      // Retried at once, while GitHub still holds the create: refused (the lease stays after a create with no
      // answer), so no search finds nothing and no second create goes out before the first lands.
      await expectHeld(s, tickets[0].id, {}, false);
      // GitHub stores the create after all; once the lease has run out, the retry finds it by its marker.
      await expect.poll(() => mine().length, { timeout: 10_000, interval: 100 }).toBe(1);
      await expireLease(s, tickets[0].id);
    } finally {
      if (before === undefined) delete process.env.PROVIDER_REQUEST_TIMEOUT_SECONDS;
      else process.env.PROVIDER_REQUEST_TIMEOUT_SECONDS = before;
      github.clearFailures();
    }
    const retry = await push(s, { ticket_ids: [tickets[0].id] });
    expect(retry.body).toMatchObject({ pushed: 1, failed: 0 });
    expect(mine()).toHaveLength(1);
    expect(retry.body.results[0].external_id).toBe(`${REPO}#${mine()[0]!.number}`);
    expect((await listed(s))[0]).toMatchObject({ status: "pushed", push_error: null });
  });

  it("a ticket whose push outcome is unknown stays refused elsewhere after a review (PATCH) and after a retry whose marker search GitHub refused", async () => {
    const s = await setup({ connect: true, select: [REPO, OTHER] });
    const { tickets } = await generate(s, ["user_story"]);
    const id = tickets[0].id;
    await review(s, id);
    github.fail({ match: /^POST \/repos\/.*\/issues$/, status: 0, message: "lost", lost: true });
    const first = await push(s, { repo: REPO, ticket_ids: [id] });
    expect(first.body.results[0]).toMatchObject({ status: "push_failed", error: expect.stringMatching(/outcome unknown/) });
    expect(issuesFor([id])).toHaveLength(1); // GitHub did create it

    // While the lease the no-answer create kept holds, the ticket is not reviewed either (409), nor pushed anywhere.
    const early = await review(s, id, { title: "Resume an interrupted upload (edited)" });
    expectEnvelope(early, 409, "CONFLICT");
    await expectHeld(s, id, { repo: OTHER });
    expect(issuesFor([id], OTHER)).toHaveLength(0);
    await expireLease(s, id);

    // A: the review clears push_error, not the fact that REPO may hold the issue.
    const reviewed = await review(s, id, { title: "Resume an interrupted upload (edited)" });
    expect(reviewed.status, reviewed.text).toBe(200);
    expect(reviewed.body).toMatchObject({ status: "reviewed", push_error: null });
    const elsewhere = await push(s, { repo: OTHER, ticket_ids: [id] });
    expect(elsewhere.body).toMatchObject({ pushed: 0, failed: 1 });
    expect(elsewhere.body.results[0]).toMatchObject({ status: "reviewed", error: expect.stringMatching(new RegExp(`to codehost ${REPO}\\) may have created an issue there.*push it there again`)) });
    expect(issuesFor([id], OTHER)).toHaveLength(0);

    // B: a retry at REPO whose marker search GitHub refuses (a 4xx: a known failure) is push_failed without "outcome
    // unknown"; the issue may still be there, so OTHER stays refused.
    github.fail({ match: new RegExp(`^GET /repos/${REPO}/issues$`), status: 422, message: "Validation Failed" });
    const refused = await push(s, { repo: REPO, ticket_ids: [id] });
    expect(refused.body.results[0]).toMatchObject({ status: "push_failed", error: expect.not.stringMatching(/outcome unknown/) });
    const still = await push(s, { repo: OTHER, ticket_ids: [id] });
    expect(still.body.results[0]).toMatchObject({ status: "push_failed", error: expect.stringMatching(/may have created an issue there/) });
    expect(issuesFor([id], OTHER)).toHaveLength(0);

    // Pushed to REPO again, it finds that issue: one issue, and the ticket is pushed (the mark goes with it).
    const retry = await push(s, { repo: REPO, ticket_ids: [id] });
    expect(retry.body).toMatchObject({ pushed: 1, failed: 0 });
    expect(issuesFor([id])).toHaveLength(1);
    expect(retry.body.results[0].external_id).toBe(`${REPO}#${issuesFor([id])[0]!.number}`);
  });

  it("a create GitHub refused (a known outcome) leaves no mark: the ticket may then be pushed elsewhere", async () => {
    const s = await setup({ connect: true, select: [REPO, OTHER] });
    const { tickets } = await generate(s, ["user_story"]);
    const id = tickets[0].id;
    await review(s, id);
    github.fail({ match: new RegExp(`^POST /repos/${REPO}/issues$`), status: 422, message: "Validation Failed" });
    const refused = await push(s, { repo: REPO, ticket_ids: [id] });
    expect(refused.body.results[0]).toMatchObject({ status: "push_failed", error: expect.stringMatching(/Validation Failed/) });
    const elsewhere = await push(s, { repo: OTHER, ticket_ids: [id] });
    expect(elsewhere.body).toMatchObject({ pushed: 1, failed: 0 });
    expect(issuesFor([id], OTHER)).toHaveLength(1);
    expect(issuesFor([id])).toHaveLength(0);
  });

  it("a refused create is push_failed with GitHub's reason; a rate limit queues the rest with GitHub's wait", async () => {
    const s = await setup({ connect: true });
    const { tickets } = await generate(s);
    for (const t of tickets) await review(s, t.id);
    github.fail({ match: /^POST \/repos\/.*\/issues$/, status: 422, message: "Validation Failed" });
    const refused = await push(s, { ticket_ids: [tickets[0].id] });
    expect(refused.body.results[0]).toMatchObject({ status: "push_failed", error: expect.stringMatching(/Validation Failed/) });

    // Octokit paces issue creations 3 s apart (GitHub's advice): the request may wait for that, never for GitHub's 8 s.
    github.fail({ match: /^POST \/repos\/.*\/issues$/, status: 403, headers: { "retry-after": "8" }, message: "You have exceeded a secondary rate limit and have been temporarily blocked from content creation." });
    const started = Date.now();
    const res = await push(s, { ticket_ids: tickets.slice(0, 2).map((t) => t.id) });
    expect(Date.now() - started).toBeLessThan(8000);
    expect(res.body).toMatchObject({ pushed: 0, queued: 2 });
    expect(res.body.results.map((r: any) => r.status)).toEqual(["queued", "queued"]);
    await localIntegrationsQueue().idle();
    expect(Date.now() - started).toBeGreaterThanOrEqual(8000);
    expect((await listed(s, "pushed")).map((t) => t.id).sort()).toEqual(tickets.slice(0, 2).map((t) => t.id).sort());
    expect(issuesFor(tickets.map((t) => t.id))).toHaveLength(2);
  }, 60_000);

  it("past its time budget a push answers with the rest queued, and the queue pushes them", async () => {
    const s = await setup({ connect: true });
    const { tickets } = await generate(s);
    for (const t of tickets) await review(s, t.id);
    const me = (await call("GET", "/api/auth/me", { token: s.token })).body.id as string;
    const res = await Tickets.push(me, { workspace_id: s.workspaceId, document_id: s.documentId, platform: "codehost" }, undefined, { budgetMs: 1 });
    expect(res).toMatchObject({ pushed: 1, queued: 2 });
    await localIntegrationsQueue().idle();
    expect((await listed(s, "pushed"))).toHaveLength(3);
    expect(issuesFor(tickets.map((t) => t.id))).toHaveLength(3);
  });

  it("a queued continuation checks its destination again: a repository deselected meanwhile, or a disconnect, fails its tickets with the reason and sends nothing", async () => {
    const s = await setup({ connect: true, select: [REPO, OTHER] });
    const { tickets } = await generate(s);
    for (const t of tickets) await review(s, t.id);
    const me = (await call("GET", "/api/auth/me", { token: s.token })).body.id as string;
    const [first, second] = tickets;
    // REPO is deselected after the first request resolved it and queued the rest.
    expect((await call("POST", "/api/integrations/codehost/repos/select", { token: s.token, body: { workspace_id: s.workspaceId, repos: [OTHER] } })).status).toBe(200);
    const creations = github.creations();
    const moved = await Tickets.push(me, { workspace_id: s.workspaceId, document_id: s.documentId, platform: "codehost", ticket_ids: [first.id] }, REPO);
    expect(moved).toMatchObject({ pushed: 0, failed: 1, queued: 0 });
    expect(moved.results[0]).toMatchObject({ ticket_id: first.id, status: "push_failed", error: `${REPO} is no longer a selected repository; select it, or push to another` });
    // Disconnected meanwhile: the continuation ends with its tickets failed (the queue does not retry a refusal).
    expect((await call("DELETE", "/api/integrations/codehost/disconnect", { token: s.token, query: { workspace_id: s.workspaceId } })).status).toBe(200);
    const gone = await Tickets.push(me, { workspace_id: s.workspaceId, document_id: s.documentId, platform: "codehost", ticket_ids: [second.id] }, OTHER);
    expect(gone.results[0]).toMatchObject({ ticket_id: second.id, status: "push_failed", error: expect.stringMatching(/^NO_ACTIVE_INTEGRATION: /) });
    expect(github.creations()).toBe(creations);
    expect((await listed(s, "push_failed")).map((t) => t.id).sort()).toEqual([first.id, second.id].sort());
    // A request (not a continuation) still answers the refusal itself.
    expect((await push(s, { ticket_ids: [first.id] })).status).toBe(404);
  });

  it("errors: no integration 404; several repositories and none named 422; unknown ids 422; a revoked grant 424", async () => {
    const bare = await setup();
    const { tickets } = await generate(bare);
    await review(bare, tickets[0].id);
    expectEnvelope(await push(bare), 404, "NO_ACTIVE_INTEGRATION");
    expectEnvelope(await push(bare, { platform: "planner" }), 404, "NO_ACTIVE_INTEGRATION");
    expectEnvelope(await push(bare, { platform: "jira" }), 422, "VALIDATION_ERROR");

    const two = await setup({ connect: true, select: [REPO, OTHER] });
    const t2 = (await generate(two)).tickets[0];
    await review(two, t2.id);
    // The recommendation names no target repository and two are selected.
    expectEnvelope(await push(two), 422, "REPO_NOT_SELECTED");
    expect((await push(two, { repo: OTHER })).body.pushed).toBe(1);
    expect(issuesFor([t2.id], OTHER)).toHaveLength(1);
    expectEnvelope(await push(two, { ticket_ids: [randomUUID()] }), 422, "VALIDATION_ERROR");

    const revoked = await setup({ connect: true });
    const t3 = (await generate(revoked)).tickets[0];
    await review(revoked, t3.id);
    github.revokeAll();
    const res = await push(revoked);
    expectEnvelope(res, 424, "CODEHOST_TOKEN_ERROR");
    expect((await listed(revoked))[0]).toMatchObject({ status: "reviewed" });
  });
});

describe("plan gate per platform", () => {
  const restore: (() => void)[] = [];
  afterEach(() => restore.splice(0).forEach((f) => f()));

  it("pushing to GitHub needs has_codehost; to the planner has_integrations (403 before anything else)", async () => {
    const s = await setup();
    const before = { ...PLANS.trial };
    restore.push(() => Object.assign(PLANS.trial, before));
    PLANS.trial.has_codehost = false;
    const res = await push(s);
    expectEnvelope(res, 403, "FORBIDDEN");
    expect(res.body.feature).toBe("has_codehost");
    // The planner's flag is another one: still on, so that push passes the gate and meets the missing integration.
    expectEnvelope(await push(s, { platform: "planner" }), 404, "NO_ACTIVE_INTEGRATION");
    PLANS.trial.has_integrations = false;
    expect((await push(s, { platform: "tickets" })).body.feature).toBe("has_integrations");
    await setAccount((await call("GET", "/api/auth/me", { token: s.token })).body.id, { plan: "power", status: "active" });
    expectEnvelope(await push(s), 404, "NO_ACTIVE_INTEGRATION");
  });
});

describe("sync", () => {
  it("maps GitHub state/state_reason to categories, counts unchanged (a 304), never writes to GitHub, and implements the recommendation once all are settled", async () => {
    const s = await setup({ connect: true });
    const { tickets } = await generate(s, ["user_story", "solution"]);
    for (const t of tickets) await review(s, t.id);
    expect((await push(s)).body.pushed).toBe(2);
    const [a, b] = await listed(s, "pushed");
    const numberOf = (t: any) => Number(t.external_id.split("#")[1]);

    const first = await sync(s);
    expect(first.status, first.text).toBe(200);
    expect(first.body).toMatchObject({ synced: 2, unchanged: 0, errors: 0, queued: 0, recommendation_implemented: false });
    expect((await listed(s, "synced")).map((t) => t.synced_status)).toEqual(["todo", "todo"]);

    const mark = github.requests.length;
    const again = await sync(s);
    expect(again.body).toMatchObject({ synced: 0, unchanged: 2, errors: 0 });
    expect(github.requests.slice(mark).map((r) => r.status)).toEqual([304, 304]);

    github.close_(REPO, numberOf(a), "not_planned");
    const one = await sync(s);
    expect(one.body).toMatchObject({ synced: 1, unchanged: 1, recommendation_implemented: false });
    expect((await listed(s)).find((t) => t.id === a.id)).toMatchObject({ status: "synced", synced_status: "cancelled" });
    expect((await call("GET", `/api/recommendations/${s.recommendationId}`, { token: s.token })).body.status).toBe("suggested");

    github.close_(REPO, numberOf(b), "completed");
    const writes = github.creations();
    const done = await sync(s);
    expect(done.body).toMatchObject({ synced: 1, recommendation_implemented: true });
    expect((await listed(s)).find((t) => t.id === b.id)).toMatchObject({ synced_status: "done" });
    expect((await call("GET", `/api/recommendations/${s.recommendationId}`, { token: s.token })).body.status).toBe("implemented");
    // One-way: sync only reads.
    expect(github.creations()).toBe(writes);
    expect(github.requests.slice(mark).every((r) => r.method === "GET")).toBe(true);
  });

  it("a sync that read the issue before another sync recorded a newer state does not move the ticket back", async () => {
    const s = await setup({ connect: true });
    const { tickets } = await generate(s, ["user_story"]);
    await review(s, tickets[0].id);
    expect((await push(s)).body.pushed).toBe(1);
    expect((await sync(s)).body).toMatchObject({ synced: 1 });
    const [t] = await listed(s, "synced");
    const number = Number(t.external_id.split("#")[1]);
    github.issue(REPO, number).version++; // edited, still open: the next read is not a 304
    // Sync A has read "open"; before it writes, the issue closes and sync B records "done".
    const name = "syncRace";
    let raced = false;
    let later: any;
    dynamoClient().middlewareStack.add(
      (next, context) => async (args) => {
        if (!raced && /Update/.test(String(context.commandName)) && JSON.stringify(args.input).includes("synced_status")) {
          raced = true;
          github.close_(REPO, number, "completed");
          later = await sync(s);
        }
        return next(args);
      },
      { step: "initialize", name },
    );
    let earlier: any;
    try {
      earlier = await sync(s);
    } finally {
      dynamoClient().middlewareStack.remove(name);
    }
    expect(raced).toBe(true);
    expect(later.body.results[0]).toMatchObject({ synced_status: "done", changed: true });
    expect(earlier.body.results[0]).toMatchObject({ error: "the ticket changed meanwhile" });
    expect((await listed(s))[0]).toMatchObject({ status: "synced", synced_status: "done" });
  });

  it("a rate limit part-way queues the rest; without the integration sync is 404; nothing pushed is an empty sync", async () => {
    const s = await setup({ connect: true });
    const { tickets } = await generate(s, ["user_story"]);
    await review(s, tickets[0].id);
    expect(await sync(s).then((r) => r.body)).toMatchObject({ results: [], synced: 0, unchanged: 0, errors: 0 });
    await push(s);
    const [t] = await listed(s, "pushed");
    github.fail({ match: new RegExp(`^GET /repos/${REPO}/issues/${t.external_id.split("#")[1]}$`), status: 429, headers: { "retry-after": "1" }, message: "API rate limit exceeded" });
    const res = await sync(s);
    expect(res.body).toMatchObject({ queued: 1, synced: 0 });
    await localIntegrationsQueue().idle();
    expect((await listed(s))[0]).toMatchObject({ status: "synced", synced_status: "todo" });

    expect((await call("DELETE", "/api/integrations/codehost/disconnect", { token: s.token, query: { workspace_id: s.workspaceId } })).status).toBe(200);
    expectEnvelope(await sync(s), 404, "NO_ACTIVE_INTEGRATION");
  });
});

describe("a document edited after its tickets were generated", () => {
  it("keeps each ticket's own copy and block id when its block is deleted or the blocks re-extracted; list, review, push and sync work on and say the block is gone; generating again drops only unreviewed drafts of removed blocks", async () => {
    const s = await setup({ connect: true });
    const { tickets } = await generate(s);
    const by = (block: string) => tickets.find((t) => t.block_id === block)!;
    const [story, solution, risk] = [by(s.blocks.story), by(s.blocks.solution), by(s.blocks.risk)];
    expect(tickets.every((t) => t.block_removed === false)).toBe(true);
    await review(s, story.id);
    await review(s, solution.id);
    expect((await push(s, { ticket_ids: [story.id] })).body.pushed).toBe(1);

    // An edit deletes the solution's block; then the blocks are re-extracted from the content (new ids for all).
    expect((await call("DELETE", `/api/documents/${s.documentId}/blocks/${s.blocks.solution}`, { token: s.token })).status).toBe(204);
    let all = await listed(s);
    expect(all.find((t) => t.id === solution.id)).toMatchObject({ block_id: s.blocks.solution, block_removed: true, status: "reviewed", title: solution.title, body: solution.body });
    expect(all.find((t) => t.id === story.id)).toMatchObject({ block_removed: false });
    const extracted = await call("POST", "/api/blocks/extract", { token: s.token, body: { workspace_id: s.workspaceId, document_id: s.documentId } });
    expect(extracted.status, extracted.text).toBe(200);
    expect(extracted.body.replaced).toBe(3);
    all = await listed(s);
    expect(all).toHaveLength(3);
    for (const t of [story, solution, risk]) {
      // Its own title, body (with the evidence's verbatim quote) and block id, as generated or reviewed.
      expect(all.find((x) => x.id === t.id)).toMatchObject({ block_id: t.block_id, block_removed: true, title: t.title, body: t.body });
    }
    expect(all.find((t) => t.id === solution.id)!.body).toContain(`“${QUOTE}” — Ana, *${SOURCE}*`);

    // Review still works and answers the flag; push sends the ticket's own text and says the block is gone.
    const edited = await review(s, solution.id, { title: "Chunked uploads with an offset" });
    expect(edited.status, edited.text).toBe(200);
    expect(edited.body).toMatchObject({ title: "Chunked uploads with an offset", status: "reviewed", block_removed: true });
    const pushed = await push(s);
    expect(pushed.status, pushed.text).toBe(200);
    expect(pushed.body).toMatchObject({ pushed: 1, failed: 0 });
    expect(pushed.body.results).toEqual([expect.objectContaining({ ticket_id: solution.id, status: "pushed", block_removed: true })]);
    const [issue] = issuesFor([solution.id]);
    expect(issue).toMatchObject({ title: "Chunked uploads with an offset" });
    expect(issue!.body).toContain(QUOTE);

    // Sync reads both pushed tickets' issues and says their blocks are gone.
    github.close_(REPO, Number(issuesFor([story.id])[0]!.number), "completed");
    const synced = await sync(s);
    expect(synced.status, synced.text).toBe(200);
    expect(synced.body).toMatchObject({ synced: 2, errors: 0 });
    expect(synced.body.results.map((r: any) => [r.ticket_id, r.block_removed]).sort()).toEqual([[solution.id, true], [story.id, true]].sort());
    expect((await listed(s)).find((t) => t.id === story.id)).toMatchObject({ status: "synced", synced_status: "done", block_removed: true });

    // Generating again: the never-reviewed draft of a removed block (the risk) is deleted and reported; the pushed
    // tickets stay. The re-extracted blocks (none of a ticket type here) make no duplicates of them.
    const again = await call("POST", "/api/execution/generate", { token: s.token, body: { workspace_id: s.workspaceId, document_id: s.documentId } });
    expect(again.status, again.text).toBe(200);
    expect(again.body.removed).toEqual([{ ticket_id: risk.id, block_id: s.blocks.risk }]);
    expect((await listed(s)).map((t) => t.id).sort()).toEqual([story.id, solution.id].sort());
  });
});
