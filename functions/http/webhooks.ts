import { httpGroup } from "../lib/http";
import { webhooksRoutes } from "./routes/webhooks";
import { ok } from "../lib/route";

// Each provider's receiver (the Stripe SDK, the Standard Webhooks verifier) loads on its first event.
const Idp = () => import("../webhooks/idp");
const Payments = () => import("../webhooks/payments");

/** Inbound webhooks: verified by the provider's signature instead of a JWT (spec 02 Webhooks). */
export const handler = httpGroup(webhooksRoutes, {
  "webhooks.idp": async ({ rawBody, headers }) => ok(await (await Idp()).receiveIdpWebhook(rawBody, headers)),
  "webhooks.payments": async ({ rawBody, headers }) => ok(await (await Payments()).receivePaymentsWebhook(rawBody, headers["payments-signature"])),
});
