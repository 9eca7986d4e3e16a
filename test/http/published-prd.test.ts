/**
 * The end of `npm run demo` (issue #10, point 16): a PRD drafted from a recommendation by the local engine is moved
 * draft -> review -> approved -> published, fetched again, and its content printed. The printed PRD must not say it
 * is a draft: the status is the document's `status` field, and nothing in the content may contradict it.
 */
import { describe, expect, it } from "vitest";
import { call, newWorkspace } from "../support/api";
import { uploadResearch, waitFor } from "../support/multipart";

describe("the PRD the demo prints after publishing", () => {
  it("does not state a status other than published", async () => {
    const { owner, workspace } = await newWorkspace("Published PRD");
    const token = owner.token;
    // A research source of the workspace holding the quotes: insights may only quote the workspace's own sources.
    const quotes = ["I keep getting logged out and have to sign in again every time", "I wish the app reminded me about my appointments the day before"];
    const upload = await uploadResearch(token, workspace.id, { name: "notes.txt", data: Buffer.from(`${quotes.join("\n\n")}\n`) }, "text/plain");
    expect(upload.status, upload.text).toBe(201);
    const source = upload.body.id as string;
    await waitFor(async () => (await call("GET", `/api/research/sources/${source}`, { token })).body.processing_status === "completed");
    const insights = await Promise.all(
      [
        ["Users get logged out and struggle to sign in", "pain_point", quotes[0]],
        ["Users want appointment reminders", "feature_request", quotes[1]],
      ].map(async ([title, insight_type, quote]) => {
        const res = await call("POST", "/api/insights", {
          token,
          body: { workspace_id: workspace.id, insight_type, title, description: title, severity: "high", quotes: [{ text: quote, source_id: source }] },
        });
        expect(res.status, res.text).toBe(201);
        return res.body.id as string;
      }),
    );
    const rec = await call("POST", "/api/recommendations", {
      token,
      body: {
        workspace_id: workspace.id, title: "Keep users signed in and remind them of appointments", description: "Longer sessions plus reminders",
        addresses_insight_ids: insights, rationale: "The top two complaints", effort_estimate: "medium", effort_weeks: 4, impact_score: 0.8,
      },
    });
    expect(rec.status, rec.text).toBe(201);

    // The demo's calls, in its order.
    const draft = await call("POST", "/api/documents/draft", { token, body: { workspace_id: workspace.id, document_type: "prd", recommendation_id: rec.body.id } });
    expect(draft.status, draft.text).toBe(200);
    for (const target_status of ["review", "approved", "published"]) {
      const res = await call("POST", `/api/documents/${draft.body.id}/status`, { token, body: { target_status } });
      expect(res.status, res.text).toBe(200);
    }
    const final = await call("GET", `/api/documents/${draft.body.id}`, { token });
    expect(final.body.status).toBe("published");
    expect(final.body.content).toContain("Keep users signed in");
    expect(final.body.content).not.toMatch(/\bstatus:?\s*\**\s*(draft|review|approved)\b/i);
  });
});
