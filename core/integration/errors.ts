import { AppError } from "../error";
import { PROVIDERS } from "./providers";
import type { IntegrationKind } from "./schema";

/** What went wrong at a provider, in the ports' terms (DESIGN.md 6.4), whatever the SDK. */
export type ProviderFailure = "rate_limited" | "auth_expired" | "forbidden" | "not_found" | "too_large" | "validation" | "unknown";

/**
 * A provider call failed. Adapters translate their SDK's errors into this; the HTTP layer sees the AppError of
 * `toAppError`, agent tools the `{success: false, error, error_code}` of spec 02.
 */
export class ProviderError extends Error {
  override name = "ProviderError";
  constructor(
    readonly failure: ProviderFailure,
    message: string,
    /** rate_limited: seconds until the provider accepts again (its retry-after or rate-limit reset). */
    readonly retryAfterSeconds?: number,
  ) {
    super(message);
  }
}

/** Error codes of a connection that could not be made or was cut (Node's sockets and DNS, undici under fetch). */
const TRANSPORT_CODES = new Set([
  "ECONNRESET", "ECONNREFUSED", "ECONNABORTED", "ETIMEDOUT", "EPIPE", "ENOTFOUND", "EAI_AGAIN", "ENETUNREACH", "EHOSTUNREACH",
  "UND_ERR_SOCKET", "UND_ERR_CLOSED", "UND_ERR_CONNECT_TIMEOUT", "UND_ERR_HEADERS_TIMEOUT", "UND_ERR_BODY_TIMEOUT",
]);

/**
 * Whether `err` (or an error it was caused by) is a request that got no whole answer: fetch's network-error
 * `TypeError` ("fetch failed", "Failed to fetch", "terminated" when the body is cut off), node-fetch's `FetchError`
 * of type `system` or a timeout (gaxios, under Google's SDK), an abort or timeout, or a socket or DNS error code. SDKs
 * that pass such failures through untouched (Linear's, Google's) would otherwise answer a 500.
 */
export function isTransportFailure(err: unknown): boolean {
  for (const e of causeChain(err)) {
    const { name, code, message, type } = e as { name?: unknown; code?: unknown; message?: unknown; type?: unknown };
    if (name === "AbortError" || name === "TimeoutError") return true;
    if (name === "FetchError" && (type === "system" || (typeof type === "string" && type.endsWith("-timeout")))) return true;
    if (typeof code === "string" && TRANSPORT_CODES.has(code)) return true;
    if (e instanceof TypeError && typeof message === "string" && /^(fetch failed|failed to fetch|terminated)$/i.test(message)) return true;
  }
  return false;
}

/** `err` and the errors it was caused by (`cause`), at most four deep. */
function* causeChain(err: unknown): Generator<object> {
  let e: unknown = err;
  for (let depth = 0; depth < 4 && e && typeof e === "object"; depth++, e = (e as { cause?: unknown }).cause) yield e;
}

/**
 * The port's error for a request that got no answer ({@link isTransportFailure}): `unknown` (503 over HTTP), its
 * message `said`, then the failure and, when there is one, its socket or DNS code (ECONNRESET, ...) in parentheses.
 */
export function noAnswer(err: unknown, said = "no answer"): ProviderError {
  let code: string | undefined;
  for (const e of causeChain(err)) {
    const c = (e as { code?: unknown }).code;
    if (typeof c === "string" && TRANSPORT_CODES.has(c)) {
      code = c;
      break;
    }
  }
  return new ProviderError("unknown", `${said} (${(err as Error).message}${code ? `, ${code}` : ""})`);
}

/**
 * The 424 of a refused grant (DESIGN.md section 5): CODEHOST_TOKEN_ERROR, PLANNER_TOKEN_ERROR, ... with the hint to
 * reconnect (`reconnect`: the connect route).
 */
export const tokenError = (kind: IntegrationKind, why = "the authorization expired or was revoked") =>
  new AppError(PROVIDERS[kind].tokenErrorCode, `${PROVIDERS[kind].name} refused the stored grant (${why}); reconnect the integration`, {
    kind,
    reconnect: `POST /api/integrations/${kind}/connect`,
  });

/** The HTTP answer of a provider failure (rate limits keep the provider's wait as Retry-After). */
export function toAppError(kind: IntegrationKind, err: unknown): unknown {
  if (!(err instanceof ProviderError)) return err;
  const name = PROVIDERS[kind].name;
  switch (err.failure) {
    case "rate_limited":
      return new AppError("RATE_LIMITED", `${name} is rate limiting this integration; retry after ${err.retryAfterSeconds ?? 60} s`, {
        retry_after_seconds: err.retryAfterSeconds ?? 60,
      });
    case "auth_expired":
      return tokenError(kind);
    case "forbidden":
      return new AppError("FORBIDDEN", `${name} refused the request: ${err.message}`);
    case "not_found":
      return new AppError("NOT_FOUND", `${name}: ${err.message}`);
    case "validation":
      return new AppError("VALIDATION_ERROR", `${name} refused the request: ${err.message}`, { errors: [] });
    default:
      return new AppError("SERVICE_UNAVAILABLE", `${name} failed: ${err.message}`);
  }
}
