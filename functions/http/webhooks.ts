import { httpGroup } from "../lib/http";
import { ok } from "../lib/route";
import { receiveIdpWebhook } from "../webhooks/idp";

/** Inbound webhooks: verified by the provider's signature instead of a JWT (spec 02 Webhooks). */
export const handler = httpGroup("webhooks", {
  "webhooks.idp": async ({ rawBody, headers }) => ok(await receiveIdpWebhook(rawBody, headers)),
});
