/**
 * The planner (Linear) sync under a work budget, as the code-host and execution-ticket syncs are
 * (test/http/integrations-sync-bounded.test.ts): past `WORK_BUDGET_MS` it finishes the batch under way (one GraphQL
 * query per `MAX_PAGE` = 250 links) and queues a `planner.sync` continuation of the same run for the links not synced
 * since the run began. Here the budget is 1 ms in every run (the request's and the queue's), so each run reads one
 * batch. A link whose issue Linear never answers for is noted as failed by the run (`sync_failed_run`): the run's
 * continuations skip it, and a batch's worth of such links, first in the order, does not make the chain endless.
 */
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";

// Every run, the queue consumer's too, works for 1 ms: each run reads one batch, then queues the rest.
vi.mock("../../core/integration/jobs", async (importOriginal) => ({ ...(await importOriginal<typeof import("../../core/integration/jobs")>()), WORK_BUDGET_MS: 1 }));

/** Every issue id the sync asked Linear for, in order, one entry per read (the real adapter answers). */
const reads: string[] = [];
vi.mock("../../core/integration/planner/linear", async (importOriginal) => {
  const real = await importOriginal<typeof import("../../core/integration/planner/linear")>();
  return {
    ...real,
    linear: (token: string) => {
      const planner = real.linear(token);
      const issuesByIds = planner.issuesByIds.bind(planner);
      return { ...planner, issuesByIds: async (ids: string[]) => (reads.push(...ids), issuesByIds(ids)) };
    },
  };
});

import { call, newWorkspace } from "../support/api";
import { continuationsOf } from "../support/integrations";
import { connectLinear, LinearStandIn, useLinearSettings } from "../support/linear-standin";
import { localIntegrationsQueue } from "../../local/events";
import { db } from "../../core/db/service";
import { MAX_PAGE } from "../../core/integration/planner/linear";

const linear = new LinearStandIn();

beforeAll(() => {
  useLinearSettings(linear);
  linear.listen();
});
afterAll(() => linear.close());

/**
 * A workspace with Linear connected and planner links seeded straight into the table (creating hundreds of issues
 * through the API is slow): first `failing` links to issue ids Linear does not know, then `readable` links to issues
 * in "Todo". The links record "Backlog", so every readable one is updated by its sync. The sort key orders the links
 * by recommendation id: the failing ones come first.
 */
async function seeded(failing: number, readable: number) {
  const { owner, workspace } = await newWorkspace("Bounded planner sync");
  await connectLinear(linear, owner.token, workspace.id);
  const issueIds = [
    ...Array.from({ length: failing }, () => randomUUID()),
    ...Array.from({ length: readable }, (_, i) => {
      const issue = linear.addIssue("ENG", { title: `Issue ${i}` });
      linear.moveTo(issue.id, "Todo");
      return issue.id;
    }),
  ];
  const links = issueIds.map((issueId, i) => ({
    id: randomUUID(), workspace_id: workspace.id as string, kind: "planner" as const, recommendation_id: `rec-${String(i).padStart(4, "0")}`,
    issue_id: issueId, identifier: `ENG-${i + 1}`, issue_url: `https://linear.test/acme/issue/ENG-${i + 1}`, title: `Issue ${i}`,
    state: "Backlog", state_type: "backlog",
  }));
  const { unprocessed } = await db().entities.issueLink.put(links).go();
  expect(unprocessed).toEqual([]);
  return { token: owner.token as string, workspaceId: workspace.id as string, failingIds: issueIds.slice(0, failing), readableIds: issueIds.slice(failing) };
}

const linksOf = async (workspaceId: string) => (await db().entities.issueLink.query.byWorkspace({ workspace_id: workspaceId, kind: "planner" }).go({ pages: "all" })).data;

/** How many times each id was read since `mark` (an index into `reads`). */
const readCounts = (mark: number) => reads.slice(mark).reduce((m, id) => m.set(id, (m.get(id) ?? 0) + 1), new Map<string, number>());

describe("the planner sync under its work budget", () => {
  it("a sync of more links than a batch answers its first batch, queues the rest, and the chain syncs every link once", async () => {
    const s = await seeded(0, MAX_PAGE + 3);
    const mark = reads.length;
    const requests = linear.count("PlannerIssues");
    let first: any;
    const sent = await continuationsOf(async () => {
      first = await call("POST", "/api/integrations/planner/sync", { token: s.token, body: { workspace_id: s.workspaceId } });
    }, 5, "planner.sync");
    expect(first.status, first.text).toBe(200);
    // This invocation's counts (as the code-host sync answers them): the batch it read, and the links it left queued.
    expect(first.body).toEqual({ synced_count: MAX_PAGE, updated_count: MAX_PAGE, queued_count: 3 });
    expect(sent).toBe(1);
    // Two batched queries in all (one per run), each link read once.
    expect(linear.count("PlannerIssues", requests)).toBe(2);
    const counts = readCounts(mark);
    expect(counts.size).toBe(s.readableIds.length);
    expect([...counts.values()].every((n) => n === 1)).toBe(true);
    const links = await linksOf(s.workspaceId);
    expect(links).toHaveLength(MAX_PAGE + 3);
    expect(links.every((l) => l.last_synced_at && l.state === "Todo" && l.state_type === "unstarted")).toBe(true);
    expect(links.some((l) => l.sync_failed_run)).toBe(false);
  }, 120_000);

  it("a batch's worth of links Linear never answers for: the chain ends (each run reads a link once) and the readable links are synced", async () => {
    // Without `sync_failed_run` every continuation would read the same failing batch first, then queue the rest again.
    const s = await seeded(MAX_PAGE, 3);
    const mark = reads.length;
    let first: any;
    const sent = await continuationsOf(async () => {
      first = await call("POST", "/api/integrations/planner/sync", { token: s.token, body: { workspace_id: s.workspaceId } });
    }, 5, "planner.sync");
    expect(first.status, first.text).toBe(200);
    // The failing links are not counted; the readable ones were left to the continuation.
    expect(first.body).toEqual({ synced_count: 0, updated_count: 0, queued_count: 3 });
    expect(sent).toBe(1);
    const counts = readCounts(mark);
    expect(counts.size).toBe(MAX_PAGE + 3);
    expect([...counts.values()].every((n) => n === 1)).toBe(true);
    const links = await linksOf(s.workspaceId);
    const failing = new Set(s.failingIds);
    // A failing link keeps its last known state and records the run; a readable one is synced.
    const startedAt = links.find((l) => failing.has(l.issue_id!))!.sync_failed_run;
    expect(startedAt).toEqual(expect.any(String));
    for (const l of links) {
      if (failing.has(l.issue_id!)) {
        expect(l).toMatchObject({ state: "Backlog", sync_failed_run: startedAt });
        expect(l.last_synced_at).toBeUndefined();
      } else expect(l).toMatchObject({ state: "Todo", state_type: "unstarted", last_synced_at: expect.any(String) });
    }
    // The next sync (a run of its own) tries the failing links again, and its chain ends too, each link read once.
    const again = reads.length;
    const next = await continuationsOf(() => call("POST", "/api/integrations/planner/sync", { token: s.token, body: { workspace_id: s.workspaceId } }), 5, "planner.sync");
    expect(next).toBe(1);
    const nextCounts = readCounts(again);
    expect(nextCounts.size).toBe(MAX_PAGE + 3);
    expect([...nextCounts.values()].every((n) => n === 1)).toBe(true);
  }, 120_000);
});
