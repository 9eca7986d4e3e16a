/**
 * Receipt of verified Stripe events (DESIGN.md 6.3; spec 02 Webhooks, Inbound webhook events). The webhook handler
 * (functions/webhooks/payments.ts) checks the signature, then `recordPaymentEvent` claims the event id and enqueues
 * the event for the payments consumer (core/billing/sync.ts `applyPaymentEvent`), and the webhook answers at once.
 *
 * Exactly once, with a consumer that may fail (docs/decisions.md "Payments webhook and sync"):
 * - the claim is a receipt item created only if absent (`stripe-event#<id>`, TTL 90 days; an event of a type the
 *   consumer ignores gets one too, `ignored`, and is not enqueued); a repeated id answers
 *   `already_processed` and is not enqueued again, except while its receipt still says `received` (enqueued, effect
 *   not yet written): then it is enqueued again, which the queue's deduplication (same id within 5 minutes) and the
 *   idempotent effects make harmless, so an event whose enqueue was lost is not lost for good;
 * - a failed enqueue drops the claim and answers 503, so Stripe's retry claims it afresh;
 * - every effect is idempotent by its own key, so a consumer retry (SQS redelivery) cannot apply twice: credits are
 *   granted once per ledger key (`grant#period#<start>`, `grant#<checkout session id>`, `grant#referral#<user>`),
 *   and the account's plan and status are set to Stripe's current state, not changed by a delta;
 * - after the queue's retries the event sits in the dead-letter queue with its receipt still `received`.
 */
import type Stripe from "stripe";
import { db } from "../db/service";
import { isConditionalFailure } from "../db/errors";
import { AppError } from "../error";
import { queue } from "../queue";
import { PAYMENT_EVENT_RETENTION_SECONDS } from "./payment-event.entity";
export { PaymentsWebhookEvent } from "./schema";

/** The events the payments consumer applies (spec 02 Inbound webhook events). */
export const PAYMENT_EVENT_TYPES = [
  "checkout.session.completed",
  "customer.subscription.created",
  "customer.subscription.updated",
  "customer.subscription.deleted",
  "invoice.payment_succeeded",
  "invoice.payment_failed",
  // A boost pack (or subscription) paid by a delayed method (bank debit): paid, or failed, after the session completed.
  "checkout.session.async_payment_succeeded",
  "checkout.session.async_payment_failed",
  // A refunded boost pack: its unused credits are revoked.
  "charge.refunded",
] as const;
export type PaymentEventType = (typeof PAYMENT_EVENT_TYPES)[number];

/** The Stripe customer id an event's object names, if any (`customer` is an id or an expanded customer). */
export function customerOf(event: Stripe.Event): string | undefined {
  const c = (event.data.object as { customer?: string | { id: string } | null }).customer;
  return typeof c === "string" ? c : (c?.id ?? undefined);
}

/**
 * Claim a verified event and enqueue it for the payments consumer (see the module comment for exactly-once).
 * Events of other types are acknowledged and not enqueued (Stripe sends only what the endpoint subscribes to, and an
 * error would make it retry for days), but their ids are recorded too (receipt `ignored`, same 90-day expiry), so a
 * repeated id answers `already_processed` whatever its type (spec 02 Webhooks).
 * @param event a Stripe event whose signature has been verified
 * @returns `ok` the first time an id is seen (recorded, or ignored), `already_processed` for an id seen before
 * @throws AppError SERVICE_UNAVAILABLE (503) when the event cannot be enqueued, first time or on a repeat of one claimed
 *   and not applied (Stripe retries the delivery).
 */
export async function recordPaymentEvent(event: Stripe.Event): Promise<{ status: "ok" | "already_processed" }> {
  const customer = customerOf(event);
  const receipt = db().entities.paymentEvent;
  const ttl = Math.floor(Date.now() / 1000) + PAYMENT_EVENT_RETENTION_SECONDS;
  if (!(PAYMENT_EVENT_TYPES as readonly string[]).includes(event.type)) {
    try {
      await receipt.create({ event_id: event.id, type: event.type, customer, status: "ignored", ttl }).go();
    } catch (err) {
      if (!isConditionalFailure(err)) throw err;
      return { status: "already_processed" };
    }
    return { status: "ok" };
  }
  try {
    await receipt.create({ event_id: event.id, type: event.type, customer, status: "received", ttl }).go();
  } catch (err) {
    if (!isConditionalFailure(err)) throw err;
    const { data } = await receipt.get({ event_id: event.id }).go({ consistent: true });
    // Claimed and not applied (its enqueue was lost, or is still on its way): queued again (the queue deduplicates by
    // event id). An enqueue that fails is Stripe's to retry: a 200 here would lose the event for good.
    if (data?.status === "received") {
      await enqueue(event, customer).catch((err: unknown) => {
        throw err instanceof AppError ? err : new AppError("SERVICE_UNAVAILABLE", "The payment event could not be queued; it will be retried", { retryable: true });
      });
    }
    return { status: "already_processed" };
  }
  try {
    await enqueue(event, customer);
  } catch (err) {
    await receipt.delete({ event_id: event.id }).where((a, op) => op.eq(a.status, "received")).go().catch(() => undefined);
    if (err instanceof AppError) throw err;
    throw new AppError("SERVICE_UNAVAILABLE", "The payment event could not be queued; it will be retried", { retryable: true });
  }
  return { status: "ok" };
}

/** Events of one customer are applied in order (FIFO group); events without a customer each form their own group. */
async function enqueue(event: Stripe.Event, customer: string | undefined): Promise<void> {
  const q = await queue("payments");
  await q.send({ body: JSON.stringify(event), groupId: customer ?? event.id, deduplicationId: event.id });
}

/** Mark an event's receipt applied (its effects are written); a receipt that is gone (expired, never made) is left so. */
export async function markPaymentEventApplied(eventId: string): Promise<void> {
  try {
    await db()
      .entities.paymentEvent.patch({ event_id: eventId })
      .set({ status: "applied", applied_at: new Date().toISOString() })
      .go();
  } catch (err) {
    if (!isConditionalFailure(err)) throw err;
  }
}
