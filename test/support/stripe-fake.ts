/**
 * A fake of the Stripe API for the real `stripe` SDK (DESIGN.md 6.3): a local HTTP server that `STRIPE_API_BASE`
 * points the SDK at. It records every request (method, path, headers, the form-encoded body as URLSearchParams) and
 * answers the three calls the billing routes make with bodies typed by the SDK's own types (`Stripe.Customer`,
 * `Stripe.Checkout.Session`, `Stripe.BillingPortal.Session`), so a field the SDK's types require cannot be left out.
 * `POST /v1/customers` honours `Idempotency-Key` as Stripe does (the same key returns the same customer). Anything
 * else answers Stripe's 404 error envelope; `failNext` makes the next request answer a Stripe error.
 */
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
  /** Answer the next request with this HTTP status and Stripe error type. */
  failNext(status: number, type: "api_error" | "invalid_request_error" | "authentication_error", message?: string): void;
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
  let seq = 0;
  let failure: { status: number; type: string; message: string } | undefined;
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const path = new URL(req.url ?? "/", "http://fake").pathname;
      const form = new URLSearchParams(Buffer.concat(chunks).toString("utf8"));
      requests.push({ method: req.method ?? "", path, headers: req.headers, form });
      const send = (status: number, body: unknown) => {
        res.writeHead(status, { "content-type": "application/json", "request-id": `req_fake_${++seq}` });
        res.end(JSON.stringify(body));
      };
      if (failure) {
        const f = failure;
        failure = undefined;
        return send(f.status, { error: { type: f.type, message: f.message } });
      }
      const route = `${req.method} ${path}`;
      if (route === "POST /v1/customers") {
        const key = String(req.headers["idempotency-key"] ?? "");
        const existing = key ? customersByKey.get(key) : undefined;
        const customer = existing ?? customerBody(`cus_fake${++seq}`, form);
        if (key) customersByKey.set(key, customer);
        return send(200, customer);
      }
      if (route === "POST /v1/checkout/sessions") return send(200, checkoutSessionBody(`cs_test_fake${++seq}`, form));
      if (route === "POST /v1/billing_portal/sessions") return send(200, portalSessionBody(`bps_fake${++seq}`, form));
      return send(404, { error: { type: "invalid_request_error", message: `Unrecognized request URL (${req.method}: ${path})` } });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    base: `http://127.0.0.1:${port}`,
    requests,
    to: (path) => requests.filter((r) => r.path === path),
    failNext: (status, type, message = "Injected failure") => {
      failure = { status, type, message };
    },
    reset: () => {
      requests.length = 0;
      customersByKey.clear();
      failure = undefined;
    },
    close: () => new Promise<void>((resolve, reject) => server.close((err) => (err ? reject(err) : resolve()))),
  };
}
