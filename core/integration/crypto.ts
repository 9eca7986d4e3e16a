/**
 * Encryption of integration tokens (spec 02 Authentication 4; DESIGN.md 2 "token encryption" and 6.4): the AWS
 * Encryption SDK, with a KMS keyring in AWS (TOKEN_KMS_KEY_ID) and a raw AES-256 keyring from a local key file on the
 * embedded runtime (TOKEN_KEY_FILE, made on first use with mode 0600). The encryption context {workspace_id, kind}
 * binds a ciphertext to its row: a blob copied to another workspace or kind does not decrypt there.
 */
import { randomBytes } from "node:crypto";
import { mkdir, readFile, writeFile } from "node:fs/promises";
import { dirname } from "node:path";
import type { KeyringNode } from "@aws-crypto/client-node";
import { Config } from "../config";
import { AppError } from "../error";
import type { IntegrationKind } from "./schema";

/** The token set a provider issued; only ever stored through `sealTokens`. */
export interface TokenSet {
  access_token: string;
  refresh_token?: string;
  /** Epoch milliseconds when the access token expires, when the provider says. */
  expires_at?: number;
  scope?: string;
}

type Sdk = typeof import("@aws-crypto/client-node");
let sdk: Promise<Sdk> | undefined;
let client: ReturnType<Sdk["buildClient"]> | undefined;
const keyrings = new Map<string, Promise<KeyringNode>>();

// The SDK is loaded on first use: only the groups that handle tokens pay for it at a cold start.
const loadSdk = () => (sdk ??= import("@aws-crypto/client-node"));

async function localKey(file: string): Promise<Uint8Array> {
  try {
    const key = await readFile(file);
    if (key.length !== 32) throw new AppError("SERVICE_UNAVAILABLE", `The token key file ${file} must hold exactly 32 bytes`, { setting: "TOKEN_KEY_FILE" });
    return new Uint8Array(key);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== "ENOENT") throw err;
    await mkdir(dirname(file), { recursive: true });
    // `wx`: two processes starting at once cannot both write a key; the loser reads the winner's.
    await writeFile(file, randomBytes(32), { mode: 0o600, flag: "wx" }).catch((e: NodeJS.ErrnoException) => {
      if (e.code !== "EEXIST") throw e;
    });
    return new Uint8Array(await readFile(file));
  }
}

async function keyring(): Promise<KeyringNode> {
  const kmsKey = Config.tokenKmsKeyId();
  const cacheKey = kmsKey ? `kms:${kmsKey}` : `file:${Config.tokenKeyFile()}`;
  let ring = keyrings.get(cacheKey);
  if (!ring) {
    ring = (async () => {
      const { KmsKeyringNode, RawAesKeyringNode, RawAesWrappingSuiteIdentifier } = await loadSdk();
      if (kmsKey) return new KmsKeyringNode({ generatorKeyId: kmsKey });
      // A deployed stage must not invent a key on a Lambda's disk: without KMS it refuses, naming the setting.
      if (Config.stage() !== "local" && process.env.TOKEN_KEY_FILE === undefined) {
        throw new AppError("SERVICE_UNAVAILABLE", "Integration tokens cannot be encrypted: set TOKEN_KMS_KEY_ID", { setting: "TOKEN_KMS_KEY_ID" });
      }
      return new RawAesKeyringNode({
        keyNamespace: "r2d-local",
        keyName: "integration-tokens",
        unencryptedMasterKey: await localKey(Config.tokenKeyFile()),
        wrappingSuite: RawAesWrappingSuiteIdentifier.AES256_GCM_IV12_TAG16_NO_PADDING,
      });
    })();
    ring.catch(() => keyrings.delete(cacheKey));
    keyrings.set(cacheKey, ring);
  }
  return ring;
}

async function sdkClient() {
  const { buildClient, CommitmentPolicy } = await loadSdk();
  return (client ??= buildClient(CommitmentPolicy.REQUIRE_ENCRYPT_REQUIRE_DECRYPT));
}

/**
 * Encrypt a token set for one integration row.
 * @returns the Encryption SDK message, base64 (what the `token_ciphertext` attribute holds)
 * @throws AppError SERVICE_UNAVAILABLE (503) when no key is configured in a deployed stage
 */
export async function sealTokens(tokens: TokenSet, ctx: { workspace_id: string; kind: IntegrationKind }): Promise<string> {
  const { encrypt } = await sdkClient();
  const { result } = await encrypt(await keyring(), Buffer.from(JSON.stringify(tokens), "utf8"), {
    encryptionContext: { workspace_id: ctx.workspace_id, kind: ctx.kind },
  });
  return result.toString("base64");
}

/**
 * Decrypt the token set of one integration row, checking that the message was sealed for this row.
 * @throws Error when the ciphertext was sealed for another workspace or kind, or does not decrypt
 */
export async function openTokens(ciphertext: string, ctx: { workspace_id: string; kind: IntegrationKind }): Promise<TokenSet> {
  const { decrypt } = await sdkClient();
  const { plaintext, messageHeader } = await decrypt(await keyring(), Buffer.from(ciphertext, "base64"));
  const sealed = messageHeader.encryptionContext;
  if (sealed.workspace_id !== ctx.workspace_id || sealed.kind !== ctx.kind) {
    throw new Error("Token ciphertext was sealed for another integration");
  }
  return JSON.parse(plaintext.toString("utf8")) as TokenSet;
}
