/**
 * A workspace deletion that dies part-way is durable and finished without a person (spec 01 `DELETE
 * /api/workspaces/{workspace_id}`: "owner only; deletes all associated data", 204; spec 02 `user.deleted`;
 * docs/decisions.md "A workspace deletion resumes from its record"), over HTTP through the real handlers:
 * - the DELETE's first transaction marks the owner's membership, drops the other members, writes the deletion record
 *   and gives the owner's workspace slot back: from then on the workspace is listed for no one, refuses every
 *   request and no longer counts against `max_workspaces`, whatever happens to the cascade after;
 * - the recovery sweeper (core/workspace/deletion.ts `sweepWorkspaceDeletions`, run by functions/events/source-sweeper)
 *   finishes it once due: partition empty, files gone, memberships gone, record last;
 * - a sweep whose budget runs out makes the deletion due again at once, and the next sweep goes on;
 * - a `user.deleted` whose cascade dies part-way leaves the user's workspaces to the same sweeper.
 *
 * Faults are middleware on the shared DynamoDB client (test/support/store-faults.ts); time is moved by passing the
 * sweep a later clock, as test/http/documents-races.test.ts does.
 */
import { randomUUID } from "node:crypto";
import { describe, expect, it } from "vitest";
import { ListObjectsV2Command, PutObjectCommand } from "@aws-sdk/client-s3";
import { s3Client } from "../../core/storage/client";
import { Config } from "../../core/config";
import { db } from "../../core/db/service";
import { beginWorkspaceDeletion, sweepWorkspaceDeletions, WORKSPACE_DELETION_GRACE_MS } from "../../core/workspace/deletion";
import { call, newUser, newWorkspace } from "../support/api";
import { storeFails } from "../support/store-faults";
import { signedDelivery, useIdpWebhookSecret } from "../support/idp-webhook";
import { expectEnvelope, partitionItems, putChild, putRaw } from "./_helpers";

const secret = useIdpWebhookSecret();
const ws = (id: string, rest = "") => `/api/workspaces/${id}${rest}`;

/** A workspace with a member, children, the member's memory and stored files. */
async function filledWorkspace(name: string) {
  const { owner, workspace } = await newWorkspace(name);
  const member = await newUser();
  const added = await call("POST", ws(workspace.id, "/members"), { token: owner.token, body: { email: member.email, role: "member" } });
  expect(added.status, added.text).toBe(201);
  for (const kind of ["source", "insight", "document"] as const) await putChild(workspace.id, kind);
  await putRaw(workspace.id, `memory#${member.id}#${randomUUID()}`);
  await putRaw(workspace.id, `memhead#${member.id}`);
  for (const Key of [`workspaces/${workspace.id}/sources/a/interview.txt`, `workspaces/${workspace.id}/exports/b.json`]) {
    await (await s3Client()).send(new PutObjectCommand({ Bucket: Config.bucketName(), Key, Body: "hello" }));
  }
  return { owner, member, workspace };
}

const storedFiles = async (workspaceId: string) =>
  (await (await s3Client()).send(new ListObjectsV2Command({ Bucket: Config.bucketName(), Prefix: `workspaces/${workspaceId}/` }))).Contents ?? [];
const owned = async (userId: string) => (await db().entities.billingAccount.get({ user_id: userId }).go({ consistent: true })).data?.workspaces_owned;
const listedIds = async (token: string) => ((await call("GET", "/api/workspaces", { token })).body.workspaces as { id: string }[]).map((w) => w.id);

describe("a workspace DELETE that dies part-way is finished by the recovery sweeper", () => {
  it("its batch deletes fail: 204, the workspace is at once unlisted, shut and uncounted; the sweep removes everything", async () => {
    const { owner, member, workspace } = await filledWorkspace("Dies part-way");
    // At the trial's limit of 3 workspaces: another create is refused until one is deleted.
    for (const name of ["Second", "Third"]) expect((await call("POST", "/api/workspaces", { token: owner.token, body: { name } })).status).toBe(201);
    expectEnvelope(await call("POST", "/api/workspaces", { token: owner.token, body: { name: "Fourth" } }), 402, "USAGE_LIMIT_EXCEEDED");
    const before = (await owned(owner.id))!;

    // The store stops answering every batch delete of the partition, as a request that could not list (or delete)
    // a large partition in its time leaves it.
    const fault = storeFails(/^BatchWrite/, `ws#${workspace.id}`);
    let res;
    try {
      res = await call("DELETE", ws(workspace.id), { token: owner.token });
    } finally {
      fault.remove();
    }
    expect(fault.failed()).toBeGreaterThan(0);
    expect(res.status, res.text).toBe(204);
    // A file that lands after the request's own pass over the bucket (an upload in flight): the sweeper removes it.
    await (await s3Client()).send(new PutObjectCommand({ Bucket: Config.bucketName(), Key: `workspaces/${workspace.id}/sources/c/late.txt`, Body: "late" }));

    // Durable at once: listed for no one, shut for everyone, and its slot is back.
    expect(await listedIds(owner.token)).not.toContain(workspace.id);
    expect(await listedIds(member.token)).toEqual([]);
    for (const who of [owner, member]) expectEnvelope(await call("GET", ws(workspace.id), { token: who.token }), 403, "FORBIDDEN");
    expect(await owned(owner.id)).toBe(before - 1);
    expect((await call("POST", "/api/workspaces", { token: owner.token, body: { name: "Fourth" } })).status).toBe(201);
    const left = (await partitionItems(`ws#${workspace.id}`)).map((i) => String(i.sk));
    expect(left).toContain("wsdelete");
    expect(left.some((sk) => sk.startsWith("memory#"))).toBe(true);

    // Not before its grace: a DELETE still running is not raced.
    expect((await sweepWorkspaceDeletions({ workspaceId: workspace.id })).due).toBe(0);
    const later = Date.now() + WORKSPACE_DELETION_GRACE_MS + 1_000;
    const swept = await sweepWorkspaceDeletions({ now: later, workspaceId: workspace.id });
    expect(swept).toMatchObject({ due: 1, finished: 1, failed: 0 });
    expect(await partitionItems(`ws#${workspace.id}`)).toEqual([]);
    expect(await storedFiles(workspace.id)).toEqual([]);
    const memberships = await db().entities.membership.query.byWorkspace({ workspace_id: workspace.id }).go({ consistent: true });
    expect(memberships.data).toEqual([]);
    expect(await owned(owner.id)).toBe(before);
    expectEnvelope(await call("DELETE", ws(workspace.id), { token: owner.token }), 403, "FORBIDDEN");
    expect((await sweepWorkspaceDeletions({ now: later, workspaceId: workspace.id })).due).toBe(0);
  });

  it("a workspace marked by a deletion older than the records is begun properly on its owner's next listing, then swept", async () => {
    const { owner, workspace } = await filledWorkspace("Half-deleted before the records");
    for (const name of ["Second", "Third"]) expect((await call("POST", "/api/workspaces", { token: owner.token, body: { name } })).status).toBe(201);
    // As the earlier code left it: the owner's membership marked and still in the user index, no record, slot held.
    await db().entities.membership.patch({ workspace_id: workspace.id, user_id: owner.id }).set({ deleting_at: new Date().toISOString() }).go();
    const held = (await owned(owner.id))!;
    expect(await listedIds(owner.token)).not.toContain(workspace.id);
    expect(await owned(owner.id)).toBe(held - 1);
    expect((await partitionItems(`ws#${workspace.id}`)).map((i) => String(i.sk))).toContain("wsdelete");
    expect((await call("POST", "/api/workspaces", { token: owner.token, body: { name: "Fourth" } })).status).toBe(201);
    const swept = await sweepWorkspaceDeletions({ now: Date.now() + WORKSPACE_DELETION_GRACE_MS + 1_000, workspaceId: workspace.id });
    expect(swept).toMatchObject({ due: 1, finished: 1, failed: 0 });
    expect(await partitionItems(`ws#${workspace.id}`)).toEqual([]);
    expect(await storedFiles(workspace.id)).toEqual([]);
  });

  it("a sweep out of budget makes the deletion due again at once; the next sweep finishes it", async () => {
    const { owner, workspace } = await filledWorkspace("Out of budget");
    const begun = Date.now();
    expect(await beginWorkspaceDeletion(owner.id, workspace.id, begun)).toBe(true);
    // Begun twice (a DELETE sent again, a redelivered user.deleted): one record, one slot given back.
    const slots = await owned(owner.id);
    expect(await beginWorkspaceDeletion(owner.id, workspace.id, begun)).toBe(true);
    expect(await owned(owner.id)).toBe(slots);

    const first = await sweepWorkspaceDeletions({ now: begun + WORKSPACE_DELETION_GRACE_MS, budgetMs: 0, workspaceId: workspace.id });
    expect(first).toMatchObject({ due: 1, paused: 1, finished: 0, failed: 0 });
    expect((await partitionItems(`ws#${workspace.id}`)).map((i) => i.sk)).toContain("wsdelete");
    const next = await sweepWorkspaceDeletions({ now: begun + WORKSPACE_DELETION_GRACE_MS, workspaceId: workspace.id });
    expect(next).toMatchObject({ due: 1, finished: 1, failed: 0 });
    expect(await partitionItems(`ws#${workspace.id}`)).toEqual([]);
    expect(await storedFiles(workspace.id)).toEqual([]);
  });

  it("a user.deleted whose cascade dies part-way leaves the owned workspace to the sweeper, which finishes it", async () => {
    const { owner, member, workspace } = await filledWorkspace("Owner deleted");
    const idpId = (await db().entities.user.get({ id: owner.id }).go()).data!.idp_id!;
    const fault = storeFails(/^BatchWrite/, `ws#${workspace.id}`);
    let delivered;
    try {
      const { headers, body } = signedDelivery({ type: "user.deleted", data: { id: idpId } }, secret());
      delivered = await call("POST", "/api/webhooks/idp", { headers, raw: { data: body, contentType: "application/json" } });
    } finally {
      fault.remove();
    }
    expect(delivered.status, delivered.text).toBe(200);
    expect(await listedIds(member.token)).toEqual([]);
    expect((await partitionItems(`ws#${workspace.id}`)).map((i) => i.sk)).toContain("wsdelete");

    const swept = await sweepWorkspaceDeletions({ now: Date.now() + WORKSPACE_DELETION_GRACE_MS + 1_000, workspaceId: workspace.id });
    expect(swept).toMatchObject({ due: 1, finished: 1, failed: 0 });
    expect(await partitionItems(`ws#${workspace.id}`)).toEqual([]);
    expect(await storedFiles(workspace.id)).toEqual([]);
  });
});
