import { JwtRsaVerifier } from "aws-jwt-verify";
import { JwtBaseError } from "aws-jwt-verify/error";
import { Config } from "../../core/config";
import { Errors } from "../../core/error";
import type { TokenClaims } from "../../core/user/schema";

type Verifier = ReturnType<typeof makeVerifier>;
let cached: { key: string; verifier: Verifier } | undefined;

function makeVerifier() {
  const { issuer, audience, jwksUri, jwks } = Config.jwt();
  const verifier = JwtRsaVerifier.create({ issuer, audience, ...(jwksUri ? { jwksUri } : {}) });
  // Embedded runtime and tests: the dev identity provider's JWKS is handed over, nothing is fetched.
  if (jwks) verifier.cacheJwks(JSON.parse(jwks));
  return verifier;
}

function verifier(): Verifier {
  const { issuer, audience, jwksUri, jwks } = Config.jwt();
  const key = `${issuer}|${audience}|${jwksUri ?? ""}|${jwks ?? ""}`;
  if (!cached || cached.key !== key) cached = { key, verifier: makeVerifier() };
  return cached.verifier;
}

/**
 * Verify the `Authorization: Bearer <JWT>` header with aws-jwt-verify (signature against the issuer's JWKS,
 * issuer, audience, expiry) and return the claims the service uses (spec 01 Authentication).
 * @throws AppError UNAUTHORIZED (401) for a missing, malformed, expired or otherwise invalid token, or one without `sub`.
 */
export async function verifyBearer(authorization: string | undefined): Promise<TokenClaims> {
  if (!authorization) throw Errors.unauthorized("Not authenticated: send Authorization: Bearer <token>");
  const match = /^Bearer\s+(\S+)$/i.exec(authorization.trim());
  if (!match) throw Errors.unauthorized("Authorization header must be 'Bearer <token>'");
  let payload: Record<string, unknown>;
  try {
    payload = (await verifier().verify(match[1]!)) as Record<string, unknown>;
  } catch (err) {
    if (err instanceof JwtBaseError) throw Errors.unauthorized(`Invalid token: ${err.message}`);
    throw err;
  }
  // The subject is the user's identity: without one, every such token would resolve to the same local user.
  if (typeof payload.sub !== "string" || payload.sub === "") throw Errors.unauthorized("Invalid token: no sub claim");
  const groups = payload["cognito:groups"] ?? payload.groups ?? [];
  return {
    sub: payload.sub,
    email: typeof payload.email === "string" ? payload.email : undefined,
    name: typeof payload.name === "string" ? payload.name : undefined,
    picture: typeof payload.picture === "string" ? payload.picture : undefined,
    groups: Array.isArray(groups) ? groups.map(String) : [],
  };
}

/** Admins of the growth endpoints: the token carries the group `admin`, or the e-mail is in ADMIN_EMAILS (DESIGN.md section 5). */
export const isAdminClaims = (claims: TokenClaims, email: string): boolean =>
  claims.groups.includes("admin") || Config.adminEmails().includes(email.toLowerCase());
