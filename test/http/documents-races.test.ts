/**
 * Block and annotation creates racing each other and the document's DELETE, over HTTP through the real handlers
 * (spec 01 Documents and blocks endpoints; docs/decisions.md Documents):
 * - two block creates at once (two appends, an append and an insert) never leave two blocks at one position: each
 *   create commits with the document's `blocks_rev` moving from the value it read, and the loser reads again;
 * - a block or annotation create racing the document's DELETE answers 404 and leaves nothing behind, whether the
 *   DELETE lands before the create's write or between the DELETE's read of the child keys and its deletes;
 * - a DELETE that dies part-way is finished by the recovery sweeper from its deletion record.
 *
 * The races are made deterministic with middleware on the shared DynamoDB client: one request runs to its end just
 * before the other's first write (of a given command, naming a given key) goes to DynamoDB.
 */
import { beforeAll, describe, expect, it } from "vitest";
import { beginDocumentDeletion, DELETION_GRACE_MS, sweepDocumentDeletions } from "../../core/document/deletion";
import { landsBefore } from "../support/races";
import { storeFails } from "../support/store-faults";
import { conflictTransactions } from "../support/throttle";
import { call, newWorkspace, type ApiResponse } from "../support/api";
import { expectEnvelope, partitionItems } from "./_helpers";

type Ws = { token: string; workspaceId: string };
let ws: Ws;

beforeAll(async () => {
  const { owner, workspace } = await newWorkspace("Document races");
  ws = { token: owner.token, workspaceId: workspace.id };
});

/** The first write of a block or annotation create: a Put before the fix, the transaction after. */
const CREATE_WRITE = /^(Put|TransactWrite)/;

async function newDoc(): Promise<string> {
  const res = await call("POST", "/api/documents", { token: ws.token, body: { workspace_id: ws.workspaceId, document_type: "prd", title: "Races", content: "# Races\n" } });
  expect(res.status, res.text.slice(0, 300)).toBe(201);
  return res.body.id;
}

const blocksPath = (docId: string) => `/api/documents/${docId}/blocks`;
const addBlock = (docId: string, title: string, position?: number): Promise<ApiResponse> =>
  call("POST", blocksPath(docId), { token: ws.token, body: { block_type: "free_text", title, content: { markdown: title }, ...(position === undefined ? {} : { position }) } });

async function listed(docId: string): Promise<Array<{ title: string; position: number }>> {
  const res = await call("GET", blocksPath(docId), { token: ws.token });
  expect(res.status, res.text.slice(0, 300)).toBe(200);
  return res.body.blocks;
}

/** The table items of a document and its children. */
async function itemsOf(docId: string): Promise<string[]> {
  return (await partitionItems(`ws#${ws.workspaceId}`)).map((i) => String(i.sk)).filter((sk) => sk.startsWith(`document#${docId}`));
}

describe("concurrent block creates never share a position", () => {
  it("two appends at once (one landing between the other's read and write) end at distinct positions 0..n-1", async () => {
    const docId = await newDoc();
    for (const t of ["one", "two"]) expect((await addBlock(docId, t)).status).toBe(201);
    const [a, b] = await landsBefore(CREATE_WRITE, `document#${docId}#block#`, () => addBlock(docId, "inner"), () => addBlock(docId, "outer"));
    expect(a.status, a.text).toBe(201);
    expect(b.status, b.text).toBe(201);
    expect(b.body.position).toBe(2);
    expect(a.body.position).toBe(3);
    const blocks = await listed(docId);
    expect(blocks.map((x) => x.position)).toEqual([0, 1, 2, 3]);
    expect(blocks.map((x) => x.title)).toEqual(["one", "two", "inner", "outer"]);
  });

  it("an insert at 0 with an append landing between its read and write: distinct positions 0..n-1, the insert first", async () => {
    const docId = await newDoc();
    for (const t of ["one", "two"]) expect((await addBlock(docId, t)).status).toBe(201);
    const [a, b] = await landsBefore(CREATE_WRITE, `document#${docId}#block#`, () => addBlock(docId, "appended"), () => addBlock(docId, "inserted", 0));
    expect(a.status, a.text).toBe(201);
    expect(b.status, b.text).toBe(201);
    expect(a.body.position).toBe(0);
    const blocks = await listed(docId);
    expect(blocks.map((x) => x.position)).toEqual([0, 1, 2, 3]);
    expect(blocks.map((x) => x.title)).toEqual(["inserted", "one", "two", "appended"]);
  });
});

describe("creates racing the document's DELETE answer 404 and leave nothing behind", () => {
  it("a block create whose write comes after the DELETE", async () => {
    const docId = await newDoc();
    expect((await addBlock(docId, "one")).status).toBe(201);
    const [created, removed] = await landsBefore(CREATE_WRITE, `document#${docId}#block#`, () => call("DELETE", `/api/documents/${docId}`, { token: ws.token }), () => addBlock(docId, "late"));
    expect(removed.status, removed.text).toBe(204);
    expectEnvelope(created, 404, "NOT_FOUND");
    expect(await itemsOf(docId)).toEqual([]);
  });

  it("a block create landing between the DELETE's read of the child keys and its deletes", async () => {
    const docId = await newDoc();
    expect((await addBlock(docId, "one")).status).toBe(201);
    const [removed, created] = await landsBefore(/^BatchWrite/, `document#${docId}`, () => addBlock(docId, "late"), () => call("DELETE", `/api/documents/${docId}`, { token: ws.token }));
    expect(removed.status, removed.text).toBe(204);
    expectEnvelope(created, 404, "NOT_FOUND");
    expect(await itemsOf(docId)).toEqual([]);
  });

  it("a revision save or a status change landing between the DELETE's read of the child keys and its deletes leaves no revision behind", async () => {
    for (const late of [
      (docId: string) => call("POST", `/api/documents/${docId}/versions`, { token: ws.token, body: { change_summary: "late" } }),
      (docId: string) => call("POST", `/api/documents/${docId}/status`, { token: ws.token, body: { target_status: "review" } }),
    ]) {
      const docId = await newDoc();
      const [removed, saved] = await landsBefore(/^BatchWrite/, `document#${docId}`, () => late(docId), () => call("DELETE", `/api/documents/${docId}`, { token: ws.token }));
      expect(removed.status, removed.text).toBe(204);
      expect(saved.status, saved.text).toBe(409);
      expect(await itemsOf(docId)).toEqual([]);
    }
  });

  it("an extraction whose blocks are written after the DELETE listed the children takes them back and answers 404", async () => {
    const docId = await newDoc();
    const extract = () => call("POST", "/api/blocks/extract", { token: ws.token, body: { workspace_id: ws.workspaceId, document_id: docId } });
    const [removed, extracted] = await landsBefore(/^BatchWrite/, `document#${docId}`, extract, () => call("DELETE", `/api/documents/${docId}`, { token: ws.token }));
    expect(removed.status, removed.text).toBe(204);
    expectEnvelope(extracted, 404, "NOT_FOUND");
    expect(await itemsOf(docId)).toEqual([]);
  });

  it.each([
    // The document's DELETE leaves nothing of it; a block's leaves the document and its revision.
    { what: "the DELETE", path: (docId: string) => `/api/documents/${docId}`, left: (_sk: string) => true },
    { what: "its block's DELETE", path: (docId: string, blockId: string) => `${blocksPath(docId)}/${blockId}`, left: (sk: string) => sk.includes("#block#") || sk.includes("#note#") },
  ])("an annotation create whose write comes after $what", async ({ path, left }) => {
    const docId = await newDoc();
    const block = await addBlock(docId, "one");
    expect(block.status).toBe(201);
    const annotate = () => call("POST", `${blocksPath(docId)}/${block.body.id}/annotations`, { token: ws.token, body: { body: "Looks good" } });
    const [created, removed] = await landsBefore(CREATE_WRITE, "#note#", () => call("DELETE", path(docId, block.body.id), { token: ws.token }), annotate);
    expect(removed.status, removed.text).toBe(204);
    expectEnvelope(created, 404, "NOT_FOUND");
    expect((await itemsOf(docId)).filter(left)).toEqual([]);
  });
});

describe("an annotation create racing its block's DELETE", () => {
  it("committing just before the block's delete: the DELETE removes it with the block, no orphan annotation", async () => {
    const docId = await newDoc();
    const block = await addBlock(docId, "one");
    expect(block.status).toBe(201);
    const annotate = () => call("POST", `${blocksPath(docId)}/${block.body.id}/annotations`, { token: ws.token, body: { body: "Looks good" } });
    // The annotation commits after the DELETE found the block, just before the block's own delete goes out.
    const [removed, created] = await landsBefore(/^DeleteItem/, `#block#${block.body.id}`, annotate, () => call("DELETE", `${blocksPath(docId)}/${block.body.id}`, { token: ws.token }));
    expect(created.status, created.text).toBe(201);
    expect(removed.status, removed.text).toBe(204);
    expect((await itemsOf(docId)).filter((sk) => sk.includes("#block#") || sk.includes("#note#"))).toEqual([]);
  });
});

describe("a block's DELETE that dies part-way", () => {
  it("failing at its annotations' delete leaves the block, so the DELETE sent again finishes: no orphan annotation", async () => {
    const docId = await newDoc();
    const block = await addBlock(docId, "one");
    expect(block.status).toBe(201);
    const note = await call("POST", `${blocksPath(docId)}/${block.body.id}/annotations`, { token: ws.token, body: { body: "Looks good" } });
    expect(note.status, note.text).toBe(201);
    const fault = storeFails(/^BatchWrite/, "#note#", 1);
    try {
      const failed = await call("DELETE", `${blocksPath(docId)}/${block.body.id}`, { token: ws.token });
      expect(failed.status, failed.text).toBeGreaterThanOrEqual(500);
      expect(fault.failed()).toBe(1);
    } finally {
      fault.remove();
    }
    expect((await listed(docId)).map((b) => b.title)).toEqual(["one"]);
    const again = await call("DELETE", `${blocksPath(docId)}/${block.body.id}`, { token: ws.token });
    expect(again.status, again.text).toBe(204);
    expect((await itemsOf(docId)).filter((sk) => sk.includes("#block#") || sk.includes("#note#"))).toEqual([]);
  });
});

describe("a DELETE that dies part-way is finished by the recovery sweeper", () => {
  it("the children's deletes fail: the document refuses new blocks, then the sweep removes it all and its record", async () => {
    const docId = await newDoc();
    expect((await addBlock(docId, "one")).status).toBe(201);
    // The store stops answering at the DELETE's first batch delete, as a process that died there would leave it.
    const fault = storeFails(/^BatchWrite/, `document#${docId}`);
    try {
      const failed = await call("DELETE", `/api/documents/${docId}`, { token: ws.token });
      expect(failed.status, failed.text).toBeGreaterThanOrEqual(500);
      expect(fault.failed()).toBeGreaterThan(0);
    } finally {
      fault.remove();
    }
    expect(await itemsOf(docId)).toContain(`document#${docId}`);
    expectEnvelope(await addBlock(docId, "late"), 404, "NOT_FOUND");
    const record = (await partitionItems(`ws#${ws.workspaceId}`)).filter((i) => i.sk === `docdelete#${docId}`);
    expect(record).toHaveLength(1);

    // Not before its grace: a DELETE still running is not raced.
    expect((await sweepDocumentDeletions({ workspaceId: ws.workspaceId })).due).toBe(0);
    const later = Date.now() + DELETION_GRACE_MS + 1_000;
    const swept = await sweepDocumentDeletions({ now: later, workspaceId: ws.workspaceId });
    expect(swept).toMatchObject({ due: 1, finished: 1, failed: 0 });
    expect(await itemsOf(docId)).toEqual([]);
    expect((await partitionItems(`ws#${ws.workspaceId}`)).filter((i) => String(i.sk).startsWith("docdelete#"))).toEqual([]);
    expectEnvelope(await call("GET", `/api/documents/${docId}`, { token: ws.token }), 404, "NOT_FOUND");
    expect((await sweepDocumentDeletions({ now: later, workspaceId: ws.workspaceId })).due).toBe(0);
  });

  it("a DELETE whose first transaction meets another on the document tries again; one that always does answers 409, having written nothing", async () => {
    const docId = await newDoc();
    // DynamoDB cancels the mark's transaction (TransactionConflict on the document's patch) once: tried again, 204.
    const once = conflictTransactions([`docdelete#${docId}`], 1, 0);
    try {
      const removed = await call("DELETE", `/api/documents/${docId}`, { token: ws.token });
      expect(removed.status, removed.text).toBe(204);
      expect(once.left).toBe(0);
    } finally {
      once.remove();
    }
    expect(await itemsOf(docId)).toEqual([]);

    const other = await newDoc();
    const always = conflictTransactions([`docdelete#${other}`], 100, 0);
    try {
      expectEnvelope(await call("DELETE", `/api/documents/${other}`, { token: ws.token }), 409, "CONFLICT");
    } finally {
      always.remove();
    }
    // Nothing was written: no mark, no record; blocks can still be added and the DELETE sent again succeeds.
    expect((await partitionItems(`ws#${ws.workspaceId}`)).filter((i) => i.sk === `docdelete#${other}`)).toEqual([]);
    expect((await addBlock(other, "still editable")).status).toBe(201);
    expect((await call("DELETE", `/api/documents/${other}`, { token: ws.token })).status).toBe(204);
  });

  it("a sweep that fails tries again after a longer wait; a DELETE sent again finishes it at once", async () => {
    const docId = await newDoc();
    const begun = Date.now();
    expect(await beginDocumentDeletion(ws.workspaceId, docId, begun)).toBe(true);
    const fault = storeFails(/^Query/, `document#${docId}`);
    let swept;
    try {
      swept = await sweepDocumentDeletions({ now: begun + DELETION_GRACE_MS, workspaceId: ws.workspaceId });
    } finally {
      fault.remove();
    }
    expect(swept).toMatchObject({ due: 1, finished: 0, failed: 1 });
    // Its next try waits twice the grace: not due a grace after the failed one.
    expect((await sweepDocumentDeletions({ now: begun + 2 * DELETION_GRACE_MS, workspaceId: ws.workspaceId })).due).toBe(0);
    const removed = await call("DELETE", `/api/documents/${docId}`, { token: ws.token });
    expect(removed.status, removed.text).toBe(204);
    expect(await itemsOf(docId)).toEqual([]);
    expect((await partitionItems(`ws#${ws.workspaceId}`)).filter((i) => i.sk === `docdelete#${docId}`)).toEqual([]);
  });
});

describe("a revision save or a status change racing a content edit", () => {
  // The edit lands between the request's read (version 1, "# Races") and its transaction: the revision would record a
  // text the document no longer holds, so the request answers 409 and writes nothing.
  it.each([
    { what: "a status change", send: (docId: string) => call("POST", `/api/documents/${docId}/status`, { token: ws.token, body: { target_status: "review" } }) },
    { what: "a revision save", send: (docId: string) => call("POST", `/api/documents/${docId}/versions`, { token: ws.token, body: { change_summary: "late" } }) },
  ])("$what whose read came before the edit answers 409 and leaves the document and its revisions as the edit left them", async ({ send }) => {
    const docId = await newDoc();
    const edit = () => call("PATCH", `/api/documents/${docId}`, { token: ws.token, body: { content: "# Edited\n" } });
    const [answered, edited] = await landsBefore(/^TransactWrite/, `document#${docId}`, edit, () => send(docId));
    expect(edited.status, edited.text).toBe(200);
    expectEnvelope(answered, 409, "CONFLICT");
    const doc = await call("GET", `/api/documents/${docId}`, { token: ws.token });
    expect(doc.body).toMatchObject({ status: "draft", version: 2, content: "# Edited\n" });
    const revisions = await call("GET", `/api/documents/${docId}/versions`, { token: ws.token });
    expect(revisions.body.revisions).toHaveLength(1);
    // Sent again, it reads the edit and records it.
    const again = await send(docId);
    expect(again.status, again.text).toBeLessThan(300);
    const [latest] = (await call("GET", `/api/documents/${docId}/versions`, { token: ws.token })).body.revisions;
    const full = await call("GET", `/api/documents/${docId}/versions/${latest.id}`, { token: ws.token });
    expect(full.body.content).toBe("# Edited\n");
  });
});

describe("a block create racing an extraction never leaves two blocks at one position", () => {
  const sections = "# Races\n\n## Problem\n\nZebra problem.\n\n## Solution\n\nZebra solution.\n\n## Risks\n\nZebra risk.\n";
  async function docWithBlock(): Promise<string> {
    const docId = await newDoc();
    expect((await call("PATCH", `/api/documents/${docId}`, { token: ws.token, body: { content: sections } })).status).toBe(200);
    expect((await addBlock(docId, "old")).status).toBe(201);
    return docId;
  }
  const extract = (docId: string) => call("POST", "/api/blocks/extract", { token: ws.token, body: { workspace_id: ws.workspaceId, document_id: docId } });
  const expectDistinct = (blocks: Array<{ position: number }>) => expect(blocks.map((b) => b.position)).toEqual(blocks.map((_, i) => i));

  it("a create landing after the extraction read the old blocks (before its deletes) answers 409 and is not left behind", async () => {
    const docId = await docWithBlock();
    const [extracted, created] = await landsBefore(/^BatchWrite/, `document#${docId}#block#`, () => addBlock(docId, "late"), () => extract(docId));
    expect(extracted.status, extracted.text).toBe(200);
    expectEnvelope(created, 409, "CONFLICT");
    const blocks = await listed(docId);
    expect(blocks.map((b) => b.title)).not.toContain("late");
    expect(blocks.map((b) => b.title)).not.toContain("old");
    expectDistinct(blocks);
  });

  it("a create landing between the extraction's deletes and its puts answers 409: the new blocks alone, at 0..n-1", async () => {
    const docId = await docWithBlock();
    // The puts carry the new blocks' text; the deletes only keys.
    const [extracted, created] = await landsBefore(/^BatchWrite/, "Zebra", () => addBlock(docId, "late"), () => extract(docId));
    expect(extracted.status, extracted.text).toBe(200);
    expectEnvelope(created, 409, "CONFLICT");
    const blocks = await listed(docId);
    expect(blocks.map((b) => b.title)).not.toContain("late");
    expectDistinct(blocks);
  });

  it("a create that read the blocks before the extraction, writing after it, reads again and appends after the new blocks", async () => {
    const docId = await docWithBlock();
    const [created, extracted] = await landsBefore(CREATE_WRITE, `document#${docId}#block#`, () => extract(docId), () => addBlock(docId, "late"));
    expect(extracted.status, extracted.text).toBe(200);
    expect(created.status, created.text).toBe(201);
    const blocks = await listed(docId);
    expectDistinct(blocks);
    expect(blocks.length).toBe(extracted.body.count + 1);
    expect(blocks.at(-1)!.title).toBe("late");
    expect(created.body.position).toBe(extracted.body.count);
  });
});
