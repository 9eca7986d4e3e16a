/**
 * The identity-provider webhook as the provider calls it (Standard Webhooks, spec 02 `POST /api/webhooks/idp`): a
 * secret of the test's own, and deliveries signed with it.
 */
import { randomBytes, randomUUID } from "node:crypto";
import { afterEach, beforeEach } from "vitest";
import { Webhook } from "standardwebhooks";

/** A fresh Standard Webhooks secret (`whsec_` and 32 random bytes, base64). */
export const newWebhookSecret = (): string => `whsec_${randomBytes(32).toString("base64")}`;

/**
 * Give each test of the calling file its own `IDP_WEBHOOK_SECRET` (the previous value is restored after it).
 * @returns the current test's secret
 */
export function useIdpWebhookSecret(): () => string {
  let secret = "";
  let saved: string | undefined;
  beforeEach(() => {
    saved = process.env.IDP_WEBHOOK_SECRET;
    secret = newWebhookSecret();
    process.env.IDP_WEBHOOK_SECRET = secret;
  });
  afterEach(() => {
    if (saved === undefined) delete process.env.IDP_WEBHOOK_SECRET;
    else process.env.IDP_WEBHOOK_SECRET = saved;
  });
  return () => secret;
}

/** A delivery signed as the provider signs it: the JSON body and its three `webhook-*` headers. */
export function signedDelivery(event: unknown, secret: string, opts: { msgId?: string; at?: Date } = {}): { headers: Record<string, string>; body: string } {
  const body = JSON.stringify(event);
  const msgId = opts.msgId ?? `msg_${randomUUID()}`;
  const at = opts.at ?? new Date();
  return { body, headers: { "webhook-id": msgId, "webhook-timestamp": String(Math.floor(at.getTime() / 1000)), "webhook-signature": new Webhook(secret).sign(msgId, at, body) } };
}
