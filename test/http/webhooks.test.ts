/**
 * POST /api/webhooks/idp (spec 02 Webhooks, Inbound webhook events): Standard Webhooks signatures, user.created /
 * user.updated / user.deleted, replays, and the 400s for missing or bad signatures and an unconfigured secret.
 */
import { randomUUID } from "node:crypto";
import { describe, expect, it } from "vitest";
import { Webhook } from "standardwebhooks";
import * as User from "../../core/user";
import * as Chat from "../../core/chat";
import * as Workspaces from "../../core/workspace";
import { AppError } from "../../core/error";
import { db } from "../../core/db/service";
import { dynamoClient } from "../../core/db/client";
import { learnFromStatement } from "../../core/memory/learn";
import { call, idp, newUser, newWorkspace } from "../support/api";
import { newWebhookSecret, signedDelivery, useIdpWebhookSecret } from "../support/idp-webhook";
import { expectEnvelope, partitionItems } from "./_helpers";

const newSecret = newWebhookSecret;
const currentSecret = useIdpWebhookSecret();

interface SendOptions {
  msgId?: string;
  at?: Date;
  signWith?: string;
  /** Replace the signed headers (missing or tampered signatures). */
  headers?: Record<string, string>;
  /** Send this body instead of the one that was signed. */
  sentBody?: string;
}

/** Sign `event` as the identity provider would (Standard Webhooks) and post it. */
async function send(event: unknown, opts: SendOptions = {}) {
  const signed = signedDelivery(event, opts.signWith ?? currentSecret(), opts);
  const headers = opts.headers ?? signed.headers;
  return call("POST", "/api/webhooks/idp", { headers, raw: { data: opts.sentBody ?? signed.body, contentType: "application/json" } });
}

const idpUser = () => {
  const idpId = `user_${randomUUID()}`;
  return { idpId, email: `hook-${randomUUID().slice(0, 8)}@example.com`, id: User.userIdFor(idpId) };
};

describe("user.created", () => {
  it("creates the local user; a token with that idp id later resolves to the same user", async () => {
    const u = idpUser();

    const res = await send({ type: "user.created", data: { id: u.idpId, email: u.email, name: "Hook Created", avatar_url: "https://img.example/a.png" } });

    expect(res.status, res.text).toBe(200);
    expect(res.body).toEqual({ status: "ok" });
    const stored = await User.get(u.id);
    expect(stored).toMatchObject({ idp_id: u.idpId, email: u.email, name: "Hook Created", avatar_url: "https://img.example/a.png" });
    // The token carries another name: the profile must be the webhook-created user, not a new one from claims.
    const token = await idp().sign({ email: u.email, sub: u.idpId, name: "Name In Token" });
    const me = await call("GET", "/api/auth/me", { token });
    expect(me.status).toBe(200);
    expect(me.body).toMatchObject({ id: u.id, idp_id: u.idpId, idpUserId: u.idpId, name: "Hook Created", referral_code: stored!.referral_code });
    expect(me.body.created_at).toBe(stored!.created_at);
  });

  it("creates a pending user while access gating is on", async () => {
    const saved = process.env.ACCESS_GATING;
    process.env.ACCESS_GATING = "true";
    try {
      const u = idpUser();
      expect((await send({ type: "user.created", data: { id: u.idpId, email: u.email } })).status).toBe(200);
      expect((await User.get(u.id))?.access_status).toBe("pending");
    } finally {
      process.env.ACCESS_GATING = saved;
    }
  });

  it("a replay of the same event is harmless: 200 again, one user, unchanged", async () => {
    const u = idpUser();
    const msgId = `msg_${randomUUID()}`;
    const event = { type: "user.created", data: { id: u.idpId, email: u.email, name: "Once" } };
    expect((await send(event, { msgId })).status).toBe(200);
    const first = await User.get(u.id);

    const replay = await send(event, { msgId });

    expect(replay.status).toBe(200);
    expect(replay.body).toEqual({ status: "ok" });
    expect(await User.get(u.id)).toEqual(first);
    const byEmail = await db().entities.user.query.byEmail({ email: u.email }).go();
    expect(byEmail.data).toHaveLength(1);
  });
});

describe("user.updated", () => {
  it("syncs name, e-mail and avatar; the e-mail index follows", async () => {
    const u = idpUser();
    await send({ type: "user.created", data: { id: u.idpId, email: u.email, name: "Old Name" } });
    const newEmail = `Renamed-${randomUUID().slice(0, 6)}@Example.com`;

    const res = await send({ type: "user.updated", data: { id: u.idpId, email: newEmail, name: "New Name", avatar_url: "https://img.example/b.png" } });

    expect(res.status, res.text).toBe(200);
    const token = await idp().sign({ email: newEmail, sub: u.idpId });
    const me = await call("GET", "/api/auth/me", { token });
    expect(me.body).toMatchObject({ id: u.id, email: newEmail.toLowerCase(), name: "New Name", avatar_url: "https://img.example/b.png" });
    expect((await User.findByEmail(newEmail))?.id).toBe(u.id);
    expect(await User.findByEmail(u.email)).toBeNull();
  });

  it("a changed address is unverified until a token of it: no admin by ADMIN_EMAILS, not found by e-mail", async () => {
    const u = idpUser();
    const oldToken = await idp().sign({ email: u.email, sub: u.idpId, email_verified: true });
    expect((await call("GET", "/api/auth/me", { token: oldToken })).status).toBe(200);
    const boss = `boss-${randomUUID().slice(0, 8)}@example.com`;
    const saved = process.env.ADMIN_EMAILS;
    process.env.ADMIN_EMAILS = boss;
    try {
      expect((await send({ type: "user.updated", data: { id: u.idpId, email: boss } })).status).toBe(200);
      // The old token vouches for the old address only: the new one, named by the provider, grants nothing yet.
      expect((await call("GET", "/api/admin/plg/stats", { token: oldToken })).status).toBe(403);
      expect(await User.findByEmail(boss)).toBeNull();
      // A token of the new address that its provider verified: it names the user, who is an admin by it.
      const newToken = await idp().sign({ email: boss, sub: u.idpId, email_verified: true });
      expect((await call("GET", "/api/admin/plg/stats", { token: newToken })).status).toBe(200);
      expect((await User.findByEmail(boss))?.id).toBe(u.id);
    } finally {
      if (saved === undefined) delete process.env.ADMIN_EMAILS;
      else process.env.ADMIN_EMAILS = saved;
    }
  });

  it("an older change delivered after a newer one (a provider's retry) does not undo it: events are ordered by their own time", async () => {
    const u = idpUser();
    await send({ type: "user.created", data: { id: u.idpId, email: u.email, name: "First" } });
    const newer = `newer-${randomUUID().slice(0, 8)}@example.com`;
    // Both events occurred a minute apart; the newer is delivered first, the older is retried after it.
    expect((await send({ type: "user.updated", timestamp: "2026-11-29T10:01:00.000000Z", data: { id: u.idpId, email: newer, name: "Newer" } })).status).toBe(200);
    expect((await send({ type: "user.updated", timestamp: "2026-11-29T10:00:00.000000Z", data: { id: u.idpId, email: u.email, name: "Older", avatar_url: "https://img.example/old.png" } })).status).toBe(200);
    const stored = await User.get(u.id);
    expect(stored).toMatchObject({ email: newer, name: "Newer", idp_event_at: "2026-11-29T10:01:00.000Z" });
    expect(stored!.avatar_url).toBeUndefined();
    // A later change applies; one without a time (a provider that sends none) applies as it comes.
    expect((await send({ type: "user.updated", timestamp: "2026-11-29T10:02:00Z", data: { id: u.idpId, name: "Latest" } })).status).toBe(200);
    expect(await User.get(u.id)).toMatchObject({ name: "Latest", idp_event_at: "2026-11-29T10:02:00.000Z" });
    expect((await send({ type: "user.updated", data: { id: u.idpId, name: "Untimed" } })).status).toBe(200);
    expect(await User.get(u.id)).toMatchObject({ name: "Untimed" });
  });

  it("a partial update leaves the other fields alone", async () => {
    const u = idpUser();
    await send({ type: "user.created", data: { id: u.idpId, email: u.email, name: "Keep Email" } });
    await send({ type: "user.updated", data: { id: u.idpId, name: "Only Name" } });
    expect(await User.get(u.id)).toMatchObject({ email: u.email, name: "Only Name" });
  });
});

describe("user.deleted", () => {
  it("a deletion delivered before the creation (or the user's first request) keeps the identity deleted", async () => {
    const u = idpUser();
    expect((await send({ type: "user.deleted", data: { id: u.idpId } })).status).toBe(200);
    expect((await send({ type: "user.created", data: { id: u.idpId, email: u.email, name: "Late" } })).status).toBe(200);
    expect(await User.get(u.id)).toBeNull();
    // Its token, still valid, does not create the account either.
    const token = await idp().sign({ email: u.email, sub: u.idpId });
    expectEnvelope(await call("GET", "/api/auth/me", { token }), 401, "UNAUTHORIZED");
    expect(await User.get(u.id)).toBeNull();
  });

  it("cascades: owned workspaces are purged, memberships elsewhere removed, the user is gone", async () => {
    const u = idpUser();
    const token = await idp().sign({ email: u.email, sub: u.idpId });
    await call("GET", "/api/auth/me", { token });
    const owned = await call("POST", "/api/workspaces", { token, body: { name: "Owned by the leaver" } });
    expect(owned.status).toBe(201);
    const colleague = await newUser();
    await call("POST", `/api/workspaces/${owned.body.id}/members`, { token, body: { email: colleague.email } });
    const { owner: other, workspace: elsewhere } = await newWorkspace("Elsewhere");
    await call("POST", `/api/workspaces/${elsewhere.id}/members`, { token: other.token, body: { email: u.email, role: "admin" } });
    const referral = (await User.get(u.id))!.referral_code;
    // What the leaver keeps for themselves elsewhere: learned facts (with their head) and a skill rating.
    const learned = await learnFromStatement(
      { workspaceId: elsewhere.id, userId: u.id, conversationId: randomUUID(), messageId: randomUUID(), text: "I'm the PM of the mobile app. We use Mixpanel for product analytics.", at: new Date().toISOString() },
      { model: null },
    );
    expect(learned.facts.length).toBeGreaterThan(0);
    expect((await call("POST", "/api/skills/research-plan/feedback", { token, body: { workspace_id: elsewhere.id, rating: 2, feedback_text: "by the leaver" } })).status).toBe(200);
    // And their conversation there, with a message; the owner's own conversation stays.
    const conv = (await call("POST", "/api/chat/conversations", { token, body: { workspace_id: elsewhere.id, title: "The leaver's questions" } })).body;
    await Chat.appendMessage({ id: conv.id, workspace_id: elsewhere.id, user_id: u.id }, { role: "user", content: "What do users say about exports?" });
    const kept = (await call("POST", "/api/chat/conversations", { token: other.token, body: { workspace_id: elsewhere.id, title: "The owner's" } })).body;
    const ofConversation = async (id: string) => (await partitionItems(`ws#${elsewhere.id}`)).filter((i) => String(i.sk).startsWith(`conversation#${id}`));
    expect(await ofConversation(conv.id)).toHaveLength(2);
    const theirs = async () => (await partitionItems(`ws#${elsewhere.id}`)).map((i) => String(i.sk)).filter((sk) => sk.includes(u.id));
    expect((await theirs()).length).toBeGreaterThan(2);

    const res = await send({ type: "user.deleted", data: { id: u.idpId } });

    expect(res.status, res.text).toBe(200);
    expect(await partitionItems(`ws#${owned.body.id}`)).toEqual([]);
    const remaining = await call("GET", `/api/workspaces/${elsewhere.id}/members`, { token: other.token });
    expect(remaining.body.members.map((m: { user_id: string }) => m.user_id)).toEqual([other.id]);
    expect(await User.get(u.id)).toBeNull();
    expect((await db().entities.referralCode.get({ code: referral }).go()).data).toBeNull();
    expect((await call("GET", "/api/workspaces", { token: colleague.token })).body.total).toBe(0);
    expect((await call("GET", `/api/workspaces/${elsewhere.id}`, { token: other.token })).status).toBe(200);
    // The leaver's seat elsewhere is given back with the membership, and what they kept there goes with them.
    expect((await db().entities.usage.get({ workspace_id: elsewhere.id }).go({ consistent: true })).data?.members).toBe(1);
    expect(await theirs()).toEqual([]);
    // Spec 02 "all owned data": their conversation went with its message; nobody else's did.
    expect(await ofConversation(conv.id)).toEqual([]);
    expect(await ofConversation(kept.id)).toHaveLength(1);
  });

  /**
   * Deliver `user.deleted` for `u` and run `during` once while its cascade is under way (at its first Query naming the
   * user: after the tombstone and `deleting_at`, before the user item goes); the answer `during` gave.
   */
  async function deleteRunning<T>(u: ReturnType<typeof idpUser>, during: () => Promise<T>): Promise<T> {
    const name = "duringDeletion";
    let ran = false;
    let result: T | undefined;
    dynamoClient().middlewareStack.add(
      (next, context) => async (args) => {
        if (!ran && /^Query/.test(String(context.commandName)) && JSON.stringify(args.input).includes(u.id)) {
          ran = true; // before the await: what `during` reads passes through here too
          result = await during();
        }
        return next(args);
      },
      { step: "initialize", name },
    );
    try {
      expect((await send({ type: "user.deleted", data: { id: u.idpId } })).status).toBe(200);
    } finally {
      dynamoClient().middlewareStack.remove(name);
    }
    expect(ran).toBe(true);
    return result as T;
  }

  it("a user whose deletion is under way is refused (401) before the cascade ends: no workspace can be created to outlive it", async () => {
    const u = idpUser();
    const token = await idp().sign({ email: u.email, sub: u.idpId });
    expect((await call("GET", "/api/auth/me", { token })).status).toBe(200);
    const during = await deleteRunning(u, () => {
      User.forgetAll(); // another container, whose cached user has expired
      return call("POST", "/api/workspaces", { token, body: { name: "Created while being deleted" } });
    });
    expectEnvelope(during, 401, "UNAUTHORIZED");
    expect(await User.get(u.id)).toBeNull();
    const { data } = await db().entities.membership.query.byUser({ user_id: u.id }).go({ pages: "all" });
    expect(data).toEqual([]);
  });

  it("a container still serving the deleted user from its cache cannot create a workspace, during the cascade or after it", async () => {
    const u = idpUser();
    const token = await idp().sign({ email: u.email, sub: u.idpId });
    expect((await call("GET", "/api/auth/me", { token })).status).toBe(200);
    // What another container holds in its cache (USER_CACHE_TTL_MS) from before the deletion: the user record as read.
    const cached = (await User.get(u.id))!;
    const during = await deleteRunning(u, () => Workspaces.create(cached, { name: "Created from a cache while being deleted" }).catch((e: unknown) => e));
    const after = await Workspaces.create(cached, { name: "Created from a cache after the deletion" }).catch((e: unknown) => e);
    for (const refused of [during, after]) {
      expect(refused).toBeInstanceOf(AppError);
      expect((refused as AppError).code).toBe("UNAUTHORIZED");
    }
    const { data } = await db().entities.membership.query.byUser({ user_id: u.id }).go({ pages: "all" });
    expect(data).toEqual([]);
  });

  it("a workspace the user created a moment before the deletion, missing from the cascade's first (eventually consistent) read, is deleted too", async () => {
    const u = idpUser();
    const token = await idp().sign({ email: u.email, sub: u.idpId });
    const made = await call("POST", "/api/workspaces", { token, body: { name: "Created just before the deletion" } });
    expect(made.status, made.text).toBe(201);
    // gsi2 has not caught up with that create: the cascade's first read of the user's memberships lacks it.
    const name = "gsi2Lag";
    let hidden = 0;
    dynamoClient().middlewareStack.add(
      (next, context) => async (args) => {
        const out = await next(args);
        const output = out.output as { Items?: Record<string, unknown>[] };
        if (hidden === 0 && String(context.commandName).startsWith("Query") && (args.input as { IndexName?: string }).IndexName === "gsi2" && output.Items?.some((i) => i.workspace_id === made.body.id)) {
          output.Items = output.Items.filter((i) => i.workspace_id !== made.body.id);
          hidden++;
        }
        return out;
      },
      { step: "initialize", name },
    );
    try {
      expect((await send({ type: "user.deleted", data: { id: u.idpId } })).status).toBe(200);
    } finally {
      dynamoClient().middlewareStack.remove(name);
    }
    expect(hidden).toBe(1);
    expect(await partitionItems(`ws#${made.body.id}`)).toEqual([]);
    expect(await User.get(u.id)).toBeNull();
  });

  it("a token of the deleted user that is still valid cannot bring the account back, nor a user.created delivered late", async () => {
    const u = idpUser();
    const token = await idp().sign({ email: u.email, sub: u.idpId });
    expect((await call("GET", "/api/auth/me", { token })).status).toBe(200);
    expect((await send({ type: "user.deleted", data: { id: u.idpId } })).status).toBe(200);
    User.forgetAll(); // another container, or this one after its 30 s
    expectEnvelope(await call("GET", "/api/auth/me", { token }), 401, "UNAUTHORIZED");
    expectEnvelope(await call("POST", "/api/workspaces", { token, body: { name: "Back from the dead" } }), 401, "UNAUTHORIZED");
    expect((await send({ type: "user.created", data: { id: u.idpId, email: u.email } })).status).toBe(200);
    expect(await User.get(u.id)).toBeNull();
  });

  it("a replay (or a delete of an unknown user) is 200 and changes nothing", async () => {
    const u = idpUser();
    await send({ type: "user.created", data: { id: u.idpId, email: u.email } });
    const msgId = `msg_${randomUUID()}`;
    expect((await send({ type: "user.deleted", data: { id: u.idpId } }, { msgId })).status).toBe(200);

    const replay = await send({ type: "user.deleted", data: { id: u.idpId } }, { msgId });
    const unknown = await send({ type: "user.deleted", data: { id: `user_${randomUUID()}` } });

    expect(replay.status).toBe(200);
    expect(unknown.status).toBe(200);
    expect(await User.get(u.id)).toBeNull();
  });
});

describe("signature checks (400, nothing applied)", () => {
  const created = (u: ReturnType<typeof idpUser>) => ({ type: "user.created", data: { id: u.idpId, email: u.email } });

  it.each<[string, (u: ReturnType<typeof idpUser>) => Promise<Awaited<ReturnType<typeof send>>>]>([
    ["no signature headers", (u) => send(created(u), { headers: {} })],
    ["a signature header but no id or timestamp", (u) => send(created(u), { headers: { "webhook-signature": "v1,abc" } })],
    ["a signature made with another secret", (u) => send(created(u), { signWith: newSecret() })],
    ["a body changed after signing", (u) => send(created(u), { sentBody: JSON.stringify({ ...created(u), data: { id: u.idpId, email: "evil@example.com" } }) })],
    ["a timestamp older than the tolerance", (u) => send(created(u), { at: new Date(Date.now() - 10 * 60_000) })],
    ["a timestamp in the future", (u) => send(created(u), { at: new Date(Date.now() + 10 * 60_000) })],
  ])("rejects %s", async (_label, attempt) => {
    const u = idpUser();
    const res = await attempt(u);
    expectEnvelope(res, 400, "INVALID_SIGNATURE");
    expect(await User.get(u.id)).toBeNull();
  });

  it("an unconfigured secret is 400 and nothing is applied", async () => {
    const u = idpUser();
    delete process.env.IDP_WEBHOOK_SECRET;
    const res = await send(created(u), { signWith: newSecret() });
    expectEnvelope(res, 400, "INVALID_SIGNATURE");
    expect(res.body.detail).toMatch(/not configured/);
    expect(await User.get(u.id)).toBeNull();
  });

  it("malformed JSON is checked for its signature first: unsigned is 400 INVALID_SIGNATURE", async () => {
    const res = await call("POST", "/api/webhooks/idp", { raw: { data: '{"type": "user.created", ', contentType: "application/json" } });
    expectEnvelope(res, 400, "INVALID_SIGNATURE");
  });
});

describe("invalid payloads (400, spec 02 Errors)", () => {
  it("a well-signed event of a type the service does not handle is 200 ok; one without a type is 400 with the field errors (no bearer token needed)", async () => {
    const ignored = await send({ type: "user.exploded", data: { id: "x" } });
    expect(ignored.status, ignored.text).toBe(200);
    expect(ignored.body).toEqual({ status: "ok" });
    const res = await send({ data: { id: "x" } });
    expectEnvelope(res, 400, "BAD_REQUEST");
    expect(res.body.errors[0].loc).toEqual(["body", "type"]);
  });

  it("a well-signed body that is not JSON is 400", async () => {
    const msgId = `msg_${randomUUID()}`;
    const at = new Date();
    const body = "user.created but not json";
    const res = await call("POST", "/api/webhooks/idp", {
      headers: { "webhook-id": msgId, "webhook-timestamp": String(Math.floor(at.getTime() / 1000)), "webhook-signature": new Webhook(currentSecret()).sign(msgId, at, body) },
      raw: { data: body, contentType: "application/json" },
    });
    expectEnvelope(res, 400, "BAD_REQUEST");
  });

  it("user.created without an e-mail for an unknown user is 400 and creates nothing", async () => {
    const u = idpUser();
    const res = await send({ type: "user.created", data: { id: u.idpId } });
    expectEnvelope(res, 400, "BAD_REQUEST");
    expect(await User.get(u.id)).toBeNull();
  });
});
