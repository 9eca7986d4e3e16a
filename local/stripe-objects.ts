/**
 * Stripe-shaped objects, typed by the `stripe` SDK's own types (so no field the SDK declares can be left out), for
 * the local Stripe fake of the tests (test/support/stripe-fake.ts) and the simulated upgrade (`npm run
 * billing:simulate`, local/simulate-upgrade.ts). Times are epoch seconds, as in Stripe's API.
 */
import { randomBytes } from "node:crypto";
import Stripe from "stripe";

/** A Stripe-like id with a prefix ("sub", "in", "cs_test", "evt"...). */
export const stripeId = (prefix: string): string => `${prefix}_${randomBytes(12).toString("hex")}`;

const nowSec = () => Math.floor(Date.now() / 1000);

const list = <T>(data: T[], url: string): Stripe.ApiList<T> => ({ object: "list", data, has_more: false, url });

export interface PriceInput {
  id: string;
  interval: "month" | "year";
  /** USD cents. */
  amount: number;
  metadata?: Stripe.Metadata;
}

export function priceObject(p: PriceInput): Stripe.Price {
  return {
    id: p.id,
    object: "price",
    active: true,
    billing_scheme: "per_unit",
    created: nowSec(),
    currency: "usd",
    custom_unit_amount: null,
    livemode: false,
    lookup_key: null,
    metadata: p.metadata ?? {},
    nickname: null,
    product: "prod_r2d_plan",
    recurring: { interval: p.interval, interval_count: 1, meter: null, trial_period_days: null, usage_type: "licensed" },
    tax_behavior: "unspecified",
    tiers_mode: null,
    transform_quantity: null,
    type: "recurring",
    unit_amount: p.amount,
    unit_amount_decimal: null,
  };
}

function planObject(p: PriceInput): Stripe.Plan {
  return {
    id: p.id,
    object: "plan",
    active: true,
    amount: p.amount,
    amount_decimal: null,
    billing_scheme: "per_unit",
    created: nowSec(),
    currency: "usd",
    interval: p.interval,
    interval_count: 1,
    livemode: false,
    metadata: p.metadata ?? {},
    meter: null,
    nickname: null,
    product: "prod_r2d_plan",
    tiers_mode: null,
    transform_usage: null,
    trial_period_days: null,
    usage_type: "licensed",
  };
}

export interface InvoiceInput {
  id?: string;
  customer: string;
  subscription: string;
  status: Stripe.Invoice.Status;
  price: PriceInput;
  periodStart: number;
  periodEnd: number;
  billingReason?: Stripe.Invoice.BillingReason;
  /** Unix seconds the invoice was created (default: its period's start, as a renewal's). */
  created?: number;
  /** The subscription's metadata at invoicing (Stripe copies it to `parent.subscription_details.metadata`). */
  subscriptionMetadata?: Stripe.Metadata;
}

/** A subscription invoice for one period of one price. */
export function invoiceObject(i: InvoiceInput): Stripe.Invoice {
  const id = i.id ?? stripeId("in");
  const paid = i.status === "paid";
  const line: Stripe.InvoiceLineItem = {
    id: stripeId("il"),
    object: "line_item",
    amount: i.price.amount,
    currency: "usd",
    description: "1 × plan",
    discount_amounts: [],
    discountable: true,
    discounts: [],
    invoice: id,
    livemode: false,
    metadata: {},
    parent: {
      type: "subscription_item_details",
      invoice_item_details: null,
      subscription_item_details: { invoice_item: null, proration: false, proration_details: { credited_items: null }, subscription: i.subscription, subscription_item: stripeId("si") },
    },
    period: { start: i.periodStart, end: i.periodEnd },
    pretax_credit_amounts: [],
    pricing: { type: "price_details", price_details: { price: i.price.id, product: "prod_r2d_plan" }, unit_amount_decimal: null },
    quantity: 1,
    quantity_decimal: null,
    subscription: i.subscription,
    subtotal: i.price.amount,
    taxes: [],
  };
  return {
    id,
    object: "invoice",
    account_country: "US",
    account_name: "Research to delivery",
    account_tax_ids: null,
    amount_due: i.price.amount,
    amount_overpaid: 0,
    amount_paid: paid ? i.price.amount : 0,
    amount_remaining: paid ? 0 : i.price.amount,
    amount_shipping: 0,
    application: null,
    attempt_count: 1,
    attempted: true,
    automatic_tax: { disabled_reason: null, enabled: false, liability: null, provider: null, status: null },
    automatically_finalizes_at: null,
    billing_reason: i.billingReason ?? "subscription_create",
    collection_method: "charge_automatically",
    created: i.created ?? i.periodStart,
    currency: "usd",
    custom_fields: null,
    customer: i.customer,
    customer_account: null,
    customer_address: null,
    customer_email: null,
    customer_name: null,
    customer_phone: null,
    customer_shipping: null,
    customer_tax_exempt: "none",
    default_payment_method: null,
    default_source: null,
    default_tax_rates: [],
    description: null,
    discounts: [],
    due_date: null,
    effective_at: i.periodStart,
    ending_balance: 0,
    footer: null,
    from_invoice: null,
    issuer: { type: "self" },
    last_finalization_error: null,
    latest_revision: null,
    lines: list([line], `/v1/invoices/${id}/lines`),
    livemode: false,
    metadata: {},
    next_payment_attempt: null,
    number: null,
    on_behalf_of: null,
    parent: {
      type: "subscription_details",
      quote_details: null,
      subscription_details: { metadata: i.subscriptionMetadata ?? {}, subscription: i.subscription },
    },
    payment_settings: { default_mandate: null, payment_method_options: null, payment_method_types: null },
    period_end: i.periodStart,
    period_start: i.periodStart,
    post_payment_credit_notes_amount: 0,
    pre_payment_credit_notes_amount: 0,
    receipt_number: null,
    rendering: null,
    shipping_cost: null,
    shipping_details: null,
    starting_balance: 0,
    statement_descriptor: null,
    status: i.status,
    status_transitions: { finalized_at: i.periodStart, marked_uncollectible_at: null, paid_at: paid ? i.periodStart : null, voided_at: null },
    subtotal: i.price.amount,
    subtotal_excluding_tax: i.price.amount,
    test_clock: null,
    total: i.price.amount,
    total_discount_amounts: [],
    total_excluding_tax: i.price.amount,
    total_pretax_credit_amounts: [],
    total_taxes: [],
    webhooks_delivered_at: null,
  };
}

export interface SubscriptionInput {
  id?: string;
  customer: string;
  status: Stripe.Subscription.Status;
  price: PriceInput;
  periodStart: number;
  periodEnd: number;
  cancelAtPeriodEnd?: boolean;
  metadata?: Stripe.Metadata;
  /** The latest invoice: an id, an expanded invoice, or none. */
  latestInvoice?: string | Stripe.Invoice | null;
  created?: number;
}

export function subscriptionObject(s: SubscriptionInput): Stripe.Subscription {
  const id = s.id ?? stripeId("sub");
  const created = s.created ?? s.periodStart;
  const ended = s.status === "canceled" ? nowSec() : null;
  const item: Stripe.SubscriptionItem = {
    id: stripeId("si"),
    object: "subscription_item",
    billing_thresholds: null,
    created,
    current_period_end: s.periodEnd,
    current_period_start: s.periodStart,
    current_trial: null,
    discounts: [],
    metadata: {},
    plan: planObject(s.price),
    price: priceObject(s.price),
    quantity: 1,
    subscription: id,
    tax_rates: [],
  };
  return {
    id,
    object: "subscription",
    application: null,
    application_fee_percent: null,
    automatic_tax: { disabled_reason: null, enabled: false, liability: null },
    billing_cycle_anchor: s.periodStart,
    billing_cycle_anchor_config: null,
    billing_mode: { flexible: null, type: "classic" },
    billing_schedules: [],
    billing_thresholds: null,
    cancel_at: s.cancelAtPeriodEnd ? s.periodEnd : null,
    cancel_at_period_end: s.cancelAtPeriodEnd ?? false,
    canceled_at: ended,
    cancellation_details: null,
    collection_method: "charge_automatically",
    created,
    currency: "usd",
    customer: s.customer,
    customer_account: null,
    days_until_due: null,
    default_payment_method: null,
    default_source: null,
    description: null,
    discounts: [],
    ended_at: ended,
    invoice_settings: { account_tax_ids: null, custom_fields: null, description: null, footer: null, issuer: { type: "self" } },
    items: list([item], `/v1/subscription_items?subscription=${id}`),
    latest_invoice: s.latestInvoice ?? null,
    livemode: false,
    managed_payments: null,
    metadata: s.metadata ?? {},
    next_pending_invoice_item_invoice: null,
    on_behalf_of: null,
    pause_collection: null,
    payment_settings: null,
    pending_invoice_item_interval: null,
    pending_setup_intent: null,
    pending_update: null,
    schedule: null,
    start_date: created,
    status: s.status,
    test_clock: null,
    transfer_data: null,
    trial_end: null,
    trial_settings: null,
    trial_start: null,
  };
}

/**
 * An event as Stripe delivers it (a snapshot of `object` at `created`). The SDK types events as a union keyed by
 * `type`; one generic builder has to assert it.
 */
export function eventObject(type: string, object: { object: string }, opts: { id?: string; created?: number } = {}): Stripe.Event {
  return {
    id: opts.id ?? stripeId("evt"),
    object: "event",
    api_version: Stripe.API_VERSION,
    created: opts.created ?? nowSec(),
    data: { object },
    livemode: false,
    pending_webhooks: 1,
    request: { id: null, idempotency_key: null },
    type,
  } as unknown as Stripe.Event;
}
