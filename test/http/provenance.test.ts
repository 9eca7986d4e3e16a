/**
 * Provenance stays within its tenant (issue #10 item 6, the insights half; the documents half is in
 * documents-limits.test.ts): as user B in B's own workspace, `POST /api/insights` naming A's source in `source_ids`
 * or in `quotes[].source_id` is a 422 naming the ids, and a quote given by hand is held to the engines' grounding:
 * it must occur verbatim in the extracted text of the source it names. Also: an insight too large for one item is
 * a 422, never the 500 of DynamoDB's item limit.
 */
import { randomUUID } from "node:crypto";
import { beforeAll, describe, expect, it } from "vitest";
import { call, newWorkspace } from "../support/api";
import { sourceWith } from "../support/sources";

const QUOTE = "I could not find the export button anywhere on the settings page.";

let A: { token: string; workspaceId: string; sourceId: string };
let B: { token: string; workspaceId: string; sourceId: string };

async function tenant(name: string) {
  const { owner, workspace } = await newWorkspace(name);
  const sourceId = await sourceWith(owner.token, workspace.id, [`# ${name} interview`, QUOTE, "Everything else was fine."]);
  return { token: owner.token, workspaceId: workspace.id, sourceId };
}

beforeAll(async () => {
  [A, B] = await Promise.all([tenant("Tenant A"), tenant("Tenant B")]);
});

const insight = (extra: Record<string, unknown>) => ({
  workspace_id: B.workspaceId,
  insight_type: "pain_point",
  title: "Export is hard to find",
  description: "Participants could not find the export button.",
  ...extra,
});

const insightsOfB = async () => (await call("GET", "/api/insights", { token: B.token, query: { workspace_id: B.workspaceId } })).body.total as number;

describe("POST /api/insights: every id and quote belongs to the caller's workspace", () => {
  it("refuses another tenant's source in source_ids with a 422 naming it, and stores nothing", async () => {
    const before = await insightsOfB();
    const res = await call("POST", "/api/insights", { token: B.token, body: insight({ source_ids: [B.sourceId, A.sourceId] }) });
    expect(res.status, res.text).toBe(422);
    expect(res.body.code).toBe("VALIDATION_ERROR");
    expect(res.body.detail).toContain(A.sourceId);
    expect(res.body.detail).not.toContain(B.sourceId);
    expect(res.body.errors).toEqual([{ loc: ["body", "source_ids"], msg: expect.stringContaining(A.sourceId), type: "unknown_id" }]);
    expect(await insightsOfB()).toBe(before);
  });

  it("refuses another tenant's source in quotes[].source_id, even with a verbatim quote of it", async () => {
    const res = await call("POST", "/api/insights", { token: B.token, body: insight({ quotes: [{ text: QUOTE, source_id: A.sourceId }] }) });
    expect(res.status, res.text).toBe(422);
    expect(res.body.errors).toEqual([{ loc: ["body", "quotes"], msg: expect.stringContaining(A.sourceId), type: "unknown_id" }]);
  });

  it("refuses an id that is nobody's source the same way", async () => {
    const ghost = randomUUID();
    const res = await call("POST", "/api/insights", { token: B.token, body: insight({ source_ids: [ghost] }) });
    expect(res.status, res.text).toBe(422);
    expect(res.body.detail).toContain(ghost);
  });

  it("refuses a quote that is not verbatim in its source, naming the quote", async () => {
    const res = await call("POST", "/api/insights", {
      token: B.token,
      body: insight({ quotes: [{ text: QUOTE, source_id: B.sourceId }, { text: "The export button is great.", source_id: B.sourceId }] }),
    });
    expect(res.status, res.text).toBe(422);
    expect(res.body.errors).toEqual([{ loc: ["body", "quotes", 1, "text"], msg: expect.stringMatching(/verbatim/), type: "quote_not_verbatim" }]);
  });

  it("accepts the caller's own sources and verbatim quotes (201)", async () => {
    const res = await call("POST", "/api/insights", {
      token: B.token,
      body: insight({ source_ids: [B.sourceId], quotes: [{ text: QUOTE, source_id: B.sourceId, speaker: "P1" }] }),
    });
    expect(res.status, res.text).toBe(201);
    expect(res.body).toMatchObject({ source_ids: [B.sourceId], quotes: [{ text: QUOTE, source_id: B.sourceId, speaker: "P1" }], frequency: 1 });
  });

  it("refuses an insight larger than one item holds with a 422, not the item limit's 500", async () => {
    const long = "x".repeat(4_900);
    const quotes = Array.from({ length: 90 }, () => ({ text: long, source_id: B.sourceId }));
    const res = await call("POST", "/api/insights", { token: B.token, body: insight({ quotes }) });
    expect(res.status, res.text).toBe(422);
    expect(res.body.errors[0]).toMatchObject({ loc: ["body", "quotes"], type: "too_big" });
  });
});
