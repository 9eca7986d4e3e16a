/**
 * Runtime settings, read from the environment on each call so tests and the local runtime can set them.
 * In AWS the stacks set these variables on every function (stacks/Api.ts); locally `local/env.ts` does.
 */
const env = (name: string): string | undefined => {
  const value = process.env[name];
  return value === undefined || value === "" ? undefined : value;
};

/** A secret: SST binds it with prefetch as `SST_Secret_value_<NAME>`; a plain variable of the name wins (local). */
const secret = (name: string): string | undefined => env(name) ?? env(`SST_Secret_value_${name}`);

const required = (name: string): string => {
  const value = env(name);
  if (!value) throw new Error(`Missing required setting ${name}`);
  return value;
};

const list = (name: string): string[] =>
  (env(name) ?? "")
    .split(",")
    .map((s) => s.trim().toLowerCase())
    .filter(Boolean);

const flag = (name: string, fallback: boolean): boolean => {
  const value = env(name);
  if (value === undefined) return fallback;
  return ["1", "true", "on", "yes"].includes(value.toLowerCase());
};

/** A count setting: a non-negative integer, or undefined when unset or not one (the caller's default applies). */
const count = (name: string): number | undefined => {
  const value = Number(env(name) ?? NaN);
  return Number.isInteger(value) && value >= 0 ? value : undefined;
};

/** A non-negative number of seconds, or undefined when unset or not one (the caller's default applies). */
const secondsOf = (name: string): number | undefined => {
  const value = Number(env(name) ?? NaN);
  return Number.isFinite(value) && value >= 0 ? value : undefined;
};

export const Config = {
  /** Stage name: "local" for the embedded runtime, the SST stage in AWS. */
  stage: () => env("STAGE") ?? "local",
  tableName: () => required("TABLE_NAME"),
  bucketName: () => required("BUCKET_NAME"),
  /** DynamoDB endpoint override (DynamoDB Local); unset in AWS. */
  dynamoEndpoint: () => env("DYNAMODB_ENDPOINT"),
  /** S3 endpoint override (local object store); unset in AWS. */
  s3Endpoint: () => env("S3_ENDPOINT"),
  region: () => env("AWS_REGION") ?? "us-east-1",
  jwt: () => ({
    issuer: required("JWT_ISSUER"),
    audience: required("JWT_AUDIENCE"),
    /** JWKS URI of the identity provider (AWS). */
    jwksUri: env("JWT_JWKS_URI"),
    /** Inline JWKS JSON (embedded runtime and tests): handed to aws-jwt-verify's cacheJwks. */
    jwks: env("JWT_JWKS"),
  }),
  /** Product-led access gating: new users start pending until they redeem an access code. */
  accessGating: () => flag("ACCESS_GATING", env("STAGE") !== undefined && env("STAGE") !== "local"),
  founderEmails: () => list("FOUNDER_EMAILS"),
  adminEmails: () => list("ADMIN_EMAILS"),
  /** Standard Webhooks signing secret of the identity provider ("whsec_..."). */
  idpWebhookSecret: () => secret("IDP_WEBHOOK_SECRET"),
  corsOrigins: () => (env("CORS_ORIGINS") ?? "*").split(",").map((s) => s.trim()),
  /** Days a new workspace's trial lasts. */
  trialDays: () => Number(env("TRIAL_DAYS") ?? 14),
  logLevel: () => env("LOG_LEVEL") ?? "INFO",
  /** Worker threads of the local embedder (0 = the calling thread); unset: core/ai/local-embedder.ts decides. */
  localEmbedderWorkers: () => count("LOCAL_EMBEDDER_WORKERS"),
  /** Worker threads for PDF.js (0 = the calling thread); unset: core/extract/pdf.ts decides. */
  pdfWorkers: () => count("PDF_WORKERS"),
  /** Lease an executor holds on a claimed pending action, seconds (DESIGN.md 6.2; default 60). */
  pendingActionLeaseSeconds: () => secondsOf("PENDING_ACTION_LEASE_SECONDS") ?? 60,
  /** How long an approved pending action is left to its stream-driven execution before the sweeper takes it, seconds (default 30). */
  pendingActionSweepGraceSeconds: () => secondsOf("PENDING_ACTION_SWEEP_GRACE_SECONDS") ?? 30,
  /** How often the embedded runtime's sweeper runs, seconds (default 30). */
  pendingActionSweepIntervalSeconds: () => secondsOf("PENDING_ACTION_SWEEP_INTERVAL_SECONDS") ?? 30,
};
