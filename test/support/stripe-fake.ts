/**
 * A fake of the Stripe API for the real `stripe` SDK (DESIGN.md 6.3): a local HTTP server that `STRIPE_API_BASE`
 * points the SDK at. It records every request (method, path, headers, the form-encoded body as URLSearchParams; for
 * GETs the query string) and answers the calls the billing routes and the payments consumer make with bodies typed
 * by the SDK's own types (`Stripe.Customer`, `Stripe.Checkout.Session`, `Stripe.BillingPortal.Session`,
 * `Stripe.Subscription`, `Stripe.Invoice`; builders in local/stripe-objects.ts), so a field the SDK's types require
 * cannot be left out. `POST /v1/customers` honours `Idempotency-Key` as Stripe does (the same key returns the same
 * customer). The read side is a store the test sets to "Stripe's current state": `putSubscription`, `putInvoice`,
 * `putCheckoutSession`; `GET /v1/subscriptions?customer=` lists a customer's subscriptions and expands
 * `latest_invoice` from the stored invoices when asked (`expand[]=data.latest_invoice`), as Stripe does. Anything
 * else answers Stripe's 404 error envelope; `failNext` makes the next request answer a Stripe error.
 */
import { randomBytes } from "node:crypto";
import { createServer, type IncomingMessage, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import type Stripe from "stripe";

export interface StripeRequest {
  method: string;
  path: string;
  headers: IncomingMessage["headers"];
  form: URLSearchParams;
}

export interface StripeFake {
  /** `http://127.0.0.1:<port>`: the value for STRIPE_API_BASE. */
  base: string;
  requests: StripeRequest[];
  /** The recorded requests to one path (`/v1/checkout/sessions`). */
  to(path: string): StripeRequest[];
  /** The recorded POSTs to one path (`/v1/checkout/sessions`: the sessions created, not the listings). */
  posted(path: string): StripeRequest[];
  /** Make this subscription (its `latest_invoice` as an id or an invoice) part of Stripe's state, replacing one of its id. */
  putSubscription(sub: Stripe.Subscription): void;
  putInvoice(invoice: Stripe.Invoice): void;
  putCheckoutSession(session: Stripe.Checkout.Session): void;
  /** Make this charge part of Stripe's state (`GET /v1/charges/:id`). */
  putCharge(charge: Stripe.Charge): void;
  /** A completed Checkout Session (status complete) with these fields, stored and returned. */
  completedSession(fields: Partial<Stripe.Checkout.Session> & Pick<Stripe.Checkout.Session, "mode" | "customer" | "metadata">): Stripe.Checkout.Session;
  /** Answer the next request (the next `times` requests) with this HTTP status and Stripe error type. */
  failNext(status: number, type: "api_error" | "invalid_request_error" | "authentication_error", message?: string, times?: number): void;
  reset(): void;
  close(): Promise<void>;
}

const now = () => Math.floor(Date.now() / 1000);

const metadataOf = (form: URLSearchParams): Stripe.Metadata =>
  Object.fromEntries([...form].flatMap(([k, v]) => {
    const m = /^metadata\[(.+)\]$/.exec(k);
    return m ? [[m[1]!, v]] : [];
  }));

function customerBody(id: string, form: URLSearchParams): Stripe.Customer {
  return {
    id,
    object: "customer",
    balance: 0,
    created: now(),
    default_source: null,
    description: null,
    email: form.get("email"),
    invoice_settings: { custom_fields: null, default_payment_method: null, footer: null, rendering_options: null },
    livemode: false,
    metadata: metadataOf(form),
    name: form.get("name"),
    shipping: null,
  };
}

function checkoutSessionBody(id: string, form: URLSearchParams): Stripe.Checkout.Session {
  const mode = form.get("mode") as Stripe.Checkout.Session.Mode;
  return {
    id,
    object: "checkout.session",
    adaptive_pricing: null,
    after_expiration: null,
    allow_promotion_codes: null,
    allowed_payment_method_types: null,
    amount_subtotal: null,
    amount_total: null,
    automatic_tax: { enabled: false, liability: null, provider: null, status: null },
    billing_address_collection: null,
    cancel_url: form.get("cancel_url"),
    client_reference_id: form.get("client_reference_id"),
    client_secret: null,
    collected_information: null,
    consent: null,
    consent_collection: null,
    created: now(),
    currency: "usd",
    currency_conversion: null,
    custom_fields: [],
    custom_text: { after_submit: null, shipping_address: null, submit: null, terms_of_service_acceptance: null },
    customer: form.get("customer"),
    customer_account: null,
    customer_creation: null,
    customer_details: null,
    customer_email: null,
    discounts: null,
    expires_at: now() + 24 * 3600,
    integration_identifier: null,
    invoice: null,
    invoice_creation: null,
    livemode: false,
    locale: null,
    managed_payments: null,
    metadata: metadataOf(form),
    mode,
    origin_context: null,
    payment_intent: null,
    payment_link: null,
    payment_method_collection: mode === "subscription" ? "always" : null,
    payment_method_configuration_details: null,
    payment_method_options: null,
    payment_method_types: ["card"],
    payment_status: "unpaid",
    permissions: null,
    recovered_from: null,
    saved_payment_method_options: null,
    setup_intent: null,
    shipping_address_collection: null,
    shipping_cost: null,
    shipping_options: [],
    status: "open",
    submit_type: null,
    subscription: null,
    success_url: form.get("success_url"),
    total_details: null,
    ui_mode: "hosted",
    url: `https://checkout.stripe.test/c/pay/${id}`,
    wallet_options: null,
  };
}

function portalSessionBody(id: string, form: URLSearchParams): Stripe.BillingPortal.Session {
  return {
    id,
    object: "billing_portal.session",
    configuration: "bpc_fake",
    created: now(),
    customer: form.get("customer") ?? "",
    customer_account: null,
    flow: null,
    livemode: false,
    locale: null,
    on_behalf_of: null,
    return_url: form.get("return_url"),
    url: `https://billing.stripe.test/p/session/${id}`,
  };
}

/** Start the fake on a free local port. */
export async function startStripeFake(): Promise<StripeFake> {
  const requests: StripeRequest[] = [];
  const customersByKey = new Map<string, Stripe.Customer>();
  const customers = new Map<string, Stripe.Customer>();
  const subscriptions = new Map<string, Stripe.Subscription>();
  const invoices = new Map<string, Stripe.Invoice>();
  const sessions = new Map<string, Stripe.Checkout.Session>();
  const charges = new Map<string, Stripe.Charge>();
  const idOf = (ref: string | { id: string } | null) => (typeof ref === "string" ? ref : ref?.id);
  /** A subscription as the API returns it: `latest_invoice` an id, or the stored invoice when expanded. */
  const asReturned = (sub: Stripe.Subscription, expand: boolean): Stripe.Subscription => {
    const invoiceId = idOf(sub.latest_invoice);
    return { ...sub, latest_invoice: invoiceId ? (expand ? (invoices.get(invoiceId) ?? invoiceId) : invoiceId) : null };
  };
  let seq = 0;
  // Ids are unique across fakes: every test file's fake writes into the one shared table, and a customer id two files
  // both issued ("cus_fake1") made a webhook sync the other file's account (byStripeCustomer found it first).
  const run = randomBytes(4).toString("hex");
  let failure: { status: number; type: string; message: string; times: number } | undefined;
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const url = new URL(req.url ?? "/", "http://fake");
      const path = url.pathname;
      const form = req.method === "GET" ? url.searchParams : new URLSearchParams(Buffer.concat(chunks).toString("utf8"));
      requests.push({ method: req.method ?? "", path, headers: req.headers, form });
      const send = (status: number, body: unknown) => {
        res.writeHead(status, { "content-type": "application/json", "request-id": `req_fake_${++seq}` });
        res.end(JSON.stringify(body));
      };
      if (failure) {
        const f = failure;
        if (--failure.times <= 0) failure = undefined;
        return send(f.status, { error: { type: f.type, message: f.message } });
      }
      const route = `${req.method} ${path}`;
      if (route === "POST /v1/customers") {
        const key = String(req.headers["idempotency-key"] ?? "");
        const existing = key ? customersByKey.get(key) : undefined;
        const customer = existing ?? customerBody(`cus_fake${run}${++seq}`, form);
        if (key) customersByKey.set(key, customer);
        customers.set(customer.id, customer);
        return send(200, customer);
      }
      const notFound = (what: string, id: string) => send(404, { error: { type: "invalid_request_error", code: "resource_missing", message: `No such ${what}: '${id}'` } });
      const [, , kind, id, extra] = path.split("/");
      if (req.method === "GET" && path === "/v1/subscriptions") {
        const expand = [...form].some(([k, v]) => k.startsWith("expand[") && v === "data.latest_invoice");
        const customer = form.get("customer");
        const data = [...subscriptions.values()]
          .filter((sub) => !customer || idOf(sub.customer) === customer)
          .sort((a, b) => b.created - a.created)
          .map((sub) => asReturned(sub, expand));
        const list: Stripe.ApiList<Stripe.Subscription> = { object: "list", data, has_more: false, url: "/v1/subscriptions" };
        return send(200, list);
      }
      if (req.method === "GET" && kind === "subscriptions" && id && !extra) {
        const sub = subscriptions.get(id);
        return sub ? send(200, asReturned(sub, [...form].some(([k, v]) => k.startsWith("expand[") && v === "latest_invoice"))) : notFound("subscription", id);
      }
      if (req.method === "GET" && kind === "invoices" && id && !extra) return invoices.has(id) ? send(200, invoices.get(id)) : notFound("invoice", id);
      if (req.method === "GET" && kind === "customers" && id && !extra) return customers.has(id) ? send(200, customers.get(id)) : notFound("customer", id);
      if (req.method === "GET" && kind === "charges" && id && !extra) return charges.has(id) ? send(200, charges.get(id)) : notFound("charge", id);
      if (req.method === "GET" && path === "/v1/checkout/sessions") {
        // Stripe's list filtered by payment_intent (the session that created it), as the refund handler asks.
        const pi = form.get("payment_intent");
        const customer = form.get("customer");
        const status = form.get("status");
        const data = [...sessions.values()].filter(
          (x) => (!pi || idOf(x.payment_intent as string | { id: string } | null) === pi) && (!customer || idOf(x.customer as string | { id: string } | null) === customer) && (!status || x.status === status),
        );
        const list: Stripe.ApiList<Stripe.Checkout.Session> = { object: "list", data, has_more: false, url: "/v1/checkout/sessions" };
        return send(200, list);
      }
      if (req.method === "GET" && path.startsWith("/v1/checkout/sessions/")) {
        const sessionId = path.slice("/v1/checkout/sessions/".length);
        return sessions.has(sessionId) ? send(200, sessions.get(sessionId)) : notFound("checkout.session", sessionId);
      }
      if (route === "POST /v1/checkout/sessions") {
        // Kept, open, as Stripe keeps a session until it completes or expires (24 h).
        const session = checkoutSessionBody(`cs_test_fake${run}${++seq}`, form);
        sessions.set(session.id, session);
        return send(200, session);
      }
      if (req.method === "POST" && kind === "checkout" && extra === "sessions" && path.endsWith("/expire")) {
        // POST /v1/checkout/sessions/{id}/expire: only an open session can be expired (Stripe answers 400 otherwise).
        const sessionId = path.split("/")[4]!;
        const session = sessions.get(sessionId);
        if (!session) return notFound("checkout.session", sessionId);
        if (session.status !== "open") return send(400, { error: { type: "invalid_request_error", message: "Only Checkout Sessions with a status of open can be expired." } });
        const expired = { ...session, status: "expired" as const, url: null };
        sessions.set(sessionId, expired);
        return send(200, expired);
      }
      if (route === "POST /v1/billing_portal/sessions") return send(200, portalSessionBody(`bps_fake${run}${++seq}`, form));
      return send(404, { error: { type: "invalid_request_error", message: `Unrecognized request URL (${req.method}: ${path})` } });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    base: `http://127.0.0.1:${port}`,
    requests,
    to: (path) => requests.filter((r) => r.path === path),
    posted: (path) => requests.filter((r) => r.path === path && r.method === "POST"),
    putSubscription: (sub) => {
      subscriptions.set(sub.id, { ...sub, latest_invoice: idOf(sub.latest_invoice) ?? null });
      if (sub.latest_invoice && typeof sub.latest_invoice === "object") invoices.set(sub.latest_invoice.id, sub.latest_invoice);
    },
    putInvoice: (invoice) => {
      invoices.set(invoice.id, invoice);
    },
    putCheckoutSession: (session) => {
      sessions.set(session.id, session);
    },
    putCharge: (charge) => {
      charges.set(charge.id, charge);
    },
    completedSession: (fields) => {
      const id = fields.id ?? `cs_test_fake${run}${++seq}`;
      const session: Stripe.Checkout.Session = {
        ...checkoutSessionBody(id, new URLSearchParams({ mode: fields.mode })),
        status: "complete",
        payment_status: "paid",
        url: null,
        ...fields,
        id,
      };
      sessions.set(id, session);
      return session;
    },
    failNext: (status, type, message = "Injected failure", times = 1) => {
      failure = { status, type, message, times };
    },
    reset: () => {
      requests.length = 0;
      customersByKey.clear();
      customers.clear();
      subscriptions.clear();
      invoices.clear();
      sessions.clear();
      charges.clear();
      failure = undefined;
    },
    close: () => new Promise<void>((resolve, reject) => server.close((err) => (err ? reject(err) : resolve()))),
  };
}

/** A card charge of `amount` cents for a payment intent, refunded by `refunded` cents (Stripe.Charge, the SDK's type). */
export function chargeObject(c: { id?: string; customer: string; paymentIntent: string; amount: number; refunded: number }): Stripe.Charge {
  return {
    id: c.id ?? `ch_fake_${randomBytes(6).toString("hex")}`,
    object: "charge",
    amount: c.amount,
    amount_captured: c.amount,
    amount_refunded: c.refunded,
    application: null,
    application_fee: null,
    application_fee_amount: null,
    balance_transaction: null,
    billing_details: { address: null, email: null, name: null, phone: null, tax_id: null },
    calculated_statement_descriptor: null,
    captured: true,
    created: now(),
    currency: "usd",
    customer: c.customer,
    description: null,
    disputed: false,
    failure_balance_transaction: null,
    failure_code: null,
    failure_message: null,
    fraud_details: null,
    livemode: false,
    metadata: {},
    on_behalf_of: null,
    outcome: null,
    paid: true,
    payment_intent: c.paymentIntent,
    payment_method: null,
    payment_method_details: null,
    presentment_details: undefined,
    receipt_email: null,
    receipt_number: null,
    receipt_url: null,
    refunded: c.refunded >= c.amount,
    review: null,
    shipping: null,
    source: null,
    source_transfer: null,
    statement_descriptor: null,
    statement_descriptor_suffix: null,
    status: "succeeded",
    transfer_data: null,
    transfer_group: null,
  };
}
