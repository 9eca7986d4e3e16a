/**
 * `Idempotency-Key` on the charged AI routes (functions/lib/idempotency.ts; docs/decisions.md "Idempotency-Key on
 * the charged AI routes"), through the real handlers and DynamoDB Local: a retry after a lost answer gets the first
 * answer and is not drafted or charged again; a retry while the first runs is a 409; the key with another request a
 * 422; a failed first request keeps nothing; keys are scoped to their caller.
 */
import { describe, expect, it } from "vitest";
import { db } from "../../core/db/service";
import { runsOf } from "../../core/agent";
import { dynamoBaseClient } from "../../core/db/client";
import { call, newWorkspace as bareWorkspace } from "../support/api";
import { sourceWith } from "../support/sources";
import { documentCreateFailsOnce, documentCreateHeld } from "../support/store-faults";
import { expectEnvelope, headersOf } from "./_helpers";

const QUOTE = "I keep getting logged out and have to sign in again every time";

/** A workspace with one insight quoting its one source: what a draft without a recommendation grounds itself on. */
async function newWorkspace(name: string) {
  const made = await bareWorkspace(name);
  const src = await sourceWith(made.owner.token, made.workspace.id, [QUOTE]);
  const insight = await call("POST", "/api/insights", {
    token: made.owner.token,
    body: { workspace_id: made.workspace.id, insight_type: "pain_point", title: "Users get logged out", description: "Daily logouts.", severity: "high", quotes: [{ text: QUOTE, source_id: src, speaker: "P1" }] },
  });
  expect(insight.status, insight.text).toBe(201);
  return made;
}

const charged = async (userId: string) => (await db().entities.billingAccount.get({ user_id: userId }).go({ consistent: true })).data!.charged ?? 0;
const documentsOf = async (token: string, workspaceId: string) => (await call("GET", "/api/documents", { token, query: { workspace_id: workspaceId } })).body.total as number;
const drafts = async (workspaceId: string) => (await runsOf(workspaceId)).filter((r) => r.agent_type === "drafting").length;

const draft = (token: string, workspaceId: string, key?: string, body: Record<string, unknown> = {}) =>
  call("POST", "/api/documents/draft", {
    token,
    body: { workspace_id: workspaceId, document_type: "memo", user_instructions: "Keep it short", ...body },
    ...(key === undefined ? {} : { headers: { "Idempotency-Key": key } }),
  });

describe("Idempotency-Key on POST /api/documents/draft", () => {
  it("a retry with the key gets the first draft back, marked replayed, and is neither drafted nor charged again", async () => {
    const { owner, workspace } = await newWorkspace("Idempotent drafts");
    const before = await charged(owner.id);
    const first = await draft(owner.token, workspace.id, "draft-0001");
    expect(first.status, first.text).toBe(200);
    expect(headersOf(first)["idempotent-replayed"]).toBeUndefined();
    const afterFirst = await charged(owner.id);
    expect(afterFirst).toBeGreaterThan(before);

    const retry = await draft(owner.token, workspace.id, "draft-0001");
    expect(retry.status, retry.text).toBe(200);
    expect(retry.body).toEqual(first.body);
    expect(headersOf(retry)["idempotent-replayed"]).toBe("true");
    expect(await charged(owner.id)).toBe(afterFirst);
    expect(await documentsOf(owner.token, workspace.id)).toBe(1);
    expect(await drafts(workspace.id)).toBe(1);

    // Without a key, or with another key, each request is its own draft (as before the header existed).
    const other = await draft(owner.token, workspace.id, "draft-0002");
    const plain = await draft(owner.token, workspace.id);
    expect([other.status, plain.status]).toEqual([200, 200]);
    expect(new Set([first.body.id, other.body.id, plain.body.id]).size).toBe(3);
    expect(await drafts(workspace.id)).toBe(3);
  });

  it("the key sent with another body is a 422 and runs nothing; a key that is not 1-255 printable ASCII characters is a 422", async () => {
    const { owner, workspace } = await newWorkspace("Idempotent misuse");
    expect((await draft(owner.token, workspace.id, "reused")).status).toBe(200);
    const misuse = await draft(owner.token, workspace.id, "reused", { document_type: "prd" });
    expectEnvelope(misuse, 422, "VALIDATION_ERROR");
    expect(misuse.body.errors[0].loc).toEqual(["header", "Idempotency-Key"]);
    expectEnvelope(await draft(owner.token, workspace.id, "x".repeat(256)), 422, "VALIDATION_ERROR");
    expectEnvelope(await draft(owner.token, workspace.id, "clé"), 422, "VALIDATION_ERROR");
    expect(await drafts(workspace.id)).toBe(1);
  });

  it("a retry while the first request runs is a 409 with Retry-After; once the first answers, a retry replays it", async () => {
    const { owner, workspace } = await newWorkspace("Idempotent in flight");
    const hold = documentCreateHeld();
    try {
      const first = draft(owner.token, workspace.id, "in-flight");
      await hold.atHold;
      const meanwhile = await draft(owner.token, workspace.id, "in-flight");
      expectEnvelope(meanwhile, 409, "CONFLICT");
      expect(meanwhile.body.idempotency).toBe("in_progress");
      expect(Number(headersOf(meanwhile)["retry-after"])).toBeGreaterThan(0);
      hold.release();
      const done = await first;
      expect(done.status, done.text).toBe(200);
      const retry = await draft(owner.token, workspace.id, "in-flight");
      expect(retry.body.id).toBe(done.body.id);
      expect(headersOf(retry)["idempotent-replayed"]).toBe("true");
    } finally {
      hold.release();
      hold.remove();
    }
    expect(await documentsOf(owner.token, workspace.id)).toBe(1);
    expect(await drafts(workspace.id)).toBe(1);
  });

  it("a first request that failed keeps nothing: the retry with its key drafts", async () => {
    const { owner, workspace } = await newWorkspace("Idempotent failure");
    const fault = documentCreateFailsOnce();
    let first;
    try {
      first = await draft(owner.token, workspace.id, "after-failure");
    } finally {
      fault.remove();
    }
    expect(fault.failed()).toBe(true);
    expect(first.status, first.text).toBeGreaterThanOrEqual(500);
    const retry = await draft(owner.token, workspace.id, "after-failure");
    expect(retry.status, retry.text).toBe(200);
    expect(headersOf(retry)["idempotent-replayed"]).toBeUndefined();
    expect(await documentsOf(owner.token, workspace.id)).toBe(1);
  });

  it("a first request whose answer could not be kept still gets its answer (the store refused the idempotency record's update)", async () => {
    const { owner, workspace } = await newWorkspace("Idempotent answer not kept");
    const name = "idempotencyRecordRefused";
    let refused = false;
    // Powertools writes the answer with an UpdateItem on the record (partition IDEMPOTENCY) after the work returned.
    dynamoBaseClient().middlewareStack.add(
      (next, context) => async (args) => {
        if (!refused && context.commandName === "UpdateItemCommand" && JSON.stringify(args.input).includes('"IDEMPOTENCY"')) {
          refused = true;
          throw Object.assign(new Error("Item size has exceeded the maximum allowed size"), { name: "ValidationException", $fault: "client" });
        }
        return next(args);
      },
      { step: "initialize", name },
    );
    let first;
    try {
      first = await draft(owner.token, workspace.id, "not-kept");
    } finally {
      dynamoBaseClient().middlewareStack.remove(name);
    }
    expect(refused).toBe(true);
    expect(first.status, first.text).toBe(200);
    expect(first.body.id).toBeTruthy();
    expect(await documentsOf(owner.token, workspace.id)).toBe(1);
  });

  it("a key is its caller's: another member sending the same key and body gets a draft of their own", async () => {
    const { owner, workspace } = await newWorkspace("Idempotent per caller");
    const mate = await bareWorkspace("Mate's own");
    const added = await call("POST", `/api/workspaces/${workspace.id}/members`, { token: owner.token, body: { email: mate.owner.email, role: "member" } });
    expect(added.status, added.text).toBe(201);
    const mine = await draft(owner.token, workspace.id, "shared-key");
    const theirs = await draft(mate.owner.token, workspace.id, "shared-key");
    expect([mine.status, theirs.status]).toEqual([200, 200]);
    expect(theirs.body.id).not.toBe(mine.body.id);
    expect(headersOf(theirs)["idempotent-replayed"]).toBeUndefined();
  });
});

describe("Idempotency-Key on a block action (POST /api/blocks/{block_id}/expand)", () => {
  it("replays the first proposal and charges once", async () => {
    const { owner, workspace } = await newWorkspace("Idempotent block action");
    const doc = await call("POST", "/api/documents", {
      token: owner.token,
      body: { workspace_id: workspace.id, document_type: "prd", title: "Sign-in", content: "# Sign-in\n\n## Problem\n\nUsers are logged out every day.\n\n## Requirements\n\n- Keep users signed in for 30 days.\n" },
    });
    expect(doc.status, doc.text).toBe(201);
    const blocks = await call("POST", "/api/blocks/extract", { token: owner.token, body: { workspace_id: workspace.id, document_id: doc.body.id } });
    expect(blocks.status, blocks.text).toBe(200);
    const blockId = (blocks.body.blocks ?? blocks.body)[0].id as string;
    const expand = () => call("POST", `/api/blocks/${blockId}/expand`, { token: owner.token, headers: { "Idempotency-Key": "expand-1" } });
    const first = await expand();
    expect(first.status, first.text).toBe(200);
    const afterFirst = await charged(owner.id);
    const retry = await expand();
    expect(retry.body).toEqual(first.body);
    expect(headersOf(retry)["idempotent-replayed"]).toBe("true");
    expect(await charged(owner.id)).toBe(afterFirst);
  });
});
