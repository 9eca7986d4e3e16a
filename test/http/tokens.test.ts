/**
 * Bearer-token hardening (issue #10 points 8 and 9): a token must carry `exp`, its lifetime is bounded, a small clock
 * skew is tolerated; an unknown `kid` fetches nothing in the embedded runtime and refetches the issuer's JWKS at most
 * once per wait period otherwise; 401 bodies hold a fixed message and every 401 carries an RFC 6750 challenge.
 */
import dns from "node:dns";
import { randomUUID } from "node:crypto";
import { afterEach, beforeAll, describe, expect, inject, it } from "vitest";
import { importJWK, SignJWT, type JWK, type JWTPayload } from "jose";
import { routes } from "../../functions/http/routes";
import type { RouteSpec } from "../../functions/lib/route";
import { DEV_AUDIENCE, DEV_ISSUER } from "../../local/idp";
import { call, idp, type ApiResponse } from "../support/api";
import { fillPath, headersOf, withEnv } from "./_helpers";

const bearerRoutes = (Object.entries(routes) as [string, RouteSpec][]).filter(([, r]) => r.access === "user" || r.access === "admin");
const HOUR = 3600;
const now = () => Math.floor(Date.now() / 1000);
const email = () => `tok-${randomUUID().slice(0, 8)}@example.com`;

let key: Awaited<ReturnType<typeof importJWK>>;
beforeAll(async () => {
  key = await importJWK(JSON.parse(inject("idpPrivateJwk")) as JWK, "RS256");
});

/**
 * Sign a token with the dev identity provider's key, setting exactly the given time claims (jose adds none by
 * itself), so tokens without `exp` or with odd `iat`/`nbf` can be made.
 */
async function sign(times: Pick<JWTPayload, "exp" | "iat" | "nbf">, kid = idp().jwks.keys[0]!.kid!) {
  const address = email();
  return new SignJWT({ email: address, sub: `tok|${address}`, iss: DEV_ISSUER, aud: DEV_AUDIENCE, ...times })
    .setProtectedHeader({ alg: "RS256", kid, typ: "JWT" })
    .sign(key);
}

const me = (token: string) => call("GET", "/api/auth/me", { token });

/** Parse `Bearer realm="...", error="...", error_description="..."` into its parameters. */
function challengeOf(header: string | undefined): Record<string, string> {
  expect(header, "401 without WWW-Authenticate").toBeDefined();
  expect(header!).toMatch(/^Bearer /);
  return Object.fromEntries([...header!.matchAll(/(\w+)="([^"]*)"/g)].map((m) => [m[1]!, m[2]!]));
}

/** A 401 whose body says nothing internal and whose challenge names an invalid token. */
function expectInvalidToken(res: ApiResponse, detail?: RegExp) {
  expect(res.status, res.text).toBe(401);
  expect(res.body.code).toBe("UNAUTHORIZED");
  expect(res.body.detail).not.toMatch(/https?:|dev-idp|jwks|fetch|ENOTFOUND|getaddrinfo|kid|JWK/i);
  if (detail) expect(res.body.detail).toMatch(detail);
  const challenge = challengeOf(headersOf(res)["www-authenticate"]);
  expect(challenge.realm).toBeTruthy();
  expect(challenge.error).toBe("invalid_token");
  expect(challenge.error_description).toBe(res.body.detail);
}

describe("token lifetime (point 8)", () => {
  let noExp: string;
  let futureIat: string;
  beforeAll(async () => {
    noExp = await sign({ iat: now() });
    futureIat = await sign({ iat: now() + 365 * 24 * HOUR, exp: now() + 365 * 24 * HOUR + HOUR });
  });

  describe.each(bearerRoutes)("%s", (_id, spec) => {
    it("rejects a token without exp and one issued a year from now", async () => {
      for (const token of [noExp, futureIat]) {
        const res = await call(spec.method, fillPath(spec.path), { token });
        expect(res.status, res.text).toBe(401);
        expect(res.body.code).toBe("UNAUTHORIZED");
      }
    });
  });

  it("names the problem in a fixed message", async () => {
    expectInvalidToken(await me(noExp), /exp/);
    expectInvalidToken(await me(futureIat), /future/);
  });

  it("rejects a lifetime above 24 hours, with or without iat", async () => {
    expectInvalidToken(await me(await sign({ iat: now(), exp: now() + 25 * HOUR })), /lifetime/);
    expectInvalidToken(await me(await sign({ exp: now() + 30 * 24 * HOUR })), /lifetime/);
  });

  it("accepts a lifetime of 24 hours, and a token without iat that expires within it", async () => {
    expect((await me(await sign({ iat: now(), exp: now() + 24 * HOUR }))).status).toBe(200);
    expect((await me(await sign({ exp: now() + HOUR }))).status).toBe(200);
  });

  it("allows a small clock skew: expired 30 s ago, iat and nbf 30 s ahead", async () => {
    expect((await me(await sign({ iat: now() - HOUR, exp: now() - 30 }))).status).toBe(200);
    expect((await me(await sign({ iat: now() + 30, nbf: now() + 30, exp: now() + HOUR }))).status).toBe(200);
  });

  it("beyond the skew: expired 5 minutes ago, or not valid for 5 more minutes", async () => {
    expectInvalidToken(await me(await sign({ iat: now() - HOUR, exp: now() - 300 })), /expired/i);
    expectInvalidToken(await me(await sign({ iat: now(), nbf: now() + 300, exp: now() + HOUR })), /not yet valid/i);
  });

  it("the skew and the lifetime bound are settings", async () => {
    await withEnv({ JWT_CLOCK_SKEW_SECONDS: "0", JWT_MAX_LIFETIME_SECONDS: String(2 * HOUR) }, async () => {
      expect((await me(await sign({ iat: now() - HOUR, exp: now() - 30 }))).status).toBe(401);
      expect((await me(await sign({ iat: now(), exp: now() + 3 * HOUR }))).status).toBe(401);
      expect((await me(await sign({ iat: now(), exp: now() + HOUR }))).status).toBe(200);
    });
  });
});

describe("unknown kid and error bodies (point 9)", () => {
  const original = dns.lookup;
  afterEach(() => {
    dns.lookup = original;
  });
  /** Count DNS lookups of `host` (every outbound JWKS fetch starts with one). */
  function countLookups(host: string) {
    const seen = { count: 0 };
    dns.lookup = ((hostname: string, ...rest: unknown[]) => {
      if (hostname === host) seen.count++;
      return (original as (...a: unknown[]) => unknown)(hostname, ...rest);
    }) as typeof dns.lookup;
    return seen;
  }

  it("with the JWKS handed over (embedded runtime), an unknown kid fetches nothing and the 401 says nothing internal", async () => {
    const lookups = countLookups(new URL(DEV_ISSUER).hostname);
    const res = await me(await sign({ iat: now(), exp: now() + HOUR }, `rotated-${randomUUID()}`));
    expectInvalidToken(res, /signature/);
    expect(lookups.count).toBe(0);
  });

  it("with a JWKS URI, unknown kids refetch the JWKS at most once per wait period", async () => {
    const host = `jwks-${randomUUID().slice(0, 8)}.invalid`;
    const lookups = countLookups(host);
    await withEnv({ JWT_JWKS: undefined, JWT_JWKS_URI: `https://${host}/.well-known/jwks.json`, JWKS_REFETCH_WAIT_SECONDS: "300" }, async () => {
      for (let i = 0; i < 6; i++) {
        expectInvalidToken(await me(await sign({ iat: now(), exp: now() + HOUR }, `unknown-${i}`)), /signature/);
      }
    });
    // One fetch (aws-jwt-verify's fetcher retries once at once), then the penalty box refuses until the wait ends.
    expect(lookups.count).toBeGreaterThan(0);
    expect(lookups.count).toBeLessThanOrEqual(2);
  });

  it("a missing token is challenged without an error code; a malformed one names invalid_token", async () => {
    const missing = await call("GET", "/api/auth/me");
    expect(missing.status).toBe(401);
    const challenge = challengeOf(headersOf(missing)["www-authenticate"]);
    expect(challenge.realm).toBeTruthy();
    expect(challenge.error).toBeUndefined();

    expectInvalidToken(await call("GET", "/api/auth/me", { headers: { authorization: "Bearer not-a-jwt" } }));
  });

  it("a token from another issuer or for another audience is 401 with a challenge", async () => {
    expectInvalidToken(await me(await idp().sign({ email: email(), issuer: "https://evil.example" })));
    expectInvalidToken(await me(await idp().sign({ email: email(), audience: "another-api" })));
  });
});
