/**
 * A retried `POST /api/integrations/planner/issues` (no pending action): the issue is created under an id hashed from
 * the request's content, so when the link write fails after Linear created it, the same request again finds and
 * adopts that issue instead of creating a second; an identical request whose issue is linked already creates another
 * on purpose (under a random id).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { call, newWorkspace } from "../support/api";
import { connectLinear, LinearStandIn, useLinearSettings } from "../support/linear-standin";
import { storeFails } from "../support/store-faults";
import { expectEnvelope } from "./_helpers";

const linear = new LinearStandIn();

beforeAll(() => {
  useLinearSettings(linear);
  linear.listen();
});
afterAll(() => linear.close());

async function setup(title: string) {
  const { owner, workspace } = await newWorkspace("Planner retry");
  await connectLinear(linear, owner.token, workspace.id);
  const eng = linear.team("ENG");
  const sel = await call("POST", "/api/integrations/planner/teams/select", { token: owner.token, body: { workspace_id: workspace.id, team_id: eng.id, team_name: "Engineering", project_id: eng.projects[0]!.id } });
  expect(sel.status, sel.text).toBe(200);
  const rec = await call("POST", "/api/recommendations", { token: owner.token, body: { workspace_id: workspace.id, title, description: "Uploads over 50 MB fail on flaky connections." } });
  expect(rec.status, rec.text).toBe(201);
  const body = { workspace_id: workspace.id, recommendation_id: rec.body.id as string, priority: 2 };
  return {
    rec: rec.body as { id: string },
    create: () => call("POST", "/api/integrations/planner/issues", { token: owner.token, body }),
    links: async () => (await call("GET", "/api/integrations/planner/links", { token: owner.token, query: { workspace_id: workspace.id, recommendation_id: rec.body.id } })).body.links as { id: string; issue_id: string; identifier: string }[],
    /** The stand-in's issues of this test (its title is unique to it). */
    issues: () => [...linear.issues.values()].filter((i) => i.title === title).map((i) => i.id).sort(),
  };
}

/** The next write of a planner link of `recId` (a PutItem whose key names it) fails, once. */
const linkPutFailsOnce = (recId: string) => storeFails(/^PutItem/, `issue_link#planner#${recId}#`, 1);

describe("a retried create", () => {
  it("the link write fails once: 500 INTERNAL; the same request again answers the issue the first attempt created, one issue and one link", async () => {
    const s = await setup("Resume uploads (planner retry)");
    const fault = linkPutFailsOnce(s.rec.id);
    try {
      const first = await s.create();
      expect(fault.failed()).toBe(1);
      expectEnvelope(first, 500, "INTERNAL"); // as any store failure answers
    } finally {
      fault.remove();
    }
    expect(s.issues()).toHaveLength(1); // the orphan: created at Linear, not linked
    expect(await s.links()).toEqual([]);
    const again = await s.create();
    expect(again.status, again.text).toBe(200);
    const [issueId] = s.issues();
    expect(s.issues()).toHaveLength(1);
    expect(await s.links()).toEqual([expect.objectContaining({ id: again.body.link_id, issue_id: issueId, identifier: again.body.issue_identifier })]);
  });

  it("deliberate duplicates still work: after an adopted retry, identical requests create new issues, each linked once", async () => {
    const s = await setup("Resume uploads (planner duplicates)");
    const fault = linkPutFailsOnce(s.rec.id);
    try {
      expectEnvelope(await s.create(), 500, "INTERNAL");
    } finally {
      fault.remove();
    }
    const adopted = await s.create();
    expect(adopted.status, adopted.text).toBe(200);
    // The issue is linked now: the same request again asks for another on purpose (its derived id is taken).
    const second = await s.create();
    const third = await s.create();
    expect([second.status, third.status]).toEqual([200, 200]);
    expect(new Set([adopted.body.issue_identifier, second.body.issue_identifier, third.body.issue_identifier]).size).toBe(3);
    expect(s.issues()).toHaveLength(3);
    const links = await s.links();
    expect(links.map((l) => l.issue_id).sort()).toEqual(s.issues());
    expect(links.map((l) => l.id).sort()).toEqual([adopted.body.link_id, second.body.link_id, third.body.link_id].sort());
  });

  it("two identical requests that both succeed create two issues and two links", async () => {
    const s = await setup("Resume uploads (planner twice)");
    const a = await s.create();
    const b = await s.create();
    expect([a.status, b.status]).toEqual([200, 200]);
    expect(a.body.issue_identifier).not.toBe(b.body.issue_identifier);
    expect(s.issues()).toHaveLength(2);
    expect((await s.links()).map((l) => l.issue_id).sort()).toEqual(s.issues());
  });
});
