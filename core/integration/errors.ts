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
