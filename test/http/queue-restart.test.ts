/**
 * The embedded runtime's queues survive a restart (local/events.ts with a queue directory, as `npm start` wires them
 * under its data folder): a code-host sync GitHub rate-limited is queued with GitHub's retry-after; the runtime's
 * queues are then stopped before the wait is over and wired again on the same directory, as a restart does, and the
 * new integrations queue runs the job after its wait. Without the journal the job was lost with the process.
 */
import { mkdtemp, readdir, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { call, newWorkspace } from "../support/api";
import { GitHubStandIn } from "../support/github-standin";
import { connectGithub, useStandInSettings } from "../support/integrations";
import { localIntegrationsQueue, wireLocalEvents } from "../../local/events";
import type { RunningS3 } from "../../local/s3";

const REPO = "octokit-fixture-org/hello-world";
const github = new GitHubStandIn([REPO]);
// The object store's events are not what is tested: the test file's own store stays wired (test/support/setup.ts).
const noObjectEvents = { endpoint: "", onEvent: () => undefined, stop: async () => undefined } satisfies RunningS3;
let queueDir: string;

beforeAll(async () => {
  useStandInSettings(github);
  github.listen();
  queueDir = await mkdtemp(join(tmpdir(), "r2d-queues-"));
  wireLocalEvents(noObjectEvents, { queueDir });
});
afterAll(async () => {
  github.close();
  await localIntegrationsQueue().stop();
  // Back to in-memory queues, as the rest of the test run has them.
  wireLocalEvents(noObjectEvents);
  await rm(queueDir, { recursive: true, force: true });
});

describe("queued integration work across a restart of the embedded runtime", () => {
  it("a sync deferred by GitHub's rate limit runs after the restart, once GitHub's wait is over", async () => {
    const { owner, workspace } = await newWorkspace("Queue restart");
    await connectGithub(github, owner.token, workspace.id);
    expect((await call("POST", "/api/integrations/codehost/repos/select", { token: owner.token, body: { workspace_id: workspace.id, repos: [REPO] } })).status).toBe(200);
    const rec = await call("POST", "/api/recommendations", { token: owner.token, body: { workspace_id: workspace.id, title: "Resume uploads", description: "Large uploads fail." } });
    expect(rec.status, rec.text).toBe(201);
    const issue = await call("POST", "/api/integrations/codehost/issues", { token: owner.token, body: { workspace_id: workspace.id, recommendation_id: rec.body.id, repo: REPO } });
    expect(issue.status, issue.text).toBe(200);
    github.close_(REPO, issue.body.issue_number, "completed");
    github.fail({ match: new RegExp(`^GET /repos/${REPO}/issues/${issue.body.issue_number}$`), status: 403, headers: { "retry-after": "3" }, message: "You have exceeded a secondary rate limit. Please wait a few minutes before you try again." });
    const started = Date.now();
    const sync = await call("POST", "/api/integrations/codehost/sync", { token: owner.token, body: { workspace_id: workspace.id } });
    expect(sync.body).toEqual({ synced_count: 0, updated_count: 0, queued_count: 1 });
    // The restart, while the job waits out GitHub's 3 s: the old queues end, new ones are wired on the same directory.
    await localIntegrationsQueue().stop();
    const statusOf = async () => (await call("GET", `/api/recommendations/${rec.body.id}`, { token: owner.token })).body.status as string;
    expect(await statusOf()).toBe("suggested");
    wireLocalEvents(noObjectEvents, { queueDir });

    await localIntegrationsQueue().idle();
    expect(await statusOf()).toBe("implemented");
    expect(Date.now() - started).toBeGreaterThanOrEqual(3000);
    // Done with: nothing is left to deliver at the next start.
    expect((await readdir(join(queueDir, "integrations"))).filter((f) => f.endsWith(".json"))).toEqual([]);
  });
});
