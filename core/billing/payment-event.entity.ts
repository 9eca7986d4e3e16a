import { Entity } from "electrodb";

/** How long a payment event's id is remembered, seconds (spec 02 Webhooks: stored ids are cleaned up after 90 days). */
export const PAYMENT_EVENT_RETENTION_SECONDS = 90 * 24 * 3600;

/**
 * The receipt of one verified Stripe event (DESIGN.md 6.3), in its own partition `stripe-event#<event id>`. Created
 * only if absent when the webhook is received, so a repeated delivery of the id answers `already_processed`; `status`
 * goes from `received` (enqueued) to `applied` (the consumer's effects are written), or is `ignored` for a type the
 * consumer does not apply. Expires by DynamoDB TTL 90 days after receipt.
 */
export const buildPaymentEventEntity = () => new Entity({
  model: { entity: "payment_event", version: "1", service: "r2d" },
  attributes: {
    /** Stripe's event id ("evt_..."). */
    event_id: { type: "string", required: true },
    type: { type: "string", required: true },
    /** The Stripe customer the event is about ("cus_..."), when it names one: the FIFO group of its delivery. */
    customer: { type: "string" },
    /** `ignored`: a type the consumer does not apply (never enqueued); its id is kept so a repeat is recognised. */
    status: { type: ["received", "applied", "ignored"] as const, required: true },
    received_at: { type: "string", required: true, default: () => new Date().toISOString() },
    applied_at: { type: "string" },
    /** Epoch seconds after which DynamoDB deletes the receipt (the table's TTL attribute). */
    ttl: { type: "number", required: true },
  },
  indexes: {
    byId: {
      pk: { field: "pk", composite: ["event_id"], template: "stripe-event#${event_id}", casing: "none" },
      sk: { field: "sk", composite: [], template: "event", casing: "none" },
    },
  },
});
export type PaymentEventEntity = ReturnType<typeof buildPaymentEventEntity>;
