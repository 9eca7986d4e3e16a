/**
 * The Stripe-facing write side of billing (spec 02 "Billing (/api/billing …)" checkout, portal, boost checkout;
 * DESIGN.md 6.3). A workspace's billing is its OWNER's account (the subscription belongs to the user and covers all
 * their workspaces), so every session is for the owner's Stripe customer, created once per account and its id kept on
 * the account item (`stripe_customer_id`). Nothing is granted here: the payments webhook grants credits and sets the
 * plan from the paid invoice or checkout session, keyed by its id (not in this module).
 *
 * Who may start what (docs/decisions.md "Billing checkout and portal"):
 * - checkout and boost checkout: the workspace's owner or an admin (members manage no billing);
 * - the billing portal: the owner only — it shows the owner's payment methods and invoices and can cancel the
 *   subscription that covers all of the owner's workspaces.
 * Every operation first needs Stripe configured (503 naming STRIPE_SECRET_KEY), then membership with the role.
 */
import type Stripe from "stripe";
import { Config, stripePriceSetting } from "../config";
import { AppError, Errors } from "../error";
import { db } from "../db/service";
import { isConditionalFailure } from "../db/errors";
import { requireMember } from "../workspace";
import * as Users from "../user";
import type { Role } from "../workspace/schema";
import { accountOf, type BillingAccount } from "./ledger";
import { requireActiveSubscription } from "./index";
import { callStripe, requireStripe } from "./stripe";
import type { BoostCheckoutBody, BoostPackType, CheckoutBody, PortalBody } from "./schema";

/** The boost packs on sale (spec 02 Credits): price in USD cents and credits, usable 30 days. */
export const BOOST_PACKS: Record<BoostPackType, { display_name: string; amount_cents: number; credits: number }> = {
  starter: { display_name: "Starter boost pack", amount_cents: 1200, credits: 40 },
  plus: { display_name: "Plus boost pack", amount_cents: 3000, credits: 100 },
  max: { display_name: "Max boost pack", amount_cents: 6500, credits: 215 },
};

/** Roles that may start a checkout or buy a boost for the workspace owner's account. */
export const CHECKOUT_ROLES: Role[] = ["owner", "admin"];
/** Roles that may open the billing portal of the owner's customer. */
export const PORTAL_ROLES: Role[] = ["owner"];

/** The billing settings page of the frontend: where Stripe sends the browser back by default. */
const billingPage = () => `${Config.appUrl()}/settings/billing`;

/**
 * A return URL from the request, else the default. With CORS_ORIGINS set to named origins (not `*`), the URL's origin
 * must be one of them or APP_URL's, so the service cannot be used to bounce a paying user to any site.
 * @throws AppError VALIDATION_ERROR (422) naming the field otherwise.
 */
function returnUrl(field: string, given: string | undefined, fallback: string): string {
  if (!given) return fallback;
  const cors = Config.corsOrigins();
  if (cors.includes("*")) return given;
  const origin = new URL(given).origin;
  const allowed = new Set([new URL(Config.appUrl()).origin, ...cors.map((o) => o.replace(/\/+$/, ""))]);
  if (allowed.has(origin)) return given;
  throw Errors.validation([{ loc: ["body", field], msg: `The origin ${origin} is not one of this service's frontends (APP_URL, CORS_ORIGINS)`, type: "url_origin" }]);
}

/** The workspace's owner id, after checking the caller's membership and role. @throws AppError FORBIDDEN (403). */
async function ownerFor(userId: string, workspaceId: string, roles: Role[]): Promise<string> {
  await requireMember(userId, workspaceId, roles);
  const { data } = await db().entities.workspace.get({ id: workspaceId }).go({ consistent: true });
  if (!data) throw Errors.forbidden();
  return data.owner_id;
}

/**
 * The owner's Stripe customer id, created on first use: the Stripe call carries the idempotency key
 * `r2d-customer-<owner id>`, so concurrent first checkouts get one customer from Stripe, and the id is written only if
 * the account has none yet (the loser of a race reads the winner's).
 */
async function customerOf(stripe: Stripe, ownerId: string, account: BillingAccount): Promise<string> {
  if (account.stripe_customer_id) return account.stripe_customer_id;
  const owner = await Users.get(ownerId);
  const customer = await callStripe(() =>
    stripe.customers.create(
      { email: owner?.email, name: owner?.name || undefined, metadata: { user_id: ownerId } },
      { idempotencyKey: `r2d-customer-${ownerId}` },
    ),
  );
  try {
    await db().entities.billingAccount
      .patch({ user_id: ownerId })
      .set({ stripe_customer_id: customer.id })
      .where((attr, op) => op.notExists(attr.stripe_customer_id))
      .go();
    return customer.id;
  } catch (err) {
    if (!isConditionalFailure(err)) throw err;
    const { data } = await db().entities.billingAccount.get({ user_id: ownerId }).go({ consistent: true });
    if (!data?.stripe_customer_id) throw err;
    return data.stripe_customer_id;
  }
}

/**
 * A checkout's referral code, carried in the session's metadata for the payments webhook to credit its owner
 * (core/billing/sync.ts): it must be a user's code and not one of `self` (the paying owner and the caller).
 * @throws AppError VALIDATION_ERROR (422) on `referral_code` otherwise.
 */
async function referralCodeFor(code: string, self: string[]): Promise<string> {
  const { data } = await db().entities.referralCode.get({ code }).go();
  const problem = !data ? "is not a referral code of this service" : self.includes(data.user_id) ? "is your own; a referral must come from another user" : undefined;
  if (problem) throw Errors.validation([{ loc: ["body", "referral_code"], msg: `The referral code ${problem}`, type: "referral_code" }]);
  return code;
}

/** The session's hosted page, which Stripe always returns for hosted Checkout. */
function checkoutReply(session: Stripe.Checkout.Session) {
  if (!session.url) throw new AppError("SERVICE_UNAVAILABLE", "Stripe returned a Checkout Session without a URL");
  return { checkout_url: session.url, session_id: session.id };
}

/** Stripe subscription statuses that are still a subscription the customer pays or owes for. */
const LIVE_STRIPE_STATUSES = new Set<string>(["active", "trialing", "past_due", "unpaid", "paused"]);

/**
 * One subscription per customer (Stripe's practice; issue #19): a checkout while the owner's subscription is live
 * (active, trialing or past due, cancelling at the period's end included) would make them pay for two. Plan changes go
 * through the billing portal instead. Checked on the synced account first, then on Stripe itself (a checkout paid a
 * moment ago whose webhook has not arrived yet).
 * @throws AppError CONFLICT (409) with `portal` (the route to use instead) and the live `subscription_id`.
 */
async function requireNoLiveSubscription(stripe: Stripe, account: BillingAccount): Promise<void> {
  const conflict = (subscriptionId: string, status: string) =>
    new AppError(
      "CONFLICT",
      `This account already has a ${status} subscription (${subscriptionId}); change or cancel the plan in the billing portal (POST /api/billing/portal) instead of a second checkout`,
      { portal: "/api/billing/portal", subscription_id: subscriptionId },
    );
  if (account.stripe_subscription_id && account.status !== "cancelled") throw conflict(account.stripe_subscription_id, account.status);
  const customer = account.stripe_customer_id;
  if (!customer) return;
  const { data } = await callStripe(() => stripe.subscriptions.list({ customer, status: "all", limit: 20 }));
  const live = data.find((s) => LIVE_STRIPE_STATUSES.has(s.status));
  if (live) throw conflict(live.id, live.status);
}

/**
 * Expire the customer's subscription checkouts still open (a tab left on Stripe's page, another admin's checkout): a
 * session stays payable for 24 hours, and paying two would make two subscriptions, both billed. A session completed
 * meanwhile cannot be expired (Stripe answers 400): its subscription is then the live one that the next checkout's
 * `requireNoLiveSubscription` refuses.
 * @throws AppError SERVICE_UNAVAILABLE (503) when Stripe fails
 */
async function expireOpenCheckouts(stripe: Stripe, customer: string): Promise<void> {
  const { data } = await callStripe(() => stripe.checkout.sessions.list({ customer, status: "open", limit: 20 }));
  for (const session of data.filter((s) => s.mode === "subscription")) {
    try {
      await stripe.checkout.sessions.expire(session.id);
    } catch (err) {
      if ((err as { type?: string }).type !== "StripeInvalidRequestError") await callStripe(() => Promise.reject(err));
    }
  }
}

/**
 * `POST /api/billing/checkout`: a Stripe Checkout Session in `subscription` mode for the owner's customer at the
 * plan's price for the interval (`STRIPE_PRICE_<PLAN>_<INTERVAL>`). The session and its subscription carry metadata
 * user_id (the owner, whose account the subscription is), workspace_id, plan, interval, initiated_by (the caller) and,
 * when given, referral_code (another user's; its owner is credited when the checkout is paid, core/billing/sync.ts).
 * @throws AppError SERVICE_UNAVAILABLE (503) without STRIPE_SECRET_KEY or the price setting, or when Stripe fails;
 *   FORBIDDEN (403) for a non-member or a member who is not owner or admin; VALIDATION_ERROR (422) for a return URL
 *   on a foreign origin or a referral code that is unknown or the owner's or caller's own; CONFLICT (409, with
 *   `portal`) while the owner's subscription is live (`requireNoLiveSubscription`). The customer's subscription
 *   checkouts still open are expired first (`expireOpenCheckouts`): one payable checkout at a time.
 */
export async function startCheckout(userId: string, body: CheckoutBody): Promise<{ checkout_url: string; session_id: string }> {
  const stripe = requireStripe();
  const ownerId = await ownerFor(userId, body.workspace_id, CHECKOUT_ROLES);
  const price = Config.stripePriceId(body.plan, body.interval);
  if (!price) {
    const setting = stripePriceSetting(body.plan, body.interval);
    throw new AppError("SERVICE_UNAVAILABLE", `Billing is not configured: set ${setting}`, { setting });
  }
  const success_url = returnUrl("success_url", body.success_url, `${billingPage()}?checkout=success&session_id={CHECKOUT_SESSION_ID}`);
  const cancel_url = returnUrl("cancel_url", body.cancel_url, `${billingPage()}?checkout=cancelled`);
  const referral = body.referral_code ? await referralCodeFor(body.referral_code, [ownerId, userId]) : undefined;
  const account = await accountOf(ownerId);
  await requireNoLiveSubscription(stripe, account);
  const customer = await customerOf(stripe, ownerId, account);
  await expireOpenCheckouts(stripe, customer);
  const metadata = {
    user_id: ownerId, workspace_id: body.workspace_id, plan: body.plan, interval: body.interval, initiated_by: userId,
    ...(referral ? { referral_code: referral } : {}),
  };
  const session = await callStripe(() =>
    stripe.checkout.sessions.create({
      mode: "subscription",
      customer,
      client_reference_id: ownerId,
      line_items: [{ price, quantity: 1 }],
      success_url,
      cancel_url,
      metadata,
      subscription_data: { metadata },
    }),
  );
  return checkoutReply(session);
}

/**
 * `POST /api/billing/boost/checkout`: a one-time `payment` mode Checkout Session for a boost pack at the spec's price
 * (`price_data`, USD), for the owner's customer, with metadata user_id, workspace_id, pack_type, credits and
 * initiated_by (on the session and its payment intent).
 * @throws as `startCheckout`, without the price setting; SUBSCRIPTION_REQUIRED (402) when the owner's account has no
 *   active subscription (`requireActiveSubscription`).
 */
export async function startBoostCheckout(userId: string, body: BoostCheckoutBody): Promise<{ checkout_url: string; session_id: string }> {
  const stripe = requireStripe();
  const ownerId = await ownerFor(userId, body.workspace_id, CHECKOUT_ROLES);
  // Boost credits are spent by the operations that need an active subscription: none is sold to an account that
  // could not spend it (a trial that ended, a paid plan that lapsed).
  await requireActiveSubscription(body.workspace_id);
  const pack = BOOST_PACKS[body.pack_type];
  const success_url = returnUrl("success_url", body.success_url, `${billingPage()}?boost=success&session_id={CHECKOUT_SESSION_ID}`);
  const cancel_url = returnUrl("cancel_url", body.cancel_url, `${billingPage()}?boost=cancelled`);
  const customer = await customerOf(stripe, ownerId, await accountOf(ownerId));
  const metadata = {
    user_id: ownerId, workspace_id: body.workspace_id, pack_type: body.pack_type, credits: String(pack.credits), initiated_by: userId,
  };
  const session = await callStripe(() =>
    stripe.checkout.sessions.create({
      mode: "payment",
      customer,
      client_reference_id: ownerId,
      line_items: [{
        quantity: 1,
        price_data: {
          currency: "usd",
          unit_amount: pack.amount_cents,
          product_data: { name: pack.display_name, description: `${pack.credits} credits, usable for 30 days` },
        },
      }],
      success_url,
      cancel_url,
      metadata,
      payment_intent_data: { metadata },
    }),
  );
  return checkoutReply(session);
}

/**
 * `POST /api/billing/portal`: a Stripe billing portal session for the owner's customer.
 * @throws AppError SERVICE_UNAVAILABLE (503) without STRIPE_SECRET_KEY or when Stripe fails; FORBIDDEN (403) unless
 *   the caller is the workspace's owner; CONFLICT (409) when the account has no Stripe customer yet (no checkout was
 *   ever started); VALIDATION_ERROR (422) for a return URL on a foreign origin.
 */
export async function openPortal(userId: string, body: PortalBody): Promise<{ portal_url: string }> {
  const stripe = requireStripe();
  const ownerId = await ownerFor(userId, body.workspace_id, PORTAL_ROLES);
  const return_url = returnUrl("return_url", body.return_url, billingPage());
  const account = await accountOf(ownerId);
  if (!account.stripe_customer_id) {
    throw new AppError("CONFLICT", "This account has no Stripe customer yet: start a checkout (POST /api/billing/checkout) first");
  }
  const customer = account.stripe_customer_id;
  const session = await callStripe(() => stripe.billingPortal.sessions.create({ customer, return_url }));
  return { portal_url: session.url };
}
