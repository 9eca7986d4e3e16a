import { httpGroup } from "../lib/http";
import { webhooksRoutes } from "./routes/webhooks";
import { ok } from "../lib/route";
import { receiveIdpWebhook } from "../webhooks/idp";
import { receivePaymentsWebhook } from "../webhooks/payments";

/** Inbound webhooks: verified by the provider's signature instead of a JWT (spec 02 Webhooks). */
export const handler = httpGroup(webhooksRoutes, {
  "webhooks.idp": async ({ rawBody, headers }) => ok(await receiveIdpWebhook(rawBody, headers)),
  "webhooks.payments": async ({ rawBody, headers }) => ok(await receivePaymentsWebhook(rawBody, headers["payments-signature"])),
});
