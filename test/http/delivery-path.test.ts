import { describe, expect, it } from "vitest";
import { call, newWorkspace } from "../support/api";
import { sourceWith } from "../support/sources";

describe("delivery path through the API", () => {
  it("generates, accepts, drafts a PRD, works its blocks and versions, and publishes", async () => {
    const { owner, workspace } = await newWorkspace();
    const token = owner.token;
    const seeds = [
      ["Users get logged out and struggle to sign in", "pain_point", "high", "I keep getting logged out and have to sign in again every time"],
      ["Refilling prescriptions takes too many steps", "pain_point", "medium", "It takes five screens to refill one prescription"],
      ["Users want appointment reminders", "feature_request", "medium", "I wish the app reminded me about my appointments"],
    ] as const;
    // A research source of the workspace holding every quote verbatim (an insight may only quote its own sources).
    const src = await sourceWith(token, workspace.id, seeds.map(([, , , quote]) => quote));
    const insightIds: string[] = [];
    for (const [title, type, severity, quote] of seeds) {
      const res = await call("POST", "/api/insights", {
        token,
        body: { workspace_id: workspace.id, insight_type: type, title, description: title, severity, quotes: [{ text: quote, source_id: src, speaker: "P10" }] },
      });
      expect(res.status, res.text).toBe(201);
      insightIds.push(res.body.id);
    }
    const gen = await call("POST", "/api/recommendations/generate", { token, body: { workspace_id: workspace.id, insight_ids: insightIds, focus_areas: ["login"] } });
    expect(gen.status, gen.text).toBe(200);
    expect(gen.body.count).toBeGreaterThanOrEqual(3);
    expect(gen.body.count).toBeLessThanOrEqual(7);
    const top = gen.body.recommendations[0];
    const accepted = await call("PATCH", `/api/recommendations/${top.id}/status`, { token, body: { status: "accepted", user_notes: "go" } });
    expect(accepted.body.status).toBe("accepted");
    const bad = await call("PATCH", `/api/recommendations/${top.id}/status`, { token, body: { status: "implemented" } });
    expect(bad.status).toBe(422);
    expect(bad.body.code).toBe("INVALID_TRANSITION");
    expect(bad.body.valid_transitions).toEqual(expect.arrayContaining(["in_progress", "rejected", "suggested"]));

    const drafted = await call("POST", "/api/documents/draft", { token, body: { workspace_id: workspace.id, document_type: "prd", recommendation_id: top.id } });
    expect(drafted.status, drafted.text).toBe(200);
    expect(drafted.body.status).toBe("draft");
    const doc = drafted.body;
    const extracted = await call("POST", "/api/blocks/extract", { token, body: { workspace_id: workspace.id, document_id: doc.id } });
    expect(extracted.status, extracted.text).toBe(200);
    expect(extracted.body.count).toBeGreaterThan(3);
    const challenged = await call("POST", `/api/blocks/${extracted.body.blocks[0].id}/challenge`, { token });
    expect(challenged.status, challenged.text).toBe(200);
    expect(Array.isArray(challenged.body.weaknesses)).toBe(true);

    const v = await call("POST", `/api/documents/${doc.id}/versions`, { token, body: { change_summary: "first save" } });
    expect(v.status, v.text).toBe(201);
    expect(v.body.revision_number).toBe(2);
    await call("PATCH", `/api/documents/${doc.id}`, { token, body: { content: `${doc.content}\n\nAn added line.` } });
    const v2 = await call("POST", `/api/documents/${doc.id}/versions`, { token, body: {} });
    const diff = await call("GET", `/api/documents/${doc.id}/diff`, { token, query: { from_revision: 2, to_revision: v2.body.revision_number } });
    expect(diff.status, diff.text).toBe(200);
    expect(diff.body.diff_stats.additions).toBeGreaterThan(0);
    const restored = await call("POST", `/api/documents/${doc.id}/versions/${v.body.id}/restore`, { token, body: {} });
    expect(restored.status, restored.text).toBe(200);
    expect(restored.body.document.content).toBe(doc.content);
    for (const s of ["review", "approved", "published"]) {
      const moved = await call("POST", `/api/documents/${doc.id}/status`, { token, body: { target_status: s } });
      expect(moved.status, moved.text).toBe(200);
    }
    const back = await call("POST", `/api/documents/${doc.id}/status`, { token, body: { target_status: "draft" } });
    expect(back.status).toBe(422);
    const list = await call("GET", `/api/documents/${doc.id}/versions`, { token });
    expect(list.body.revisions[0].revision_number).toBeGreaterThan(list.body.revisions[1].revision_number);
  });
});
