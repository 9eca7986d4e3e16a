import { mkdir, readFile, rename, writeFile } from "node:fs/promises";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { exportJWK, generateKeyPair, importJWK, SignJWT, type JWK } from "jose";
import { PrerequisiteError } from "./errors";

/** Issuer and audience of the dev identity provider (embedded runtime and tests). */
export const DEV_ISSUER = "https://dev-idp.local";
export const DEV_AUDIENCE = "research-to-delivery";
const KID = "dev-idp-1";

export interface DevIdp {
  /** Public JWKS, handed to aws-jwt-verify with cacheJwks. */
  jwks: { keys: JWK[] };
  /**
   * Sign an RS256 access token. `expiresIn` in seconds (default 8 h; negative for an already expired token).
   * `sub` defaults to a stable id derived from the e-mail, so the same e-mail is the same user.
   */
  /** `email_verified` as the provider would send it (boolean, or Cognito's string form); left out when not given. */
  sign(claims: { email: string; name?: string; sub?: string; groups?: string[]; email_verified?: boolean | "true" | "false"; expiresIn?: number; issuer?: string; audience?: string }): Promise<string>;
}

export async function fromPrivateJwk(jwk: JWK): Promise<DevIdp> {
  const key = await importJWK(jwk, "RS256");
  const { d, p, q, dp, dq, qi, ...publicJwk } = jwk;
  void d; void p; void q; void dp; void dq; void qi;
  return {
    jwks: { keys: [{ ...publicJwk, kid: KID, alg: "RS256", use: "sig" }] },
    async sign({ email, name, sub, groups, email_verified, expiresIn = 8 * 3600, issuer = DEV_ISSUER, audience = DEV_AUDIENCE }) {
      const now = Math.floor(Date.now() / 1000);
      return new SignJWT({ email: email.toLowerCase(), ...(name ? { name } : {}), ...(groups ? { groups } : {}), ...(email_verified !== undefined ? { email_verified } : {}) })
        .setProtectedHeader({ alg: "RS256", kid: KID, typ: "JWT" })
        .setSubject(sub ?? `dev|${email.toLowerCase()}`)
        .setIssuer(issuer)
        .setAudience(audience)
        .setIssuedAt(now - 5)
        .setExpirationTime(now + expiresIn)
        .sign(key);
    },
  };
}

/** A fresh in-memory identity provider (tests). */
export async function ephemeralIdp(): Promise<DevIdp> {
  const { privateKey } = await generateKeyPair("RS256", { extractable: true, modulusLength: 2048 });
  return fromPrivateJwk(await exportJWK(privateKey));
}

/** The persistent dev identity provider: its RSA key lives in `<dataDir>/idp/private.jwk`, made on first use. */
export async function devIdp(dataDir: string): Promise<DevIdp> {
  const file = join(dataDir, "idp", "private.jwk");
  if (!existsSync(file)) {
    const { privateKey } = await generateKeyPair("RS256", { extractable: true, modulusLength: 2048 });
    await mkdir(join(dataDir, "idp"), { recursive: true });
    // Written whole or not at all (a run stopped mid-write must not leave an empty key behind).
    const partial = `${file}.${process.pid}.tmp`;
    await writeFile(partial, JSON.stringify(await exportJWK(privateKey)), { mode: 0o600 });
    await rename(partial, file);
  }
  try {
    return await fromPrivateJwk(JSON.parse(await readFile(file, "utf8")) as JWK);
  } catch {
    throw new PrerequisiteError(`The dev identity provider's key ${file} is damaged: delete it and start again (tokens made with it stop working).`);
  }
}
