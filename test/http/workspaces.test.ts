/**
 * Workspaces (spec 01 Account and workspaces): create, list, get, patch, delete with full purge of table and
 * bucket, settings with the research-cycle gate, agent-intro states, validation envelope.
 */
import { randomUUID } from "node:crypto";
import { describe, expect, it } from "vitest";
import { GetObjectCommand, ListObjectsV2Command, PutObjectCommand } from "@aws-sdk/client-s3";
import { s3Client } from "../../core/storage/client";
import { Config } from "../../core/config";
import { db } from "../../core/db/service";
import { dynamoClient } from "../../core/db/client";
import { subscriptionOf } from "../../core/billing";
import * as User from "../../core/user";
import { call, newUser, newWorkspace } from "../support/api";
import { setAccount } from "../support/billing";
import { expectEnvelope, partitionItems, putChild, putRaw } from "./_helpers";
import { deletedBeforeUpdate } from "../support/races";
import { conflictTransactions } from "../support/throttle";

const ws = (id: string, rest = "") => `/api/workspaces/${id}${rest}`;

/** A workspace with an admin and a plain member besides its owner. */
async function teamWorkspace(name = "Team") {
  const { owner, workspace } = await newWorkspace(name);
  const [admin, member] = await Promise.all([newUser(), newUser()]);
  for (const [u, role] of [[admin, "admin"], [member, "member"]] as const) {
    const res = await call("POST", ws(workspace.id, "/members"), { token: owner.token, body: { email: u.email, role } });
    if (res.status !== 201) throw new Error(`add member failed: ${res.status} ${res.text}`);
  }
  return { owner, admin, member, workspace };
}

describe("POST /api/workspaces", () => {
  it("creates a workspace owned by the caller, with default settings and a trialing subscription", async () => {
    const u = await newUser();
    const input = { name: "  Acme Mobile ", product_name: "Acme", product_description: "An app", target_users: "Field techs", current_stage: "beta" };

    const res = await call("POST", "/api/workspaces", { token: u.token, body: input });

    expect(res.status, res.text).toBe(201);
    expect(res.body).toMatchObject({
      name: "Acme Mobile", product_name: "Acme", product_description: "An app", target_users: "Field techs",
      current_stage: "beta", owner_id: u.id, role: "owner",
    });
    expect(res.body.id).toMatch(/^[0-9a-f-]{36}$/);
    expect(Date.parse(res.body.created_at)).not.toBeNaN();
    const members = await call("GET", ws(res.body.id, "/members"), { token: u.token });
    expect(members.body.members).toEqual([expect.objectContaining({ user_id: u.id, role: "owner", email: u.email })]);
    const settings = await call("GET", ws(res.body.id, "/settings"), { token: u.token });
    expect(settings.body).toEqual({ researchCycleEnabled: false, overnightCycleNotifyEmail: false, researchProgram: null });
    const sub = await subscriptionOf(res.body.id);
    expect(sub).toMatchObject({ plan: "trial", status: "trialing" });
    const trialDays = (Date.parse(sub.trial_ends_at!) - Date.now()) / 86_400_000;
    expect(trialDays).toBeGreaterThan(Config.trialDays() - 1);
    expect(trialDays).toBeLessThanOrEqual(Config.trialDays());
  });

  it("a create that meets another write on its owner's user item (a transaction conflict) is tried again, not answered 409", async () => {
    const u = await newUser();
    // The create's transaction checks the owner's user item first (item 0): DynamoDB cancels it on a concurrent write there.
    const conflict = conflictTransactions([`user#${u.id}`, "Conflicted once"], 1, 0);
    try {
      const res = await call("POST", "/api/workspaces", { token: u.token, body: { name: "Conflicted once" } });
      expect(res.status, res.text).toBe(201);
    } finally {
      conflict.remove();
    }
    expect(conflict.left).toBe(0);
    expect((await call("GET", "/api/workspaces", { token: u.token })).body.total).toBe(1);
  });

  it("optional fields are null when absent", async () => {
    const u = await newUser();
    const res = await call("POST", "/api/workspaces", { token: u.token, body: { name: "Bare" } });
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({ product_name: null, product_description: null, target_users: null, current_stage: null });
  });

  it.each([
    ["no name", {}, ["body", "name"]],
    ["a blank name", { name: "   " }, ["body", "name"]],
    ["a name of the wrong type", { name: 42 }, ["body", "name"]],
    ["a too long product_name", { name: "x", product_name: "p".repeat(201) }, ["body", "product_name"]],
  ])("rejects %s with the 422 envelope", async (_label, body, loc) => {
    const u = await newUser();
    const res = await call("POST", "/api/workspaces", { token: u.token, body });
    expectEnvelope(res, 422, "VALIDATION_ERROR");
    expect(res.body.errors).toEqual(expect.arrayContaining([{ loc, msg: expect.any(String), type: expect.any(String) }]));
    expect((await call("GET", "/api/workspaces", { token: u.token })).body.total).toBe(0);
  });

  it("rejects unknown fields", async () => {
    const u = await newUser();
    const res = await call("POST", "/api/workspaces", { token: u.token, body: { name: "x", owner_id: randomUUID() } });
    expectEnvelope(res, 422, "VALIDATION_ERROR");
    expect(JSON.stringify(res.body.errors)).toContain("owner_id");
  });

  it("malformed JSON is 422", async () => {
    const u = await newUser();
    const res = await call("POST", "/api/workspaces", { token: u.token, raw: { data: '{"name": "x"', contentType: "application/json" } });
    expectEnvelope(res, 422, "VALIDATION_ERROR");
    expect(res.body.errors[0]).toMatchObject({ loc: ["body"], type: "json_invalid" });
  });
});

describe("GET /api/workspaces", () => {
  it("lists only the caller's workspaces (owned or joined), most recently updated first, with total", async () => {
    const u = await newUser();
    const create = async (name: string) => (await call("POST", "/api/workspaces", { token: u.token, body: { name } })).body.id as string;
    const first = await create("First");
    const second = await create("Second");
    const { owner: other, workspace: joined } = await newWorkspace("Joined");
    await newWorkspace("Someone else's");
    await call("POST", ws(joined.id, "/members"), { token: other.token, body: { email: u.email } });
    // Touch the first workspace so it becomes the most recently updated.
    expect((await call("PATCH", ws(first), { token: u.token, body: { current_stage: "ga" } })).status).toBe(200);

    const res = await call("GET", "/api/workspaces", { token: u.token });

    expect(res.status).toBe(200);
    expect(res.body.total).toBe(3);
    expect(res.body.workspaces.map((w: { id: string }) => w.id)).toEqual([first, joined.id, second]);
    expect(res.body.workspaces.map((w: { role: string }) => w.role)).toEqual(["owner", "member", "owner"]);
    const stamps = res.body.workspaces.map((w: { updated_at: string }) => w.updated_at);
    expect([...stamps].sort().reverse()).toEqual(stamps);
  });

  it("is empty for a new user", async () => {
    const u = await newUser();
    const res = await call("GET", "/api/workspaces", { token: u.token });
    expect(res.body).toEqual({ workspaces: [], total: 0 });
  });
});

describe("GET /api/workspaces/{id}", () => {
  it("returns the workspace with the caller's role", async () => {
    const { owner, member, workspace } = await teamWorkspace("Readable");
    const asOwner = await call("GET", ws(workspace.id), { token: owner.token });
    const asMember = await call("GET", ws(workspace.id), { token: member.token });
    expect(asOwner.status).toBe(200);
    expect(asOwner.body).toMatchObject({ id: workspace.id, name: "Readable", owner_id: owner.id, role: "owner" });
    expect(asMember.body).toMatchObject({ id: workspace.id, role: "member" });
  });

  it("is 403, as for a workspace of others, for a workspace that does not exist (issue #10 item 7)", async () => {
    const u = await newUser();
    const res = await call("GET", ws(randomUUID()), { token: u.token });
    expectEnvelope(res, 403, "FORBIDDEN");
  });

  it("is 422 for an id that is not a UUID", async () => {
    const u = await newUser();
    const res = await call("GET", ws("not-a-uuid"), { token: u.token });
    expectEnvelope(res, 422, "VALIDATION_ERROR");
    expect(res.body.errors[0].loc).toEqual(["path", "workspace_id"]);
  });
});

describe("PATCH /api/workspaces/{id}", () => {
  it("owner and admin change only the given fields; updated_at moves", async () => {
    const { owner, admin, workspace } = await teamWorkspace("Before");
    const before = (await call("GET", ws(workspace.id), { token: owner.token })).body;

    const byOwner = await call("PATCH", ws(workspace.id), { token: owner.token, body: { name: "After" } });
    const byAdmin = await call("PATCH", ws(workspace.id), { token: admin.token, body: { product_name: "Widget" } });

    expect(byOwner.status, byOwner.text).toBe(200);
    expect(byOwner.body).toMatchObject({ name: "After", role: "owner" });
    expect(byAdmin.status).toBe(200);
    expect(byAdmin.body).toMatchObject({ name: "After", product_name: "Widget", role: "admin", created_at: before.created_at });
    expect(byAdmin.body.updated_at > before.updated_at).toBe(true);
    const after = await call("GET", ws(workspace.id), { token: owner.token });
    expect(after.body).toMatchObject({ name: "After", product_name: "Widget" });
  });

  it("a member gets 403 and nothing changes", async () => {
    const { owner, member, workspace } = await teamWorkspace("Stays");
    const res = await call("PATCH", ws(workspace.id), { token: member.token, body: { name: "Hijacked" } });
    expectEnvelope(res, 403, "FORBIDDEN");
    expect((await call("GET", ws(workspace.id), { token: owner.token })).body.name).toBe("Stays");
  });

  it("an empty body changes nothing", async () => {
    const { owner, workspace } = await newWorkspace("Same");
    const res = await call("PATCH", ws(workspace.id), { token: owner.token, body: {} });
    expect(res.status, res.text).toBe(200);
    expect(res.body.name).toBe("Same");
  });

  it("an empty body writes nothing: updated_at and the list's order stay (spec 01: only the provided fields change)", async () => {
    const { owner, admin, member, workspace: older } = await teamWorkspace("Older");
    const newer = (await call("POST", "/api/workspaces", { token: owner.token, body: { name: "Newer" } })).body.id as string;
    const listed = async () => (await call("GET", "/api/workspaces", { token: owner.token })).body.workspaces.map((w: { id: string; updated_at: string }) => [w.id, w.updated_at]);
    const before = await call("GET", ws(older.id), { token: owner.token });
    const order = await listed();
    expect(order.map(([id]: string[]) => id)).toEqual([newer, older.id]);

    const byOwner = await call("PATCH", ws(older.id), { token: owner.token, body: {} });
    const byAdmin = await call("PATCH", ws(older.id), { token: admin.token, body: {} });

    expect(byOwner.status, byOwner.text).toBe(200);
    expect(byOwner.body).toEqual(before.body);
    expect(byAdmin.body).toEqual({ ...before.body, role: "admin" });
    expect((await call("GET", ws(older.id), { token: owner.token })).body.updated_at).toBe(before.body.updated_at);
    expect(await listed()).toEqual(order);
    // Membership and role are still checked.
    expectEnvelope(await call("PATCH", ws(older.id), { token: member.token, body: {} }), 403, "FORBIDDEN");
    expectEnvelope(await call("PATCH", ws(randomUUID()), { token: owner.token, body: {} }), 403, "FORBIDDEN");
  });

  it("a PATCH racing the workspace's DELETE is 404, and does not bring the workspace back (it was 500)", async () => {
    const { owner, workspace } = await newWorkspace("Racing");
    const res = await deletedBeforeUpdate(
      `ws#${workspace.id}`,
      () => call("DELETE", ws(workspace.id), { token: owner.token }),
      () => call("PATCH", ws(workspace.id), { token: owner.token, body: { name: "Back again" } }),
    );
    expectEnvelope(res, 404, "NOT_FOUND");
    expect(await partitionItems(`ws#${workspace.id}`)).toEqual([]);
    expectEnvelope(await call("GET", ws(workspace.id), { token: owner.token }), 403, "FORBIDDEN");
  });

  it("validation errors use the 422 envelope; unknown fields are rejected", async () => {
    const { owner, workspace } = await newWorkspace("Valid");
    const blank = await call("PATCH", ws(workspace.id), { token: owner.token, body: { name: "" } });
    const unknown = await call("PATCH", ws(workspace.id), { token: owner.token, body: { name: "ok", owner_id: randomUUID() } });
    expectEnvelope(blank, 422, "VALIDATION_ERROR");
    expect(blank.body.errors).toEqual([{ loc: ["body", "name"], msg: expect.any(String), type: expect.any(String) }]);
    expectEnvelope(unknown, 422, "VALIDATION_ERROR");
    expect(unknown.body.errors[0]).toEqual({ loc: expect.arrayContaining(["body"]), msg: expect.stringContaining("owner_id"), type: "unrecognized_keys" });
    expect((await call("GET", ws(workspace.id), { token: owner.token })).body.name).toBe("Valid");
  });

  it("is 403, as for a workspace of others, for a workspace that does not exist (issue #10 item 7)", async () => {
    const u = await newUser();
    expectEnvelope(await call("PATCH", ws(randomUUID()), { token: u.token, body: { name: "x" } }), 403, "FORBIDDEN");
  });
});

describe("DELETE /api/workspaces/{id}", () => {
  it("member and admin get 403", async () => {
    const { owner, admin, member, workspace } = await teamWorkspace();
    expectEnvelope(await call("DELETE", ws(workspace.id), { token: member.token }), 403, "FORBIDDEN");
    expectEnvelope(await call("DELETE", ws(workspace.id), { token: admin.token }), 403, "FORBIDDEN");
    expect((await call("GET", ws(workspace.id), { token: owner.token })).status).toBe(200);
  });

  it("the owner deletes it: nothing of the workspace remains in the table or the bucket", async () => {
    const { owner, member, workspace } = await teamWorkspace("Doomed");
    const { owner: neighbour, workspace: kept } = await newWorkspace("Neighbour");
    await putChild(workspace.id, "source");
    await putChild(workspace.id, "insight");
    await putRaw(workspace.id, `document#${randomUUID()}#block#1`);
    const bucket = Config.bucketName();
    const keys = [`workspaces/${workspace.id}/sources/a/interview.txt`, `workspaces/${workspace.id}/exports/b.json`];
    for (const Key of keys) await (await s3Client()).send(new PutObjectCommand({ Bucket: bucket, Key, Body: "hello" }));
    const keptKey = `workspaces/${kept.id}/sources/c/keep.txt`;
    await (await s3Client()).send(new PutObjectCommand({ Bucket: bucket, Key: keptKey, Body: "keep" }));
    expect((await partitionItems(`ws#${workspace.id}`)).length).toBeGreaterThanOrEqual(8);

    const res = await call("DELETE", ws(workspace.id), { token: owner.token });

    expect(res.status, res.text).toBe(204);
    expect(res.text).toBe("");
    expect(await partitionItems(`ws#${workspace.id}`)).toEqual([]);
    const listed = await (await s3Client()).send(new ListObjectsV2Command({ Bucket: bucket, Prefix: `workspaces/${workspace.id}/` }));
    expect(listed.Contents ?? []).toEqual([]);
    expectEnvelope(await call("GET", ws(workspace.id), { token: owner.token }), 403, "FORBIDDEN");
    expect((await call("GET", "/api/workspaces", { token: member.token })).body.total).toBe(0);
    expect((await call("GET", "/api/workspaces", { token: owner.token })).body.total).toBe(0);
    // The neighbour's data is untouched.
    expect((await call("GET", ws(kept.id), { token: neighbour.token })).status).toBe(200);
    const keptObject = await (await s3Client()).send(new GetObjectCommand({ Bucket: bucket, Key: keptKey }));
    expect(await keptObject.Body!.transformToString()).toBe("keep");
  });

  it("writes that land while it runs are deleted too, and a member added meanwhile is not let in", async () => {
    const { owner, admin, workspace } = await teamWorkspace("Deleted while in use");
    const late = await newUser();
    const during: number[] = [];
    const name = "writeDuringDelete";
    let fired = false;
    dynamoClient().middlewareStack.add(
      (next, context) => async (args) => {
        if (!fired && /BatchWrite/.test(String(context.commandName)) && JSON.stringify(args.input).includes(`ws#${workspace.id}`)) {
          fired = true;
          // An admin's requests, sent before the delete began, land now.
          during.push((await call("POST", "/api/insights", { token: admin.token, body: { workspace_id: workspace.id, insight_type: "pain_point", title: "Written during the delete", description: "x" } })).status);
          during.push((await call("POST", ws(workspace.id, "/members"), { token: admin.token, body: { email: late.email, role: "member" } })).status);
        }
        return next(args);
      },
      { step: "initialize", name },
    );
    let res;
    try {
      res = await call("DELETE", ws(workspace.id), { token: owner.token });
    } finally {
      dynamoClient().middlewareStack.remove(name);
    }
    expect(fired).toBe(true);
    expect(res.status, res.text).toBe(204);
    expect(await partitionItems(`ws#${workspace.id}`)).toEqual([]);
    for (const who of [owner, admin, late]) expectEnvelope(await call("GET", "/api/insights", { token: who.token, query: { workspace_id: workspace.id } }), 403, "FORBIDDEN");
    expect(during.every((status) => [201, 402, 403].includes(status)), JSON.stringify(during)).toBe(true);
  });

  it("a delete whose last step failed answers 204 (it is durable), refuses every request, and the owner's next DELETE finishes it", async () => {
    const { owner, member, workspace } = await teamWorkspace("Half deleted");
    const before = (await db().entities.billingAccount.get({ user_id: owner.id }).go({ consistent: true })).data!.workspaces_owned!;
    const name = "lastStepFails";
    let failed = false;
    dynamoClient().middlewareStack.add(
      (next, context) => async (args) => {
        // The last transaction: the one that deletes the workspace item (the first marks the owner's membership).
        const input = JSON.stringify(args.input);
        if (!failed && /TransactWrite/.test(String(context.commandName)) && input.includes(`ws#${workspace.id}`) && input.includes('"sk":"workspace"')) {
          failed = true;
          throw Object.assign(new Error("connection reset"), { name: "NetworkingError" });
        }
        return next(args);
      },
      { step: "initialize", name },
    );
    try {
      const res = await call("DELETE", ws(workspace.id), { token: owner.token });
      expect(res.status, res.text).toBe(204);
    } finally {
      dynamoClient().middlewareStack.remove(name);
    }
    expect(failed).toBe(true);
    // Half deleted: no one gets in, the owner included; it is listed for no one and its slot is back already.
    for (const who of [owner, member]) {
      expectEnvelope(await call("GET", ws(workspace.id), { token: who.token }), 403, "FORBIDDEN");
      expect((await call("GET", "/api/workspaces", { token: who.token })).body.total).toBe(0);
    }
    expect((await db().entities.billingAccount.get({ user_id: owner.id }).go({ consistent: true })).data!.workspaces_owned).toBe(before - 1);
    expect((await partitionItems(`ws#${workspace.id}`)).map((i) => i.sk).sort()).toEqual([`member#${owner.id}`, "workspace", "wsdelete"]);
    expectEnvelope(await call("DELETE", ws(workspace.id), { token: member.token }), 403, "FORBIDDEN");
    const again = await call("DELETE", ws(workspace.id), { token: owner.token });
    expect(again.status, again.text).toBe(204);
    expect(await partitionItems(`ws#${workspace.id}`)).toEqual([]);
    // The slot came back once.
    expect((await db().entities.billingAccount.get({ user_id: owner.id }).go({ consistent: true })).data!.workspaces_owned).toBe(before - 1);
    expectEnvelope(await call("DELETE", ws(workspace.id), { token: owner.token }), 403, "FORBIDDEN");
  });

  it("two deletes at once give the owner's workspace slot back once", async () => {
    const { owner, workspace } = await newWorkspace("Deleted twice");
    const { workspace: second } = { workspace: (await call("POST", "/api/workspaces", { token: owner.token, body: { name: "Kept" } })).body as { id: string } };
    const before = (await db().entities.billingAccount.get({ user_id: owner.id }).go({ consistent: true })).data!.workspaces_owned!;
    const both = await Promise.all([0, 1].map(() => call("DELETE", ws(workspace.id), { token: owner.token })));
    for (const r of both) expect([204, 403], r.text).toContain(r.status);
    expect(both.some((r) => r.status === 204)).toBe(true);
    expect((await db().entities.billingAccount.get({ user_id: owner.id }).go({ consistent: true })).data!.workspaces_owned).toBe(before - 1);
    expect((await call("GET", ws(second.id), { token: owner.token })).status).toBe(200);
  });
  it("is 403, as for a workspace of others, for a workspace that does not exist (issue #10 item 7)", async () => {
    const u = await newUser();
    expectEnvelope(await call("DELETE", ws(randomUUID()), { token: u.token }), 403, "FORBIDDEN");
  });
});

describe("workspace settings", () => {
  it("members read them (camelCase); owner and admin change them; members may not", async () => {
    const { owner, admin, member, workspace } = await teamWorkspace();

    const read = await call("GET", ws(workspace.id, "/settings"), { token: member.token });
    const byAdmin = await call("PATCH", ws(workspace.id, "/settings"), { token: admin.token, body: { overnightCycleNotifyEmail: true } });
    const byMember = await call("PATCH", ws(workspace.id, "/settings"), { token: member.token, body: { overnightCycleNotifyEmail: false } });
    const byOwner = await call("PATCH", ws(workspace.id, "/settings"), { token: owner.token, body: { researchProgram: { goals: ["Why do users churn?"] } } });

    expect(read.status).toBe(200);
    expect(Object.keys(read.body).sort()).toEqual(["overnightCycleNotifyEmail", "researchCycleEnabled", "researchProgram"]);
    expect(byAdmin.status).toBe(200);
    expect(byAdmin.body).toMatchObject({ overnightCycleNotifyEmail: true, researchCycleEnabled: false });
    expectEnvelope(byMember, 403, "FORBIDDEN");
    expect(byOwner.status).toBe(200);
    expect(byOwner.body).toEqual({ researchCycleEnabled: false, overnightCycleNotifyEmail: true, researchProgram: { goals: ["Why do users churn?"] } });
  });

  it("rejects snake_case and unknown keys with 422", async () => {
    const { owner, workspace } = await newWorkspace();
    const res = await call("PATCH", ws(workspace.id, "/settings"), { token: owner.token, body: { research_cycle_enabled: true } });
    expectEnvelope(res, 422, "VALIDATION_ERROR");
  });

  it("enabling research cycles on a trial is 403 FORBIDDEN naming every unmet requirement, the plan's as a gate's; other settings still change", async () => {
    const { owner, workspace } = await newWorkspace();

    const res = await call("PATCH", ws(workspace.id, "/settings"), { token: owner.token, body: { researchCycleEnabled: true } });

    expectEnvelope(res, 403, "FORBIDDEN");
    expect(res.body).toMatchObject({ feature: "has_overnight_cycles", plan: "trial", required_plan: "power" });
    expect(res.body.unmet_requirements).toEqual(["the power plan (this workspace is on trial)", "at least 3 research sources (it has 0)", "a research program with goals"]);
    expect(res.body.detail).toMatch(/power plan/);
    expect((await call("GET", ws(workspace.id, "/settings"), { token: owner.token })).body.researchCycleEnabled).toBe(false);
    const other = await call("PATCH", ws(workspace.id, "/settings"), { token: owner.token, body: { overnightCycleNotifyEmail: true, researchCycleEnabled: false } });
    expect(other.status).toBe(200);
    expect(other.body.overnightCycleNotifyEmail).toBe(true);
  });

  it("on the power plan, enabling without sources and a program is 403 naming both", async () => {
    const { owner, workspace } = await newWorkspace();
    await setAccount(owner.id, { plan: "power", status: "active" });

    const res = await call("PATCH", ws(workspace.id, "/settings"), { token: owner.token, body: { researchCycleEnabled: true } });

    expectEnvelope(res, 403, "FORBIDDEN");
    expect(res.body.detail).toMatch(/3 research sources/);
    expect(res.body.detail).toMatch(/research program/);
    expect(res.body.unmet_requirements).toHaveLength(2);
  });

  it("names only what is still missing, and enables once all requirements are met", async () => {
    const { owner, workspace } = await newWorkspace();
    for (let i = 0; i < 3; i++) await putChild(workspace.id, "source");
    await setAccount(owner.id, { plan: "power", status: "active" });

    const noProgram = await call("PATCH", ws(workspace.id, "/settings"), { token: owner.token, body: { researchCycleEnabled: true } });
    const withProgram = await call("PATCH", ws(workspace.id, "/settings"), {
      token: owner.token,
      body: { researchCycleEnabled: true, researchProgram: { goals: ["Onboarding drop-off"] } },
    });

    expectEnvelope(noProgram, 403, "FORBIDDEN");
    expect(noProgram.body.unmet_requirements).toEqual(["a research program with goals"]);
    expect(withProgram.status, withProgram.text).toBe(200);
    expect(withProgram.body).toMatchObject({ researchCycleEnabled: true, researchProgram: { goals: ["Onboarding drop-off"] } });
  });

  it("goals cleared between an enable's checks and its write: the enable is checked again and refused; cycles never run without goals", async () => {
    const { owner, workspace } = await newWorkspace();
    for (let i = 0; i < 3; i++) await putChild(workspace.id, "source");
    await setAccount(owner.id, { plan: "power", status: "active" });
    const patch = (body: Record<string, unknown>) => call("PATCH", ws(workspace.id, "/settings"), { token: owner.token, body });
    expect((await patch({ researchProgram: { goals: ["Onboarding drop-off"] } })).status).toBe(200);

    // The enable read goals and passed its checks; the clear (cycles still off, so nothing to check) lands first.
    const enable = await deletedBeforeUpdate("settings", () => patch({ researchProgram: { goals: [] } }), () => patch({ researchCycleEnabled: true }));

    expectEnvelope(enable, 403, "FORBIDDEN");
    expect(enable.body.unmet_requirements).toEqual(["a research program with goals"]);
    const { body } = await call("GET", ws(workspace.id, "/settings"), { token: owner.token });
    expect(body).toMatchObject({ researchCycleEnabled: false, researchProgram: { goals: [] } });
  });
});

describe("GET /api/workspaces/{id}/agent-intro", () => {
  it("moves from empty through has_sources and has_insights to rich, with the four counts", async () => {
    const { owner, member, workspace } = await teamWorkspace("Intro");
    const intro = async () => {
      const res = await call("GET", ws(workspace.id, "/agent-intro"), { token: member.token });
      expect(res.status).toBe(200);
      return res.body;
    };

    const empty = await intro();
    await putChild(workspace.id, "source");
    await putChild(workspace.id, "source");
    const hasSources = await intro();
    await putChild(workspace.id, "insight");
    const hasInsights = await intro();
    await putChild(workspace.id, "recommendation");
    await putChild(workspace.id, "document");
    await putChild(workspace.id, "document");
    // Children that share a parent's prefix (a document's blocks) are not counted as documents.
    await putRaw(workspace.id, `document#${randomUUID()}#block#1`, { __edb_e__: "document_block" });
    const rich = await intro();

    expect(empty).toMatchObject({ state: "empty", source_count: 0, insight_count: 0, recommendation_count: 0, document_count: 0 });
    expect(hasSources).toMatchObject({ state: "has_sources", source_count: 2, insight_count: 0 });
    expect(hasInsights).toMatchObject({ state: "has_insights", source_count: 2, insight_count: 1, recommendation_count: 0 });
    expect(rich).toMatchObject({ state: "rich", source_count: 2, insight_count: 1, recommendation_count: 1, document_count: 2 });
    const intros = [empty, hasSources, hasInsights, rich].map((b) => b.intro as string);
    expect(new Set(intros).size).toBe(4);
    expect(intros.every((t) => t.includes("Intro"))).toBe(true);
    expect(hasSources.intro).toContain("2 research sources");
    void owner;
  });

  it("documents alone (no recommendations) also make a workspace rich", async () => {
    const { owner, workspace } = await newWorkspace();
    await putChild(workspace.id, "source");
    await putChild(workspace.id, "insight");
    await putChild(workspace.id, "document");
    const res = await call("GET", ws(workspace.id, "/agent-intro"), { token: owner.token });
    expect(res.body).toMatchObject({ state: "rich", recommendation_count: 0, document_count: 1 });
  });

  it("is 403, as for a workspace of others, for a workspace that does not exist (issue #10 item 7)", async () => {
    const u = await newUser();
    expectEnvelope(await call("GET", ws(randomUUID(), "/agent-intro"), { token: u.token }), 403, "FORBIDDEN");
  });
});

describe("user ids from the idp", () => {
  it("owner_id is our derived user id, not the idp id", async () => {
    const u = await newUser();
    const res = await call("POST", "/api/workspaces", { token: u.token, body: { name: "Ids" } });
    expect(res.body.owner_id).toBe(User.userIdFor(u.profile.idp_id));
  });
});
