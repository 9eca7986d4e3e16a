import Stripe from "stripe";
import { Config } from "../../core/config";
import { AppError } from "../../core/error";
import { PaymentsWebhookEvent, recordPaymentEvent } from "../../core/billing/webhook";

/**
 * Verify a payments webhook and record its event (spec 02 `POST /api/webhooks/payments`; DESIGN.md 6.3). The
 * `payments-signature` header holds Stripe's `Stripe-Signature` value; it is checked on the raw body with
 * `Stripe.webhooks.constructEvent` (HMAC-SHA256 with the endpoint secret, 5-minute timestamp tolerance) before the
 * body is trusted. The event is then claimed and enqueued (core/billing/webhook.ts) and the answer given at once;
 * the payments consumer applies it.
 * @returns `{status: "ok"}`, or `{status: "already_processed"}` for an event id received before
 * @throws AppError INVALID_SIGNATURE (400) without STRIPE_WEBHOOK_SECRET, without the header or with a bad signature;
 *   BAD_REQUEST (400, with `errors`) for a well-signed body that is not a Stripe event (spec 02 Errors);
 *   SERVICE_UNAVAILABLE (503) when the event cannot be queued (Stripe retries).
 */
export async function receivePaymentsWebhook(rawBody: string, signature: string | undefined): Promise<{ status: "ok" | "already_processed" }> {
  const secret = Config.stripeWebhookSecret();
  if (!secret) throw new AppError("INVALID_SIGNATURE", "Payments webhook secret is not configured: set STRIPE_WEBHOOK_SECRET", { setting: "STRIPE_WEBHOOK_SECRET" });
  if (!signature) throw new AppError("INVALID_SIGNATURE", "Missing payments-signature header");
  let event: Stripe.Event;
  try {
    event = Stripe.webhooks.constructEvent(rawBody, signature, secret);
  } catch (err) {
    if (err instanceof Stripe.errors.StripeSignatureVerificationError) throw new AppError("INVALID_SIGNATURE", `Webhook signature rejected: ${err.message}`);
    if (err instanceof SyntaxError) throw new AppError("BAD_REQUEST", "Webhook payload is not JSON");
    throw err;
  }
  const parsed = PaymentsWebhookEvent.safeParse(event);
  if (!parsed.success) {
    throw new AppError("BAD_REQUEST", "Webhook payload is not a Stripe event", {
      errors: parsed.error.issues.map((i) => ({ loc: ["body", ...i.path.map(String)], msg: i.message, type: i.code })),
    });
  }
  return recordPaymentEvent(event);
}
