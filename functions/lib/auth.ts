import { JwtVerifier } from "aws-jwt-verify";
import {
  FetchError,
  JwtBaseError,
  JwtExpiredError,
  JwtInvalidAudienceError,
  JwtInvalidIssuerError,
  JwtNotBeforeError,
  JwtParseError,
} from "aws-jwt-verify/error";
import { SimpleFetcher, type Fetcher } from "aws-jwt-verify/https";
import { SimpleJwksCache, SimplePenaltyBox } from "aws-jwt-verify/jwk";
import type { JwtPayload } from "aws-jwt-verify/jwt-model";
import { Config } from "../../core/config";
import { AppError } from "../../core/error";
import { BearerError } from "./bearer";
import type { TokenClaims } from "../../core/user/schema";
// A cycle (http.ts imports this module), harmless: the logger is only used inside functions, never at import.
import { logger } from "./http";

// The 401 and its challenge live in bearer.ts: the error middleware of every Lambda needs them, this module's
// JWT library only the routes that authenticate (functions/lib/http.ts loads it then).
export { BearerError, wwwAuthenticate } from "./bearer";

/** A token refused by our own claim checks; its message is fixed and safe to show. */
class TokenRejected extends Error {}

/**
 * Claim checks aws-jwt-verify does not make (issue #10 point 8): `exp` is required (the library checks it only when
 * present), `iat` may not lie in the future beyond the skew, and the lifetime (`exp` - `iat`, or `exp` - now without
 * `iat`) is bounded, so a token cannot be minted for a year. `nbf` is the library's, with the same skew.
 */
function claimCheck(skew: number, maxLifetime: number) {
  return ({ payload }: { payload: JwtPayload }) => {
    const now = Date.now() / 1000;
    if (typeof payload.exp !== "number") throw new TokenRejected("Invalid token: no expiry (exp claim)");
    if (typeof payload.iat === "number" && payload.iat > now + skew) throw new TokenRejected("Invalid token: issued in the future");
    if (payload.exp - (payload.iat ?? now) > maxLifetime) throw new TokenRejected("Invalid token: lifetime longer than allowed");
  };
}

/**
 * A fetcher that registers every failed fetch with the penalty box. aws-jwt-verify's SimpleJwksCache penalises only
 * a JWKS that arrived without the token's `kid`; an unreachable issuer would otherwise be fetched (twice: the
 * SimpleFetcher retries once) on every request carrying an unknown `kid`.
 */
const penalisingFailures = (fetcher: Fetcher, penaltyBox: SimplePenaltyBox): Fetcher => ({
  fetch: async (uri, options, data) => {
    try {
      return await fetcher.fetch(uri, options, data);
    } catch (err) {
      penaltyBox.registerFailedAttempt(uri);
      throw err;
    }
  },
});

/** A "fetcher" that answers with the JWKS handed over in the settings: the embedded runtime never goes out. */
const handedOver = (jwks: string): Fetcher => ({
  fetch: async () => {
    const bytes = new TextEncoder().encode(jwks);
    return bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength) as ArrayBuffer;
  },
});

type JwtSettings = ReturnType<typeof Config.jwt>;

function makeVerifier({ issuer, audience, jwksUri, jwks, jwksRefetchWaitSeconds }: JwtSettings) {
  // After a fetch that failed or lacked the token's kid, no refetch until the wait is over: a flood of tokens with
  // made-up kids costs the issuer at most one request per wait period per container.
  const penaltyBox = new SimplePenaltyBox({ waitSeconds: jwksRefetchWaitSeconds });
  const fetcher = penalisingFailures(jwks ? handedOver(jwks) : new SimpleFetcher(), penaltyBox);
  const verifier = JwtVerifier.create(
    { issuer, audience, ...(jwksUri ? { jwksUri } : {}) },
    { jwksCache: new SimpleJwksCache({ penaltyBox, fetcher }) },
  );
  if (jwks) verifier.cacheJwks(JSON.parse(jwks));
  return verifier;
}

type Verifier = ReturnType<typeof makeVerifier>;
let cached: { key: string; verifier: Verifier } | undefined;

/** One verifier per container (its JWKS cache and penalty box are per instance), rebuilt when the settings change. */
function verifier(settings: JwtSettings): Verifier {
  const { issuer, audience, jwksUri, jwks, jwksRefetchWaitSeconds } = settings;
  const key = JSON.stringify([issuer, audience, jwksUri, jwks, jwksRefetchWaitSeconds]);
  if (!cached || cached.key !== key) cached = { key, verifier: makeVerifier(settings) };
  return cached.verifier;
}

/**
 * The fixed message a client sees for a rejected token. Library messages are never shown: they name the issuer's
 * JWKS URL, host names, network errors and the expected issuer.
 */
function publicReason(err: unknown): string | undefined {
  if (err instanceof TokenRejected) return err.message;
  if (err instanceof JwtExpiredError) return "Token expired";
  if (err instanceof JwtNotBeforeError) return "Token not yet valid";
  if (err instanceof JwtInvalidIssuerError) return "Invalid token: issuer not accepted";
  if (err instanceof JwtInvalidAudienceError) return "Invalid token: audience not accepted";
  if (err instanceof JwtParseError) return "Invalid token: not a well-formed JWT";
  // Unknown kid, bad signature or algorithm, JWKS unavailable or in its wait period: all the client can act on.
  if (err instanceof JwtBaseError) return "Invalid token: signature could not be verified";
  return undefined;
}

/**
 * Verify the `Authorization: Bearer <JWT>` header with aws-jwt-verify (signature against the issuer's JWKS, issuer,
 * audience, `exp` required, `nbf`, `iat` and lifetime bounded, with Config.jwt's clock skew) and return the claims
 * the service uses (spec 01 Authentication). The reason behind a rejection is logged; the client gets a fixed one.
 * @throws BearerError UNAUTHORIZED (401) for a missing, malformed, expired or otherwise invalid token, or one without
 *   `sub`; its `WWW-Authenticate` challenge comes from `wwwAuthenticate`.
 */
export async function verifyBearer(authorization: string | undefined): Promise<TokenClaims> {
  if (!authorization) throw new BearerError("Not authenticated: send Authorization: Bearer <token>");
  const match = /^Bearer\s+(\S+)$/i.exec(authorization.trim());
  if (!match) {
    // Another scheme is no bearer credentials at all; a broken Bearer header is a bad request (RFC 6750 section 3.1).
    const error = /^Bearer\b/i.test(authorization.trim()) ? "invalid_request" : undefined;
    throw new BearerError("Authorization header must be 'Bearer <token>'", error);
  }
  const settings = Config.jwt();
  let payload: JwtPayload;
  try {
    payload = await verifier(settings).verify(match[1]!, {
      graceSeconds: settings.clockSkewSeconds,
      customJwtCheck: claimCheck(settings.clockSkewSeconds, settings.maxLifetimeSeconds),
    });
  } catch (err) {
    const reason = publicReason(err);
    if (reason === undefined) throw err;
    // An unreachable issuer is an operations problem; the rest are the caller's tokens.
    const log = err instanceof FetchError ? logger.warn.bind(logger) : logger.info.bind(logger);
    log("bearer token rejected", { reason, cause: (err as Error).name, cause_message: (err as Error).message });
    throw new BearerError(reason, "invalid_token");
  }
  // The subject is the user's identity: without one, every such token would resolve to the same local user.
  if (typeof payload.sub !== "string" || payload.sub === "") throw new BearerError("Invalid token: no sub claim", "invalid_token");
  const groups = payload["cognito:groups"] ?? payload.groups ?? [];
  return {
    sub: payload.sub,
    // An address as RFC 5321 bounds it (254 characters), trimmed; anything else is no address (it keys an index).
    email: typeof payload.email === "string" && payload.email.trim().length <= 254 && payload.email.includes("@") ? payload.email.trim() : undefined,
    // Some providers send the claim as a string ("true"/"false": Cognito's ID tokens did for a time).
    email_verified: payload.email_verified === true || payload.email_verified === "true" ? true : payload.email_verified === false || payload.email_verified === "false" ? false : undefined,
    name: typeof payload.name === "string" ? payload.name : undefined,
    picture: typeof payload.picture === "string" ? payload.picture : undefined,
    groups: Array.isArray(groups) ? groups.map(String) : [],
  };
}

/**
 * Admins of the growth endpoints: the token carries the group `admin`, or the user's address is in ADMIN_EMAILS
 * (DESIGN.md section 5) and is not known to be unverified (`email_verified: false`: anyone could claim it). What says
 * so: the token's claim when the token carries that same address, else what is stored for it (an address changed by
 * the provider's user.updated is unverified until a token of it says otherwise).
 * @param user the caller as stored: `email` (lower case) and its `email_verified`, if known
 */
export const isAdminClaims = (claims: TokenClaims, user: { email: string; email_verified?: boolean }): boolean => {
  if (claims.groups.includes("admin")) return true;
  const verified = claims.email?.toLowerCase() === user.email ? claims.email_verified : user.email_verified;
  return verified !== false && Config.adminEmails().includes(user.email.toLowerCase());
};
