/**
 * Identity-provider webhook deduplication by `webhook-id` (issue #10 point 10): an exact replay of a signed message
 * inside the signature tolerance answers 2xx without applying the event again; a copy arriving while another is being
 * applied is told to retry (409); a delivery that failed or crashed is not remembered, so the provider's retry applies it.
 */
import { randomUUID } from "node:crypto";
import { describe, expect, it } from "vitest";
import * as User from "../../core/user";
import { db } from "../../core/db/service";
import { call } from "../support/api";
import { signedDelivery, useIdpWebhookSecret } from "../support/idp-webhook";
import { expectEnvelope } from "./_helpers";

const secret = useIdpWebhookSecret();

interface Delivery {
  headers: Record<string, string>;
  body: string;
}

/** Sign `event` once, as the identity provider would (Standard Webhooks); the result can be sent any number of times. */
function signed(event: unknown, msgId = `msg_${randomUUID()}`): Delivery {
  return signedDelivery(event, secret(), { msgId });
}

const deliver = (d: Delivery) => call("POST", "/api/webhooks/idp", { headers: d.headers, raw: { data: d.body, contentType: "application/json" } });

/** A user known to the service through a user.created webhook. */
async function knownUser(name: string) {
  const idpId = `user_${randomUUID()}`;
  const email = `replay-${randomUUID().slice(0, 8)}@example.com`;
  expect((await deliver(signed({ type: "user.created", data: { id: idpId, email, name } }))).status).toBe(200);
  return { idpId, email, id: User.userIdFor(idpId) };
}

describe("POST /api/webhooks/idp replays", () => {
  it("an exact replay of an older update is 200 and does not undo the newer one", async () => {
    const u = await knownUser("Original");
    const older = signed({ type: "user.updated", data: { id: u.idpId, name: "Older" } });
    const newer = signed({ type: "user.updated", data: { id: u.idpId, name: "Newer" } });
    expect((await deliver(older)).status).toBe(200);
    expect((await deliver(newer)).status).toBe(200);

    const replay = await deliver(older);

    expect(replay.status, replay.text).toBe(200);
    expect(replay.body).toEqual({ status: "ok" });
    expect((await User.get(u.id))?.name).toBe("Newer");
  });

  it("a replayed user.created does not bring back a user deleted since", async () => {
    const idpId = `user_${randomUUID()}`;
    const created = signed({ type: "user.created", data: { id: idpId, email: `gone-${randomUUID().slice(0, 8)}@example.com` } });
    expect((await deliver(created)).status).toBe(200);
    expect((await deliver(signed({ type: "user.deleted", data: { id: idpId } }))).status).toBe(200);

    expect((await deliver(created)).status).toBe(200);

    expect(await User.get(User.userIdFor(idpId))).toBeNull();
  });

  it("identical deliveries at the same time: each is applied once, acknowledged, or told to retry", async () => {
    const u = await knownUser("Original");
    const copy = signed({ type: "user.updated", data: { id: u.idpId, name: "Concurrent" } });
    const first = await Promise.all(Array.from({ length: 6 }, () => deliver(copy)));
    for (const res of first) expect([200, 409], res.text).toContain(res.status);
    expect(first.some((res) => res.status === 200)).toBe(true);
    for (const res of first.filter((r) => r.status === 409)) expectEnvelope(res, 409, "CONFLICT");

    expect((await deliver(signed({ type: "user.updated", data: { id: u.idpId, name: "Later" } }))).status).toBe(200);
    // The provider retries the copies it was told to retry: they are duplicates by now.
    for (const res of await Promise.all(Array.from({ length: 3 }, () => deliver(copy)))) expect(res.status).toBe(200);
    expect((await User.get(u.id))?.name).toBe("Later");
  });

  it("a copy arriving while another delivery of the message is being applied is 409 and applies nothing", async () => {
    const u = await knownUser("Original");
    const copy = signed({ type: "user.updated", data: { id: u.idpId, name: "Copy" } });
    // Another delivery of this message holds the receipt (claimed, not yet applied), as the claim's conditional put
    // leaves it for every copy but the first.
    const receipt = { scope: `idp-webhook#${copy.headers["webhook-id"]}`, name: "receipt" };
    await db().entities.guard.put({ ...receipt, owner: randomUUID(), ttl: Math.floor(Date.now() / 1000) + 60 }).go();

    expectEnvelope(await deliver(copy), 409, "CONFLICT");
    expect((await User.get(u.id))?.name).toBe("Original");
  });

  it("a claim left by a delivery that crashed expires: the provider's retry applies the message", async () => {
    const u = await knownUser("Original");
    const copy = signed({ type: "user.updated", data: { id: u.idpId, name: "Recovered" } });
    const receipt = { scope: `idp-webhook#${copy.headers["webhook-id"]}`, name: "receipt" };
    await db().entities.guard.put({ ...receipt, owner: randomUUID(), ttl: Math.floor(Date.now() / 1000) - 1 }).go();

    expect((await deliver(copy)).status).toBe(200);
    expect((await User.get(u.id))?.name).toBe("Recovered");
  });

  it("a delivery that failed is not remembered: fixing the cause and retrying applies it", async () => {
    const idpId = `user_${randomUUID()}`;
    const msgId = `msg_${randomUUID()}`;
    // user.updated for an unknown user without an e-mail cannot be applied (400).
    const failing = signed({ type: "user.updated", data: { id: idpId, name: "No e-mail" } }, msgId);
    expectEnvelope(await deliver(failing), 400, "BAD_REQUEST");

    // The provider's retry of the same message id (re-signed) after the user exists applies it.
    const email = `retry-${randomUUID().slice(0, 8)}@example.com`;
    expect((await deliver(signed({ type: "user.created", data: { id: idpId, email, name: "Before" } }))).status).toBe(200);
    expect((await deliver(signed({ type: "user.updated", data: { id: idpId, name: "After retry" } }, msgId))).status).toBe(200);
    expect((await User.get(User.userIdFor(idpId)))?.name).toBe("After retry");
  });

  it("an unsigned request cannot claim a message id ahead of the real delivery", async () => {
    const u = await knownUser("Original");
    const real = signed({ type: "user.updated", data: { id: u.idpId, name: "Real" } });
    const forged = await call("POST", "/api/webhooks/idp", {
      headers: { ...real.headers, "webhook-signature": "v1,AAAA" },
      raw: { data: real.body, contentType: "application/json" },
    });
    expectEnvelope(forged, 400, "INVALID_SIGNATURE");

    expect((await deliver(real)).status).toBe(200);
    expect((await User.get(u.id))?.name).toBe("Real");
  });
});
