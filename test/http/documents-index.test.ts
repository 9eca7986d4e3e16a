/**
 * Documents are listed from their sparse index (core/document/listing.ts; docs/decisions.md "Documents are listed
 * from a sparse index"): listing a workspace's documents reads the documents, never their revisions, blocks, notes or
 * tickets; a workspace from before the index is indexed at its first listing, once (core/db/slim-index.ts `backfill`,
 * shared with the slim lists), with the keys ElectroDB writes; a backfill racing its workspace's deletion leaves no
 * mark behind. Through the real handlers against DynamoDB Local, with the Queries each request sent and the items each
 * read (`ScannedCount`: items read before any filter, what read capacity is paid for).
 */
import { AsyncLocalStorage } from "node:async_hooks";
import { DeleteCommand, GetCommand, UpdateCommand } from "@aws-sdk/lib-dynamodb";
import { beforeAll, describe, expect, it, vi } from "vitest";
import { Config } from "../../core/config";
import { dynamoClient } from "../../core/db/client";
import { db } from "../../core/db/service";
import { DOCUMENT_INDEX, documentIndexMarkKeysOf, documentListKeysOf } from "../../core/document/document.entity";
import { documentsOf } from "../../core/document/listing";
import { backfill } from "../../core/db/slim-index";
import { call, newWorkspace } from "../support/api";
import { listDocuments } from "../../core/agent/tools/reads";
import { s3 } from "../../core/storage/client";
import { partitionItems } from "./_helpers";

interface Sent {
  command: string;
  index?: string;
  scanned?: number;
}

/** The DynamoDB commands of the async context being counted, with each Query's index and items read. */
const counting = new AsyncLocalStorage<Sent[]>();
/** Run before the next UpdateCommand goes out (once), in the request's own context. */
let beforeNextUpdate: (() => Promise<void>) | undefined;
beforeAll(() => {
  dynamoClient().middlewareStack.add(
    (next, context) => async (args) => {
      // The low-level operation (ElectroDB and the document client send Update for UpdateItem, and so on).
      const name = String(context.commandName ?? "?").replace(/Command$/, "");
      const command = /^(Get|Put|Update|Delete)$/.test(name) ? `${name}Item` : name;
      const input = args.input as { IndexName?: string };
      if (command === "UpdateItem" && beforeNextUpdate) {
        const run = beforeNextUpdate;
        beforeNextUpdate = undefined;
        await run();
      }
      const out = await next(args);
      const sent: Sent = { command, ...(input.IndexName ? { index: input.IndexName } : {}) };
      if (command === "Query") sent.scanned = (out.output as { ScannedCount?: number }).ScannedCount;
      counting.getStore()?.push(sent);
      return out;
    },
    { step: "initialize", name: "documentsIndexTestCounter" },
  );
  return () => dynamoClient().middlewareStack.remove("documentsIndexTestCounter");
});

async function counted<T>(fn: () => Promise<T>): Promise<{ result: T; sent: Sent[] }> {
  const sent: Sent[] = [];
  const result = await counting.run(sent, fn);
  return { result, sent };
}

/** A document with `revisions` more saved revisions and `blocks` blocks: children that share its sort-key prefix. */
async function documentWithChildren(token: string, workspaceId: string, title: string, revisions: number, blocks: number): Promise<string> {
  const res = await call("POST", "/api/documents", { token, body: { workspace_id: workspaceId, document_type: "prd", title, content: `# ${title}\n\n${"Long text. ".repeat(200)}\n` } });
  expect(res.status, res.text).toBe(201);
  const id = res.body.id as string;
  for (let i = 0; i < revisions; i++) {
    expect((await call("PATCH", `/api/documents/${id}`, { token, body: { content: `# ${title}\n\nEdit ${i}. ${"More text. ".repeat(200)}\n` } })).status).toBe(200);
    expect((await call("POST", `/api/documents/${id}/versions`, { token, body: { change_summary: `edit ${i}` } })).status).toBe(201);
  }
  for (let i = 0; i < blocks; i++) {
    expect((await call("POST", `/api/documents/${id}/blocks`, { token, body: { block_type: "risk", title: `Risk ${i}` } })).status).toBe(201);
  }
  return id;
}

/** Make a workspace look as one created before the index: no mark, and its documents without index keys. */
async function asBeforeTheIndex(workspaceId: string): Promise<void> {
  const table = Config.tableName();
  const keys = documentIndexMarkKeysOf(workspaceId);
  await dynamoClient().send(new DeleteCommand({ TableName: table, Key: { pk: keys.pk, sk: keys.sk } }));
  for (const item of await partitionItems(keys.pk)) {
    if (item.__edb_e__ !== "document") continue;
    await dynamoClient().send(new UpdateCommand({ TableName: table, Key: { pk: item.pk, sk: item.sk }, UpdateExpression: "REMOVE gsi3pk, gsi3sk" }));
  }
}

const rawGet = async (pk: string, sk: string) =>
  (await dynamoClient().send(new GetCommand({ TableName: Config.tableName(), Key: { pk, sk }, ConsistentRead: true }))).Item;

describe("listing a workspace's documents", () => {
  let owner: { token: string };
  let workspaceId: string;
  let ids: string[];

  beforeAll(async () => {
    const made = await newWorkspace("Documents index");
    owner = made.owner;
    workspaceId = made.workspace.id;
    ids = [];
    for (let d = 0; d < 3; d++) ids.push(await documentWithChildren(owner.token, workspaceId, `Doc ${d}`, 2, 2));
  });

  it("GET /api/documents reads the documents and the index mark only, not their revisions or blocks", async () => {
    const children = (await partitionItems(`ws#${workspaceId}`)).filter((i) => String(i.sk).startsWith("document#") && i.__edb_e__ !== "document");
    expect(children.length).toBeGreaterThanOrEqual(3 * (3 + 2)); // 3 revisions and 2 blocks each
    const { result: res, sent } = await counted(() => call("GET", "/api/documents", { token: owner.token, query: { workspace_id: workspaceId } }));
    expect(res.status, res.text).toBe(200);
    expect(res.body.total).toBe(3);
    expect(res.body.documents.map((d: { id: string }) => d.id).sort()).toEqual([...ids].sort());
    const queries = sent.filter((s) => s.command === "Query");
    expect(queries).toEqual([{ command: "Query", index: "gsi3", scanned: 4 }]);
  });

  it("a new workspace carries its index mark, and documents keep their index keys through edits", async () => {
    const keys = documentIndexMarkKeysOf(workspaceId);
    // The keys the marks of existing tables carry (no migration): built from the entity now, they must not move.
    expect(keys).toEqual({ pk: `ws#${workspaceId}`, sk: "docindex", gsi3pk: `wsdocs#${workspaceId}`, gsi3sk: "document" });
    const mark = await rawGet(keys.pk, keys.sk);
    expect(mark).toMatchObject({ gsi3pk: keys.gsi3pk, gsi3sk: keys.gsi3sk, __edb_e__: "document_index", __edb_v__: "1", workspace_id: workspaceId, backfilled: 0 });
    for (const id of ids) {
      // Each was patched twice and had revisions saved and blocks added: the keys written at create are still there.
      expect(await rawGet(keys.pk, `document#${id}`)).toMatchObject(documentListKeysOf(workspaceId, id));
    }
    // What ElectroDB writes is what the backfill writes (both from the entity's `listed` index).
    const params = db().entities.document.create({ id: "x", workspace_id: "w", document_type: "prd", title: "t", content: "c", created_by: "u" }).params() as { Item: Record<string, unknown> };
    expect({ gsi3pk: params.Item.gsi3pk, gsi3sk: params.Item.gsi3sk }).toEqual(documentListKeysOf("w", "x"));
  });

  it("a deleted document leaves the list, and the filters and projections of documentsOf hold", async () => {
    const gone = await documentWithChildren(owner.token, workspaceId, "Short-lived", 1, 1);
    expect((await documentsOf(workspaceId, { attributes: ["id"] })).map((d) => d.id)).toContain(gone);
    expect((await call("DELETE", `/api/documents/${gone}`, { token: owner.token })).status).toBe(204);
    // One DynamoDB call, the index Query, which also reads the mark (issue #24 counts the calls of each stream).
    const { result: listed, sent } = await counted(() => documentsOf(workspaceId, { attributes: ["id", "title"] }));
    expect(sent).toEqual([{ command: "Query", index: "gsi3", scanned: 4 }]);
    expect(listed.map((d) => d.id).sort()).toEqual([...ids].sort());
    expect(Object.keys(listed[0]!).sort()).toEqual(["id", "title"]);
    expect(await documentsOf(workspaceId, { createdSince: "9999-01-01T00:00:00.000Z" })).toEqual([]);
    expect((await documentsOf(workspaceId, { createdSince: "2000-01-01T00:00:00.000Z" })).length).toBe(3);
  });

  it("the copilot's list_documents reads no document's text, and lists what GET /api/documents lists, in its order", async () => {
    // A text over the inline limit lives in S3: the HTTP listing reads it, the tool must not.
    const large = await call("POST", "/api/documents", { token: owner.token, body: { workspace_id: workspaceId, document_type: "spec", title: "Large", content: `# Large\n\n${"A long paragraph of the spec. ".repeat(3_000)}\n` } });
    expect(large.status, large.text).toBe(201);
    const { client } = await s3();
    const s3Sends = vi.spyOn(client, "send");
    try {
      const me = (await call("GET", "/api/auth/me", { token: owner.token })).body as { id: string };
      const ctx = { userId: me.id, workspaceId, conversationId: null, missionId: null, sessionId: null, attachmentIds: [], signal: new AbortController().signal };
      const { result: listed, sent } = await counted(() => listDocuments.run(ctx as never, { limit: 20 }));
      expect(s3Sends).not.toHaveBeenCalled();
      expect(sent.filter((c) => c.command === "Query")).toEqual([{ command: "Query", index: "gsi3", scanned: 5 }]);
      const http = await call("GET", "/api/documents", { token: owner.token, query: { workspace_id: workspaceId } });
      expect(s3Sends).toHaveBeenCalled(); // the HTTP listing does read the large text
      const pick = (d: Record<string, unknown>) => ({ id: d.id, title: d.title, document_type: d.document_type, status: d.status, version: d.version, updated_at: d.updated_at });
      expect(listed).toEqual({ total: 4, documents: http.body.documents.map(pick) });
      const prds = (await listDocuments.run(ctx as never, { document_type: "prd", limit: 2 })) as { total: number; documents: { id: string }[] };
      expect(prds.total).toBe(3);
      expect(prds.documents.map((d) => d.id)).toEqual(http.body.documents.filter((d: { document_type: string }) => d.document_type === "prd").slice(0, 2).map((d: { id: string }) => d.id));
    } finally {
      s3Sends.mockRestore();
      await call("DELETE", `/api/documents/${large.body.id}`, { token: owner.token });
    }
  });
});

describe("a workspace created before the index", () => {
  it("is read from its partition at its first listing, indexed once, and read from the index after", async () => {
    const { owner, workspace } = await newWorkspace("Older workspace");
    const ids = [await documentWithChildren(owner.token, workspace.id, "Old A", 2, 1), await documentWithChildren(owner.token, workspace.id, "Old B", 1, 0)];
    await asBeforeTheIndex(workspace.id);
    const keys = documentIndexMarkKeysOf(workspace.id);
    expect(await documentsOf(workspace.id, { attributes: ["id"] }).then(() => rawGet(keys.pk, keys.sk))).toMatchObject({ backfilled: 2 });

    await asBeforeTheIndex(workspace.id);
    const first = await counted(() => call("GET", "/api/documents", { token: owner.token, query: { workspace_id: workspace.id } }));
    expect(first.result.status, first.result.text).toBe(200);
    expect(first.result.body.documents.map((d: { id: string }) => d.id).sort()).toEqual([...ids].sort());
    // The index answered without a mark; the partition was read with the children (2 documents, 5 revisions, 1 block).
    expect(first.sent.filter((s) => s.command === "Query")).toEqual([
      { command: "Query", index: "gsi3", scanned: 0 },
      { command: "Query", scanned: 8 },
    ]);
    expect(first.sent.filter((s) => s.command === "UpdateItem")).toHaveLength(2);
    for (const id of ids) expect(await rawGet(keys.pk, `document#${id}`)).toMatchObject(documentListKeysOf(workspace.id, id));
    // The backfill's mark is the item ElectroDB reads as the entity's, in the index, as the create writes it.
    expect(await rawGet(keys.pk, keys.sk)).toMatchObject({ backfilled: 2, gsi3pk: keys.gsi3pk, gsi3sk: keys.gsi3sk, __edb_e__: "document_index", __edb_v__: "1", workspace_id: workspace.id });

    const second = await counted(() => call("GET", "/api/documents", { token: owner.token, query: { workspace_id: workspace.id } }));
    expect(second.result.body.total).toBe(2);
    expect(second.sent.filter((s) => s.command === "Query")).toEqual([{ command: "Query", index: "gsi3", scanned: 3 }]);
    expect(second.sent.filter((s) => s.command === "UpdateItem" || s.command === "PutItem")).toEqual([]);
  });

  it("does not bring back a document deleted while it is being indexed, and a second run changes nothing", async () => {
    const { owner, workspace } = await newWorkspace("Older workspace, racing delete");
    const kept = await documentWithChildren(owner.token, workspace.id, "Kept", 0, 0);
    const deleted = await documentWithChildren(owner.token, workspace.id, "Deleted meanwhile", 1, 0);
    await asBeforeTheIndex(workspace.id);
    const keys = documentIndexMarkKeysOf(workspace.id);
    // Both were read; the deleted one goes before the first index update is sent.
    beforeNextUpdate = async () => {
      await dynamoClient().send(new DeleteCommand({ TableName: Config.tableName(), Key: { pk: keys.pk, sk: `document#${deleted}` } }));
    };
    const docs = await backfill(DOCUMENT_INDEX, workspace.id);
    expect(docs.map((d) => d.id).sort()).toEqual([kept, deleted].sort());
    expect(await rawGet(keys.pk, `document#${deleted}`)).toBeUndefined();
    expect((await documentsOf(workspace.id, { attributes: ["id"] })).map((d) => d.id)).toEqual([kept]);
    const mark = await rawGet(keys.pk, keys.sk);
    const again = await counted(() => backfill(DOCUMENT_INDEX, workspace.id));
    expect(again.sent.filter((s) => s.command === "UpdateItem")).toEqual([]);
    expect(await rawGet(keys.pk, keys.sk)).toEqual(mark);
  });
});

describe("a documents backfill racing its workspace's deletion (core/workspace/deletion.ts)", () => {
  /** The workspace's documents index mark as stored (strongly consistent); undefined when absent. */
  const markOf = (workspaceId: string) => rawGet(`ws#${workspaceId}`, "docindex");

  it("writes no mark once the deletion has emptied the partition", async () => {
    const { owner, workspace } = await newWorkspace("Documents deleted while listed");
    await documentWithChildren(owner.token, workspace.id, "Doc", 0, 1);
    await asBeforeTheIndex(workspace.id);
    // A first listing past its membership check reads only after the whole deletion has run.
    const deleted = await call("DELETE", `/api/workspaces/${workspace.id}`, { token: owner.token });
    expect(deleted.status, deleted.text).toBe(204);
    expect(await documentsOf(workspace.id, { attributes: ["id"] })).toEqual([]);
    expect(await markOf(workspace.id)).toBeUndefined();
  });

  it("a mark the backfill writes after the deletion's last partition pass goes with the workspace item", async () => {
    const { owner, workspace } = await newWorkspace("Documents marked while deleted");
    await documentWithChildren(owner.token, workspace.id, "Doc", 0, 0);
    await asBeforeTheIndex(workspace.id);
    const hook = "documentsMarkDuringDeletion";
    let fired = false;
    let landed: Record<string, unknown> | undefined;
    // Just before the deletion's last transaction (the workspace item is still there, so the mark's condition holds),
    // a first listing that passed its membership check before the deletion began backfills and writes its mark.
    dynamoClient().middlewareStack.add(
      (next, context) => async (args) => {
        const input = JSON.stringify(args.input);
        if (!fired && /TransactWrite/.test(String(context.commandName)) && input.includes(workspace.id) && input.includes('"sk":"workspace"')) {
          fired = true;
          expect(await documentsOf(workspace.id, { attributes: ["id"] })).toEqual([]);
          landed = await markOf(workspace.id);
        }
        return next(args);
      },
      { step: "initialize", name: hook },
    );
    try {
      const deleted = await call("DELETE", `/api/workspaces/${workspace.id}`, { token: owner.token });
      expect(deleted.status, deleted.text).toBe(204);
    } finally {
      dynamoClient().middlewareStack.remove(hook);
    }
    expect(landed).toMatchObject({ __edb_e__: "document_index", backfilled: 0 });
    expect(await markOf(workspace.id)).toBeUndefined();
  });
});
