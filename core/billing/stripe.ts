/**
 * The Stripe client (DESIGN.md 6.3): the official `stripe` SDK on its fetch HTTP client, one per process, built from
 * Config (`STRIPE_SECRET_KEY`; `STRIPE_API_BASE` points it elsewhere, for tests and local fakes). Without a key the
 * billing routes that need Stripe answer 503 naming the setting, before any other work (`requireStripe`).
 */
import Stripe from "stripe";
import { Config } from "../config";
import { AppError } from "../error";

let cached: { key: string; base: string | undefined; client: Stripe } | undefined;

/** Request timeout of a Stripe call, ms: well inside API Gateway's 30 s, with room for one retry. */
const STRIPE_TIMEOUT_MS = 10_000;

/** SDK options for `STRIPE_API_BASE` (protocol, host, port). @throws AppError SERVICE_UNAVAILABLE when it is not an http(s) URL. */
function baseOptions(base: string | undefined): Pick<Stripe.StripeConfig, "host" | "port" | "protocol"> {
  if (!base) return {};
  let url: URL;
  try {
    url = new URL(base);
  } catch {
    throw new AppError("SERVICE_UNAVAILABLE", `Billing is misconfigured: STRIPE_API_BASE must be an http(s) URL, not "${base}"`);
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    throw new AppError("SERVICE_UNAVAILABLE", `Billing is misconfigured: STRIPE_API_BASE must be an http(s) URL, not "${base}"`);
  }
  const protocol = url.protocol === "http:" ? "http" : "https";
  return { protocol, host: url.hostname, port: url.port || (protocol === "http" ? 80 : 443) };
}

/**
 * The process's Stripe client; rebuilt only when the key or the API base changes (tests switch them).
 * @throws AppError SERVICE_UNAVAILABLE (503) "Billing is not configured: set STRIPE_SECRET_KEY" without a key.
 */
export function requireStripe(): Stripe {
  const key = Config.stripeSecretKey();
  if (!key) throw new AppError("SERVICE_UNAVAILABLE", "Billing is not configured: set STRIPE_SECRET_KEY", { setting: "STRIPE_SECRET_KEY" });
  const base = Config.stripeApiBase();
  if (cached && cached.key === key && cached.base === base) return cached.client;
  const client = new Stripe(key, {
    apiVersion: Stripe.API_VERSION,
    httpClient: Stripe.createFetchHttpClient(),
    maxNetworkRetries: 1,
    timeout: STRIPE_TIMEOUT_MS,
    telemetry: false,
    ...baseOptions(base),
  });
  cached = { key, base, client };
  return client;
}

/**
 * A Stripe failure as our error: the provider failing or refusing (network, rate limit, server error, a bad key or a
 * price id it does not know) is 503 SERVICE_UNAVAILABLE with Stripe's error type and request id; anything else is
 * rethrown as is (a defect, 500).
 */
export function stripeFailure(err: unknown): never {
  if (err instanceof Stripe.errors.StripeError) {
    const detail =
      err.type === "StripeAuthenticationError" || err.type === "StripePermissionError"
        ? "Stripe refused STRIPE_SECRET_KEY; check the setting"
        : err.type === "StripeInvalidRequestError"
          ? `Stripe refused the request (${err.message}); check the billing settings`
          : "The payment provider is unavailable; try again shortly";
    throw new AppError("SERVICE_UNAVAILABLE", detail, { stripe_error: err.type, stripe_request_id: err.requestId ?? null });
  }
  throw err;
}

/** Run a Stripe call, mapping its failures (`stripeFailure`). */
export async function callStripe<T>(fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    return stripeFailure(err);
  }
}
