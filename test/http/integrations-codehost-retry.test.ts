/**
 * A retried `POST /api/integrations/codehost/issues` (no pending action): when the link write fails after GitHub
 * created the issue, the same request again adopts that issue (found by the marker hashed from the request's content)
 * instead of creating a second; an identical request whose issue is linked already creates another on purpose.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { call, newWorkspace } from "../support/api";
import { GitHubStandIn } from "../support/github-standin";
import { connectGithub, useStandInSettings } from "../support/integrations";
import { storeFails } from "../support/store-faults";
import { expectEnvelope } from "./_helpers";

const REPO = "octokit-fixture-org/hello-world";
const byNumber = (a: number, b: number) => a - b;
const github = new GitHubStandIn([REPO]);

beforeAll(() => {
  useStandInSettings(github);
  github.listen();
});
afterAll(() => github.close());

async function setup(title: string) {
  const { owner, workspace } = await newWorkspace("Code host retry");
  await connectGithub(github, owner.token, workspace.id);
  const sel = await call("POST", "/api/integrations/codehost/repos/select", { token: owner.token, body: { workspace_id: workspace.id, repos: [REPO] } });
  expect(sel.status, sel.text).toBe(200);
  const rec = await call("POST", "/api/recommendations", { token: owner.token, body: { workspace_id: workspace.id, title, description: "Uploads over 50 MB fail on flaky connections." } });
  expect(rec.status, rec.text).toBe(201);
  const body = { workspace_id: workspace.id, recommendation_id: rec.body.id as string, repo: REPO, labels: ["research"] };
  return {
    rec: rec.body as { id: string },
    create: () => call("POST", "/api/integrations/codehost/issues", { token: owner.token, body }),
    links: async () => (await call("GET", "/api/integrations/codehost/links", { token: owner.token, query: { workspace_id: workspace.id, recommendation_id: rec.body.id } })).body.links as { id: string; issue_number: number }[],
    /** The stand-in's issues of this test (its title is unique to it). */
    issues: () => github.repos.get(REPO)!.issues.filter((i) => i.title === title).map((i) => i.number),
  };
}

/** The next write of a code-host link of `recId` (a PutItem whose key names it) fails, once. */
const linkPutFailsOnce = (recId: string) => storeFails(/^PutItem/, `issue_link#codehost#${recId}#`, 1);

describe("a retried create", () => {
  it("the link write fails once: 500 INTERNAL; the same request again answers the issue the first attempt created, one issue and one link", async () => {
    const s = await setup("Resume uploads (retry)");
    const fault = linkPutFailsOnce(s.rec.id);
    try {
      const first = await s.create();
      expect(fault.failed()).toBe(1);
      expectEnvelope(first, 500, "INTERNAL"); // as any store failure answers
    } finally {
      fault.remove();
    }
    expect(s.issues()).toHaveLength(1); // the orphan: created at GitHub, not linked
    expect(await s.links()).toEqual([]);
    const again = await s.create();
    expect(again.status, again.text).toBe(200);
    expect(s.issues()).toEqual([again.body.issue_number]);
    expect(github.issue(REPO, again.body.issue_number).body).toMatch(/^Uploads over 50 MB fail on flaky connections\.\n\n<!-- r2d:issue:[0-9a-f]{32} -->$/);
    expect(await s.links()).toEqual([expect.objectContaining({ id: again.body.link_id, issue_number: again.body.issue_number, repo_full_name: REPO })]);
  });

  it("deliberate duplicates still work: after an adopted retry, identical requests create new issues, and a duplicate's own failed link write is adopted by its retry", async () => {
    const s = await setup("Resume uploads (duplicates)");
    let fault = linkPutFailsOnce(s.rec.id);
    try {
      expectEnvelope(await s.create(), 500, "INTERNAL");
    } finally {
      fault.remove();
    }
    const adopted = await s.create();
    expect(adopted.status, adopted.text).toBe(200);
    // The issue is linked now: the same request again asks for another on purpose.
    const second = await s.create();
    expect(second.status, second.text).toBe(200);
    expect(second.body.issue_number).not.toBe(adopted.body.issue_number);
    expect(second.body.link_id).not.toBe(adopted.body.link_id);
    // A third whose link write fails: its retry finds its own issue (the newest carrying the marker), not a linked one.
    fault = linkPutFailsOnce(s.rec.id);
    try {
      expectEnvelope(await s.create(), 500, "INTERNAL");
    } finally {
      fault.remove();
    }
    const third = await s.create();
    expect(third.status, third.text).toBe(200);
    expect(new Set([adopted.body.issue_number, second.body.issue_number, third.body.issue_number]).size).toBe(3);
    expect(s.issues().sort(byNumber)).toEqual([adopted.body.issue_number, second.body.issue_number, third.body.issue_number].sort(byNumber));
    const links = await s.links();
    expect(links.map((l) => l.issue_number).sort(byNumber)).toEqual(s.issues().sort(byNumber));
    expect(links.map((l) => l.id).sort()).toEqual([adopted.body.link_id, second.body.link_id, third.body.link_id].sort());
  });

  it("two identical requests that both succeed create two issues and two links", async () => {
    const s = await setup("Resume uploads (twice)");
    const a = await s.create();
    const b = await s.create();
    expect([a.status, b.status]).toEqual([200, 200]);
    expect(a.body.issue_number).not.toBe(b.body.issue_number);
    expect(s.issues()).toHaveLength(2);
    expect((await s.links()).map((l) => l.issue_number).sort(byNumber)).toEqual([a.body.issue_number, b.body.issue_number].sort(byNumber));
  });
});
