/**
 * Documents at their limits over HTTP (issue #10 points 3, 4 and 6; spec 01 Document, Document revision, Document
 * block, Errors; docs/decisions.md "Document limits"): content of the documented maximum (1,000,000 characters) works
 * on every path that carries it — create, get, list, patch, versions, diff, restore, status, block extraction, delete
 * — because large text lives beside the item in the object store; block content and metadata are bounded free-form
 * JSON answered with 422 naming the location, never 500; and every id a document body references must be the
 * caller's workspace's (422 naming the unknown ids).
 */
import { randomUUID } from "node:crypto";
import { ListObjectsV2Command } from "@aws-sdk/client-s3";
import { beforeAll, describe, expect, it } from "vitest";
import { Config } from "../../core/config";
import { db } from "../../core/db/service";
import { MAX_BLOCKS_PER_DOCUMENT } from "../../core/document/blocks";
import { s3Client } from "../../core/storage/client";
import { call, newWorkspace, type ApiResponse } from "../support/api";
import { expectEnvelope, partitionItems } from "./_helpers";

let ws: { token: string; workspaceId: string; userId: string };

const doc = (id: string) => `/api/documents/${id}`;
const create = (body: Record<string, unknown>, token = ws.token, workspaceId = ws.workspaceId) =>
  call("POST", "/api/documents", { token, body: { workspace_id: workspaceId, document_type: "prd", title: "Big", content: "# Big\n", ...body } });
const patch = (id: string, body: Record<string, unknown>) => call("PATCH", doc(id), { token: ws.token, body });
/** A PATCH with a raw JSON text, for bodies JSON.stringify cannot write (own `__proto__` keys). */
const patchRaw = (id: string, json: string) => call("PATCH", doc(id), { token: ws.token, raw: { data: json, contentType: "application/json" } });

/**
 * Markdown of exactly `chars` characters (UTF-16 code units, as the API counts them) in `## Section k` sections of
 * 100-character lines, every tenth line of three-byte characters ("界"), so bytes and characters differ and line
 * diffs have lines to compare. `tag` makes each text distinct.
 */
function bigMarkdown(chars: number, tag: string): string {
  const parts: string[] = [];
  let size = 0;
  for (let k = 0; size < chars; k++) {
    const head = `## Section ${k} ${tag}\n\n`;
    const line = `${(k % 10 === 0 ? "界" : "a").repeat(90)} line ${k}\n`.slice(0, 100);
    const chunk = k % 50 === 0 ? head + line : line;
    parts.push(chunk);
    size += chunk.length;
  }
  return parts.join("").slice(0, chars);
}

/** Object keys the document left in the uploads bucket. */
async function storedObjects(documentId: string): Promise<string[]> {
  const out = await (await s3Client()).send(
    new ListObjectsV2Command({ Bucket: Config.bucketName(), Prefix: `workspaces/${ws.workspaceId}/documents/${documentId}/` }),
  );
  return (out.Contents ?? []).map((o) => o.Key!);
}

/** The raw table items of a document and its children, with their size as DynamoDB would count it (roughly: JSON). */
async function itemsOf(documentId: string) {
  const items = (await partitionItems(`ws#${ws.workspaceId}`)).filter((i) => String(i.sk).startsWith(`document#${documentId}`));
  return items.map((i) => ({ sk: String(i.sk), bytes: Buffer.byteLength(JSON.stringify(i)) }));
}

/** {@link expectEnvelope}, checking the status first with a short message (bodies here can be megabytes). */
function expectError(res: ApiResponse, status: number, code: string) {
  expect(res.status, res.text.slice(0, 300)).toBe(status);
  expectEnvelope(res, status, code);
}

beforeAll(async () => {
  const { owner, workspace } = await newWorkspace("Document limits");
  ws = { token: owner.token, workspaceId: workspace.id, userId: owner.id };
});

describe("content of the documented maximum (1,000,000 characters)", () => {
  it("creates, reads, patches, versions, diffs, restores, moves status and deletes it; items stay small", async () => {
    const first = bigMarkdown(1_000_000, "first");
    expect(first.length).toBe(1_000_000);
    const created = await create({ content: first });
    expect(created.status, created.text.slice(0, 500)).toBe(201);
    const id = created.body.id as string;
    expect(created.body.content).toBe(first);
    expect(created.body).toMatchObject({ version: 1, last_revision: 1 });
    expect((await call("GET", doc(id), { token: ws.token })).body.content).toBe(first);
    const listed = await call("GET", "/api/documents", { token: ws.token, query: { workspace_id: ws.workspaceId } });
    expect(listed.body.documents.find((d: { id: string }) => d.id === id)?.content).toBe(first);

    const second = bigMarkdown(1_000_000, "second");
    const edited = await patch(id, { content: second });
    expect(edited.status, edited.text.slice(0, 500)).toBe(200);
    expect(edited.body).toMatchObject({ content: second, version: 2 });

    const saved = await call("POST", `${doc(id)}/versions`, { token: ws.token, body: { change_summary: "big save" } });
    expect(saved.status, saved.text.slice(0, 500)).toBe(201);
    expect(saved.body).toMatchObject({ revision_number: 2, content: second });
    const revisions = await call("GET", `${doc(id)}/versions`, { token: ws.token });
    const firstRev = revisions.body.revisions.find((r: { revision_number: number }) => r.revision_number === 1);
    expect((await call("GET", `${doc(id)}/versions/${firstRev.id}`, { token: ws.token })).body.content).toBe(first);

    const diff = await call("GET", `${doc(id)}/diff`, { token: ws.token, query: { from_revision: 1, to_revision: 2 } });
    expect(diff.status, diff.text.slice(0, 500)).toBe(200);
    expect(diff.body.from_content).toBe(first);
    expect(diff.body.to_content).toBe(second);
    // Only the section headings differ ("first" vs "second"): one changed line per section.
    expect(diff.body.diff_stats).toMatchObject({ additions: 0, deletions: 0 });
    expect(diff.body.diff_stats.changes).toBeGreaterThan(0);

    const restored = await call("POST", `${doc(id)}/versions/${firstRev.id}/restore`, { token: ws.token, body: {} });
    expect(restored.status, restored.text.slice(0, 500)).toBe(200);
    expect(restored.body.document.content).toBe(first);
    const pre = await call("GET", `${doc(id)}/versions/${restored.body.before_revision.id}`, { token: ws.token });
    expect(pre.body.content).toBe(second);

    const moved = await call("POST", `${doc(id)}/status`, { token: ws.token, body: { target_status: "review" } });
    expect(moved.status, moved.text.slice(0, 500)).toBe(200);
    expect(moved.body).toMatchObject({ status: "review", content: first, last_revision: 5 });

    // The table holds pointers, not the text: every item stays far below DynamoDB's 400 KB.
    const items = await itemsOf(id);
    expect(items).toHaveLength(6); // the document and revisions 1..5
    for (const item of items) expect(item.bytes, item.sk).toBeLessThan(16_000);
    expect((await storedObjects(id)).length).toBeGreaterThanOrEqual(6);

    // Back to a small text: the document item holds it again and the big current text leaves the bucket.
    const small = await patch(id, { content: "# Small again\n" });
    expect(small.body.content).toBe("# Small again\n");
    expect((await call("GET", doc(id), { token: ws.token })).body.content).toBe("# Small again\n");
    expect((await storedObjects(id)).length).toBe(5); // one per big revision
    // And large again: the text moves back out of the item.
    const big = await patch(id, { content: second });
    expect(big.status, big.text.slice(0, 300)).toBe(200);
    expect((await call("GET", doc(id), { token: ws.token })).body.content).toBe(second);
    expect((await storedObjects(id)).length).toBe(6);

    // One character more than the maximum is a 422 naming the field.
    const over = await patch(id, { content: "x".repeat(1_000_001) });
    expectError(over, 422, "VALIDATION_ERROR");
    expect(over.body.errors[0].loc).toEqual(["body", "content"]);

    const del = await call("DELETE", doc(id), { token: ws.token });
    expect(del.status).toBe(204);
    expect(await itemsOf(id)).toEqual([]);
    expect(await storedObjects(id)).toEqual([]);
  });

  it("extracts blocks from it, fitting every block under the block content bound", async () => {
    // One "Solution" section whose 100 bullets of 2,000 three-byte characters fit the per-field limits but make a
    // 600 KB block, beyond what one item can hold.
    const bullets = Array.from({ length: 100 }, (_, k) => `- ${"界".repeat(1_990)} ${k}`).join("\n");
    const content = `# Plan\n\n## Problem\n\nPeople wait.\n\n## Solution\n\nShip it.\n\n${bullets}\n`;
    const created = await create({ content });
    expect(created.status, created.text.slice(0, 500)).toBe(201);
    const res = await call("POST", "/api/blocks/extract", { token: ws.token, body: { workspace_id: ws.workspaceId, document_id: created.body.id } });
    expect(res.status, res.text.slice(0, 500)).toBe(200);
    const solution = res.body.blocks.find((b: { block_type: string }) => b.block_type === "solution");
    expect(solution.content.summary).toBe("Ship it.");
    expect(solution.content.details.length).toBeGreaterThan(10);
    expect(Buffer.byteLength(JSON.stringify(solution.content))).toBeLessThanOrEqual(256 * 1024);
  });
});

describe("the diff of two maximal revisions stays under Lambda's 6 MB answer", () => {
  it("two revisions of 1,000,000 characters (three-byte and quotes): both texts cut to fit together, content_truncated, whole-text stats", async () => {
    // Lines of "界" (three bytes in UTF-8) and quotes (escaped twice in the Lambda proxy result, whose body is a JSON
    // string: four bytes): each revision takes 3.35 MB of the answer, so both whole pass the 6 MiB Lambda answers.
    const cjk = (tag: string) =>
      Array.from({ length: 10_000 }, (_, k) => `${tag}${'"'.repeat(37)}${"界".repeat(60)}${k % 10}\n`).join("").slice(0, 1_000_000);
    /** What the answer weighs in the Lambda proxy result (its body is a JSON string there). */
    const lambdaBytes = (text: string) => Buffer.byteLength(JSON.stringify({ statusCode: 200, headers: { "content-type": "application/json" }, body: text }));
    const first = cjk("甲");
    const second = cjk("乙");
    expect(first.length).toBe(1_000_000);
    const created = await create({ content: first });
    expect(created.status, created.text.slice(0, 300)).toBe(201);
    const id = created.body.id as string;
    const edited = await patch(id, { content: second });
    expect(edited.status, edited.text.slice(0, 300)).toBe(200);
    const saved = await call("POST", `${doc(id)}/versions`, { token: ws.token, body: {} });
    expect(saved.status, saved.text.slice(0, 300)).toBe(201);

    const res = await call("GET", `${doc(id)}/diff`, { token: ws.token, query: { from_revision: 1, to_revision: 2 } });
    expect(res.status, res.text.slice(0, 300)).toBe(200);
    expect(lambdaBytes(res.text)).toBeLessThan(6 * 1024 * 1024);
    expect(res.body).toMatchObject({ document_id: id, from_revision: 1, to_revision: 2, content_truncated: true });
    // Each keeps its beginning, and they share the budget evenly.
    expect(first.startsWith(res.body.from_content)).toBe(true);
    expect(second.startsWith(res.body.to_content)).toBe(true);
    expect(res.body.from_content.length).toBeGreaterThan(700_000);
    expect(res.body.to_content.length).toBeGreaterThan(700_000);
    // The stats count the whole texts: every one of the 10,000 lines changed.
    expect(res.body.diff_stats).toEqual({ additions: 0, deletions: 0, changes: 10_000 });

    // A short revision beside a maximal one is answered whole; only the long one is cut, to the rest of the budget.
    const short = await patch(id, { content: "# Short\n" });
    expect(short.status, short.text.slice(0, 300)).toBe(200);
    await call("POST", `${doc(id)}/versions`, { token: ws.token, body: {} });
    const mixed = await call("GET", `${doc(id)}/diff`, { token: ws.token, query: { from_revision: 3, to_revision: 1 } });
    expect(mixed.status, mixed.text.slice(0, 300)).toBe(200);
    expect(lambdaBytes(mixed.text)).toBeLessThan(6 * 1024 * 1024);
    expect(mixed.body).toMatchObject({ from_content: "# Short\n", to_content: first, content_truncated: false });
  });
});

describe("block content is bounded (422, never 500)", () => {
  it("refuses block content over 256 KiB of JSON on create and update, naming body.content", async () => {
    const created = await create({ content: "# Blocks\n" });
    const blocks = `${doc(created.body.id)}/blocks`;
    // Every field within its own limit (100 details of 2,000 characters), 600 KB in all.
    const huge = { summary: "Ship it", details: Array.from({ length: 100 }, () => "界".repeat(2_000)) };
    const tooBig = await call("POST", blocks, { token: ws.token, body: { block_type: "solution", content: huge } });
    expectError(tooBig, 422, "VALIDATION_ERROR");
    expect(tooBig.body.errors[0]).toMatchObject({ loc: ["body", "content"], type: "too_big" });

    const block = await call("POST", blocks, { token: ws.token, body: { block_type: "solution", content: { summary: "Ship it" } } });
    expect(block.status, block.text).toBe(201);
    const update = await call("PATCH", `${blocks}/${block.body.id}`, { token: ws.token, body: { content: huge } });
    expectError(update, 422, "VALIDATION_ERROR");
    expect(update.body.errors[0]).toMatchObject({ loc: ["body", "content"], type: "too_big" });
    // Just under the bound still works (about 240 KB).
    const fits = { summary: "Ship it", details: Array.from({ length: 40 }, () => "界".repeat(2_000)) };
    const ok = await call("PATCH", `${blocks}/${block.body.id}`, { token: ws.token, body: { content: fits } });
    expect(ok.status, ok.text.slice(0, 300)).toBe(200);
    expect(ok.body.content.details).toHaveLength(40);
  });

  it("refuses an own __proto__ key in block content (422), which zod's record parser used to drop silently", async () => {
    const created = await create({ content: "# Blocks\n" });
    const res = await call("POST", `${doc(created.body.id)}/blocks`, {
      token: ws.token,
      raw: { data: '{"block_type":"free_text","content":{"markdown":"x","__proto__":{"polluted":true}}}', contentType: "application/json" },
    });
    expectError(res, 422, "VALIDATION_ERROR");
    expect(res.body.errors[0]).toMatchObject({ loc: ["body", "content", "__proto__"], type: "invalid_key" });
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });
});

describe("document metadata is bounded free-form JSON (422 naming the location)", () => {
  it("refuses reserved, empty and long keys, deep nesting, too many keys and oversized values; the document is unchanged", async () => {
    const created = await create({ content: "# Meta\n" });
    const id = created.body.id as string;
    const set = await patch(id, { metadata: { owner: "pm" } });
    expect(set.status, set.text).toBe(200);
    let deep: unknown = 1;
    for (let k = 0; k < 40; k++) deep = { d: deep };
    const cases: { body: string; loc: (string | number)[]; type: string }[] = [
      { body: '{"metadata":{"constructor":"x"}}', loc: ["body", "metadata", "constructor"], type: "invalid_key" },
      { body: '{"metadata":{"a":{"__proto__":{"polluted":true}}}}', loc: ["body", "metadata", "a", "__proto__"], type: "invalid_key" },
      { body: '{"metadata":{"__proto__":{"polluted":true}}}', loc: ["body", "metadata", "__proto__"], type: "invalid_key" },
      { body: '{"metadata":{"list":[{"prototype":1}]}}', loc: ["body", "metadata", "list", 0, "prototype"], type: "invalid_key" },
      { body: '{"metadata":{"":1}}', loc: ["body", "metadata", ""], type: "invalid_key" },
      { body: JSON.stringify({ metadata: { ["k".repeat(201)]: 1 } }), loc: ["body", "metadata", "k".repeat(201)], type: "invalid_key" },
      { body: JSON.stringify({ metadata: { deep } }), loc: ["body", "metadata", "deep", ...Array(7).fill("d")], type: "too_big" },
      { body: JSON.stringify({ metadata: { big: "x".repeat(500_000) } }), loc: ["body", "metadata"], type: "too_big" },
      { body: JSON.stringify({ metadata: Object.fromEntries(Array.from({ length: 101 }, (_, k) => [`k${k}`, k])) }), loc: ["body", "metadata"], type: "too_big" },
    ];
    for (const c of cases) {
      const res = await patchRaw(id, c.body);
      expectError(res, 422, "VALIDATION_ERROR");
      expect(res.body.errors[0], c.body.slice(0, 80)).toMatchObject({ loc: c.loc, type: c.type });
    }
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    const after = await call("GET", doc(id), { token: ws.token });
    expect(after.status).toBe(200);
    expect(after.body.metadata).toEqual({ owner: "pm" });
  });

  it("bounds the merged metadata too: each patch may fit while the sum does not (422)", async () => {
    const created = await create({ content: "# Meta\n" });
    const id = created.body.id as string;
    const a = await patch(id, { metadata: { a: "x".repeat(20_000) } });
    expect(a.status, a.text.slice(0, 300)).toBe(200);
    const b = await patch(id, { metadata: { b: "y".repeat(20_000) } });
    expectError(b, 422, "VALIDATION_ERROR");
    expect(b.body.errors[0]).toMatchObject({ loc: ["body", "metadata"], type: "too_big" });
    // Removing a key with null makes room again.
    const c = await patch(id, { metadata: { a: null, b: "y".repeat(20_000) } });
    expect(c.status, c.text.slice(0, 300)).toBe(200);
    expect(Object.keys(c.body.metadata)).toEqual(["b"]);
  });
});

describe("ids a document body references belong to the caller's workspace", () => {
  it("refuses a recommendation or insights of another workspace, or that do not exist (422 naming them)", async () => {
    const other = await newWorkspace("Someone else");
    const foreignRec = await call("POST", "/api/recommendations", { token: other.owner.token, body: { workspace_id: other.workspace.id, title: "R", description: "D" } });
    const foreignInsight = await call("POST", "/api/insights", {
      token: other.owner.token,
      body: { workspace_id: other.workspace.id, insight_type: "pain_point", title: "T", description: "D" },
    });
    const ownInsight = await call("POST", "/api/insights", { token: ws.token, body: { workspace_id: ws.workspaceId, insight_type: "pain_point", title: "T", description: "D" } });
    for (const r of [foreignRec, foreignInsight, ownInsight]) expect(r.status, r.text).toBe(201);

    const rec = await create({ related_recommendation_id: foreignRec.body.id });
    expectError(rec, 422, "VALIDATION_ERROR");
    expect(rec.body.errors).toEqual([{ loc: ["body", "related_recommendation_id"], msg: `recommendation ${foreignRec.body.id} is not in this workspace`, type: "unknown_id" }]);

    const missing = randomUUID();
    const ins = await create({ related_insight_ids: [ownInsight.body.id, foreignInsight.body.id, missing] });
    expectError(ins, 422, "VALIDATION_ERROR");
    expect(ins.body.errors.map((e: { loc: string[]; type: string }) => [e.loc, e.type])).toEqual([
      [["body", "related_insight_ids"], "unknown_id"],
      [["body", "related_insight_ids"], "unknown_id"],
    ]);
    expect(ins.body.detail).toContain(foreignInsight.body.id);
    expect(ins.body.detail).toContain(missing);
    expect(ins.body.detail).not.toContain(ownInsight.body.id);

    // Nothing was written; the workspace's own references are accepted.
    const docs = await call("GET", "/api/documents", { token: ws.token, query: { workspace_id: ws.workspaceId } });
    expect(docs.body.documents.filter((d: { related_recommendation_id: string | null }) => d.related_recommendation_id === foreignRec.body.id)).toEqual([]);
    const ok = await create({ related_insight_ids: [ownInsight.body.id] });
    expect(ok.status, ok.text).toBe(201);
    expect(ok.body.related_insight_ids).toEqual([ownInsight.body.id]);
  });
});

describe(`a document holds at most ${MAX_BLOCKS_PER_DOCUMENT} blocks (a reorder names them all)`, () => {
  const blocksPath = (id: string) => `${doc(id)}/blocks`;
  const titles = async (id: string) => (await call("GET", blocksPath(id), { token: ws.token })).body.blocks.map((b: { title: string }) => b.title);

  it("a create past the limit answers 422 too_many_blocks and writes nothing", async () => {
    const created = await create({});
    const id = created.body.id as string;
    const ids = Array.from({ length: MAX_BLOCKS_PER_DOCUMENT - 1 }, () => randomUUID());
    await db()
      .entities.block.put(ids.map((bid, position) => ({ id: bid, workspace_id: ws.workspaceId, document_id: id, block_type: "free_text" as const, title: `B${position}`, content: { markdown: "x" }, position })))
      .go();
    const last = await call("POST", blocksPath(id), { token: ws.token, body: { block_type: "free_text", title: "last" } });
    expect(last.status, last.text.slice(0, 300)).toBe(201);
    const over = await call("POST", blocksPath(id), { token: ws.token, body: { block_type: "free_text", title: "over" } });
    expectEnvelope(over, 422, "VALIDATION_ERROR");
    expect(over.body.errors[0].type).toBe("too_many_blocks");
    const all = await titles(id);
    expect(all).toHaveLength(MAX_BLOCKS_PER_DOCUMENT);
    expect(all).not.toContain("over");
  }, 60_000);

  it("an extraction that would make more answers 422 before deleting anything", async () => {
    const sections = Array.from({ length: MAX_BLOCKS_PER_DOCUMENT + 1 }, (_, k) => `## Note ${k}\n\nText ${k}.\n`).join("\n");
    const created = await create({ content: `# Many\n\n${sections}` });
    const id = created.body.id as string;
    expect((await call("POST", blocksPath(id), { token: ws.token, body: { block_type: "free_text", title: "kept" } })).status).toBe(201);
    const res = await call("POST", "/api/blocks/extract", { token: ws.token, body: { workspace_id: ws.workspaceId, document_id: id } });
    expectEnvelope(res, 422, "VALIDATION_ERROR");
    expect(res.body.errors[0].type).toBe("too_many_blocks");
    expect(await titles(id)).toEqual(["kept"]);
  }, 60_000);
});
