/**
 * Documents and blocks: defects found by review, over HTTP through the real handlers (spec 01 Document status,
 * Documents and blocks endpoints; docs/decisions.md Documents, "Recommendations keep ids of deleted insights",
 * "Responses stay under Lambda's 6 MB"):
 * - a status change racing an edit that replaces the stored text is checked against the status it writes over;
 * - a draft from a recommendation that addresses a deleted insight is drafted from the rest (caller ids stay strict);
 * - a block PATCH racing the block's DELETE is 404, and a PATCH whose position is refused (409) changes nothing;
 * - the blocks listing (and the reorder answer) ends a page early rather than pass Lambda's 6 MB answer, and so
 *   does a block's annotations listing.
 */
import { randomUUID } from "node:crypto";
import { beforeAll, describe, expect, it } from "vitest";
import { db } from "../../core/db/service";
import { LIST_RESPONSE_BYTES } from "../../core/response-size";
import { s3Client } from "../../core/storage/client";
import { call, newWorkspace } from "../support/api";
import { deletedBeforeUpdate } from "../support/races";
import { insightQuoting, sourceWith } from "../support/sources";
import { expectEnvelope } from "./_helpers";

type Ws = { token: string; workspaceId: string };

async function workspace(name: string): Promise<Ws> {
  const { owner, workspace } = await newWorkspace(name);
  return { token: owner.token, workspaceId: workspace.id };
}

async function newDoc(ws: Ws, content = "# Blocks\n"): Promise<{ id: string; status: string; last_revision: number }> {
  const res = await call("POST", "/api/documents", { token: ws.token, body: { workspace_id: ws.workspaceId, document_type: "prd", title: "Review", content } });
  expect(res.status, res.text.slice(0, 300)).toBe(201);
  return res.body;
}

const blocksPath = (docId: string) => `/api/documents/${docId}/blocks`;

async function addBlock(ws: Ws, docId: string, title: string): Promise<{ id: string; position: number }> {
  const res = await call("POST", blocksPath(docId), { token: ws.token, body: { block_type: "free_text", title, content: { markdown: title } } });
  expect(res.status, res.text).toBe(201);
  return res.body;
}

describe("POST /api/documents/{id}/status racing an edit that replaces the stored text", () => {
  let ws: Ws;
  beforeAll(async () => {
    ws = await workspace("Status race");
  });

  it("checks the transition on the status it writes over: review -> approved, raced by review -> draft and an edit, is 422 and leaves it draft", async () => {
    // Over 64 KiB: the text is stored beside the item, so an edit replaces (and deletes) the object the request reads.
    const text = (tag: string) => `# Offline mode ${tag}\n\n${"Participants asked for an offline mode in the field. ".repeat(1_500)}`;
    const doc = await newDoc(ws, text("first"));
    const move = (target_status: string) => call("POST", `/api/documents/${doc.id}/status`, { token: ws.token, body: { target_status } });
    expect((await move("review")).body.status).toBe("review");
    const { data: item } = await db().entities.document.get({ workspace_id: ws.workspaceId, id: doc.id }).go({ consistent: true });
    const key = item!.content_ref!.key;

    // The approve has read the document (review) and is about to read its text: meanwhile someone sends it back to
    // draft and saves an edit, which deletes that text. The approve then reads the document again (draft).
    const s3 = await s3Client();
    const name = `status-race-${randomUUID()}`;
    let raced = false;
    s3.middlewareStack.add(
      (next, context) => async (args) => {
        if (!raced && /^GetObject/.test(context.commandName ?? "") && (args.input as { Key?: string }).Key === key) {
          raced = true;
          const back = await move("draft");
          expect(back.status, back.text.slice(0, 300)).toBe(200);
          const edit = await call("PATCH", `/api/documents/${doc.id}`, { token: ws.token, body: { content: text("second") } });
          expect(edit.status, edit.text.slice(0, 300)).toBe(200);
        }
        return next(args);
      },
      { step: "initialize", name },
    );
    let res;
    try {
      res = await move("approved");
    } finally {
      s3.middlewareStack.remove(name);
    }
    expect(raced, "the edit ran while the approve read the text").toBe(true);

    // draft -> approved is not in the document table: refused as the table says, naming what draft may move to.
    expect(res.status, res.text.slice(0, 300)).toBe(422);
    expectEnvelope(res, 422, "INVALID_TRANSITION");
    expect(res.body.valid_transitions).toEqual(["review"]);
    const now = await call("GET", `/api/documents/${doc.id}`, { token: ws.token });
    expect(now.body.status).toBe("draft");
    expect(now.body.content).toBe(text("second"));
    const revisions = await call("GET", `/api/documents/${doc.id}/versions`, { token: ws.token });
    expect(revisions.body.revisions[0]).toMatchObject({ change_type: "status_change", status_at_revision: "draft" });
  }, 60_000);
});

describe("POST /api/documents/draft from a recommendation that addresses a deleted insight", () => {
  const QUOTES = ["I keep getting logged out every single morning", "Refilling a prescription takes five screens"];

  it("drafts from the insights that remain (200); insight_ids the caller sends must all exist (422 at body.insight_ids)", async () => {
    const ws = await workspace("Draft after an insight delete");
    const src = await sourceWith(ws.token, ws.workspaceId, QUOTES);
    const kept = await insightQuoting(ws.token, ws.workspaceId, { title: "Users get logged out", quote: QUOTES[0]!, sourceId: src, severity: "high" });
    const gone = await insightQuoting(ws.token, ws.workspaceId, { title: "Refills take too many steps", quote: QUOTES[1]!, sourceId: src, severity: "medium" });
    const rec = await call("POST", "/api/recommendations", {
      token: ws.token,
      body: { workspace_id: ws.workspaceId, title: "Keep users signed in", description: "Longer sessions, fewer refill steps", addresses_insight_ids: [kept, gone] },
    });
    expect(rec.status, rec.text).toBe(201);
    expect((await call("DELETE", `/api/insights/${gone}`, { token: ws.token })).status).toBe(204);
    // The recommendation keeps the deleted insight's id (docs/decisions.md).
    expect((await call("GET", `/api/recommendations/${rec.body.id}`, { token: ws.token })).body.addresses_insight_ids).toEqual([kept, gone]);

    const drafted = await call("POST", "/api/documents/draft", { token: ws.token, body: { workspace_id: ws.workspaceId, document_type: "prd", recommendation_id: rec.body.id } });
    expect(drafted.status, drafted.text).toBe(200);
    expect(drafted.body).toMatchObject({ status: "draft", related_recommendation_id: rec.body.id, related_insight_ids: [kept] });

    const named = await call("POST", "/api/documents/draft", {
      token: ws.token,
      body: { workspace_id: ws.workspaceId, document_type: "prd", recommendation_id: rec.body.id, insight_ids: [kept, gone] },
    });
    expectEnvelope(named, 422, "VALIDATION_ERROR");
    expect(named.body.errors).toEqual([expect.objectContaining({ loc: ["body", "insight_ids"], type: "unknown_id", msg: expect.stringContaining(gone) })]);
  }, 120_000);
});

describe("PATCH /api/documents/{id}/blocks/{block_id} racing other writers", () => {
  let ws: Ws;
  beforeAll(async () => {
    ws = await workspace("Block patch races");
  });

  it("a block deleted between its read and the write is 404 NOT_FOUND in the envelope, not a 500", async () => {
    const doc = await newDoc(ws);
    const block = await addBlock(ws, doc.id, "Doomed");
    const path = `${blocksPath(doc.id)}/${block.id}`;
    const res = await deletedBeforeUpdate(
      `document#${doc.id}#block#${block.id}`,
      () => call("DELETE", path, { token: ws.token }),
      () => call("PATCH", path, { token: ws.token, body: { title: "Too late", content: { markdown: "Too late" } } }),
    );
    expectEnvelope(res, 404, "NOT_FOUND");
    expect((await call("GET", blocksPath(doc.id), { token: ws.token })).body.blocks).toEqual([]);
  });

  it("a title and position PATCH whose position is refused (409) leaves the title as it was", async () => {
    const doc = await newDoc(ws);
    for (const t of ["A", "B"]) await addBlock(ws, doc.id, t);
    const c = await addBlock(ws, doc.id, "C");
    const path = `${blocksPath(doc.id)}/${c.id}`;
    // A block inserted at the top lands just before the PATCH's position write (a transaction naming C), which is
    // conditioned on the positions it read: refused.
    const res = await deletedBeforeUpdate(
      `document#${doc.id}#block#${c.id}`,
      () => call("POST", blocksPath(doc.id), { token: ws.token, body: { block_type: "free_text", title: "Inserted", position: 0 } }),
      () => call("PATCH", path, { token: ws.token, body: { title: "C moved", position: 0 } }),
      /^TransactWrite/,
    );
    expectEnvelope(res, 409, "CONFLICT");
    const blocks = (await call("GET", blocksPath(doc.id), { token: ws.token })).body.blocks as { title: string; position: number }[];
    expect(blocks.map((b) => b.title)).toEqual(["Inserted", "A", "B", "C"]);
    expect(blocks.map((b) => b.position)).toEqual([0, 1, 2, 3]);
  });
});

describe("documents heavier than one answer may be (Lambda: 6 MB)", () => {
  it("GET /api/documents measures each document as the Lambda answer carries it: quote-heavy texts end the page before 6 MB on the wire", async () => {
    const ws = await workspace("Quote-heavy documents");
    // 1,000,000 double quotes: 2 MB as JSON, 4 MB once the body is a string inside Lambda's proxy result.
    for (let i = 0; i < 3; i++) await newDoc(ws, '"'.repeat(1_000_000));
    const page = await call("GET", "/api/documents", { token: ws.token, query: { workspace_id: ws.workspaceId } });
    expect(page.status, page.text.slice(0, 300)).toBe(200);
    expect(page.body.total).toBe(3);
    expect(page.body.documents.length).toBeGreaterThan(0);
    // What Lambda carries: the proxy result's JSON, the body a string in it (6 MB is its limit).
    expect(Buffer.byteLength(JSON.stringify({ statusCode: 200, body: page.text }))).toBeLessThan(6 * 1024 * 1024);
  }, 120_000);
});

describe("blocks heavier than one answer may be (Lambda: 6 MB)", () => {
  it("GET .../blocks ends a page early past 5 MB; total counts every block and the next page starts at offset plus the blocks given", async () => {
    const ws = await workspace("Heavy blocks");
    const doc = await newDoc(ws);
    // 26 free_text blocks just under the 256 KiB content bound (85,000 three-byte characters): about 6.6 MB.
    const n = 26;
    const ids = Array.from({ length: n }, () => randomUUID());
    await db()
      .entities.block.put(
        ids.map((id, position) => ({ id, workspace_id: ws.workspaceId, document_id: doc.id, block_type: "free_text" as const, title: `Block ${position}`, content: { markdown: "漢".repeat(85_000) }, position })),
      )
      .go();

    const seen: string[] = [];
    let pages = 0;
    for (let offset = 0; offset < n && pages < 4; pages++) {
      const page = await call("GET", blocksPath(doc.id), { token: ws.token, query: offset ? { offset } : undefined });
      expect(page.status, page.text.slice(0, 300)).toBe(200);
      expect(Buffer.byteLength(page.text)).toBeLessThan(LIST_RESPONSE_BYTES + 10_000);
      expect(page.body.total).toBe(n);
      expect(page.body.blocks.length).toBeGreaterThan(0);
      seen.push(...page.body.blocks.map((b: { id: string }) => b.id));
      offset += page.body.blocks.length;
    }
    expect(pages).toBeGreaterThan(1);
    expect(seen).toEqual(ids);
    const tail = await call("GET", blocksPath(doc.id), { token: ws.token, query: { limit: 2, offset: n - 1 } });
    expect(tail.body.blocks.map((b: { id: string }) => b.id)).toEqual([ids[n - 1]]);
    expectEnvelope(await call("GET", blocksPath(doc.id), { token: ws.token, query: { limit: 0 } }), 422, "VALIDATION_ERROR");
    expectEnvelope(await call("GET", blocksPath(doc.id), { token: ws.token, query: { offset: -1 } }), 422, "VALIDATION_ERROR");

    // The reorder answers the listing's first page as well.
    const reordered = await call("PATCH", `${blocksPath(doc.id)}/reorder`, { token: ws.token, body: { block_ids: [...ids].reverse() } });
    expect(reordered.status, reordered.text.slice(0, 300)).toBe(200);
    expect(Buffer.byteLength(reordered.text)).toBeLessThan(LIST_RESPONSE_BYTES + 10_000);
    expect(reordered.body.total).toBe(n);
    expect(reordered.body.blocks[0].id).toBe(ids[n - 1]);
  }, 180_000);
});

describe("annotations heavier than one answer may be (Lambda: 6 MB)", () => {
  it("GET .../annotations ends a page early past 5 MB on the wire; total counts them all and the next page starts at offset plus those given", async () => {
    const ws = await workspace("Heavy annotations");
    const doc = await newDoc(ws);
    const block = await addBlock(ws, doc.id, "Noted");
    // 200 annotations of 5,000 control characters: each is 6 bytes as JSON, 7 once the body is a string inside the
    // proxy result, so 35 KB an annotation and 7 MB together.
    const n = 200;
    const base = Date.parse("2026-01-01T00:00:00Z");
    const ids = Array.from({ length: n }, () => randomUUID());
    await db()
      .entities.annotation.put(
        ids.map((id, i) => ({
          id, workspace_id: ws.workspaceId, document_id: doc.id, block_id: block.id, body: "\u0001".repeat(5_000), kind: "comment" as const,
          author_id: randomUUID(), created_at: new Date(base + i * 1000).toISOString(),
        })),
      )
      .go();
    const path = `${blocksPath(doc.id)}/${block.id}/annotations`;
    const seen: string[] = [];
    let pages = 0;
    for (let offset = 0; offset < n && pages < 4; pages++) {
      const page = await call("GET", path, { token: ws.token, query: offset ? { offset } : undefined });
      expect(page.status, page.text.slice(0, 300)).toBe(200);
      expect(Buffer.byteLength(JSON.stringify({ statusCode: 200, body: page.text }))).toBeLessThan(LIST_RESPONSE_BYTES + 10_000);
      expect(page.body.total).toBe(n);
      expect(page.body.annotations.length).toBeGreaterThan(0);
      seen.push(...page.body.annotations.map((a: { id: string }) => a.id));
      offset += page.body.annotations.length;
    }
    expect(pages).toBeGreaterThan(1);
    expect(seen).toEqual(ids);
    const tail = await call("GET", path, { token: ws.token, query: { limit: 2, offset: n - 1 } });
    expect(tail.body.annotations.map((a: { id: string }) => a.id)).toEqual([ids[n - 1]]);
    expectEnvelope(await call("GET", path, { token: ws.token, query: { limit: 0 } }), 422, "VALIDATION_ERROR");
  }, 120_000);
});
