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

/** A setting that is missing or malformed: its message is one sentence a person can act on (no stack needed). */
export class SettingError extends Error {
  override readonly name = "SettingError";
}

const required = (name: string): string => {
  const value = env(name);
  if (!value) throw new SettingError(`Missing required setting ${name}`);
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

/** Longest bearer-token lifetime the service accepts, seconds (default 24 h); also bounds `npm run token --hours`. */
const jwtMaxLifetimeSeconds = (): number => secondsOf("JWT_MAX_LIFETIME_SECONDS") ?? 24 * 3600;

/** A rate: "<max>/<window seconds>" (e.g. "10/60"), or undefined when unset or not one (the caller's default applies). */
const rateOf = (name: string): RateLimit | undefined => {
  const match = /^\s*(\d+)\s*\/\s*(\d+)\s*$/.exec(env(name) ?? "");
  if (!match) return undefined;
  const [max, windowSeconds] = [Number(match[1]), Number(match[2])];
  return max >= 1 && windowSeconds >= 1 ? { max, windowSeconds } : undefined;
};

/** At most `max` requests per fixed window of `windowSeconds`. */
export interface RateLimit {
  max: number;
  windowSeconds: number;
}

/**
 * Default per-user limits of the endpoints that cost model calls, embeddings or guesses (docs/decisions.md "Per-user
 * rate limits"). Spec 01 fixes only synthesis (core/insight/synthesis.ts); these are ours.
 */
const RATE_LIMIT_DEFAULTS = {
  /** POST /api/recommendations/generate: 20 to 60 s of model time each. */
  recommendations_generate: { max: 10, windowSeconds: 60 },
  /** POST /api/documents/draft: a model-written document each. */
  documents_draft: { max: 10, windowSeconds: 60 },
  /** POST /api/insights/search: a query embedding each; typing-speed use stays well under it. */
  insights_search: { max: 60, windowSeconds: 60 },
  /** POST /api/intent/parse: cheap, but unbounded input text. */
  intent_parse: { max: 60, windowSeconds: 60 },
  /** POST /api/auth/redeem-code: attempts, so wrong codes count; a few typos pass, guessing does not. */
  access_code_redeem: { max: 10, windowSeconds: 900 },
  /** Every /api/admin/plg route, one window per admin (spec 02 Limits: admin endpoints, 60 requests a minute). */
  admin_plg: { max: 60, windowSeconds: 60 },
  /** POST /api/waitlist, per client address (public; core/growth): a household or office joins, a script does not. */
  waitlist_join: { max: 10, windowSeconds: 3600 },
} satisfies Record<string, RateLimit>;

/** The names of the configurable per-user rate limits. */
export type RateLimitName = keyof typeof RATE_LIMIT_DEFAULTS;

/** Default of PROVIDER_REQUEST_TIMEOUT_SECONDS, ms. */
export const PROVIDER_REQUEST_TIMEOUT_DEFAULT_MS = 20_000;
/**
 * The longest provider request timeout the setting can ask for, ms: a larger value is cut to this. core/ticket checks
 * at load that it leaves room inside the push lease (a retry's marker search and then the create).
 */
export const PROVIDER_REQUEST_TIMEOUT_MAX_MS = 25_000;

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
    /** Inline JWKS JSON (embedded runtime and tests): handed to aws-jwt-verify's cacheJwks; nothing is fetched then. */
    jwks: env("JWT_JWKS"),
    /** Clock skew tolerated on `exp`, `nbf` and `iat`, seconds (default 60). */
    clockSkewSeconds: secondsOf("JWT_CLOCK_SKEW_SECONDS") ?? 60,
    /** Longest token lifetime accepted (`exp` - `iat`, or `exp` - now without `iat`), seconds (default 24 h). */
    maxLifetimeSeconds: jwtMaxLifetimeSeconds(),
    /** After a JWKS fetch that failed or lacked the token's `kid`, no refetch for this long, seconds (default 30). */
    jwksRefetchWaitSeconds: secondsOf("JWKS_REFETCH_WAIT_SECONDS") ?? 30,
  }),
  /** Product-led access gating: new users start pending until they redeem an access code. */
  accessGating: () => flag("ACCESS_GATING", env("STAGE") !== undefined && env("STAGE") !== "local"),
  founderEmails: () => list("FOUNDER_EMAILS"),
  adminEmails: () => list("ADMIN_EMAILS"),
  /** Standard Webhooks signing secret of the identity provider ("whsec_..."). */
  idpWebhookSecret: () => secret("IDP_WEBHOOK_SECRET"),
  /** How long a processed identity-provider webhook id is remembered, so a replay is not applied again, seconds (default 7 days). */
  idpWebhookDedupSeconds: () => secondsOf("IDP_WEBHOOK_DEDUP_SECONDS") ?? 7 * 24 * 3600,
  /** A per-user rate limit: `RATE_LIMIT_<NAME>` = "<max>/<window seconds>" overrides the default (RATE_LIMIT_DEFAULTS). */
  rateLimit: (name: RateLimitName): RateLimit => rateOf(`RATE_LIMIT_${name.toUpperCase()}`) ?? RATE_LIMIT_DEFAULTS[name],
  corsOrigins: () => (env("CORS_ORIGINS") ?? "*").split(",").map((s) => s.trim()),
  /** Days a new workspace's trial lasts. */
  trialDays: () => Number(env("TRIAL_DAYS") ?? 14),
  /**
   * Days a past_due subscription keeps its paid plan after the unpaid period started (Stripe's own retries run for
   * about that long), before the account falls to trial-level limits (core/billing/plans.ts `entitlementOf`).
   */
  pastDueGraceDays: () => Number(env("PAST_DUE_GRACE_DAYS") ?? 7),
  logLevel: () => env("LOG_LEVEL") ?? "INFO",
  /** Worker threads of the local embedder (0 = the calling thread); unset: core/ai/local-embedder.ts decides. */
  localEmbedderWorkers: () => count("LOCAL_EMBEDDER_WORKERS"),
  /** Worker threads for PDF.js (0 = the calling thread); unset: core/extract/pdf.ts decides. */
  pdfWorkers: () => count("PDF_WORKERS"),
  /** Lease an executor holds on a claimed pending action, seconds (DESIGN.md 6.2; default 60). */
  jwtMaxLifetimeSeconds,
  pendingActionLeaseSeconds: () => secondsOf("PENDING_ACTION_LEASE_SECONDS") ?? 60,
  /** How long an approved pending action is left to its stream-driven execution before the sweeper takes it, seconds (default 30). */
  pendingActionSweepGraceSeconds: () => secondsOf("PENDING_ACTION_SWEEP_GRACE_SECONDS") ?? 30,
  /** How often the embedded runtime's sweeper runs, seconds (default 30). */
  pendingActionSweepIntervalSeconds: () => secondsOf("PENDING_ACTION_SWEEP_INTERVAL_SECONDS") ?? 30,
  /**
   * How long a pending source, or a completed one not yet indexed, is left to its execution before the recovery
   * sweeper checks on it, seconds (default 120). The sweeper restarts it only when no execution of its attempt runs.
   */
  sourceSweepGraceSeconds: () => secondsOf("SOURCE_SWEEP_GRACE_SECONDS") ?? 120,
  /** How often the embedded runtime's source recovery sweeper runs, seconds (default 30). */
  sourceSweepIntervalSeconds: () => secondsOf("SOURCE_SWEEP_INTERVAL_SECONDS") ?? 30,
  /** Executions the sweeper starts again for one source before failing it (default 3). */
  sourceMaxRecoveries: () => count("SOURCE_MAX_RECOVERIES") ?? 3,
  /**
   * AI_ENGINE=openai-compatible (core/ai/openai.ts): the model server's OpenAI-compatible API, e.g.
   * http://127.0.0.1:11434/v1 (Ollama). @throws one sentence naming the setting when unset or not an http(s) URL.
   */
  openaiBaseUrl: (): string => {
    const value = env("OPENAI_BASE_URL");
    if (!value) {
      throw new SettingError("AI_ENGINE=openai-compatible needs OPENAI_BASE_URL, the model server's OpenAI-compatible API address (for Ollama: http://127.0.0.1:11434/v1).");
    }
    if (!/^https?:\/\/[^/\s]+/i.test(value)) {
      throw new SettingError(`OPENAI_BASE_URL must be an http(s) URL such as http://127.0.0.1:11434/v1, not "${value}".`);
    }
    return value;
  },
  /** AI_ENGINE=openai-compatible: the chat model every tier uses (it must support tool calling). @throws naming the setting when unset. */
  openaiModel: (): string => {
    const value = env("OPENAI_MODEL");
    if (!value) {
      throw new SettingError("AI_ENGINE=openai-compatible needs OPENAI_MODEL, the name of a chat model with tool calling that the server runs (for Ollama, e.g. qwen2.5:7b-instruct).");
    }
    return value;
  },
  /** AI_ENGINE=openai-compatible: API key sent as a bearer token; unset, no Authorization header is sent (local servers ignore it). */
  openaiApiKey: () => secret("OPENAI_API_KEY"),
  /** AI_ENGINE=openai-compatible: embedding model on the same server; unset, the local embedder (Universal Sentence Encoder) embeds. */
  openaiEmbeddingModel: () => env("OPENAI_EMBEDDING_MODEL"),
  /**
   * AI_ENGINE=openai-compatible: what the server charges, USD per 1M tokens (OPENAI_INPUT_USD_PER_1M_TOKENS,
   * OPENAI_OUTPUT_USD_PER_1M_TOKENS); default 0, a model server of your own. Every tier is priced alike.
   */
  openaiUsdPerMillionTokens: () => {
    const usd = (name: string): number => {
      const value = Number(env(name) ?? NaN);
      return Number.isFinite(value) && value >= 0 ? value : 0;
    };
    return { input: usd("OPENAI_INPUT_USD_PER_1M_TOKENS"), output: usd("OPENAI_OUTPUT_USD_PER_1M_TOKENS") };
  },
  /** Stripe secret API key ("sk_..."); unset, checkout, portal and boost checkout answer 503 naming it (DESIGN.md 6.3). */
  stripeSecretKey: () => secret("STRIPE_SECRET_KEY"),
  /**
   * Where the Stripe SDK sends API requests instead of https://api.stripe.com (tests and local fakes), e.g.
   * http://127.0.0.1:12111; unset in AWS. Its protocol, host and port become the SDK's options.
   */
  stripeApiBase: () => env("STRIPE_API_BASE"),
  /**
   * Signing secret of the Stripe webhook endpoint ("whsec_..."), checked by `POST /api/webhooks/payments`
   * (`stripe.webhooks.constructEvent`); unset, every delivery is refused with 400 naming it (spec 02 Errors).
   */
  stripeWebhookSecret: () => secret("STRIPE_WEBHOOK_SECRET"),
  /** URL of the SQS FIFO queue of verified payment events (AWS; stacks/Api.ts); unset locally, where the in-process queue serves. */
  paymentsQueueUrl: () => env("PAYMENTS_QUEUE_URL"),
  /**
   * The Stripe price id of a plan and billing interval: STRIPE_PRICE_PRO_MONTHLY, STRIPE_PRICE_PRO_YEARLY,
   * STRIPE_PRICE_GROWTH_MONTHLY, STRIPE_PRICE_GROWTH_YEARLY; undefined when unset (checkout answers 503 naming it).
   */
  stripePriceId: (plan: "pro" | "growth", interval: "monthly" | "yearly") => env(stripePriceSetting(plan, interval)),
  /**
   * The frontend's base URL (APP_URL, default http://localhost:3000): the default success, cancel and return URLs
   * of Stripe Checkout and the billing portal lead back to its billing settings page.
   */
  appUrl: () => (env("APP_URL") ?? "http://localhost:3000").replace(/\/+$/, ""),
  // --- Integrations (spec 02 integration sections; DESIGN.md 6.4): every provider address is a setting with the
  // public default, so GitHub Enterprise Server and stand-in providers work; client credentials are secrets.
  /** GitHub REST API base (GITHUB_API_URL; GitHub Enterprise Server: https://HOST/api/v3). */
  githubApiUrl: () => (env("GITHUB_API_URL") ?? "https://api.github.com").replace(/\/+$/, ""),
  /** GitHub web base (GITHUB_WEB_URL): OAuth authorize `/login/oauth/authorize` and token `/login/oauth/access_token`. */
  githubWebUrl: () => (env("GITHUB_WEB_URL") ?? "https://github.com").replace(/\/+$/, ""),
  /** Linear API base (LINEAR_API_URL): GraphQL at `/graphql`, OAuth token at `/oauth/token`. */
  linearApiUrl: () => (env("LINEAR_API_URL") ?? "https://api.linear.app").replace(/\/+$/, ""),
  /** Linear web base (LINEAR_WEB_URL): OAuth authorize at `/oauth/authorize`. */
  linearWebUrl: () => (env("LINEAR_WEB_URL") ?? "https://linear.app").replace(/\/+$/, ""),
  /** Atlassian API base (ATLASSIAN_API_URL): accessible resources and `/ex/jira/{cloud_id}` REST calls. */
  atlassianApiUrl: () => (env("ATLASSIAN_API_URL") ?? "https://api.atlassian.com").replace(/\/+$/, ""),
  /** Atlassian OAuth base (ATLASSIAN_AUTH_URL): `/authorize` and `/oauth/token`. */
  atlassianAuthUrl: () => (env("ATLASSIAN_AUTH_URL") ?? "https://auth.atlassian.com").replace(/\/+$/, ""),
  /** Google API base (GOOGLE_API_URL): Drive v3 and the userinfo of the connected account. */
  googleApiUrl: () => (env("GOOGLE_API_URL") ?? "https://www.googleapis.com").replace(/\/+$/, ""),
  /** Google OAuth authorize base (GOOGLE_AUTH_URL): `/o/oauth2/v2/auth`. */
  googleAuthUrl: () => (env("GOOGLE_AUTH_URL") ?? "https://accounts.google.com").replace(/\/+$/, ""),
  /** Google OAuth token base (GOOGLE_TOKEN_URL): `/token`. */
  googleTokenUrl: () => (env("GOOGLE_TOKEN_URL") ?? "https://oauth2.googleapis.com").replace(/\/+$/, ""),
  /**
   * How long one request to GitHub, Linear or Jira (the code host, planner and ticket tool adapters) may take before it
   * is aborted, in ms (PROVIDER_REQUEST_TIMEOUT_SECONDS, default 20 s; a positive number, fractions allowed; at most
   * {@link PROVIDER_REQUEST_TIMEOUT_MAX_MS}). A push holds its ticket for `PUSH_LEASE_MS` (core/ticket), so a create
   * must end, answered or aborted, well inside it: an aborted create is an outcome unknown, settled while the lease
   * still holds, and the retry finds the issue by its marker.
   */
  providerRequestTimeoutMs: (): number => {
    const seconds = secondsOf("PROVIDER_REQUEST_TIMEOUT_SECONDS");
    const ms = seconds && seconds > 0 ? Math.ceil(seconds * 1000) : PROVIDER_REQUEST_TIMEOUT_DEFAULT_MS;
    return Math.min(ms, PROVIDER_REQUEST_TIMEOUT_MAX_MS);
  },
  /**
   * What jira.js does with a Jira answer its schema does not describe (JIRA_SCHEMA_MISMATCH): "warn" (default: the
   * body is used, the field reported once on stderr; a site's locale or features must not break the integration) or
   * "throw" (the tests, where a mismatch is the thing under test).
   */
  jiraSchemaMismatch: (): "warn" | "throw" => (env("JIRA_SCHEMA_MISMATCH") === "throw" ? "throw" : "warn"),
  /**
   * OAuth client credentials of a provider (GITHUB_CLIENT_ID/_SECRET, LINEAR_..., ATLASSIAN_..., GOOGLE_...);
   * undefined parts when unset (connect answers 503 naming the settings).
   */
  oauthClient: (provider: "GITHUB" | "LINEAR" | "ATLASSIAN" | "GOOGLE") => ({
    id: secret(`${provider}_CLIENT_ID`),
    secret: secret(`${provider}_CLIENT_SECRET`),
  }),
  /**
   * The API's public base URL (API_URL, default http://127.0.0.1:3000): OAuth redirect URIs are
   * `<API_URL>/api/integrations/<kind>/callback`, exactly as registered with the provider.
   */
  apiUrl: () => (env("API_URL") ?? "http://127.0.0.1:3000").replace(/\/+$/, ""),
  /** KMS key (id, ARN or alias ARN) that wraps integration tokens in AWS (TOKEN_KMS_KEY_ID); unset locally. */
  tokenKmsKeyId: () => env("TOKEN_KMS_KEY_ID"),
  /**
   * Local only: the file holding the 256-bit AES key of the raw keyring that encrypts integration tokens
   * (TOKEN_KEY_FILE, default `<DATA_DIR or .data>/keys/integration-tokens.key`, made on first use).
   */
  tokenKeyFile: () => env("TOKEN_KEY_FILE") ?? `${env("DATA_DIR") ?? ".data"}/keys/integration-tokens.key`,
  /** URL of the SQS standard queue of integration work (push, sync) deferred by provider limits; unset locally. */
  integrationsQueueUrl: () => env("INTEGRATIONS_QUEUE_URL"),
  /** URL of the SQS FIFO queue of copilot exchanges memory learns from (DESIGN.md 6.6); unset locally. */
  memoryQueueUrl: () => env("MEMORY_QUEUE_URL"),
  // --- Growth and mail (spec 02 Admin growth; DESIGN.md 6.5 mail; core/growth, core/mail).
  /** Mail engine (MAIL_ENGINE): "ses" (Amazon SES v2, deployed stages) or "outbox" (.eml files, the default). */
  mailEngine: (): "ses" | "outbox" => (env("MAIL_ENGINE") === "ses" ? "ses" : "outbox"),
  /** Sender of the service's mail (MAIL_FROM), a verified SES identity in AWS; unset with SES, sending answers 503 naming it. */
  mailFrom: () => env("MAIL_FROM"),
  /** Where the outbox engine writes .eml files (MAIL_OUTBOX_DIR, default `<DATA_DIR or .data>/outbox`). */
  mailOutboxDir: () => env("MAIL_OUTBOX_DIR") ?? `${env("DATA_DIR") ?? ".data"}/outbox`,
  /** The spreadsheet POST /api/admin/plg/sync-sheets writes in deployed stages (GOOGLE_SHEETS_ID). */
  googleSheetsId: () => env("GOOGLE_SHEETS_ID"),
  /** Service-account key JSON of the Google Sheets sync (GOOGLE_SHEETS_CREDENTIALS, a secret). */
  googleSheetsCredentials: () => secret("GOOGLE_SHEETS_CREDENTIALS"),
  /** Local stage: the CSV that stands in for the spreadsheet (WAITLIST_CSV_PATH, default `<DATA_DIR or .data>/sheets/waitlist.csv`). */
  waitlistCsvPath: () => env("WAITLIST_CSV_PATH") ?? `${env("DATA_DIR") ?? ".data"}/sheets/waitlist.csv`,
};

/** The name of the setting holding a plan's Stripe price id for an interval (`STRIPE_PRICE_PRO_MONTHLY`, ...). */
export const stripePriceSetting = (plan: "pro" | "growth", interval: "monthly" | "yearly") =>
  `STRIPE_PRICE_${plan.toUpperCase()}_${interval.toUpperCase()}`;
