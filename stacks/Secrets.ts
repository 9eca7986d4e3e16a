import { Config, type StackContext } from "sst/constructs";
import { alarmTopic } from "./Alarms";
import { AWS_ENGINES } from "./defaults";

/**
 * Deploy-time settings of the service (DESIGN.md section 3: Secrets).
 *
 * The runtime reads plain environment variables through `core/config.ts`, never `sst/node/config`, so the same
 * handlers run unchanged on the embedded runtime. The two kinds of setting therefore reach a function differently:
 *
 * - Parameters (`Config.Parameter`): non-secret values fixed at deploy time. Their value is taken from the
 *   deploying shell's environment (or `.env.<stage>`, which `sst` loads) and passed to every function as an
 *   environment variable of the same name (see {@link runtimeEnvironment}). SST also records each one in SSM
 *   under `/sst/research-to-delivery/<stage>/Parameter/<NAME>/value`.
 * - Secrets (`Config.Secret`): set once per stage with `npx sst secrets set <NAME> <value> --stage <stage>`, stored
 *   encrypted in SSM, never in the template. They are *bound* to the functions that need them (stacks/Api.ts) with
 *   `prefetchSecrets`, so at deploy time SST writes the value into that function's environment as
 *   `SST_Secret_value_<NAME>` (a deploy fails with "secret values are not set" when one is missing).
 */

/** Names of the secrets; each is a `Config.Secret` of the same name. */
export const SECRET_NAMES = [
  "IDP_WEBHOOK_SECRET",
  "STRIPE_SECRET_KEY",
  "STRIPE_WEBHOOK_SECRET",
  // The OAuth apps of the four integration kinds (core/config.ts oauthClient): GitHub (code host), Linear (planner),
  // Atlassian (ticket tool, Jira Cloud), Google (file store, Drive). Bound only where stacks/integrations.ts says.
  "GITHUB_CLIENT_ID",
  "GITHUB_CLIENT_SECRET",
  "LINEAR_CLIENT_ID",
  "LINEAR_CLIENT_SECRET",
  "ATLASSIAN_CLIENT_ID",
  "ATLASSIAN_CLIENT_SECRET",
  "GOOGLE_CLIENT_ID",
  "GOOGLE_CLIENT_SECRET",
  // Service-account key JSON of the growth spreadsheet sync (core/growth/sheets.ts).
  "GOOGLE_SHEETS_CREDENTIALS",
] as const;
export type SecretName = (typeof SECRET_NAMES)[number];

/**
 * SSM rejects an empty parameter value, so an empty list is deployed as a lone comma; `core/config.ts` splits
 * lists on commas and drops empty entries, which reads it back as the empty list.
 */
export const EMPTY_LIST = ",";

/**
 * The parameters and how each gets its value from the deploying environment.
 * `required` ones stop the synth with a clear message instead of deploying a service that cannot verify tokens.
 */
const PARAMETERS = {
  /** Issuer (`iss`) of the identity provider's JWTs. */
  JWT_ISSUER: { required: true },
  /** Audience (`aud`) the JWTs must carry. */
  JWT_AUDIENCE: { required: true },
  /** JWKS of the issuer; defaults to the issuer's well-known location, as aws-jwt-verify does. */
  JWT_JWKS_URI: { fallback: (env: NodeJS.ProcessEnv) => `${(env.JWT_ISSUER ?? "").replace(/\/+$/, "")}/.well-known/jwks.json` },
  /** Comma-separated e-mails with admin rights on the growth endpoints (DESIGN.md section 5). */
  ADMIN_EMAILS: { fallback: () => EMPTY_LIST },
  /** Comma-separated e-mails of founders (always granted product access). */
  FOUNDER_EMAILS: { fallback: () => EMPTY_LIST },
  /** Product-led access gating; on unless explicitly turned off. */
  ACCESS_GATING: { fallback: () => "true" },
  /** Allowed browser origins, comma-separated; used for API Gateway CORS, the bucket's CORS and the handlers. */
  CORS_ORIGINS: { fallback: () => "*" },
} as const satisfies Record<string, { required?: boolean; fallback?: (env: NodeJS.ProcessEnv) => string }>;

export type ParameterName = keyof typeof PARAMETERS;
export const PARAMETER_NAMES = Object.keys(PARAMETERS) as ParameterName[];

/**
 * Resolve one parameter's value from the environment.
 * @throws Error when a required parameter is unset (except under `sst remove`, which never runs a function).
 */
function parameterValue(name: ParameterName, env: NodeJS.ProcessEnv, mode: string): string {
  const given = env[name]?.trim();
  if (given) return given;
  const spec: { required?: boolean; fallback?: (env: NodeJS.ProcessEnv) => string } = PARAMETERS[name];
  if (spec.fallback) return spec.fallback(env);
  if (mode === "remove") return "unset";
  throw new Error(`Parameter ${name} is not set: export ${name}=... (or put it in .env.<stage>) before running sst`);
}

/** The Secrets stack: one `Config.Secret` per secret, one `Config.Parameter` per setting, and the alarm topic. */
export function Secrets({ stack, app }: StackContext) {
  const secrets = Object.fromEntries(SECRET_NAMES.map((name) => [name, new Config.Secret(stack, name)])) as Record<
    SecretName,
    Config.Secret
  >;
  const parameters = Object.fromEntries(
    PARAMETER_NAMES.map((name) => [name, new Config.Parameter(stack, name, { value: parameterValue(name, process.env, app.mode) })]),
  ) as Record<ParameterName, Config.Parameter>;
  // The stage's one operational alarm topic (stacks/Alarms.ts), here because every other stack uses this one.
  const alarms = alarmTopic(stack);
  return { secrets, parameters, alarms };
}

/**
 * The model catalogue settings (core/ai/catalogue.ts): `MODEL_CATALOGUE` (JSON) and each tier's default model. Taken
 * from the deploying environment when set, and read there by the stacks too: the Bedrock grant allows exactly the
 * models they name (stacks/defaults.ts), so the functions must run with the same catalogue the grant was made from.
 */
export const AI_SETTINGS = ["MODEL_CATALOGUE", "BEDROCK_MODEL_SMALL", "BEDROCK_MODEL_MID", "BEDROCK_MODEL_LARGE"] as const;

/** The model catalogue settings the deploying environment sets. */
export const aiEnvironment = (env: NodeJS.ProcessEnv = process.env): Record<string, string> =>
  Object.fromEntries(AI_SETTINGS.flatMap((name) => (env[name]?.trim() ? [[name, env[name]!.trim()]] : [])));

/**
 * The environment variables every function of the service gets: the stage, the storage names, the AWS engine
 * switches, the model catalogue settings the deploy sets and every parameter under its own name, exactly the names
 * `core/config.ts` and `core/ai/catalogue.ts` read.
 */
export function runtimeEnvironment(
  stage: string,
  storage: { tableName: string; bucketName: string },
  parameters: Record<ParameterName, Config.Parameter>,
): Record<string, string> {
  return {
    STAGE: stage,
    TABLE_NAME: storage.tableName,
    BUCKET_NAME: storage.bucketName,
    LOG_LEVEL: "INFO",
    ...AWS_ENGINES,
    ...aiEnvironment(),
    ...Object.fromEntries(PARAMETER_NAMES.map((name) => [name, parameters[name].value])),
  };
}
