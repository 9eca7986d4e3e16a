import { defineRoutes, type RouteSpec } from "../../lib/route";
import { IdpWebhookEvent, WebhookAck } from "../../../core/user/schema";
import { PaymentsWebhookEvent } from "../../../core/billing/schema";

/** Inbound webhooks (spec 02 Webhooks). */
export const webhooksRoutes = defineRoutes({
  "webhooks.idp": {
    method: "POST", path: "/api/webhooks/idp", group: "webhooks", access: "webhook",
    summary: "Identity-provider user events, verified by Standard Webhooks signature",
    body: IdpWebhookEvent,
    bodyType: "raw",
    responses: { 200: WebhookAck },
  },
  "webhooks.payments": {
    method: "POST", path: "/api/webhooks/payments", group: "webhooks", access: "webhook",
    summary: "Stripe payment events, verified by the payments-signature header (Stripe-Signature); each event id applied once",
    body: PaymentsWebhookEvent,
    bodyType: "raw",
    responses: { 200: WebhookAck },
    errors: ["SERVICE_UNAVAILABLE"],
  },
} satisfies Record<string, RouteSpec>);
