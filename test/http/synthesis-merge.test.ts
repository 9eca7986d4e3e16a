/**
 * Merging a synthesis into the workspace's insights, and keeping what a merge relies on (docs/decisions.md):
 * - a PATCH resending an insight's title and description as they are keeps its synthesis centroid and search vector
 *   (only a new value is a text change);
 * - a merge never lowers an insight's frequency (a member's count of 8 with one source stays 8, plus the new source);
 * - the same verbatim quote from a second source is kept, so every merged source is cited;
 * - an archived insight is no merge target: a recurring theme becomes a new active insight, listed by default;
 * - an insight without a centroid (made by hand, or edited) is compared by its search vector, not embedded again on
 *   every synthesis.
 *
 * Every workspace holds the same interview note uploaded twice (two sources, same text): a synthesis of the second
 * finds exactly the first one's themes, with the same quotes, so each of its findings merges into an insight of the
 * first (centroid cosine 1).
 */
import { beforeAll, describe, expect, it, vi } from "vitest";
import { embedder } from "../../core/ai/select";
import { db } from "../../core/db/service";
import { dynamoClient } from "../../core/db/client";
import { call, newWorkspace } from "../support/api";
import { realFile, uploadResearch, waitFor } from "../support/multipart";

type Quote = { text: string; source_id: string };
type Insight = { id: string; title: string; description: string; source_ids: string[]; frequency: number; is_archived: boolean; quotes: Quote[] };
type Synthesis = { insights: Insight[]; insight_ids: string[]; created_ids: string[]; merged: { insight_id: string }[] };

const NOTE = "va-mobile-app/interview-notes/2023-07-retention-study-participant-10.md";

/** A fresh workspace with the same interview note as two completed sources, `a` and `b`. */
async function twinSources(name: string) {
  const { owner, workspace } = await newWorkspace(name);
  const file = await realFile(NOTE);
  const ids: string[] = [];
  for (const copy of ["a", "b"]) {
    const res = await uploadResearch(owner.token, workspace.id, { name: `${copy}-${file.name}`, data: file.data }, "text/markdown", "interview");
    expect(res.status, res.text).toBe(201);
    ids.push(res.body.id as string);
  }
  for (const id of ids) {
    const done = await waitFor(async () => {
      const r = await call("GET", `/api/research/sources/${id}`, { token: owner.token });
      return r.body.processing_status !== "pending" ? r.body : undefined;
    }, 90_000);
    expect(done.processing_status, done.processing_error).toBe("completed");
  }
  return { token: owner.token, workspaceId: workspace.id, a: ids[0]!, b: ids[1]! };
}

async function synthesize(token: string, workspace_id: string, source_ids: string[]): Promise<Synthesis> {
  const res = await call("POST", "/api/research/synthesize", { token, body: { workspace_id, source_ids } });
  expect(res.status, res.text).toBe(200);
  return res.body as Synthesis;
}

const stored = async (workspace_id: string, id: string) => (await db().entities.insight.get({ workspace_id, id }).go({ consistent: true })).data!;

describe("synthesis merges", () => {
  it("a PATCH resending the title and description unchanged keeps the synthesis centroid and the search vector", async () => {
    const ws = await twinSources("Merge: unchanged text");
    const first = await synthesize(ws.token, ws.workspaceId, [ws.a]);
    const insight = first.insights[0]!;
    const before = await stored(ws.workspaceId, insight.id);
    expect(before.vector, "a synthesized insight stores its centroid").toBeDefined();
    expect(before.search_vector).toBeDefined();

    const res = await call("PATCH", `/api/insights/${insight.id}`, { token: ws.token, body: { title: insight.title, description: insight.description, severity: "high" } });
    expect(res.status, res.text).toBe(200);
    expect(res.body).toMatchObject({ title: insight.title, description: insight.description, severity: "high" });
    const after = await stored(ws.workspaceId, insight.id);
    expect(after.vector).toBe(before.vector);
    expect(after.embedder_id).toBe(before.embedder_id);
    expect(after.search_vector).toBe(before.search_vector);

    // A real change still drops the centroid (it no longer describes the text).
    const renamed = await call("PATCH", `/api/insights/${insight.id}`, { token: ws.token, body: { title: `${insight.title} (renamed)` } });
    expect(renamed.status, renamed.text).toBe(200);
    const changed = await stored(ws.workspaceId, insight.id);
    expect(changed.vector).toBeUndefined();
    expect(changed.embedder_id).toBeUndefined();
  }, 120_000);

  describe("into active insights", () => {
    let ws: Awaited<ReturnType<typeof twinSources>>;
    let first: Synthesis;
    let counted: Insight;
    /** The first run's insights after the second run merged into them, by id. */
    const after = new Map<string, Insight>();

    beforeAll(async () => {
      ws = await twinSources("Merge: frequency and quotes");
      first = await synthesize(ws.token, ws.workspaceId, [ws.a]);
      expect(first.insights.length).toBeGreaterThan(0);
      // A member's count: 8 participants said so, one source named (as POST /api/insights with frequency 8 stores it).
      counted = first.insights[0]!;
      await db().entities.insight.patch({ workspace_id: ws.workspaceId, id: counted.id }).set({ frequency: 8 }).go();

      const second = await synthesize(ws.token, ws.workspaceId, [ws.b]);
      expect(second.created_ids, "the same text finds the same themes").toEqual([]);
      expect(new Set(second.merged.map((m) => m.insight_id))).toEqual(new Set(first.insight_ids));
      for (const { id } of first.insights) {
        const got = await call("GET", `/api/insights/${id}`, { token: ws.token });
        expect(got.status, got.text).toBe(200);
        after.set(id, got.body as Insight);
        expect(new Set(after.get(id)!.source_ids)).toEqual(new Set([ws.a, ws.b]));
      }
    }, 180_000);

    it("never lowers the stored frequency: the stored count (or the known sources) plus the source added", () => {
      for (const before of first.insights) expect(after.get(before.id)!.frequency, before.title).toBe(before.id === counted.id ? 9 : 2);
    });

    it("keeps the second source's identical verbatim quote, so the merged source is cited", () => {
      const withRoom = first.insights.filter((i) => i.quotes.length < 12);
      expect(withRoom.length, "insights with room for another quote (12 at most)").toBeGreaterThan(0);
      for (const before of withRoom) {
        const quotes = after.get(before.id)!.quotes;
        expect(quotes.some((q) => q.source_id === ws.b), `insight "${before.title}" cites source b`).toBe(true);
        // Source b's quotes are the very words of source a's.
        for (const q of quotes.filter((q) => q.source_id === ws.b)) expect(before.quotes.map((p) => p.text)).toContain(q.text);
      }
      for (const i of after.values()) expect(new Set(i.quotes.map((q) => `${q.source_id}\n${q.text}`)).size, "no quote twice").toBe(i.quotes.length);
    });
  });

  it("does not merge into an archived insight: the recurring theme becomes a new active insight, listed by default", async () => {
    const ws = await twinSources("Merge: archived");
    const first = await synthesize(ws.token, ws.workspaceId, [ws.a]);
    expect(first.insight_ids.length).toBeGreaterThan(0);
    const archived = await call("POST", "/api/insights/batch", { token: ws.token, body: { workspace_id: ws.workspaceId, insight_ids: first.insight_ids, action: "archive" } });
    expect(archived.status, archived.text).toBe(200);

    const second = await synthesize(ws.token, ws.workspaceId, [ws.b]);
    expect(second.merged).toEqual([]);
    expect(second.created_ids.length).toBe(first.insight_ids.length);
    for (const id of second.created_ids) expect(first.insight_ids).not.toContain(id);

    const listed = await call("GET", "/api/insights", { token: ws.token, query: { workspace_id: ws.workspaceId } });
    expect(listed.status, listed.text).toBe(200);
    expect(new Set((listed.body.insights as Insight[]).map((i) => i.id))).toEqual(new Set(second.created_ids));
    for (const i of listed.body.insights as Insight[]) expect(i.source_ids).toEqual([ws.b]);
    // The archived insights are as they were: archived, with only source a.
    for (const id of first.insight_ids) {
      const item = await stored(ws.workspaceId, id);
      expect(item.is_archived).toBe(true);
      expect(item.source_ids).toEqual([ws.a]);
    }
  }, 180_000);

  it("compares an insight without a centroid by its search vector: its text is not embedded again on every synthesis", async () => {
    const ws = await twinSources("Merge: no centroid");
    const first = await synthesize(ws.token, ws.workspaceId, [ws.a]);
    // As a hand-made insight, or one whose text was edited: a search vector, no centroid.
    const plain = first.insights[0]!;
    await db().entities.insight.patch({ workspace_id: ws.workspaceId, id: plain.id }).remove(["vector", "embedder_id"]).go();
    expect((await stored(ws.workspaceId, plain.id)).search_vector).toBeDefined();

    const emb = await embedder();
    const embed = vi.spyOn(emb, "embed");
    try {
      const second = await synthesize(ws.token, ws.workspaceId, [ws.b]);
      const texts = embed.mock.calls.flatMap(([batch]) => batch);
      expect(texts.length, "the run embeds its mentions").toBeGreaterThan(0);
      expect(texts).not.toContain(`${plain.title}. ${plain.description}`);
      // Its text's vector still finds the theme it states (the same words as the new source's finding).
      expect(second.merged.map((m) => m.insight_id)).toContain(plain.id);
    } finally {
      embed.mockRestore();
    }
  }, 180_000);

  it("a PATCH resending the text it read is refused (409) when another request renamed the insight meanwhile", async () => {
    const { owner, workspace } = await newWorkspace("Merge: concurrent rename");
    const made = await call("POST", "/api/insights", { token: owner.token, body: { workspace_id: workspace.id, insight_type: "pain_point", title: "Export is hidden", description: "Users cannot find export.", severity: "medium" } });
    expect(made.status, made.text).toBe(201);
    const id = made.body.id as string;
    // Between this request's read and its write, another request renames the insight (its write commits first).
    const hook = `renameMeanwhile-${Math.random()}`;
    let renamed = false;
    dynamoClient().middlewareStack.add(
      (next, context) => async (args) => {
        if (!renamed && /^UpdateItem/.test(String(context.commandName)) && JSON.stringify(args.input).includes(id)) {
          renamed = true;
          await db().entities.insight.patch({ workspace_id: workspace.id, id }).set({ title: "Export is buried" }).go();
        }
        return next(args);
      },
      { step: "initialize", name: hook },
    );
    try {
      const res = await call("PATCH", `/api/insights/${id}`, { token: owner.token, body: { title: "Export is hidden", notes: "seen in 3 calls" } });
      expect(res.status, res.text).toBe(409);
    } finally {
      dynamoClient().middlewareStack.remove(hook);
    }
    expect(renamed).toBe(true);
    expect((await stored(workspace.id, id)).title).toBe("Export is buried");
  });
});
