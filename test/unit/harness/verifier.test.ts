/**
 * The independent verifier (core/harness/verifier.ts) against DynamoDB Local and the local object store: it re-reads
 * the table and the sources' stored texts, so an id that does not resolve, a quote that is not in its source, a false
 * count, or an insight whose stored quote was altered after the fact all fail, and what holds passes.
 */
import { randomUUID } from "node:crypto";
import { beforeAll, describe, expect, it, vi } from "vitest";
import { verify } from "../../../core/harness/verifier";
import { db } from "../../../core/db/service";
import { snapshotOf } from "../../../core/harness/profile";
import { call, newWorkspace } from "../../support/api";
import { uploadResearch, waitFor } from "../../support/multipart";
import { withholdBatchKeys } from "../../support/throttle";

const TEXT = "# Interview\n\nI keep getting sent back to the login screen after every update.\n\nThe export button is impossible to find.\n";
let ws: string;
let token: string;
let source: string;
let insight: string;

beforeAll(async () => {
  const w = await newWorkspace("Verifier");
  ws = w.workspace.id;
  token = w.owner.token;
  const up = await uploadResearch(token, ws, { name: "ana.md", data: Buffer.from(TEXT) }, "text/markdown", "interview");
  source = up.body.id;
  await waitFor(async () => (await call("GET", `/api/research/sources/${source}`, { token })).body.processing_status === "completed");
  const res = await call("POST", "/api/insights", {
    token,
    body: { workspace_id: ws, insight_type: "pain_point", title: "Sign-in loops after updates", description: "Users are signed out.", severity: "high", quotes: [{ text: "I keep getting sent back to the login screen", source_id: source, speaker: null }] },
  });
  insight = res.body.id;
}, 120_000);

describe("verify", () => {
  it("passes claims that hold: ids, a verbatim quote (case and quote marks aside), the counts", async () => {
    const unitCount = (await call("GET", `/api/research/sources/${source}`, { token })).body.unit_count;
    const text = [
      `1. **Sign-in loops after updates** (pain point, high, 1 source) [insight ${insight}]`,
      `   > "i keep getting sent back to the login screen after every update" [source ${source}]`,
      `This workspace has 1 research source: 1 interview (1 completed):`,
      `- **ana.md** (interview, completed, ${unitCount} mentions) [source ${source}]`,
      "(1 sources, 1 insights, 0 recommendations, 0 documents.)",
    ].join("\n");
    const v = await verify({ workspaceId: ws, text, insightIds: [insight] });
    expect(v.issues).toEqual([]);
    expect(v).toMatchObject({ passed: true, score: 1, statements: 5, grounded: [0, 1, 2, 3, 4] });
    expect(v.claims).toBe(14); // 3 ids, 2 quotes (the answer's, the insight's own), 9 counts
    expect(v.validation).toMatchObject({ citations: { total: 2, resolved: 2, unresolved: [] }, severity: { unsupported: [{ insight_id: insight, severity: "high" }] } });
  });

  it("under throttling (keys left unprocessed) an id that exists is never judged unknown: asked again, or an error", async () => {
    const text = `See [insight ${insight}] and [source ${source}].`;
    // Left unprocessed twice: asked again after a backoff, and it resolves.
    const twice = withholdBatchKeys(insight, 2);
    try {
      const v = await verify({ workspaceId: ws, text });
      expect(twice.withheld()).toBe(2);
      expect(v.issues).toEqual([]);
    } finally {
      twice.remove();
    }
    // Left unprocessed on every try: the verifier fails (503), rather than fail a citation that is right.
    const always = withholdBatchKeys(insight, 100);
    try {
      await expect(verify({ workspaceId: ws, text })).rejects.toMatchObject({ code: "SERVICE_UNAVAILABLE" });
    } finally {
      always.remove();
    }
  });

  it("fails an unknown id, an altered quote, a false count, and an insight whose stored quote was altered", async () => {
    const ghost = randomUUID();
    const text = [
      `See [insight ${ghost}] and [source ${insight}].`,
      `> "I am always sent back to the login screen" [source ${source}]`,
      `This workspace has 3 research sources: 2 interviews (3 completed):`,
    ].join("\n");
    const { data } = await db().entities.insight.get({ workspace_id: ws, id: insight }).go();
    await db().entities.insight.patch({ workspace_id: ws, id: insight }).set({ quotes: [{ ...data!.quotes![0]!, text: "I keep being sent back to the login page" }], origin: "synthesis" }).go();
    try {
      const v = await verify({ workspaceId: ws, text, insightIds: [insight] });
      expect(v.passed).toBe(false);
      expect(v.issues).toEqual([
        `Insight ${ghost} does not resolve in this workspace`,
        `Source ${insight} does not resolve in this workspace`,
        `“I am always sent back to the login screen” is not verbatim in source ${source}`,
        `“I keep being sent back to the login page” is not verbatim in source ${source}`,
        "The count 3 (sources total) is false: the workspace has 1",
        "The count 2 (sources of type) is false: the workspace has 1",
        "The count 3 (sources with status) is false: the workspace has 1",
      ]);
      expect(v.grounded).toEqual([]);
      expect(v.score).toBeCloseTo((v.claims - 7) / v.claims, 3);
      expect(v.artifactQuotes).toEqual({ insights: 1, grounded: 0 });
    } finally {
      await db().entities.insight.patch({ workspace_id: ws, id: insight }).set({ quotes: data!.quotes, origin: "manual" }).go();
    }
  });

  it("checks a synthesized insight's frequency against its distinct sources, and a recommendation's insights", async () => {
    await db().entities.insight.patch({ workspace_id: ws, id: insight }).set({ origin: "synthesis", frequency: 2 }).go();
    const rec = await call("POST", "/api/recommendations", { token, body: { workspace_id: ws, title: "Fix sign-in", description: "Keep sessions.", addresses_insight_ids: [insight] } });
    await db().entities.recommendation.patch({ workspace_id: ws, id: rec.body.id }).set({ addresses_insight_ids: [insight, "00000000-0000-4000-8000-000000000000"] }).go();
    try {
      const v = await verify({ workspaceId: ws, text: "", insightIds: [insight], recommendationIds: [rec.body.id] });
      expect(v.issues).toEqual(["The count 2 (insight sources) is false: the workspace has 1", `Recommendation ${rec.body.id} addresses insight 00000000-0000-4000-8000-000000000000, which does not exist`]);
    } finally {
      await db().entities.insight.patch({ workspace_id: ws, id: insight }).set({ origin: "manual", frequency: 1 }).go();
    }
  });

  it("looks a quote attributed to nothing up in the pre-flight's texts first, and reads the workspace only for one not there", async () => {
    // The partition Query of the insights' texts is what the fresh read sends; counted on the insight entity.
    const insightQueries = vi.spyOn(db().entities.insight.query, "byWorkspace");
    try {
      const snapshot = await snapshotOf(ws);
      const before = insightQueries.mock.calls.length;
      // An insight's title, quoted with no source: found in the snapshot's texts, nothing read.
      const known = await verify({ workspaceId: ws, text: `Users say: "Sign-in loops after updates".`, snapshotTexts: snapshot.texts });
      expect(known.issues).toEqual([]);
      expect(insightQueries.mock.calls.length).toBe(before);
      // A title written after the snapshot: not in its texts, so the workspace is read fresh, and the quote holds.
      const late = await call("POST", "/api/insights", { token, body: { workspace_id: ws, insight_type: "pain_point", title: "Dark mode resets nightly", description: "Theme goes back to light." } });
      expect(late.status, late.text).toBe(201);
      const fresh = await verify({ workspaceId: ws, text: `Users say: "Dark mode resets nightly".`, snapshotTexts: snapshot.texts });
      expect(fresh.issues).toEqual([]);
      expect(insightQueries.mock.calls.length).toBe(before + 1);
      // A quote that is nowhere fails, with or without the snapshot.
      for (const snapshotTexts of [snapshot.texts, undefined]) {
        const v = await verify({ workspaceId: ws, text: `Users say: "the app deletes my photos".`, snapshotTexts });
        expect(v.failures).toEqual([expect.objectContaining({ kind: "quote_not_verbatim", quote: "the app deletes my photos" })]);
      }
      await call("DELETE", `/api/insights/${late.body.id}`, { token });
    } finally {
      insightQueries.mockRestore();
    }
  });
});
