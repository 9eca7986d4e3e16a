/**
 * `Idempotency-Key` on the charged AI routes (functions/lib/idempotency.ts; docs/decisions.md "Idempotency-Key on
 * the charged AI routes"), through the real handlers and DynamoDB Local: a retry after a lost answer gets the first
 * answer and is not drafted or charged again; a retry while the first runs is a 409; the key with another request a
 * 422; a failed first request keeps nothing; keys are scoped to their caller. A replay checks the caller's
 * memberships again; the records live in their caller's partition and go with the account.
 */
import { describe, expect, it } from "vitest";
import { db } from "../../core/db/service";
import { runsOf } from "../../core/agent";
import * as User from "../../core/user";
import { dynamoBaseClient } from "../../core/db/client";
import { call, newUser, newWorkspace as bareWorkspace } from "../support/api";
import { signedDelivery, useIdpWebhookSecret } from "../support/idp-webhook";
import { sourceWith } from "../support/sources";
import { documentCreateFailsOnce, documentCreateHeld, storeFails } from "../support/store-faults";
import { setAccount } from "../support/billing";
import { expectEnvelope, headersOf, partitionItems } from "./_helpers";

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

  it("a first request refused by its own work answers that refusal (402), not a 500, when its in-progress record cannot be deleted after it", async () => {
    const { owner, workspace } = await newWorkspace("Idempotent refusal, record stuck");
    await setAccount(owner.id, { status: "cancelled" });
    // Powertools deletes the in-progress record (a DeleteItem in the caller's partition) once the work has thrown.
    const fault = storeFails(/^DeleteItem/, `"${User.idempotencyPartitionOf(owner.id)}"`);
    let first;
    try {
      first = await draft(owner.token, workspace.id, "refused-then-stuck");
    } finally {
      fault.remove();
    }
    expect(fault.failed()).toBeGreaterThan(0);
    expectEnvelope(first, 402, "SUBSCRIPTION_REQUIRED");
    expect(await drafts(workspace.id)).toBe(0);
  });

  it("a first request whose answer could not be kept still gets its answer (the store refused the idempotency record's update)", async () => {
    const { owner, workspace } = await newWorkspace("Idempotent answer not kept");
    const name = "idempotencyRecordRefused";
    let refused = false;
    // Powertools writes the answer with an UpdateItem on the record (the caller's partition) after the work returned.
    dynamoBaseClient().middlewareStack.add(
      (next, context) => async (args) => {
        if (!refused && context.commandName === "UpdateItemCommand" && JSON.stringify(args.input).includes(`"${User.idempotencyPartitionOf(owner.id)}"`)) {
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

/** A PRD written by `token` in the workspace, split into blocks: the id of its first block. */
async function firstBlockOf(token: string, workspaceId: string): Promise<string> {
  const doc = await call("POST", "/api/documents", {
    token,
    body: { workspace_id: workspaceId, document_type: "prd", title: "Sign-in", content: "# Sign-in\n\n## Problem\n\nUsers are logged out every day.\n\n## Requirements\n\n- Keep users signed in for 30 days.\n" },
  });
  expect(doc.status, doc.text).toBe(201);
  const blocks = await call("POST", "/api/blocks/extract", { token, body: { workspace_id: workspaceId, document_id: doc.body.id } });
  expect(blocks.status, blocks.text).toBe(200);
  return (blocks.body.blocks ?? blocks.body)[0].id as string;
}

describe("Idempotency-Key on a block action (POST /api/blocks/{block_id}/expand)", () => {
  it("replays the first proposal and charges once", async () => {
    const { owner, workspace } = await newWorkspace("Idempotent block action");
    const blockId = await firstBlockOf(owner.token, workspace.id);
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

/** A workspace with an insight to draft from, and a second member (`mate`) who drafts in it. */
async function withMate(name: string) {
  const made = await newWorkspace(name);
  const mate = await newUser();
  const added = await call("POST", `/api/workspaces/${made.workspace.id}/members`, { token: made.owner.token, body: { email: mate.email, role: "member" } });
  expect(added.status, added.text).toBe(201);
  return { ...made, mate };
}

const removeMember = async (ownerToken: string, workspaceId: string, userId: string) =>
  expect((await call("DELETE", `/api/workspaces/${workspaceId}/members/${userId}`, { token: ownerToken })).status).toBe(204);

describe("Idempotency-Key: a replay checks access again", () => {
  it("a member removed after a keyed draft gets 403 on its replay, not the stored draft, and nothing runs; added back, the replay answers", async () => {
    const { owner, workspace, mate } = await withMate("Idempotent removed member");
    const first = await draft(mate.token, workspace.id, "before-removal");
    expect(first.status, first.text).toBe(200);
    const chargedBefore = await charged(owner.id); // the workspace owner pays
    await removeMember(owner.token, workspace.id, mate.id);

    const replay = await draft(mate.token, workspace.id, "before-removal");
    expectEnvelope(replay, 403, "FORBIDDEN");
    expect(replay.text).not.toContain(first.body.id);
    expect(headersOf(replay)["idempotent-replayed"]).toBeUndefined();
    expect(await drafts(workspace.id)).toBe(1);
    expect(await charged(owner.id)).toBe(chargedBefore);

    // The answer is still kept: a member again, the caller gets it (and still nothing runs).
    const again = await call("POST", `/api/workspaces/${workspace.id}/members`, { token: owner.token, body: { email: mate.email, role: "member" } });
    expect(again.status, again.text).toBe(201);
    const back = await draft(mate.token, workspace.id, "before-removal");
    expect(back.status, back.text).toBe(200);
    expect(back.body.id).toBe(first.body.id);
    expect(headersOf(back)["idempotent-replayed"]).toBe("true");
    expect(await drafts(workspace.id)).toBe(1);
  });

  it("on a route naming a resource alone (a block action) the removed member's replay is the route's 404", async () => {
    const { owner, workspace, mate } = await withMate("Idempotent removed block member");
    const blockId = await firstBlockOf(owner.token, workspace.id);
    const challenge = () => call("POST", `/api/blocks/${blockId}/challenge`, { token: mate.token, headers: { "Idempotency-Key": "challenge-1" } });
    expect((await challenge()).status).toBe(200);
    await removeMember(owner.token, workspace.id, mate.id);

    const replay = await challenge();
    expectEnvelope(replay, 404, "NOT_FOUND");
    expect(replay.body.detail).toBe("Block not found");
    expect(headersOf(replay)["idempotent-replayed"]).toBeUndefined();
  });

  it("a suspended caller's replay is refused before it (the auth checks run first)", async () => {
    const { owner, workspace } = await newWorkspace("Idempotent suspended");
    expect((await draft(owner.token, workspace.id, "then-suspended")).status).toBe(200);
    await db().entities.user.patch({ id: owner.id }).set({ access_status: "suspended" }).go();
    User.forgetAll();
    const replay = await draft(owner.token, workspace.id, "then-suspended");
    expectEnvelope(replay, 403, "FORBIDDEN");
    expect(headersOf(replay)["idempotent-replayed"]).toBeUndefined();
  });
});

describe("Idempotency-Key: records per caller", () => {
  const secret = useIdpWebhookSecret();
  const deleteAccount = (email: string) => {
    // newUser's token has no sub of its own: the dev identity provider's is `dev|<email>`.
    const { headers, body } = signedDelivery({ type: "user.deleted", data: { id: `dev|${email}` } }, secret());
    return call("POST", "/api/webhooks/idp", { headers, raw: { data: body, contentType: "application/json" } });
  };

  it("a record lives in its caller's own partition (idempotency#<user id>), keyed by route", async () => {
    const { owner, workspace } = await newWorkspace("Idempotent partition");
    expect((await draft(owner.token, workspace.id, "where-kept")).status).toBe(200);
    const mine = await partitionItems(User.idempotencyPartitionOf(owner.id));
    expect(mine).toHaveLength(1);
    expect(mine[0]).toMatchObject({ pk: `idempotency#${owner.id}`, status: "COMPLETED" });
    expect(String(mine[0]!.sk)).toMatch(/^generation\.draft#/);
    // Its stored answer names the workspace the first request was let into (what a replay checks again).
    expect((mine[0]!.data as { workspaces: string[] }).workspaces).toEqual([workspace.id]);
    // Not in the shared partition of before.
    expect((await partitionItems("IDEMPOTENCY")).filter((i) => i.sk === mine[0]!.sk)).toEqual([]);
  });

  it("deleting the account (user.deleted) deletes the user's records with it", async () => {
    const { owner, workspace, mate } = await withMate("Idempotent account deletion");
    expect((await draft(mate.token, workspace.id, "leaver-1")).status).toBe(200);
    expect((await draft(mate.token, workspace.id, "leaver-2")).status).toBe(200);
    expect((await draft(owner.token, workspace.id, "stayer")).status).toBe(200);
    expect(await partitionItems(User.idempotencyPartitionOf(mate.id))).toHaveLength(2);

    const res = await deleteAccount(mate.email);
    expect(res.status, res.text).toBe(200);
    expect(await User.get(mate.id)).toBeNull();
    expect(await partitionItems(User.idempotencyPartitionOf(mate.id))).toEqual([]);
    // Another user's records are theirs.
    expect(await partitionItems(User.idempotencyPartitionOf(owner.id))).toHaveLength(1);
  });
});
