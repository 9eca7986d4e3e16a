import { defineRoutes, type RouteSpec } from "../../lib/route";
import { IdpWebhookEvent, WebhookAck } from "../../../core/user/schema";

/** Inbound webhooks (spec 02 Webhooks). */
export const webhooksRoutes = defineRoutes({
  "webhooks.idp": {
    method: "POST", path: "/api/webhooks/idp", group: "webhooks", access: "webhook",
    summary: "Identity-provider user events, verified by Standard Webhooks signature",
    body: IdpWebhookEvent,
    bodyType: "raw",
    responses: { 200: WebhookAck },
  },
} satisfies Record<string, RouteSpec>);
