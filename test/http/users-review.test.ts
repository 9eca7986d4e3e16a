/**
 * Users and members: review findings of 2026-11-29. Who an e-mail address names when a token says it is unverified
 * for a user the webhook stored without the claim; a deletion that lands between the tombstone read and a first
 * sign-up's write; adding a member whose account (or whose workspace) is being deleted.
 */
import { randomUUID } from "node:crypto";
import { describe, expect, it } from "vitest";
import * as User from "../../core/user";
import { db } from "../../core/db/service";
import { call, idp, newWorkspace } from "../support/api";
import { landsBefore } from "../support/races";
import { signedDelivery, useIdpWebhookSecret } from "../support/idp-webhook";
import { expectEnvelope } from "./_helpers";

const secret = useIdpWebhookSecret();

/** Sign `event` as the identity provider would (Standard Webhooks) and post it. */
async function sendWebhook(event: unknown) {
  const { headers, body } = signedDelivery(event, secret());
  return call("POST", "/api/webhooks/idp", { headers, raw: { data: body, contentType: "application/json" } });
}

const members = (id: string) => `/api/workspaces/${id}/members`;
const membershipOf = async (workspaceId: string, userId: string) =>
  (await db().entities.membership.get({ workspace_id: workspaceId, user_id: userId }).go({ consistent: true })).data;
const seatsOf = async (workspaceId: string) => (await db().entities.usage.get({ workspace_id: workspaceId }).go({ consistent: true })).data?.members;

/** A user created by the first request of a token for a fresh subject (as the identity provider names it). */
async function signedIn(email = `m-${randomUUID().slice(0, 8)}@example.com`) {
  const sub = `user_${randomUUID()}`;
  const token = await idp().sign({ email, sub });
  const me = await call("GET", "/api/auth/me", { token });
  expect(me.status, me.text).toBe(200);
  return { sub, email, token, id: me.body.id as string };
}

describe("a token that says the address is unverified, for a user the webhook stored without the claim", () => {
  it("is recorded, so the address names the later verified user, not the claimer", async () => {
    const email = `victim-${randomUUID().slice(0, 8)}@corp.example`;
    const claimer = `user_${randomUUID()}`;
    const owner = `user_${randomUUID()}`;
    // The claimer signs up first: user.created stores no email_verified; their token says false.
    expect((await sendWebhook({ type: "user.created", data: { id: claimer, email, name: "Claimer" } })).status).toBe(200);
    const claimerMe = await call("GET", "/api/auth/me", { token: await idp().sign({ email, sub: claimer, email_verified: false }) });
    expect(claimerMe.status, claimerMe.text).toBe(200);
    expect((await User.get(User.userIdFor(claimer)))?.email_verified).toBe(false);
    // The mailbox's owner signs in later, verified.
    await new Promise((r) => setTimeout(r, 5)); // a later created_at
    expect((await sendWebhook({ type: "user.created", data: { id: owner, email, name: "Owner" } })).status).toBe(200);
    const ownerMe = await call("GET", "/api/auth/me", { token: await idp().sign({ email, sub: owner, email_verified: true }) });
    expect(ownerMe.status, ownerMe.text).toBe(200);

    expect((await User.findByEmail(email))?.id).toBe(User.userIdFor(owner));
    const { owner: admin, workspace } = await newWorkspace();
    const added = await call("POST", members(workspace.id), { token: admin.token, body: { email } });
    expect(added.status, added.text).toBe(201);
    expect(added.body.user_id).toBe(User.userIdFor(owner));
  });
});

describe("a deletion that lands between the tombstone read and a first sign-up's write", () => {
  it("a token's first request is 401 and the user is not created", async () => {
    const sub = `user_${randomUUID()}`;
    const id = User.userIdFor(sub);
    const token = await idp().sign({ email: `race-${randomUUID().slice(0, 8)}@example.com`, sub });
    // user.deleted runs to its end just before ensure's transaction (user item + referral code) goes.
    const [me, deleted] = await landsBefore(/^TransactWrite/, `user#${id}`, () => sendWebhook({ type: "user.deleted", data: { id: sub } }), () =>
      call("GET", "/api/auth/me", { token }),
    );
    expect(deleted.status, deleted.text).toBe(200);
    expectEnvelope(me, 401, "UNAUTHORIZED");
    expect(await User.get(id)).toBeNull();
    // And it stays refused.
    expectEnvelope(await call("GET", "/api/auth/me", { token }), 401, "UNAUTHORIZED");
  });

  it("a user.created delivery is acknowledged and creates nothing", async () => {
    const sub = `user_${randomUUID()}`;
    const id = User.userIdFor(sub);
    const [created, deleted] = await landsBefore(/^TransactWrite/, `user#${id}`, () => sendWebhook({ type: "user.deleted", data: { id: sub } }), () =>
      sendWebhook({ type: "user.created", data: { id: sub, email: `race-${randomUUID().slice(0, 8)}@example.com` } }),
    );
    expect(deleted.status, deleted.text).toBe(200);
    expect(created.status, created.text).toBe(200);
    expect(await User.get(id)).toBeNull();
  });
});

describe("adding a member whose account or workspace is being deleted", () => {
  it("a user whose deletion has begun (deleting_at) is 404 USER_NOT_FOUND; no membership, no seat", async () => {
    const { owner, workspace } = await newWorkspace();
    const target = await signedIn();
    await db().entities.user.patch({ id: target.id }).set({ deleting_at: new Date().toISOString() }).go();
    const seats = await seatsOf(workspace.id);

    expectEnvelope(await call("POST", members(workspace.id), { token: owner.token, body: { email: target.email } }), 404, "USER_NOT_FOUND");
    expect(await membershipOf(workspace.id, target.id)).toBeNull();
    expect(await seatsOf(workspace.id)).toBe(seats);
  });

  it("a user deleted between the lookup and the write is 404 USER_NOT_FOUND; no membership, no seat", async () => {
    const { owner, workspace } = await newWorkspace();
    const target = await signedIn();
    const seats = await seatsOf(workspace.id);
    const [added, deleted] = await landsBefore(/^TransactWrite/, `member#${target.id}`, () => sendWebhook({ type: "user.deleted", data: { id: target.sub } }), () =>
      call("POST", members(workspace.id), { token: owner.token, body: { email: target.email } }),
    );
    expect(deleted.status, deleted.text).toBe(200);
    expectEnvelope(added, 404, "USER_NOT_FOUND");
    expect(await membershipOf(workspace.id, target.id)).toBeNull();
    expect(await seatsOf(workspace.id)).toBe(seats);
  });

  it("a workspace deleted between the caller's membership check and the write is 403; no membership is left", async () => {
    const { owner, workspace } = await newWorkspace();
    const target = await signedIn();
    const [added, deleted] = await landsBefore(/^TransactWrite/, `member#${target.id}`, () => call("DELETE", `/api/workspaces/${workspace.id}`, { token: owner.token }), () =>
      call("POST", members(workspace.id), { token: owner.token, body: { email: target.email } }),
    );
    expect(deleted.status, deleted.text).toBe(204);
    expectEnvelope(added, 403, "FORBIDDEN");
    expect(await membershipOf(workspace.id, target.id)).toBeNull();
  });
});
