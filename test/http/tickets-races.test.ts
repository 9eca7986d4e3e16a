/**
 * Ticket generation racing the document's DELETE, over HTTP through the real handlers (spec 02 "Execution tickets";
 * docs/decisions.md): each ticket is written in one transaction with a check that its document exists and is not being
 * deleted (`deleting_at`), so a generation whose writes come after the DELETE's mark answers 404 NOT_FOUND and leaves
 * no ticket behind; a ticket it wrote before the mark is among the children the DELETE lists after it.
 *
 * The races are made deterministic with middleware on the shared DynamoDB client (as test/http/documents-races.test.ts
 * does): the DELETE runs to its end just before generate's write of a given ticket goes to DynamoDB.
 */
import { beforeAll, describe, expect, it } from "vitest";
import { ticketIdOf } from "../../core/ticket/draft";
import { landsBefore } from "../support/races";
import { call, newWorkspace } from "../support/api";
import { expectEnvelope, partitionItems } from "./_helpers";

type Ws = { token: string; workspaceId: string };
let ws: Ws;

beforeAll(async () => {
  const { owner, workspace } = await newWorkspace("Ticket races");
  ws = { token: owner.token, workspaceId: workspace.id };
});

/** A ticket write of generate: a Put before the fix, the transaction with the document's check after. */
const TICKET_WRITE = /^(Put|TransactWrite)/;

/** A PRD with two user stories (two tickets): the block ids in order. */
async function docWithStories(): Promise<{ docId: string; blockIds: string[] }> {
  const doc = await call("POST", "/api/documents", { token: ws.token, body: { workspace_id: ws.workspaceId, document_type: "prd", title: "Races", content: "# Races\n" } });
  expect(doc.status, doc.text.slice(0, 300)).toBe(201);
  const blockIds: string[] = [];
  for (const want of ["to resume an interrupted upload", "to see the upload's progress"]) {
    const res = await call("POST", `/api/documents/${doc.body.id}/blocks`, {
      token: ws.token,
      body: { block_type: "user_story", title: "User story", content: { as_a: "analyst", i_want: want, so_that: "I do not start over", acceptance_criteria: ["Works"], priority: "must" } },
    });
    expect(res.status, res.text.slice(0, 300)).toBe(201);
    blockIds.push(res.body.id);
  }
  return { docId: doc.body.id, blockIds };
}

const generate = (docId: string) => call("POST", "/api/execution/generate", { token: ws.token, body: { workspace_id: ws.workspaceId, document_id: docId, include_block_types: ["user_story"] } });
const remove = (docId: string) => call("DELETE", `/api/documents/${docId}`, { token: ws.token });

/** The table items of a document and its children (tickets included). */
async function itemsOf(docId: string): Promise<string[]> {
  return (await partitionItems(`ws#${ws.workspaceId}`)).map((i) => String(i.sk)).filter((sk) => sk.startsWith(`document#${docId}`));
}

describe("ticket generation racing the document's DELETE answers 404 and leaves no ticket behind", () => {
  it("the DELETE lands just before generate's first ticket write", async () => {
    const { docId } = await docWithStories();
    const [generated, removed] = await landsBefore(TICKET_WRITE, `document#${docId}#ticket#`, () => remove(docId), () => generate(docId));
    expect(removed.status, removed.text).toBe(204);
    expectEnvelope(generated, 404, "NOT_FOUND");
    expect(await itemsOf(docId)).toEqual([]);
  });

  it("the DELETE lands between generate's ticket writes: the ticket written before its mark is deleted with the document", async () => {
    const { docId, blockIds } = await docWithStories();
    const second = ticketIdOf(docId, blockIds[1]!);
    const [generated, removed] = await landsBefore(TICKET_WRITE, `document#${docId}#ticket#${second}`, () => remove(docId), () => generate(docId));
    expect(removed.status, removed.text).toBe(204);
    expectEnvelope(generated, 404, "NOT_FOUND");
    expect(await itemsOf(docId)).toEqual([]);
  });

  it("without a DELETE, generate writes both tickets (the check passes)", async () => {
    const { docId, blockIds } = await docWithStories();
    const res = await generate(docId);
    expect(res.status, res.text.slice(0, 300)).toBe(200);
    expect(res.body.tickets.map((t: { id: string }) => t.id)).toEqual(blockIds.map((b) => ticketIdOf(docId, b)));
    expect((await itemsOf(docId)).filter((sk) => sk.includes("#ticket#"))).toHaveLength(2);
    // Generating again rewrites them (the transaction's patch path), still two.
    const again = await generate(docId);
    expect(again.status, again.text.slice(0, 300)).toBe(200);
    expect(again.body).toMatchObject({ total: 2, skipped: [] });
    expect((await itemsOf(docId)).filter((sk) => sk.includes("#ticket#"))).toHaveLength(2);
  });
});
