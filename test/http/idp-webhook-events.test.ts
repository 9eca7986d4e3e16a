/**
 * Identity-provider webhook event types (spec 02 Webhooks, Inbound webhook events, Errors): a correctly signed,
 * well-formed event of a type the service does not handle (session.created, email.created, ...) is acknowledged
 * 200 {status: "ok"} and changes nothing, so the provider does not retry it for days; a payload that is not a
 * well-formed event (no type, data not an object, a user event without its fields) stays 400, as does a bad signature.
 */
import { randomUUID } from "node:crypto";
import { describe, expect, it } from "vitest";
import * as User from "../../core/user";
import { db } from "../../core/db/service";
import { call } from "../support/api";
import { newWebhookSecret, signedDelivery, useIdpWebhookSecret } from "../support/idp-webhook";
import { expectEnvelope } from "./_helpers";

const secret = useIdpWebhookSecret();

/** Sign `event` as the identity provider would (Standard Webhooks) and post it. */
async function send(event: unknown, opts: { msgId?: string; signWith?: string } = {}) {
  const { headers, body } = signedDelivery(event, opts.signWith ?? secret(), opts);
  return call("POST", "/api/webhooks/idp", { headers, raw: { data: body, contentType: "application/json" } });
}

const receiptOf = async (msgId: string) => (await db().entities.guard.get({ scope: `idp-webhook#${msgId}`, name: "receipt" }).go({ consistent: true })).data;

describe("POST /api/webhooks/idp: event types it does not handle", () => {
  it("a signed session.created (and other unhandled types) is 200 {status: ok} and changes nothing, however often it is delivered", async () => {
    const idpId = `user_${randomUUID()}`;
    const email = `events-${randomUUID().slice(0, 8)}@example.com`;
    expect((await send({ type: "user.created", data: { id: idpId, email, name: "Ada" } })).status).toBe(200);
    const before = await User.get(User.userIdFor(idpId));
    expect(before).toMatchObject({ email, name: "Ada" });

    // Data naming the user, with other values: not a user event, so none of it is applied.
    const msgId = `msg_${randomUUID()}`;
    const session = { type: "session.created", timestamp: new Date().toISOString(), data: { id: idpId, user_id: idpId, email: "someone-else@example.com", name: "Mallory", status: "active" } };
    for (let i = 0; i < 2; i++) {
      const res = await send(session, { msgId });
      expect(res.status, res.text).toBe(200);
      expect(res.body).toEqual({ status: "ok" });
    }
    for (const type of ["email.created", "organization.created", "user.exploded"]) {
      const res = await send({ type, data: { id: idpId, email: "someone-else@example.com" } });
      expect(res.status, `${type}: ${res.text}`).toBe(200);
      expect(res.body).toEqual({ status: "ok" });
    }
    expect(await User.get(User.userIdFor(idpId))).toEqual(before);
    // Nothing to deduplicate either: no receipt is kept for it.
    expect(await receiptOf(msgId)).toBeNull();
    // A user that does not exist is not created by one.
    const stranger = `user_${randomUUID()}`;
    expect((await send({ type: "session.created", data: { id: stranger, email: `s-${randomUUID().slice(0, 8)}@example.com` } })).status).toBe(200);
    expect(await User.get(User.userIdFor(stranger))).toBeNull();
  });

  it("malformed payloads stay 400 with their field errors; a bad signature stays 400 INVALID_SIGNATURE", async () => {
    const noType = await send({ data: { id: "x" } });
    expectEnvelope(noType, 400, "BAD_REQUEST");
    expect(noType.body.errors[0].loc).toEqual(["body", "type"]);
    const noData = await send({ type: "session.created" });
    expectEnvelope(noData, 400, "BAD_REQUEST");
    expect(noData.body.errors[0].loc).toEqual(["body", "data"]);
    expectEnvelope(await send({ type: "session.created", data: ["x"] }), 400, "BAD_REQUEST");
    expectEnvelope(await send("session.created"), 400, "BAD_REQUEST");
    // A handled type is checked as the user event it is: its missing or invalid fields are named.
    const noId = await send({ type: "user.created", data: { email: "x@example.com" } });
    expectEnvelope(noId, 400, "BAD_REQUEST");
    expect(noId.body.errors[0].loc).toEqual(["body", "data", "id"]);
    const badEmail = await send({ type: "user.updated", data: { id: `user_${randomUUID()}`, email: "not an address" } });
    expectEnvelope(badEmail, 400, "BAD_REQUEST");
    expect(badEmail.body.errors[0].loc).toEqual(["body", "data", "email"]);
    expectEnvelope(await send({ type: "session.created", data: {} }, { signWith: newWebhookSecret() }), 400, "INVALID_SIGNATURE");
  });
});
