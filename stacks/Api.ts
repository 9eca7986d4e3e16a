import { Duration, aws_lambda_event_sources as sources, aws_sqs as sqs } from "aws-cdk-lib";
import { Api as HttpApi, Function, use, type ApiRouteProps, type StackContext } from "sst/constructs";
import { PAYMENTS_MAX_RECEIVE_COUNT } from "../core/queue";
import { DEFAULT_TIMEOUT_SECONDS, groups, routesOf, timeoutOf } from "../functions/http/routes";
import { bedrockInvokeStatement, FUNCTION_DEFAULTS, pascal } from "./defaults";
import { Pipelines } from "./Pipelines";
import { runtimeEnvironment, Secrets, type SecretName } from "./Secrets";
import { Storage } from "./Storage";

/** The handler module of an endpoint group (DESIGN.md section 3: one Lambda per group). */
export const groupHandler = (group: string) => `functions/http/${group}.handler`;

/** API Gateway route key of a route-table row, e.g. `GET /api/workspaces/{workspace_id}`. */
export const routeKey = (route: { method: string; path: string }) => `${route.method} ${route.path}`;

/** A group whose routes stream (SSE): a response-streaming Lambda behind a Function URL only. */
export const isStreamingGroup = (group: string) => routesOf(group).some(([, route]) => route.streaming);

/**
 * Which endpoint groups get which secrets (bound with prefetch: the value arrives as `SST_Secret_value_<NAME>`).
 * Only the groups that verify or call the provider hold its secret; a group not listed gets none.
 */
export const GROUP_SECRETS: Record<string, readonly SecretName[]> = {
  // The payments webhook only verifies and enqueues; the payments consumer, which reads Stripe, has the key.
  webhooks: ["IDP_WEBHOOK_SECRET", "STRIPE_WEBHOOK_SECRET"],
  billing: ["STRIPE_SECRET_KEY"],
};

/**
 * Billing settings that are not secrets: Stripe's subscription price ids and the app's address (checkout return
 * URLs). Taken from the deploying environment when set; a price that is not set answers 503 naming it (core/config.ts).
 */
export const BILLING_SETTINGS = [
  "STRIPE_PRICE_PRO_MONTHLY",
  "STRIPE_PRICE_PRO_YEARLY",
  "STRIPE_PRICE_GROWTH_MONTHLY",
  "STRIPE_PRICE_GROWTH_YEARLY",
  "APP_URL",
] as const;

/** The billing settings the deploying environment sets, for the billing group's functions. */
export const billingEnvironment = (env: NodeJS.ProcessEnv = process.env): Record<string, string> =>
  Object.fromEntries(BILLING_SETTINGS.flatMap((name) => (env[name]?.trim() ? [[name, env[name]!.trim()]] : [])));

/** The consumer of verified Stripe events (DESIGN.md 6.3): applies them to the billing accounts. */
export const PAYMENTS_CONSUMER_HANDLER = "functions/events/payments-consumer.handler";
/** The consumer reads Stripe (a few calls of at most 10 s each) and writes a few transactions. */
export const PAYMENTS_CONSUMER_TIMEOUT_SECONDS = 60;

/** Groups that start an extraction themselves (reprocess of a research source); the rest only need the ARN. */
export const GROUPS_STARTING_EXTRACTION: readonly string[] = ["research"];

/**
 * Per-group Node bundling. The docs group serves Swagger UI's static files from the `swagger-ui-dist` package
 * at run time (resolved from disk, not imported), so it is installed into the bundle instead of bundled.
 */
const GROUP_NODEJS: Record<string, { install: string[] }> = {
  docs: { install: ["swagger-ui-dist"] },
};

/** Request headers browsers may send; `authorization` must be named, a wildcard does not cover it. */
const CORS_ALLOW_HEADERS = ["authorization", "content-type", "idempotency-key", "x-request-id"];

/**
 * The Api stack: one API Gateway HTTP API generated from the route table (`functions/http/routes.ts`).
 *
 * Exactly one Lambda per endpoint group (handler `functions/http/<group>.handler`); every route of the group is
 * attached to that Function construct, so SST does not create a function per route. JWTs are verified inside
 * the functions (the middy stack), so the gateway itself has no authorizer: public, user and webhook routes all
 * reach their function. Every function gets the runtime environment of `core/config.ts`, table and bucket
 * read/write, Bedrock model invocation, and the extraction state machine's ARN.
 *
 * Beside the API: the payments queue (SQS FIFO, grouped by Stripe customer, with a dead-letter queue) that the
 * webhooks group sends verified Stripe events to, and its consumer Lambda (DESIGN.md 6.3).
 */
export function Api({ stack, app }: StackContext) {
  const { table, bucket } = use(Storage);
  const { secrets, parameters } = use(Secrets);
  const { extraction } = use(Pipelines);
  const environment = {
    ...runtimeEnvironment(app.stage, { tableName: table.tableName, bucketName: bucket.bucketName }, parameters),
    EXTRACTION_STATE_MACHINE_ARN: extraction.stateMachineArn,
  };

  // Verified payment events (DESIGN.md 6.3): the webhook enqueues, the consumer applies. FIFO, grouped by Stripe
  // customer, so one account's events are applied one at a time in order; deduplicated by event id (5 minutes).
  // After PAYMENTS_MAX_RECEIVE_COUNT failed receives an event moves to the dead-letter queue, kept 14 days for redrive.
  const paymentsDeadLetters = new sqs.Queue(stack, "PaymentEventsDlq", { fifo: true, retentionPeriod: Duration.days(14) });
  const payments = new sqs.Queue(stack, "PaymentEvents", {
    fifo: true,
    // Lambda's advice for SQS event sources: at least six times the function's timeout.
    visibilityTimeout: Duration.seconds(6 * PAYMENTS_CONSUMER_TIMEOUT_SECONDS),
    deadLetterQueue: { queue: paymentsDeadLetters, maxReceiveCount: PAYMENTS_MAX_RECEIVE_COUNT },
  });

  const functions: Record<string, Function> = {};
  const routes: Record<string, ApiRouteProps<string>> = {};
  for (const group of groups()) {
    const bound = (GROUP_SECRETS[group] ?? []).map((name) => secrets[name]);
    const fn = new Function(stack, `Http${pascal(group)}`, {
      handler: groupHandler(group),
      description: `HTTP endpoint group ${group}`,
      environment:
        group === "billing"
          ? { ...environment, ...billingEnvironment() }
          : group === "webhooks"
            ? { ...environment, PAYMENTS_QUEUE_URL: payments.queueUrl }
            : environment,
      bind: bound,
      prefetchSecrets: bound.length > 0,
      ...(GROUP_NODEJS[group] ? { nodejs: { ...FUNCTION_DEFAULTS.nodejs, ...GROUP_NODEJS[group] } } : {}),
      // The AI groups block for up to a minute (spec 01 typical durations): a longer timeout, and a Function URL
      // (auth still by our JWT check), because API Gateway cuts integrations off at 30 s.
      timeout: timeoutOf(group),
      // SSE groups stream their response (DESIGN.md 6.1): API Gateway HTTP APIs cannot, so they are served only on a
      // Function URL in RESPONSE_STREAM mode (same JWT check inside).
      ...(isStreamingGroup(group)
        ? { url: { authorizer: "none" as const, cors: false, streaming: true } }
        : timeoutOf(group) > DEFAULT_TIMEOUT_SECONDS
          ? { url: { authorizer: "none" as const, cors: false } }
          : {}),
    });
    table.cdk.table.grantReadWriteData(fn);
    bucket.cdk.bucket.grantReadWrite(fn);
    // Synthesis, recommendations, documents and chat all run the AI ports inside the request.
    fn.addToRolePolicy(bedrockInvokeStatement(stack));
    if (GROUPS_STARTING_EXTRACTION.includes(group)) extraction.grantStartExecution(fn);
    if (group === "webhooks") payments.grantSendMessages(fn);
    functions[group] = fn;
    if (!isStreamingGroup(group)) for (const [, route] of routesOf(group)) routes[routeKey(route)] = { function: fn };
  }

  // The consumer: one event per invocation (batch size 1), so an event that keeps failing does not take the
  // events behind it in its group to the dead-letter queue with it; partial batch responses as the handler reports.
  // It reads Stripe (STRIPE_SECRET_KEY) and maps prices to plans (the billing settings).
  const stripeKey = [secrets.STRIPE_SECRET_KEY];
  const paymentsConsumer = new Function(stack, "PaymentsConsumer", {
    handler: PAYMENTS_CONSUMER_HANDLER,
    description: "Apply verified Stripe events to the billing accounts",
    environment: { ...environment, ...billingEnvironment() },
    bind: stripeKey,
    prefetchSecrets: true,
    timeout: PAYMENTS_CONSUMER_TIMEOUT_SECONDS,
  });
  table.cdk.table.grantReadWriteData(paymentsConsumer);
  paymentsConsumer.addEventSource(new sources.SqsEventSource(payments, { batchSize: 1, reportBatchItemFailures: true }));

  const origins = parameters.CORS_ORIGINS.value.split(",").map((s) => s.trim()).filter(Boolean);
  const methods = [...new Set(Object.keys(routes).map((key) => key.split(" ")[0]))] as ("GET" | "POST" | "PUT" | "PATCH" | "DELETE")[];
  const api = new HttpApi(stack, "Api", {
    cors: {
      allowOrigins: origins.length ? origins : ["*"],
      allowHeaders: CORS_ALLOW_HEADERS,
      allowMethods: methods,
      exposeHeaders: ["x-request-id"],
      maxAge: "1 day",
    },
    accessLog: true,
    routes,
  });

  const longRunning = Object.fromEntries(
    Object.entries(functions)
      .filter(([group]) => timeoutOf(group) > DEFAULT_TIMEOUT_SECONDS || isStreamingGroup(group))
      .map(([group, fn]) => [`${pascal(group)}FunctionUrl`, fn.url ?? ""]),
  );
  stack.addOutputs({ ApiUrl: api.url, ...longRunning });
  return { api, functions, payments, paymentsDeadLetters, paymentsConsumer };
}
