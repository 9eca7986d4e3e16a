/**
 * Workspace members (DESIGN.md section 5: GET/POST /api/workspaces/{id}/members, PATCH/DELETE .../members/{user_id};
 * roles of spec 01: owner, admin manage members; member does not; anyone may leave; the owner stays owner).
 */
import { randomUUID } from "node:crypto";
import { describe, expect, it } from "vitest";
import { call, idp, newUser, newWorkspace } from "../support/api";
import { db } from "../../core/db/service";
import * as User from "../../core/user";
import { expectEnvelope, partitionItems, putRaw, userWithEmail } from "./_helpers";
import { storeFails } from "../support/store-faults";
import { learnFromStatement } from "../../core/memory/learn";
import { PLANS } from "../../core/billing/plans";

const members = (id: string, userId?: string) => `/api/workspaces/${id}/members${userId ? `/${userId}` : ""}`;

/** The identity-provider subject of a user (to sign a token for the same identity again). */
const userSub = async (id: string) => (await db().entities.user.get({ id }).go()).data?.idp_id;

async function add(workspaceId: string, token: string, email: string, role?: string) {
  return call("POST", members(workspaceId), { token, body: role ? { email, role } : { email } });
}

describe("workspace members", () => {
  it("lists the owner alone on a new workspace", async () => {
    const { owner, workspace } = await newWorkspace();
    const res = await call("GET", members(workspace.id), { token: owner.token });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      members: [{ user_id: owner.id, email: owner.email, name: "Test User", role: "owner", created_at: expect.any(String) }],
      total: 1,
    });
  });

  it("the owner adds users by e-mail (any case) with a role; member is the default role; the list orders owner, admin, member", async () => {
    const { owner, workspace } = await newWorkspace();
    const admin = await userWithEmail(undefined, "Ada Admin");
    const member = await userWithEmail(undefined, "Mo Member");

    const addedMember = await add(workspace.id, owner.token, member.email.toUpperCase());
    const addedAdmin = await add(workspace.id, owner.token, admin.email, "admin");

    expect(addedMember.status, addedMember.text).toBe(201);
    expect(addedMember.body).toMatchObject({ user_id: member.id, email: member.email, name: "Mo Member", role: "member" });
    expect(addedAdmin.status).toBe(201);
    expect(addedAdmin.body).toMatchObject({ user_id: admin.id, role: "admin" });
    const list = await call("GET", members(workspace.id), { token: member.token });
    expect(list.body.total).toBe(3);
    expect(list.body.members.map((m: { user_id: string; role: string }) => [m.user_id, m.role])).toEqual([
      [owner.id, "owner"],
      [admin.id, "admin"],
      [member.id, "member"],
    ]);
    const seen = await call("GET", "/api/workspaces", { token: member.token });
    expect(seen.body.workspaces.map((w: { id: string }) => w.id)).toEqual([workspace.id]);
  });

  it("an unknown e-mail is 404 USER_NOT_FOUND", async () => {
    const { owner, workspace } = await newWorkspace();
    const res = await add(workspace.id, owner.token, `nobody-${randomUUID().slice(0, 8)}@example.com`);
    expectEnvelope(res, 404, "USER_NOT_FOUND");
    expect((await call("GET", members(workspace.id), { token: owner.token })).body.total).toBe(1);
  });

  it("an address names its earliest user whose provider did not call it unverified, never one who merely claimed it", async () => {
    const { owner, workspace } = await newWorkspace();
    const email = `shared-${randomUUID().slice(0, 8)}@example.com`;
    const signIn = async (verified: boolean | undefined) => {
      const token = await idp().sign({ email, name: "Same address", sub: `idp|${randomUUID()}`, ...(verified === undefined ? {} : { email_verified: verified }) });
      const me = await call("GET", "/api/auth/me", { token });
      expect(me.status, me.text).toBe(200);
      return { token, id: me.body.id as string };
    };
    // First to sign up: an identity whose provider says the address is not verified (anyone could claim it).
    const claimer = await signIn(false);
    expectEnvelope(await add(workspace.id, owner.token, email), 404, "USER_NOT_FOUND");
    // The mailbox's owner signs in through two identities: the earlier of them is the one added, on every try.
    const verified = await signIn(true);
    const later = await signIn(undefined);
    const added = await add(workspace.id, owner.token, email);
    expect(added.status, added.text).toBe(201);
    expect(added.body.user_id).toBe(verified.id);
    expect([claimer.id, later.id]).not.toContain(added.body.user_id);

    // Once its provider verifies the address, the first identity is the earliest owner of it.
    const { owner: owner2, workspace: other } = await newWorkspace();
    await signIn(true); // another identity, still later
    const meAgain = await call("GET", "/api/auth/me", { token: await idp().sign({ email, sub: (await userSub(claimer.id)) ?? "", email_verified: true }) });
    expect(meAgain.body.id).toBe(claimer.id);
    const then = await add(other.id, owner2.token, email);
    expect(then.status, then.text).toBe(201);
    expect(then.body.user_id).toBe(claimer.id);
  });

  it("many users merely claiming an address do not hide its owner (every user of the address is read)", async () => {
    const email = `crowded-${randomUUID().slice(0, 8)}@example.com`;
    // The owner's id sorts after every claimer's (the index orders by user id), so a first page of claimers hid it.
    let ownerIdp = `owner_${randomUUID()}`;
    while (!User.userIdFor(ownerIdp).startsWith("f")) ownerIdp = `owner_${randomUUID()}`;
    const owner = await User.ensure({ idpId: ownerIdp, email, emailVerified: true });
    for (let i = 0; i < 30; i++) {
      let claimer = `claimer_${randomUUID()}`;
      while (User.userIdFor(claimer).startsWith("f")) claimer = `claimer_${randomUUID()}`;
      await User.ensure({ idpId: claimer, email, emailVerified: false });
    }
    expect((await User.findByEmail(email))?.id).toBe(owner.id);
  });

  it("adding someone twice (or the owner) is 409 ALREADY_MEMBER and keeps the first role", async () => {
    const { owner, workspace } = await newWorkspace();
    const u = await newUser();
    expect((await add(workspace.id, owner.token, u.email, "member")).status).toBe(201);

    const again = await add(workspace.id, owner.token, u.email, "admin");
    const ownerAgain = await add(workspace.id, owner.token, owner.email, "member");

    expectEnvelope(again, 409, "ALREADY_MEMBER");
    expectEnvelope(ownerAgain, 409, "ALREADY_MEMBER");
    const list = (await call("GET", members(workspace.id), { token: owner.token })).body.members;
    expect(list.find((m: { user_id: string }) => m.user_id === u.id).role).toBe("member");
    expect(list.find((m: { user_id: string }) => m.user_id === owner.id).role).toBe("owner");
  });

  it("invalid member bodies are 422: bad e-mail, role owner, unknown field", async () => {
    const { owner, workspace } = await newWorkspace();
    for (const body of [{ email: "not-an-email" }, { email: owner.email, role: "owner" }, { email: owner.email, extra: 1 }]) {
      const res = await call("POST", members(workspace.id), { token: owner.token, body });
      expectEnvelope(res, 422, "VALIDATION_ERROR");
    }
  });

  it("changes a member's role (owner or admin)", async () => {
    const { owner, workspace } = await newWorkspace();
    const [a, b] = await Promise.all([newUser(), newUser()]);
    await add(workspace.id, owner.token, a.email, "member");
    await add(workspace.id, owner.token, b.email, "member");

    const promoted = await call("PATCH", members(workspace.id, a.id), { token: owner.token, body: { role: "admin" } });
    const byAdmin = await call("PATCH", members(workspace.id, b.id), { token: a.token, body: { role: "admin" } });
    const demoted = await call("PATCH", members(workspace.id, b.id), { token: owner.token, body: { role: "member" } });

    expect(promoted.status, promoted.text).toBe(200);
    expect(promoted.body).toMatchObject({ user_id: a.id, role: "admin", email: a.email });
    expect(byAdmin.status).toBe(200);
    expect(byAdmin.body.role).toBe("admin");
    expect(demoted.body.role).toBe("member");
    const after = await call("GET", `/api/workspaces/${workspace.id}`, { token: a.token });
    expect(after.body.role).toBe("admin");
  });

  it("the owner cannot be demoted or removed, by an admin or by themselves (403)", async () => {
    const { owner, workspace } = await newWorkspace();
    const admin = await newUser();
    await add(workspace.id, owner.token, admin.email, "admin");

    const results = [
      await call("PATCH", members(workspace.id, owner.id), { token: admin.token, body: { role: "member" } }),
      await call("PATCH", members(workspace.id, owner.id), { token: owner.token, body: { role: "admin" } }),
      await call("DELETE", members(workspace.id, owner.id), { token: admin.token }),
      await call("DELETE", members(workspace.id, owner.id), { token: owner.token }),
    ];

    for (const res of results) expectEnvelope(res, 403, "FORBIDDEN");
    const list = (await call("GET", members(workspace.id), { token: owner.token })).body.members;
    expect(list[0]).toMatchObject({ user_id: owner.id, role: "owner" });
    expect(list).toHaveLength(2);
  });

  it("an admin adds and removes members; the removed user loses access", async () => {
    const { owner, workspace } = await newWorkspace();
    const [admin, u] = await Promise.all([newUser(), newUser()]);
    await add(workspace.id, owner.token, admin.email, "admin");

    const added = await add(workspace.id, admin.token, u.email, "member");
    const removed = await call("DELETE", members(workspace.id, u.id), { token: admin.token });

    expect(added.status).toBe(201);
    expect(removed.status, removed.text).toBe(204);
    expect(removed.text).toBe("");
    expectEnvelope(await call("GET", `/api/workspaces/${workspace.id}`, { token: u.token }), 403, "FORBIDDEN");
    expect((await call("GET", members(workspace.id), { token: owner.token })).body.total).toBe(2);
  });

  it("a member cannot manage members (403), and nothing changes", async () => {
    const { owner, workspace } = await newWorkspace();
    const [m, other, outsider] = await Promise.all([newUser(), newUser(), newUser()]);
    await add(workspace.id, owner.token, m.email, "member");
    await add(workspace.id, owner.token, other.email, "member");

    expectEnvelope(await add(workspace.id, m.token, outsider.email, "member"), 403, "FORBIDDEN");
    expectEnvelope(await call("PATCH", members(workspace.id, other.id), { token: m.token, body: { role: "admin" } }), 403, "FORBIDDEN");
    expectEnvelope(await call("PATCH", members(workspace.id, m.id), { token: m.token, body: { role: "admin" } }), 403, "FORBIDDEN");
    expectEnvelope(await call("DELETE", members(workspace.id, other.id), { token: m.token }), 403, "FORBIDDEN");

    const list = (await call("GET", members(workspace.id), { token: owner.token })).body.members;
    expect(list.map((x: { role: string }) => x.role)).toEqual(["owner", "member", "member"]);
  });

  it("a member can leave (remove themselves)", async () => {
    const { owner, workspace } = await newWorkspace();
    const m = await newUser();
    await add(workspace.id, owner.token, m.email, "member");

    // Their memory there, which only they could see or delete: it leaves with them.
    const learned = await learnFromStatement(
      { workspaceId: workspace.id, userId: m.id, conversationId: randomUUID(), messageId: randomUUID(), text: "We use Mixpanel for product analytics.", at: new Date().toISOString() },
      { model: null },
    );
    expect(learned.facts.length).toBeGreaterThan(0);

    const res = await call("DELETE", members(workspace.id, m.id), { token: m.token });

    expect(res.status, res.text).toBe(204);
    expect((await call("GET", "/api/workspaces", { token: m.token })).body.total).toBe(0);
    expect((await call("GET", members(workspace.id), { token: owner.token })).body.total).toBe(1);
    expect((await partitionItems(`ws#${workspace.id}`)).map((i) => String(i.sk)).filter((sk) => sk.includes(m.id))).toEqual([]);
  });

  it("changing or removing someone who is not a member is 404", async () => {
    const { owner, workspace } = await newWorkspace();
    const stranger = await newUser();
    expectEnvelope(await call("PATCH", members(workspace.id, stranger.id), { token: owner.token, body: { role: "admin" } }), 404, "NOT_FOUND");
    expectEnvelope(await call("DELETE", members(workspace.id, randomUUID()), { token: owner.token }), 404, "NOT_FOUND");
  });

  it("member routes on a workspace that does not exist are 403, as for a workspace of others", async () => {
    const u = await newUser();
    expectEnvelope(await call("GET", members(randomUUID()), { token: u.token }), 403, "FORBIDDEN");
    expectEnvelope(await add(randomUUID(), u.token, u.email), 403, "FORBIDDEN");
  });

  it("the plan's seats per workspace cap the members (402 USAGE_LIMIT_EXCEEDED)", async () => {
    const { owner, workspace } = await newWorkspace();
    const seats = PLANS.trial.max_seats_per_workspace!;
    for (let i = 1; i < seats; i++) {
      const m = await newUser();
      expect((await add(workspace.id, owner.token, m.email)).status).toBe(201);
    }
    const extra = await newUser();

    const res = await add(workspace.id, owner.token, extra.email);

    expectEnvelope(res, 402, "USAGE_LIMIT_EXCEEDED");
    expect((await call("GET", members(workspace.id), { token: owner.token })).body.total).toBe(seats);
  });
});

describe("removing a member under contention", () => {
  it("a removal whose transaction lost a race on the seat counter (parallel uploads count there) is tried again, not answered 204 undone", async () => {
    const { conflictTransactions } = await import("../support/throttle");
    const { owner, workspace } = await newWorkspace("Contended removal");
    const u = await newUser();
    expect((await add(workspace.id, owner.token, u.email)).status).toBe(201);
    const conflict = conflictTransactions([`member#${u.id}`]);
    let res;
    try {
      res = await call("DELETE", members(workspace.id, u.id), { token: owner.token });
    } finally {
      conflict.remove();
    }
    expect(conflict.left).toBe(0);
    expect(res.status, res.text).toBe(204);
    expectEnvelope(await call("GET", `/api/workspaces/${workspace.id}`, { token: u.token }), 403, "FORBIDDEN");
    const listed = await call("GET", members(workspace.id), { token: owner.token });
    expect(listed.body.members.map((m: { user_id: string }) => m.user_id)).toEqual([owner.id]);
    // Removed once more (a second click): 404, and the seat was given back once.
    expectEnvelope(await call("DELETE", members(workspace.id, u.id), { token: owner.token }), 404, "NOT_FOUND");
    const { db } = await import("../../core/db/service");
    expect((await db().entities.usage.get({ workspace_id: workspace.id }).go({ consistent: true })).data?.members).toBe(1);
  });
});

describe("a removed member's own items never outlive the removal", () => {
  /** A member's memory and skill suggestion in the workspace, as stand-in items (the sort keys the purge deletes). */
  async function ownItems(workspaceId: string, userId: string) {
    for (const sk of [`memory#${userId}#${randomUUID()}`, `memhead#${userId}`, `skillsug#${userId}#${randomUUID()}`]) await putRaw(workspaceId, sk);
  }
  const itemsOf = async (workspaceId: string, userId: string) =>
    (await partitionItems(`ws#${workspaceId}`)).map((i) => String(i.sk)).filter((sk) => sk.includes(userId));

  it("a removal whose purge fails (500) is sent again and purges: no memory item is left", async () => {
    const { owner, workspace } = await newWorkspace("Purge fails");
    const m = await newUser();
    expect((await add(workspace.id, owner.token, m.email)).status).toBe(201);
    await ownItems(workspace.id, m.id);
    // The store stops answering the purge's first batch delete, as a throttle or a crash there would leave it.
    const fault = storeFails(/^BatchWrite/, `memory#${m.id}`, 1);
    let failed;
    try {
      failed = await call("DELETE", members(workspace.id, m.id), { token: owner.token });
    } finally {
      fault.remove();
    }
    expect(fault.failed()).toBe(1);
    expect(failed.status, failed.text).toBeGreaterThanOrEqual(500);

    const again = await call("DELETE", members(workspace.id, m.id), { token: owner.token });
    expect(again.status, again.text).toBe(204);
    expect(await itemsOf(workspace.id, m.id)).toEqual([]);
    expect((await call("GET", members(workspace.id), { token: owner.token })).body.total).toBe(1);
  });

  it("removing someone already removed purges what is left of theirs before the 404; a caller without the role purges nothing", async () => {
    const { owner, workspace } = await newWorkspace("Purged on 404");
    const [m, plain] = await Promise.all([newUser(), newUser()]);
    for (const u of [m, plain]) expect((await add(workspace.id, owner.token, u.email, "member")).status).toBe(201);
    expect((await call("DELETE", members(workspace.id, m.id), { token: owner.token })).status).toBe(204);
    // What a removal that failed after its drop (or one older than purging) left behind.
    await ownItems(workspace.id, m.id);

    expectEnvelope(await call("DELETE", members(workspace.id, m.id), { token: plain.token }), 403, "FORBIDDEN");
    expect(await itemsOf(workspace.id, m.id)).toHaveLength(3);
    expectEnvelope(await call("DELETE", members(workspace.id, m.id), { token: owner.token }), 404, "NOT_FOUND");
    expect(await itemsOf(workspace.id, m.id)).toEqual([]);
  });
});

describe("reads under throttling (DynamoDB leaves part of a batch unprocessed)", () => {
  it("the members list and the workspaces list still show everyone and everything", async () => {
    const { withholdBatchKeys } = await import("../support/throttle");
    const { owner, workspace } = await newWorkspace("Throttled lists");
    const u = await newUser();
    expect((await add(workspace.id, owner.token, u.email)).status).toBe(201);
    const second = await call("POST", "/api/workspaces", { token: owner.token, body: { name: "Second" } });
    expect(second.status).toBe(201);
    const users = withholdBatchKeys(`user#${u.id}`, 1);
    let listed;
    try {
      listed = await call("GET", members(workspace.id), { token: owner.token });
    } finally {
      users.remove();
    }
    expect(users.withheld()).toBe(1);
    expect(listed.body.members.map((m: { email: string }) => m.email).sort()).toEqual([owner.email, u.email].sort());
    const spaces = withholdBatchKeys(`ws#${second.body.id}`, 1);
    let mine;
    try {
      mine = await call("GET", "/api/workspaces", { token: owner.token });
    } finally {
      spaces.remove();
    }
    expect(spaces.withheld()).toBe(1);
    expect(mine.body.total).toBe(2);
  });

  it("a role change racing the member's removal is 404, not 500", async () => {
    const { dynamoClient } = await import("../../core/db/client");
    const { owner, workspace } = await newWorkspace("Role change race");
    const u = await newUser();
    expect((await add(workspace.id, owner.token, u.email)).status).toBe(201);
    const name = "removeBeforeRoleWrite";
    let removed = false;
    dynamoClient().middlewareStack.add(
      (next, context) => async (args) => {
        if (!removed && /^Update/.test(context.commandName ?? "") && JSON.stringify(args.input).includes(`member#${u.id}`)) {
          removed = true;
          expect((await call("DELETE", members(workspace.id, u.id), { token: u.token })).status).toBe(204);
        }
        return next(args);
      },
      { step: "initialize", name },
    );
    let res;
    try {
      res = await call("PATCH", members(workspace.id, u.id), { token: owner.token, body: { role: "admin" } });
    } finally {
      dynamoClient().middlewareStack.remove(name);
    }
    expect(removed).toBe(true);
    expectEnvelope(res, 404, "NOT_FOUND");
  });
});
