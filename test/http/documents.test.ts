/**
 * Documents over HTTP (spec 01 Document, Document revision, Document status, Documents endpoints, Limits;
 * docs/decisions.md Documents): create with the first revision, list filters, get, patch (title / content /
 * metadata merge, published still editable), delete with children, versions (save, list, get, immutable), diff,
 * restore (pre_restore + restore snapshots), every allowed status transition and a sample of disallowed ones, and
 * drafting every document type from a recommendation with its insights' quotes verbatim.
 */
import { randomUUID } from "node:crypto";
import { beforeAll, describe, expect, it } from "vitest";
import { db } from "../../core/db/service";
import { dynamoClient } from "../../core/db/client";
import { runsOf } from "../../core/agent";
import { call, newUser, newWorkspace } from "../support/api";
import { sourceWith } from "../support/sources";
import { documentCreateFailsOnce } from "../support/store-faults";
import { expectEnvelope, partitionItems, withEnv } from "./_helpers";

type Doc = { id: string; status: string; version: number; last_revision: number; content: string; title: string } & Record<string, any>;

let ws: { token: string; workspaceId: string; userId: string };
let outsider: string;

const create = (body: Record<string, unknown> = {}, token = ws.token, workspaceId = ws.workspaceId) =>
  call("POST", "/api/documents", { token, body: { workspace_id: workspaceId, document_type: "prd", title: "Remember me", content: "# Remember me\n\nKeep users signed in.\n", ...body } });

async function made(body: Record<string, unknown> = {}, token = ws.token, workspaceId = ws.workspaceId): Promise<Doc> {
  const res = await create(body, token, workspaceId);
  expect(res.status, res.text).toBe(201);
  return res.body;
}

const patch = (id: string, body: Record<string, unknown>) => call("PATCH", `/api/documents/${id}`, { token: ws.token, body });
const save = (id: string, change_summary?: string) => call("POST", `/api/documents/${id}/versions`, { token: ws.token, body: change_summary ? { change_summary } : {} });
const versions = (id: string, query: Record<string, number> = {}) => call("GET", `/api/documents/${id}/versions`, { token: ws.token, query });
const move = (id: string, target_status: string, change_summary?: string) =>
  call("POST", `/api/documents/${id}/status`, { token: ws.token, body: change_summary ? { target_status, change_summary } : { target_status } });

beforeAll(async () => {
  const [{ owner, workspace }, stranger] = await Promise.all([newWorkspace("Documents"), newUser()]);
  ws = { token: owner.token, workspaceId: workspace.id, userId: owner.id };
  outsider = stranger.token;
});

describe("POST /api/documents", () => {
  it("creates a draft at version 1 with revision 1 'created' (201)", async () => {
    const rec = await call("POST", "/api/recommendations", { token: ws.token, body: { workspace_id: ws.workspaceId, title: "R", description: "D" } });
    const res = await create({ document_type: "spec", related_recommendation_id: rec.body.id });
    expect(res.status, res.text).toBe(201);
    expect(res.body).toMatchObject({
      workspace_id: ws.workspaceId,
      document_type: "spec",
      title: "Remember me",
      content: "# Remember me\n\nKeep users signed in.\n",
      status: "draft",
      version: 1,
      last_revision: 1,
      related_recommendation_id: rec.body.id,
      related_insight_ids: [],
      metadata: {},
      created_by: ws.userId,
    });
    const revs = await versions(res.body.id);
    expect(revs.status, revs.text).toBe(200);
    expect(revs.body.total).toBe(1);
    expect(revs.body.revisions).toHaveLength(1);
    expect(revs.body.revisions[0]).toMatchObject({ document_id: res.body.id, revision_number: 1, change_type: "created", status_at_revision: "draft", title: "Remember me", changed_by: ws.userId, word_count: 6 });
    expect(revs.body.revisions[0].content).toBeUndefined();
    expect((await call("GET", `/api/documents/${res.body.id}`, { token: ws.token })).body).toEqual(res.body);
  });

  it("validates the body (422), guards membership (403) and needs an active subscription (402)", async () => {
    for (const body of [{ document_type: "novel" }, { title: "" }, { content: undefined }, { status: "published" }, { related_insight_ids: ["x"] }]) {
      expectEnvelope(await create(body), 422, "VALIDATION_ERROR");
    }
    expectEnvelope(await create({}, outsider), 403, "FORBIDDEN");
    const lapsed = await withEnv({ TRIAL_DAYS: "-1" }, () => newWorkspace("Trial over"));
    expectEnvelope(await create({}, lapsed.owner.token, lapsed.workspace.id), 402, "SUBSCRIPTION_REQUIRED");
  });
});

describe("GET /api/documents", () => {
  it("filters by document_type and status, most recently updated first, with total and pagination", async () => {
    const { owner, workspace } = await newWorkspace("Doc list");
    const mk = (document_type: string, title: string) => made({ document_type, title }, owner.token, workspace.id);
    const prd = await mk("prd", "prd");
    const memo = await mk("memo", "memo");
    const prd2 = await mk("prd", "prd2");
    const review = await call("POST", `/api/documents/${prd.id}/status`, { token: owner.token, body: { target_status: "review" } });
    expect(review.status, review.text).toBe(200);
    const q = (query: Record<string, string | number | undefined>) => call("GET", "/api/documents", { token: owner.token, query: { workspace_id: workspace.id, ...query } });
    const idsOf = (res: { body: { documents: Doc[] } }) => res.body.documents.map((d) => d.id);

    const all = await q({});
    expect(all.status, all.text).toBe(200);
    expect(all.body.total).toBe(3);
    expect(idsOf(all)).toEqual([prd.id, prd2.id, memo.id]);
    expect(idsOf(await q({ document_type: "prd" }))).toEqual([prd.id, prd2.id]);
    expect(idsOf(await q({ status: "review" }))).toEqual([prd.id]);
    expect(idsOf(await q({ status: "draft", document_type: "prd" }))).toEqual([prd2.id]);
    expect(idsOf(await q({ document_type: "release_notes" }))).toEqual([]);
    const page = await q({ limit: 1, offset: 1 });
    expect(idsOf(page)).toEqual([prd2.id]);
    expect(page.body.total).toBe(3);
    for (const bad of [{ document_type: "novel" }, { status: "archived" }, { limit: 501 }, { offset: -1 }]) expectEnvelope(await q(bad), 422, "VALIDATION_ERROR");
    expectEnvelope(await call("GET", "/api/documents", { token: outsider, query: { workspace_id: workspace.id } }), 403, "FORBIDDEN");
  });
});

describe("a listing of large documents", () => {
  it("ends a page early rather than pass Lambda's 6 MB answer; the next page starts after what it gave", async () => {
    const { owner, workspace } = await newWorkspace("Large documents");
    const text = `# Research log\n\n${"Participants kept asking for an offline mode. ".repeat(21_700)}`.slice(0, 999_000);
    for (let i = 0; i < 7; i++) await made({ title: `Log ${i}`, content: text }, owner.token, workspace.id);
    const first = await call("GET", "/api/documents", { token: owner.token, query: { workspace_id: workspace.id } });
    expect(first.status).toBe(200);
    expect(Buffer.byteLength(first.text)).toBeLessThan(6 * 1024 * 1024);
    expect(first.body.total).toBe(7);
    const given = first.body.documents.length;
    expect(given).toBeGreaterThan(0);
    expect(given).toBeLessThan(7);
    const next = await call("GET", "/api/documents", { token: owner.token, query: { workspace_id: workspace.id, offset: given } });
    const ids = [...first.body.documents, ...next.body.documents].map((d: { id: string }) => d.id);
    expect(new Set(ids).size).toBe(7);
  }, 120_000);
});

describe("GET / PATCH / DELETE /api/documents/{id}", () => {
  it("two metadata patches at once: one is merged over the other or refused 409, never lost while answered 200", async () => {
    const doc = await made();
    const name = "metadataRace";
    let raced = false;
    let second: Awaited<ReturnType<typeof patch>> | undefined;
    dynamoClient().middlewareStack.add(
      (next, context) => async (args) => {
        const input = JSON.stringify(args.input);
        if (!raced && /Update/.test(String(context.commandName)) && input.includes(doc.id) && input.includes("alpha")) {
          raced = true;
          second = await patch(doc.id, { metadata: { beta: 2 } });
        }
        return next(args);
      },
      { step: "initialize", name },
    );
    let first;
    try {
      first = await patch(doc.id, { metadata: { alpha: 1 } });
    } finally {
      dynamoClient().middlewareStack.remove(name);
    }
    expect(raced).toBe(true);
    expect(second!.status, second!.text).toBe(200);
    const stored = (await call("GET", `/api/documents/${doc.id}`, { token: ws.token })).body.metadata;
    if (first.status === 200) expect(stored).toMatchObject({ alpha: 1, beta: 2 });
    else {
      expectEnvelope(first, 409, "CONFLICT");
      expect(stored).toMatchObject({ beta: 2 });
    }
  });

  it("patches title and content (version +1 each edit) and shallow-merges metadata (null removes a key)", async () => {
    const doc = await made();
    const edited = await patch(doc.id, { content: "# Remember me\n\nNew body.\n" });
    expect(edited.status, edited.text).toBe(200);
    expect(edited.body).toMatchObject({ content: "# Remember me\n\nNew body.\n", title: "Remember me", version: 2, last_revision: 1 });
    const retitled = await patch(doc.id, { title: "Stay signed in" });
    expect(retitled.body).toMatchObject({ title: "Stay signed in", content: "# Remember me\n\nNew body.\n", version: 3 });
    const meta1 = await patch(doc.id, { metadata: { owner: "pm", audience: "eng" } });
    expect(meta1.body).toMatchObject({ metadata: { owner: "pm", audience: "eng" }, version: 3 });
    const meta2 = await patch(doc.id, { metadata: { audience: null, reviewers: ["a", "b"] } });
    expect(meta2.body.metadata).toEqual({ owner: "pm", reviewers: ["a", "b"] });
    const same = await patch(doc.id, { title: "Stay signed in" });
    expect(same.body.version).toBe(3);
    expect(same.body.metadata).toEqual({ owner: "pm", reviewers: ["a", "b"] });
    expect((await call("GET", `/api/documents/${doc.id}`, { token: ws.token })).body).toEqual(same.body);
    for (const body of [{}, { title: "" }, { status: "review" }, { metadata: "x" }]) expectEnvelope(await patch(doc.id, body), 422, "VALIDATION_ERROR");
    expectEnvelope(await call("PATCH", `/api/documents/${doc.id}`, { token: outsider, body: { title: "x" } }), 404, "NOT_FOUND");
    expectEnvelope(await call("GET", `/api/documents/${doc.id}`, { token: outsider }), 404, "NOT_FOUND");
    expectEnvelope(await call("GET", `/api/documents/${randomUUID()}`, { token: ws.token }), 404, "NOT_FOUND");
  });

  it("deletes the document with its blocks, revisions and annotations (204, then 404)", async () => {
    const doc = await made();
    const block = await call("POST", `/api/documents/${doc.id}/blocks`, { token: ws.token, body: { block_type: "problem" } });
    expect(block.status, block.text).toBe(201);
    const note = await call("POST", `/api/documents/${doc.id}/blocks/${block.body.id}/annotations`, { token: ws.token, body: { body: "Is this right?" } });
    expect(note.status, note.text).toBe(201);
    const rev = await save(doc.id);
    expect(rev.status).toBe(201);
    const children = async () => (await partitionItems(`ws#${ws.workspaceId}`)).filter((i) => String(i.sk).startsWith(`document#${doc.id}`));
    expect((await children()).length).toBe(5); // document, block, annotation, 2 revisions

    expectEnvelope(await call("DELETE", `/api/documents/${doc.id}`, { token: outsider }), 404, "NOT_FOUND");
    const del = await call("DELETE", `/api/documents/${doc.id}`, { token: ws.token });
    expect(del.status).toBe(204);
    expect(await children()).toEqual([]);
    expectEnvelope(await call("GET", `/api/documents/${doc.id}`, { token: ws.token }), 404, "NOT_FOUND");
    expectEnvelope(await call("GET", `/api/documents/${doc.id}/versions/${rev.body.id}`, { token: ws.token }), 404, "NOT_FOUND");
    expectEnvelope(await call("POST", `/api/blocks/${block.body.id}/challenge`, { token: ws.token }), 404, "NOT_FOUND");
    expectEnvelope(await call("DELETE", `/api/documents/${doc.id}`, { token: ws.token }), 404, "NOT_FOUND");
  });
});

describe("document versions", () => {
  it("saves numbered manual_save revisions (201), lists newest first, gets one with content; revisions are immutable", async () => {
    const doc = await made({ content: "one two three" });
    const v2 = await save(doc.id, "first save");
    expect(v2.status, v2.text).toBe(201);
    expect(v2.body).toMatchObject({ document_id: doc.id, revision_number: 2, change_type: "manual_save", change_summary: "first save", content: "one two three", word_count: 3, status_at_revision: "draft", changed_by: ws.userId });
    await patch(doc.id, { content: "one two three four", title: "Renamed" });
    const v3 = await save(doc.id);
    expect(v3.body).toMatchObject({ revision_number: 3, change_summary: null, content: "one two three four", title: "Renamed", word_count: 4 });
    expect((await call("GET", `/api/documents/${doc.id}`, { token: ws.token })).body.last_revision).toBe(3);

    const listed = await versions(doc.id);
    expect(listed.body.revisions.map((r: { revision_number: number }) => r.revision_number)).toEqual([3, 2, 1]);
    expect(listed.body.total).toBe(3);

    const one = await call("GET", `/api/documents/${doc.id}/versions/${v2.body.id}`, { token: ws.token });
    expect(one.status, one.text).toBe(200);
    expect(one.body).toEqual(v2.body);
    // Later edits never change a saved revision, and no route writes one.
    await patch(doc.id, { content: "rewritten entirely" });
    expect((await call("GET", `/api/documents/${doc.id}/versions/${v2.body.id}`, { token: ws.token })).body).toEqual(v2.body);
    expectEnvelope(await call("PATCH", `/api/documents/${doc.id}/versions/${v2.body.id}`, { token: ws.token, body: { content: "x" } }), 405, "METHOD_NOT_ALLOWED");
    expectEnvelope(await call("DELETE", `/api/documents/${doc.id}/versions/${v2.body.id}`, { token: ws.token }), 405, "METHOD_NOT_ALLOWED");
    // A revision of another document is not found under this one.
    const other = await made();
    expectEnvelope(await call("GET", `/api/documents/${other.id}/versions/${v2.body.id}`, { token: ws.token }), 404, "NOT_FOUND");
    expectEnvelope(await call("GET", `/api/documents/${doc.id}/versions/${randomUUID()}`, { token: ws.token }), 404, "NOT_FOUND");
    expectEnvelope(await call("GET", `/api/documents/${doc.id}/versions/${v2.body.id}`, { token: outsider }), 404, "NOT_FOUND");
    expectEnvelope(await save(randomUUID()), 404, "NOT_FOUND");
  });

  it("lists 50 revisions by default and at most 100 (101 is 422)", async () => {
    const doc = await made();
    // 104 more revisions written through the revision entity (saving them one by one over HTTP would be slow).
    const extra = Array.from({ length: 104 }, (_, k) => {
      const n = k + 2;
      return {
        id: randomUUID(),
        workspace_id: ws.workspaceId,
        document_id: doc.id,
        revision_number: n,
        revision_key: String(n).padStart(6, "0"),
        title: doc.title,
        content: `content ${n}`,
        status_at_revision: "draft",
        change_type: "manual_save",
        changed_by: ws.userId,
        word_count: 2,
      };
    });
    await db().entities.revision.put(extra).go();
    await db().entities.document.patch({ workspace_id: ws.workspaceId, id: doc.id }).set({ last_revision: 105 }).go();

    const byDefault = await versions(doc.id);
    expect(byDefault.status, byDefault.text).toBe(200);
    expect(byDefault.body.revisions).toHaveLength(50);
    expect(byDefault.body.revisions[0].revision_number).toBe(105);
    expect(byDefault.body.revisions[49].revision_number).toBe(56);
    expect(byDefault.body.total).toBe(105);
    const max = await versions(doc.id, { limit: 100 });
    expect(max.body.revisions).toHaveLength(100);
    expect(max.body.revisions[99].revision_number).toBe(6);
    expectEnvelope(await versions(doc.id, { limit: 101 }), 422, "VALIDATION_ERROR");
    expectEnvelope(await versions(doc.id, { limit: 0 }), 422, "VALIDATION_ERROR");
    // The next save takes the next number.
    expect((await save(doc.id)).body.revision_number).toBe(106);
  });

  it("diffs two revisions line by line: additions, deletions, changes", async () => {
    const doc = await made({ content: "alpha\nbravo\ncharlie\ndelta\necho\n" });
    await patch(doc.id, { content: "alpha\nBRAVO\ncharlie\necho\nfoxtrot\ngolf\n" });
    const v2 = await save(doc.id);
    const res = await call("GET", `/api/documents/${doc.id}/diff`, { token: ws.token, query: { from_revision: 1, to_revision: v2.body.revision_number } });
    expect(res.status, res.text).toBe(200);
    expect(res.body).toEqual({
      document_id: doc.id,
      from_revision: 1,
      to_revision: 2,
      from_content: "alpha\nbravo\ncharlie\ndelta\necho\n",
      to_content: "alpha\nBRAVO\ncharlie\necho\nfoxtrot\ngolf\n",
      content_truncated: false,
      diff_stats: { additions: 2, deletions: 1, changes: 1 },
    });
    const back = await call("GET", `/api/documents/${doc.id}/diff`, { token: ws.token, query: { from_revision: 2, to_revision: 1 } });
    expect(back.body.diff_stats).toEqual({ additions: 1, deletions: 2, changes: 1 });
    const same = await call("GET", `/api/documents/${doc.id}/diff`, { token: ws.token, query: { from_revision: 1, to_revision: 1 } });
    expect(same.body.diff_stats).toEqual({ additions: 0, deletions: 0, changes: 0 });
    expectEnvelope(await call("GET", `/api/documents/${doc.id}/diff`, { token: ws.token, query: { from_revision: 1, to_revision: 9 } }), 404, "NOT_FOUND");
    expectEnvelope(await call("GET", `/api/documents/${doc.id}/diff`, { token: ws.token, query: { from_revision: 1 } }), 422, "VALIDATION_ERROR");
    expectEnvelope(await call("GET", `/api/documents/${doc.id}/diff`, { token: ws.token, query: { from_revision: "one", to_revision: 2 } }), 422, "VALIDATION_ERROR");
  });

  it("restores a revision: content and title back, pre_restore and restore snapshots saved", async () => {
    const doc = await made({ title: "Original", content: "original text\n" });
    const v2 = await save(doc.id, "baseline");
    await patch(doc.id, { title: "Changed", content: "changed text\n" });
    const res = await call("POST", `/api/documents/${doc.id}/versions/${v2.body.id}/restore`, { token: ws.token, body: { change_summary: "roll back" } });
    expect(res.status, res.text).toBe(200);
    expect(res.body.document).toMatchObject({ id: doc.id, title: "Original", content: "original text\n", last_revision: 4, version: 3 });
    expect(res.body.before_revision).toMatchObject({ revision_number: 3, change_type: "pre_restore", title: "Changed" });
    expect(res.body.after_revision).toMatchObject({ revision_number: 4, change_type: "restore", title: "Original", change_summary: "roll back" });
    const pre = await call("GET", `/api/documents/${doc.id}/versions/${res.body.before_revision.id}`, { token: ws.token });
    expect(pre.body.content).toBe("changed text\n");
    const post = await call("GET", `/api/documents/${doc.id}/versions/${res.body.after_revision.id}`, { token: ws.token });
    expect(post.body.content).toBe("original text\n");
    expect((await call("GET", `/api/documents/${doc.id}`, { token: ws.token })).body).toMatchObject({ content: "original text\n", title: "Original" });
    const listed = await versions(doc.id);
    expect(listed.body.revisions.map((r: { change_type: string }) => r.change_type)).toEqual(["restore", "pre_restore", "manual_save", "created"]);
    expectEnvelope(await call("POST", `/api/documents/${doc.id}/versions/${randomUUID()}/restore`, { token: ws.token, body: {} }), 404, "NOT_FOUND");
  });
});

describe("POST /api/documents/{id}/status", () => {
  const TABLE: Record<string, string[]> = { draft: ["review"], review: ["approved", "draft"], approved: ["published", "draft"], published: [] };

  it("takes every allowed transition, refuses disallowed ones with valid_transitions; published is terminal but editable", async () => {
    const doc = await made({ content: "body\n" });
    const expectRefused = async (from: string, to: string) => {
      const res = await move(doc.id, to);
      expectEnvelope(res, 422, "INVALID_TRANSITION");
      expect(res.body.valid_transitions).toEqual(TABLE[from]);
      expect(res.body.detail).toBe(`invalid_transition: ${from} -> ${to}`);
    };
    await expectRefused("draft", "approved");
    await expectRefused("draft", "published");
    await expectRefused("draft", "draft");
    const path = ["review", "draft", "review", "approved", "draft", "review", "approved", "published"];
    let from = "draft";
    for (const to of path) {
      if (from === "review") await expectRefused("review", "published");
      if (from === "approved") await expectRefused("approved", "review");
      const res = await move(doc.id, to, `${from} to ${to}`);
      expect(res.status, `${from} -> ${to}: ${res.text}`).toBe(200);
      expect(res.body.status).toBe(to);
      from = to;
    }
    for (const to of ["draft", "review", "approved", "published"]) await expectRefused("published", to);
    expectEnvelope(await move(doc.id, "archived"), 422, "VALIDATION_ERROR");

    const revs = await versions(doc.id);
    const changes = revs.body.revisions.filter((r: { change_type: string }) => r.change_type === "status_change");
    expect(changes).toHaveLength(path.length);
    expect(changes[0]).toMatchObject({ status_at_revision: "published", change_summary: "approved to published" });

    // Published: still editable, and versions can still be saved.
    const edited = await patch(doc.id, { content: "body after publishing\n" });
    expect(edited.status, edited.text).toBe(200);
    expect(edited.body).toMatchObject({ status: "published", content: "body after publishing\n" });
    const saved = await save(doc.id, "post-publish fix");
    expect(saved.status).toBe(201);
    expect(saved.body).toMatchObject({ status_at_revision: "published", content: "body after publishing\n" });
    expectEnvelope(await call("POST", `/api/documents/${doc.id}/status`, { token: outsider, body: { target_status: "draft" } }), 404, "NOT_FOUND");
  });
});

describe("POST /api/documents/draft", () => {
  const TYPES = ["prd", "spec", "memo", "user_story", "roadmap_update", "release_notes"] as const;
  const QUOTES = [
    "I keep getting logged out and have to sign in again every time",
    "It takes five screens to refill one prescription",
    "I wish the app reminded me about my appointments the day before",
  ];

  it("drafts every document type from a recommendation, quoting its insights verbatim", async () => {
    const { owner, workspace } = await newWorkspace("Drafting");
    // One research source of the workspace holding every quote verbatim (an insight may only quote its own sources).
    const src = await sourceWith(owner.token, workspace.id, QUOTES);
    const insightIds = await Promise.all(
      [
        ["Users get logged out and struggle to sign in", "pain_point", "high"],
        ["Refilling prescriptions takes too many steps", "pain_point", "medium"],
        ["Users want appointment reminders", "feature_request", "medium"],
      ].map(async ([title, type, severity], k) => {
        const res = await call("POST", "/api/insights", {
          token: owner.token,
          body: { workspace_id: workspace.id, insight_type: type, title, description: title, severity, quotes: [{ text: QUOTES[k], source_id: src, speaker: `P${k + 1}` }] },
        });
        expect(res.status, res.text).toBe(201);
        return res.body.id as string;
      }),
    );
    const titles = ["Users get logged out and struggle to sign in", "Refilling prescriptions takes too many steps", "Users want appointment reminders"];
    const rec = await call("POST", "/api/recommendations", {
      token: owner.token,
      body: {
        workspace_id: workspace.id,
        title: "Keep veterans signed in and remind them of appointments",
        description: "Longer sessions with biometric unlock, plus appointment reminders",
        addresses_insight_ids: insightIds,
        rationale: "Logouts and missed appointments are the top complaints",
        effort_estimate: "medium",
        effort_weeks: 4,
        impact_score: 0.8,
        success_metrics: ["Sign-ins per active user per week fall by 50%"],
      },
    });
    expect(rec.status, rec.text).toBe(201);
    const allowedQuoted = [...QUOTES, ...titles, rec.body.title].map((s) => s.toLowerCase());

    const drafts = await Promise.all(
      TYPES.map((document_type) => call("POST", "/api/documents/draft", { token: owner.token, body: { workspace_id: workspace.id, document_type, recommendation_id: rec.body.id } })),
    );
    for (const [k, res] of drafts.entries()) {
      const type = TYPES[k];
      expect(res.status, `${type}: ${res.text}`).toBe(200);
      expect(res.body).toMatchObject({ document_type: type, status: "draft", version: 1, last_revision: 1, related_recommendation_id: rec.body.id, created_by: owner.id });
      expect(new Set(res.body.related_insight_ids)).toEqual(new Set(insightIds));
      expect(res.body.title.length).toBeGreaterThan(0);
      const content: string = res.body.content;
      // At least one of the insights' quotes appears verbatim; every quoted span comes from the research.
      expect(QUOTES.some((q) => content.includes(q)), `${type} quotes no insight verbatim:\n${content}`).toBe(true);
      for (const m of content.matchAll(/“([^“”]+)”/g)) {
        const span = m[1]!.replace(/^…|…$|^\.\.\.|\.\.\.$/g, "").trim().toLowerCase();
        if (span.length < 12) continue;
        expect(allowedQuoted.some((q) => q.includes(span)), `${type}: “${m[1]}” is not from the research`).toBe(true);
      }
      // Citations [I1].. resolve, through the Sources link definitions, to the given insights only.
      const defs = [...content.matchAll(/^\[I(\d+)\]: #insight-([0-9a-f-]{36})/gm)].map((m) => [Number(m[1]), m[2]!] as const);
      expect(defs.length, `${type} has no Sources definitions`).toBeGreaterThan(0);
      for (const [, id] of defs) expect(insightIds).toContain(id);
      for (const m of content.matchAll(/\[I(\d+)\]/g)) expect(defs.map(([n]) => n)).toContain(Number(m[1]));
      const revs = await call("GET", `/api/documents/${res.body.id}/versions`, { token: owner.token });
      expect(revs.body.revisions.map((r: { change_type: string }) => r.change_type)).toEqual(["ai_draft"]);
    }
    expect(new Set(drafts.map((d) => d.body.id)).size).toBe(TYPES.length);
    const runs = (await runsOf(workspace.id)).filter((r) => r.agent_type === "drafting");
    expect(runs).toHaveLength(TYPES.length);
  });

  it("a draft whose document could not be stored is not charged as a delivered draft: the run is failed, the document absent", async () => {
    const { owner, workspace } = await newWorkspace("Draft not stored");
    const src = await sourceWith(owner.token, workspace.id, [QUOTES[0]!]);
    const insight = await call("POST", "/api/insights", {
      token: owner.token,
      body: { workspace_id: workspace.id, insight_type: "pain_point", title: "Users get logged out", description: "Logouts.", severity: "high", quotes: [{ text: QUOTES[0], source_id: src, speaker: "P1" }] },
    });
    expect(insight.status, insight.text).toBe(201);
    const charged = async () => (await db().entities.billingAccount.get({ user_id: owner.id }).go({ consistent: true })).data!.charged ?? 0;
    const before = await charged();
    // The store refuses the document's create (as a process dying at that write would leave it): the model has run.
    const fault = documentCreateFailsOnce();
    let res;
    try {
      res = await call("POST", "/api/documents/draft", { token: owner.token, body: { workspace_id: workspace.id, document_type: "memo" } });
    } finally {
      fault.remove();
    }
    expect(fault.failed(), res.text).toBe(true);
    expect(res.status).toBeGreaterThanOrEqual(500);
    expect((await call("GET", "/api/documents", { token: owner.token, query: { workspace_id: workspace.id } })).body.total).toBe(0);
    const [run] = (await runsOf(workspace.id)).filter((r) => r.agent_type === "drafting");
    // The local engine costs nothing: a failed run without cost is charged 0 (spec 02), where a success is 0.5.
    expect(run).toMatchObject({ status: "failed", credits_charged: 0 });
    expect(await charged()).toBe(before);
  });

  it("refuses an unknown recommendation (404), non-members (403) and a lapsed subscription (402)", async () => {
    expectEnvelope(
      await call("POST", "/api/documents/draft", { token: ws.token, body: { workspace_id: ws.workspaceId, document_type: "prd", recommendation_id: randomUUID() } }),
      404,
      "NOT_FOUND",
    );
    expectEnvelope(await call("POST", "/api/documents/draft", { token: ws.token, body: { workspace_id: ws.workspaceId, document_type: "novel" } }), 422, "VALIDATION_ERROR");
    expectEnvelope(await call("POST", "/api/documents/draft", { token: outsider, body: { workspace_id: ws.workspaceId, document_type: "prd" } }), 403, "FORBIDDEN");
    const lapsed = await withEnv({ TRIAL_DAYS: "-1" }, () => newWorkspace("Trial over"));
    expectEnvelope(
      await call("POST", "/api/documents/draft", { token: lapsed.owner.token, body: { workspace_id: lapsed.workspace.id, document_type: "memo" } }),
      402,
      "SUBSCRIPTION_REQUIRED",
    );
  });
});
