/**
 * A sync whose continuations end (review of 2026-11-28): the code-host sync and the execution-ticket sync queue a
 * continuation past their work budget for the items "not synced since the run began". An item whose issue the
 * provider never answers for (deleted, out of reach: GitHub's 404) never got `last_synced_at`, so every continuation
 * read it again first; once those failing reads outlast the budget, no run finished and each queued another, for
 * ever. Here the budget is 1 ms in every run (the request's and the queue's), the items failing at GitHub come before
 * the readable one, and the chain must end with the readable items synced.
 */
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";

// Every run, the queue consumer's too, works for 1 ms: each run reads one item, then queues the rest.
vi.mock("../../core/integration/jobs", async (importOriginal) => ({ ...(await importOriginal<typeof import("../../core/integration/jobs")>()), WORK_BUDGET_MS: 1 }));

import { call, newWorkspace } from "../support/api";
import { GitHubStandIn } from "../support/github-standin";
import { connectGithub, continuationsOf, useStandInSettings } from "../support/integrations";
import { localIntegrationsQueue } from "../../local/events";
import { db } from "../../core/db/service";

const REPO = "octokit-fixture-org/hello-world";
const github = new GitHubStandIn([REPO]);

beforeAll(() => {
  useStandInSettings(github);
  github.listen();
});
afterAll(() => github.close());

async function connected() {
  const { owner, workspace } = await newWorkspace("Bounded sync");
  await connectGithub(github, owner.token, workspace.id);
  const sel = await call("POST", "/api/integrations/codehost/repos/select", { token: owner.token, body: { workspace_id: workspace.id, repos: [REPO] } });
  expect(sel.status, sel.text).toBe(200);
  return { token: owner.token, userId: owner.id as string, workspaceId: workspace.id };
}

/** Issue numbers GitHub answers 404 for (never created), then one that exists. */
const failing = [9001, 9002, 9003, 9004];

describe("a sync whose reads keep failing at the provider", () => {
  it("code host: the chain of continuations ends (each run reads a link once) and the readable link is synced", async () => {
    const s = await connected();
    const readable = github.addIssue(REPO, "Readable");
    // Links as the issue route leaves them (seeded: creating issues through Octokit is paced 3 s apart). The sort key
    // orders them by recommendation id: the failing ones first.
    const numbers = [...failing, readable];
    for (const [i, n] of numbers.entries()) {
      await db().entities.issueLink.put({
        id: randomUUID(), workspace_id: s.workspaceId, kind: "codehost", recommendation_id: `rec-${i}`, repo_full_name: REPO, issue_number: n,
        issue_url: `https://github.test/${REPO}/issues/${n}`, title: `Issue ${n}`, state: "open",
      }).go();
    }
    let first: any;
    const sent = await continuationsOf(async () => {
      first = await call("POST", "/api/integrations/codehost/sync", { token: s.token, body: { workspace_id: s.workspaceId } });
    }, 2 * numbers.length);
    expect(first.status, first.text).toBe(200);
    expect(first.body.queued_count).toBe(numbers.length - 1);
    // One continuation per item at most (each reads one): it ran on for ever.
    expect(sent).toBeLessThanOrEqual(numbers.length - 1);
    const { data } = await db().entities.issueLink.query.byWorkspace({ workspace_id: s.workspaceId, kind: "codehost" }).go({ pages: "all" });
    expect(data.find((l) => l.issue_number === readable)!.last_synced_at).toEqual(expect.any(String));
    expect(data.filter((l) => l.last_synced_at)).toHaveLength(1);
    // The next sync (a run of its own) tries the failing links again.
    const mark = github.requests.length;
    await continuationsOf(() => call("POST", "/api/integrations/codehost/sync", { token: s.token, body: { workspace_id: s.workspaceId } }), 2 * numbers.length);
    const read = github.requests.slice(mark).map((r) => r.path).filter((p) => /\/issues\/\d+$/.test(p));
    expect(new Set(read).size).toBe(numbers.length);
  }, 60_000);

  it("execution tickets: the chain of continuations ends (each run reads a ticket once) and the readable ticket is synced", async () => {
    const s = await connected();
    const doc = await call("POST", "/api/documents", { token: s.token, body: { workspace_id: s.workspaceId, document_type: "prd", title: "Bounded", content: "# Bounded\n" } });
    expect(doc.status, doc.text).toBe(201);
    const readable = github.addIssue(REPO, "Readable");
    const numbers = [...failing, readable];
    // Pushed tickets (seeded: pushing them is paced 3 s apart), in creation order: the failing ones first.
    for (const [i, n] of numbers.entries()) {
      await db().entities.executionTicket.create({
        id: randomUUID(), workspace_id: s.workspaceId, document_id: doc.body.id, block_id: randomUUID(), block_type: "risk", title: `Ticket ${i}`,
        body: "Seeded.", ticket_type: "task", estimated_effort: "S", status: "pushed", platform: "codehost", destination: REPO,
        external_id: `${REPO}#${n}`, external_url: `https://github.test/${REPO}/issues/${n}`, created_by: s.userId,
        created_at: new Date(Date.UTC(2026, 0, 1, 0, 0, i)).toISOString(),
      }).go();
    }
    let first: any;
    const sent = await continuationsOf(async () => {
      first = await call("POST", "/api/execution/sync", { token: s.token, body: { workspace_id: s.workspaceId, document_id: doc.body.id } });
    }, 2 * numbers.length);
    expect(first.status, first.text).toBe(200);
    expect(first.body).toMatchObject({ errors: 1, queued: numbers.length - 1 });
    expect(first.body.results[0].error).toMatch(/not_found/);
    expect(sent).toBeLessThanOrEqual(numbers.length - 1);
    const tickets = await call("GET", `/api/execution/${doc.body.id}/tickets`, { token: s.token });
    expect(tickets.body.tickets.map((t: any) => t.status)).toEqual(["pushed", "pushed", "pushed", "pushed", "synced"]);
    expect(tickets.body.tickets[4]).toMatchObject({ synced_status: "todo", last_synced_at: expect.any(String) });
  }, 60_000);
});
