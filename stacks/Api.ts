import { ArnFormat, Duration, aws_apigatewayv2 as apigwv2, aws_iam as iam, aws_lambda_event_sources as sources, aws_sqs as sqs } from "aws-cdk-lib";
import { HttpJwtAuthorizer } from "aws-cdk-lib/aws-apigatewayv2-authorizers";
import { NagSuppressions } from "cdk-nag";
import { Cron, Api as HttpApi, Function, use, type StackContext } from "sst/constructs";
import { INTEGRATIONS_MAX_RECEIVE_COUNT, PAYMENTS_MAX_RECEIVE_COUNT } from "../core/queue";
import { MEMORY_MAX_RECEIVE_COUNT } from "../core/memory/settings";
import { CORS_ALLOW_HEADERS, type RouteSpec } from "../functions/lib/route";
import { DEFAULT_TIMEOUT_SECONDS, groups, routes, routesOf, timeoutOf } from "../functions/http/routes";
import {
  bedrockInvokeStatement,
  FUNCTION_DEFAULTS,
  grantBucket,
  grantTableData,
  grantTokenKey,
  pascal,
  sesSendStatement,
  settingsFrom,
  suppressBedrockRegions,
  suppressBoundSecrets,
  type BucketAccess,
} from "./defaults";
import { alarmOnDeadLetters, alarmOnErrors } from "./Alarms";
import { boundSecrets, GROUP_INTEGRATIONS, integrationEnvironment, integrationSecrets, INTEGRATIONS_CONSUMER_USE } from "./integrations";
import { Pipelines } from "./Pipelines";
import { runtimeEnvironment, Secrets, type SecretName } from "./Secrets";
import { Storage } from "./Storage";
import { suppressExecutions, Tasks } from "./Tasks";

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
  // The spreadsheet sync's service account (POST /api/admin/plg/sync-sheets).
  growth: ["GOOGLE_SHEETS_CREDENTIALS"],
  // The OAuth apps (stacks/integrations.ts): a kind's own group connects and exchanges codes (codehost: GitHub,
  // planner: Linear, tickettool: Atlassian, filestore: Google); tickets and stream may refresh the expiring tokens of
  // Linear and Atlassian (push, sync) or Linear and Google (the copilot's tools).
  ...Object.fromEntries(Object.entries(GROUP_INTEGRATIONS).map(([group, usage]) => [group, integrationSecrets(usage)])),
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
export const billingEnvironment = (env: NodeJS.ProcessEnv = process.env): Record<string, string> => settingsFrom(BILLING_SETTINGS, env);

/**
 * The groups that serve an OAuth callback (`GET /api/integrations/<kind>/callback`): they get API_URL, this API's own
 * URL, from the stack (the redirect URI registered with the provider is `<API_URL>/api/integrations/<kind>/callback`),
 * and APP_URL, where the callback sends the browser, from the deploying environment when set.
 */
export const callbackGroups = (): string[] =>
  groups().filter((group) => routesOf(group).some(([, route]) => route.method === "GET" && /^\/api\/integrations\/[a-z]+\/callback$/.test(route.path)));

/**
 * Growth settings that are not secrets, from the deploying environment when set: the sender of its mail (a verified
 * SES identity; the growth group's `ses:SendEmail` is limited to it), the spreadsheet of the waitlist sync, and the
 * app's address its mails point people to (core/growth). ADMIN_EMAILS, which says who may use the admin routes, is a
 * parameter every function gets (stacks/Secrets.ts).
 */
export const GROWTH_SETTINGS = ["MAIL_FROM", "GOOGLE_SHEETS_ID", "APP_URL"] as const;

/** The mail engine of deployed stages (core/mail): Amazon SES v2. */
export const MAIL_ENGINE = "ses";

/**
 * The consumer of deferred integration work (DESIGN.md 6.4): sync jobs GitHub rate-limited, from the integrations
 * queue. A job syncs one workspace's links (a few GitHub calls per link, paced by Octokit's limiter).
 */
export const INTEGRATIONS_CONSUMER_HANDLER = "functions/events/integrations-consumer.handler";
export const INTEGRATIONS_CONSUMER_TIMEOUT_SECONDS = 120;
/** The consumer's bucket calls: none (test/stacks/bucket-access.test.ts checks it against the jobs it runs). */
export const INTEGRATIONS_CONSUMER_BUCKET_ACCESS: readonly BucketAccess[] = [];

/** The consumer of verified Stripe events (DESIGN.md 6.3): applies them to the billing accounts. */
export const PAYMENTS_CONSUMER_HANDLER = "functions/events/payments-consumer.handler";
/** The consumer reads Stripe (a few calls of at most 10 s each) and writes a few transactions. */
export const PAYMENTS_CONSUMER_TIMEOUT_SECONDS = 60;

/**
 * The memory consumer (DESIGN.md 6.6; functions/events/memory-consumer.ts): learns facts from one copilot exchange
 * (a structured model call, embeddings of the candidate facts, reconciliation against the nearest ones).
 */
export const MEMORY_CONSUMER_HANDLER = "functions/events/memory-consumer.handler";
/** One exchange: a model call (at most a minute on a slow tier), a few embeddings and table writes. */
export const MEMORY_CONSUMER_TIMEOUT_SECONDS = 120;
/** The consumer's bucket calls: none (test/stacks/bucket-access.test.ts checks it). */
export const MEMORY_CONSUMER_BUCKET_ACCESS: readonly BucketAccess[] = [];
/**
 * Memory's outbox sweeper (core/memory/owed.ts; functions/events/memory-sweeper.ts): sends again the exchanges still
 * owed to memory 30 minutes after their answer, and drops those whose exchange is gone.
 */
export const MEMORY_SWEEPER_HANDLER = "functions/events/memory-sweeper.handler";
/** How often it runs: an exchange is due 30 minutes after its answer, so one lost is sent again within 35. */
export const MEMORY_SWEEPER_SCHEDULE = "rate(5 minutes)";
/**
 * The groups that run copilot streams, whose memory run hook (core/memory/hook.ts) puts each exchange on the memory
 * queue: MEMORY_QUEUE_URL and sqs:SendMessage on that queue. The stack test checks it against the bundles (the hook's
 * send is in exactly these). The task worker runs the agent loop without the run hooks, so it sends nothing there.
 */
export const MEMORY_SENDER_GROUPS: readonly string[] = ["stream"];

/** The tasks group spawns and cancels background tasks: StartExecution and StopExecution on the task state machine. */
export const GROUPS_RUNNING_TASKS: readonly string[] = ["tasks"];
/**
 * The groups that read the table's stream (the task progress stream, core/task/changes.ts): TABLE_STREAM_ARN, and
 * DescribeStream, GetShardIterator and GetRecords on that stream only. They never list streams (the ARN is given),
 * so there is no dynamodb:ListStreams on `*`.
 */
export const GROUPS_READING_TABLE_STREAM: readonly string[] = ["task-progress"];
/** The stream calls of core/task/changes.ts. */
export const TABLE_STREAM_ACTIONS = ["dynamodb:DescribeStream", "dynamodb:GetShardIterator", "dynamodb:GetRecords"] as const;

/** Groups that start an extraction themselves (reprocess of a research source); the rest only need the ARN. */
export const GROUPS_STARTING_EXTRACTION: readonly string[] = ["research"];

/**
 * What each endpoint group does with the uploads bucket (stacks/defaults.ts `BucketAccess`): the storage calls its
 * routes reach. A group not listed never touches the bucket (profile, billing, chat threads, pending-action reviews,
 * recommendations, docs). `list` goes with deleting a whole prefix: a research source, a document, a workspace
 * (workspaces: DELETE; webhooks: an identity-provider user deletion purges the workspaces the user owned).
 * test/stacks/bucket-access.test.ts checks this table against the code, so a new storage call fails there first.
 */
export const GROUP_BUCKET_ACCESS: Readonly<Record<string, readonly BucketAccess[]>> = {
  blocks: ["read"],
  documents: ["read", "write", "delete", "list"],
  generation: ["read", "write", "delete"],
  insights: ["read"],
  research: ["read", "write", "delete", "list"],
  stream: ["read", "write", "delete"],
  synthesis: ["read"],
  // Execution tickets read a document's content (stored in the bucket past 64 KiB) to push it.
  tickets: ["read"],
  webhooks: ["delete", "list"],
  workspaces: ["delete", "list"],
};

/**
 * Groups that run the AI ports inside the request (synthesis, insight search embeddings, recommendations and document
 * generation, the copilot's streams, memory search's query embeddings, the entropy scan on demand), and so invoke
 * Bedrock. The stack test checks it against the bundles: exactly the
 * groups whose bundle contains the Bedrock Runtime client.
 */
export const BEDROCK_GROUPS: readonly string[] = ["generation", "insights", "memory", "observability", "stream", "synthesis"];

/**
 * The HTTP API's authorizer of a route: the JWT authorizer for the routes that need a user (`user`, `admin`), none
 * for `public` (docs) and `webhook` routes (the handler verifies the provider's signature).
 */
export const routeAuthorizer = (route: Pick<RouteSpec, "access">): "jwt" | "none" =>
  route.access === "user" || route.access === "admin" ? "jwt" : "none";

const DOCS_OPEN = "Public API documentation (the OpenAPI document and Swagger UI's files): meant to be read without signing in; it holds no data.";
/**
 * Why each route without the JWT authorizer is open: the reason of its AwsSolutions-APIG4 suppression. An open route
 * (access `public` or `webhook`) missing here keeps its finding, so the stack test names it until its reason is
 * written down.
 */
export const OPEN_ROUTE_REASONS: Readonly<Record<string, string>> = {
  "GET /api/openapi.json": DOCS_OPEN,
  "GET /api/docs": DOCS_OPEN,
  "GET /api/docs/{asset}": DOCS_OPEN,
  "POST /api/webhooks/idp":
    "Identity-provider webhook: the sender has no user token; the handler verifies the Standard Webhooks signature (IDP_WEBHOOK_SECRET) over the raw body and rejects anything else.",
  "POST /api/webhooks/payments":
    "Stripe webhook: the sender has no user token; the handler verifies Stripe's signature (STRIPE_WEBHOOK_SECRET) over the raw body and rejects anything else.",
  "POST /api/waitlist":
    "Public waitlist sign-up: the visitor has no account yet; the handler validates the body, counts joins per client address (RATE_LIMIT_WAITLIST_JOIN) and answers the same 202 whatever happened, so it tells nothing about who is listed.",
  "GET /api/integrations/codehost/callback":
    "GitHub's OAuth redirect: the browser arrives without the app's bearer token; the handler acts only on a single-use state, at most 10 minutes old, that an authenticated connect request created for its user and workspace.",
  // The other integration kinds' OAuth redirects (core/integration/oauth.ts: one flow for every kind), when routed.
  ...Object.fromEntries(
    Object.values(routes as Record<string, RouteSpec>)
      .filter((r) => r.access === "public" && r.method === "GET" && /^\/api\/integrations\/[a-z]+\/callback$/.test(r.path) && !r.path.includes("/codehost/"))
      .map((r) => [
        routeKey(r),
        `OAuth redirect of the ${r.path.split("/")[3]} integration: the browser arrives from the provider without the app's bearer token; the handler acts only on a single-use state, at most 10 minutes old, that an authenticated connect request created for its user and workspace.`,
      ]),
  ),
};

/**
 * Per-group Node bundling. The docs group serves Swagger UI's static files from the `swagger-ui-dist` package
 * at run time (resolved from disk, not imported), so it is installed into the bundle instead of bundled.
 */
const GROUP_NODEJS: Record<string, { install: string[] }> = {
  docs: { install: ["swagger-ui-dist"] },
};

/**
 * One Lambda proxy integration (payload 2.0) shared by every route of a group. SST's Api, like CDK's
 * HttpLambdaIntegration, makes an integration and an invoke permission per route: three resources a route, which put
 * the stack over CloudFormation's 500 once the route table passed ~130 routes. Shared, a group costs one integration
 * and one permission (given by the stack, for this API), and each route only its own route resource.
 */
class GroupIntegration extends apigwv2.HttpRouteIntegration {
  constructor(id: string, private readonly fn: Function) {
    super(id);
  }
  bind(): apigwv2.HttpRouteIntegrationConfig {
    return { type: apigwv2.HttpIntegrationType.AWS_PROXY, uri: this.fn.functionArn, payloadFormatVersion: apigwv2.PayloadFormatVersion.VERSION_2_0 };
  }
}

/** Request headers browsers may send through API Gateway: the handlers' (CORS_ALLOW_HEADERS) and `x-request-id`. */
const GATEWAY_CORS_ALLOW_HEADERS = [...CORS_ALLOW_HEADERS, "x-request-id"];

/**
 * The Api stack: one API Gateway HTTP API generated from the route table (`functions/http/routes.ts`).
 *
 * Exactly one Lambda per endpoint group (handler `functions/http/<group>.handler`); every route of the group is
 * attached to that Function construct, so SST does not create a function per route. Routes that need a user sit
 * behind the HTTP API's JWT authorizer (issuer JWT_ISSUER, audience JWT_AUDIENCE), so a request without a valid
 * token never runs a Lambda; the functions still verify the token themselves (the middy stack), as they do on the
 * embedded runtime and on the Function URLs, which have no gateway in front. Public and webhook routes have no
 * authorizer. Every function gets the runtime environment of `core/config.ts`, table read/write, the bucket calls
 * its routes make ({@link GROUP_BUCKET_ACCESS}), Bedrock invocation of the catalogue's models if it runs the AI
 * ports ({@link BEDROCK_GROUPS}), and the extraction state machine's ARN.
 *
 * Beside the API: the payments queue (SQS FIFO, grouped by Stripe customer, with a dead-letter queue) that the
 * webhooks group sends verified Stripe events to, and its consumer Lambda (DESIGN.md 6.3); the integrations queue
 * (SQS standard, per-message delays, with a dead-letter queue) of work a provider rate-limited, and its consumer
 * (DESIGN.md 6.4). The integration groups get what stacks/integrations.ts says they use: the token key
 * (TOKEN_KMS_KEY_ID, Storage stack), the address settings of the providers they call, the OAuth apps' secrets they
 * hold, the integrations queue when they defer work, and API_URL and APP_URL when they serve an OAuth callback; the
 * growth group mails through SES from MAIL_FROM only. The memory queue (SQS FIFO per workspace and user, with a
 * dead-letter queue) takes the exchanges the copilot's stream group sends (MEMORY_QUEUE_URL), and its consumer learns
 * from them (DESIGN.md 6.6). The tasks group starts and stops executions of the task state machine (Tasks stack,
 * TASK_STATE_MACHINE_ARN); the task-progress group reads the table's stream (TABLE_STREAM_ARN).
 */
export function Api({ stack, app }: StackContext) {
  const { table, bucket, tokenKey } = use(Storage);
  const { secrets, parameters, alarms } = use(Secrets);
  const { extraction } = use(Pipelines);
  const { machine: taskMachine } = use(Tasks);
  const environment = {
    ...runtimeEnvironment(app.stage, { tableName: table.tableName, bucketName: bucket.bucketName }, parameters),
    EXTRACTION_STATE_MACHINE_ARN: extraction.stateMachineArn,
  };

  // Verified payment events (DESIGN.md 6.3): the webhook enqueues, the consumer applies. FIFO, grouped by Stripe
  // customer, so one account's events are applied one at a time in order; deduplicated by event id (5 minutes).
  // After PAYMENTS_MAX_RECEIVE_COUNT failed receives an event moves to the dead-letter queue, kept 14 days for redrive.
  // Both refuse requests not sent over TLS (a queue policy denying aws:SecureTransport false).
  const paymentsDeadLetters = new sqs.Queue(stack, "PaymentEventsDlq", { fifo: true, retentionPeriod: Duration.days(14), enforceSSL: true });
  const payments = new sqs.Queue(stack, "PaymentEvents", {
    fifo: true,
    enforceSSL: true,
    // Lambda's advice for SQS event sources: at least six times the function's timeout.
    visibilityTimeout: Duration.seconds(6 * PAYMENTS_CONSUMER_TIMEOUT_SECONDS),
    deadLetterQueue: { queue: paymentsDeadLetters, maxReceiveCount: PAYMENTS_MAX_RECEIVE_COUNT },
  });

  // Deferred integration work (DESIGN.md 6.4): a standard queue, because each job carries its own delay (a provider's
  // retry-after, at most 900 s), which FIFO queues do not allow. The groups that defer work send; its consumer runs
  // the job and may re-defer the remainder. After INTEGRATIONS_MAX_RECEIVE_COUNT failed receives a job moves to the
  // dead-letter queue (14 days). Both refuse requests not sent over TLS.
  const integrationsDeadLetters = new sqs.Queue(stack, "IntegrationsDlq", { retentionPeriod: Duration.days(14), enforceSSL: true });
  const integrations = new sqs.Queue(stack, "Integrations", {
    enforceSSL: true,
    visibilityTimeout: Duration.seconds(6 * INTEGRATIONS_CONSUMER_TIMEOUT_SECONDS),
    deadLetterQueue: { queue: integrationsDeadLetters, maxReceiveCount: INTEGRATIONS_MAX_RECEIVE_COUNT },
  });
  // Copilot exchanges to learn from (DESIGN.md 6.6): FIFO, grouped by workspace and user, so one person's facts are
  // reconciled one exchange at a time in order; deduplicated by the assistant message id. After
  // MEMORY_MAX_RECEIVE_COUNT failed receives an exchange moves to the dead-letter queue (14 days). TLS only.
  const memoryDeadLetters = new sqs.Queue(stack, "MemoryExchangesDlq", { fifo: true, retentionPeriod: Duration.days(14), enforceSSL: true });
  const memory = new sqs.Queue(stack, "MemoryExchanges", {
    fifo: true,
    enforceSSL: true,
    visibilityTimeout: Duration.seconds(6 * MEMORY_CONSUMER_TIMEOUT_SECONDS),
    deadLetterQueue: { queue: memoryDeadLetters, maxReceiveCount: MEMORY_MAX_RECEIVE_COUNT },
  });

  const callbacks = callbackGroups();
  const groupEnvironment = (group: string): Record<string, string> => {
    const usage = GROUP_INTEGRATIONS[group];
    const own = {
      ...(usage ? integrationEnvironment(usage, tokenKey, integrations.queueUrl) : {}),
      ...(callbacks.includes(group) ? settingsFrom(["APP_URL"]) : {}),
      ...(MEMORY_SENDER_GROUPS.includes(group) ? { MEMORY_QUEUE_URL: memory.queueUrl } : {}),
      ...(GROUPS_RUNNING_TASKS.includes(group) ? { TASK_STATE_MACHINE_ARN: taskMachine.stateMachineArn } : {}),
      ...(GROUPS_READING_TABLE_STREAM.includes(group) ? { TABLE_STREAM_ARN: table.cdk.table.tableStreamArn! } : {}),
    };
    switch (group) {
      case "billing":
        return { ...environment, ...billingEnvironment(), ...own };
      case "webhooks":
        return { ...environment, PAYMENTS_QUEUE_URL: payments.queueUrl, ...own };
      case "growth":
        return { ...environment, MAIL_ENGINE, ...settingsFrom(GROWTH_SETTINGS), ...own };
      default:
        return { ...environment, ...own };
    }
  };
  const mailFrom = settingsFrom(["MAIL_FROM"]).MAIL_FROM;

  const functions: Record<string, Function> = {};
  for (const group of groups()) {
    const bound = (GROUP_SECRETS[group] ?? []).map((name) => secrets[name]);
    const fn = new Function(stack, `Http${pascal(group)}`, {
      handler: groupHandler(group),
      description: `HTTP endpoint group ${group}`,
      environment: groupEnvironment(group),
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
    grantTableData(fn, table.cdk.table);
    grantBucket(fn, bucket.cdk.bucket, GROUP_BUCKET_ACCESS[group] ?? []);
    if (BEDROCK_GROUPS.includes(group)) {
      fn.addToRolePolicy(bedrockInvokeStatement(stack));
      suppressBedrockRegions(fn);
    }
    if (GROUPS_STARTING_EXTRACTION.includes(group)) extraction.grantStartExecution(fn);
    if (group === "webhooks") payments.grantSendMessages(fn);
    if (GROUP_INTEGRATIONS[group]) grantTokenKey(fn, tokenKey);
    if (GROUP_INTEGRATIONS[group]?.defers) integrations.grantSendMessages(fn);
    if (MEMORY_SENDER_GROUPS.includes(group)) memory.grantSendMessages(fn);
    if (GROUPS_RUNNING_TASKS.includes(group)) {
      taskMachine.grantStartExecution(fn);
      taskMachine.grantExecution(fn, "states:StopExecution");
      suppressExecutions(fn);
    }
    if (GROUPS_READING_TABLE_STREAM.includes(group)) {
      fn.addToRolePolicy(new iam.PolicyStatement({ actions: [...TABLE_STREAM_ACTIONS], resources: [table.cdk.table.tableStreamArn!] }));
    }
    // Without MAIL_FROM there is no sender to allow: mail answers 503 naming MAIL_FROM (core/mail).
    if (group === "growth" && mailFrom) fn.addToRolePolicy(sesSendStatement(stack, mailFrom));
    if (bound.length > 0) suppressBoundSecrets(fn);
    functions[group] = fn;
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
  grantTableData(paymentsConsumer, table.cdk.table);
  suppressBoundSecrets(paymentsConsumer);
  paymentsConsumer.addEventSource(new sources.SqsEventSource(payments, { batchSize: 1, reportBatchItemFailures: true }));

  // The integrations consumer: one job per invocation (each a workspace's sync or a document's push, with the whole
  // timeout to itself), partial batch responses as the handler reports. It opens GitHub, Linear and Jira tokens (the
  // key, their addresses), may refresh one (the OAuth apps' secrets), and re-defers a job a provider limits again
  // (sends to its own queue).
  const integrationsConsumer = new Function(stack, "IntegrationsConsumer", {
    handler: INTEGRATIONS_CONSUMER_HANDLER,
    description: "Run integration work a provider's rate limit deferred",
    environment: { ...environment, ...integrationEnvironment(INTEGRATIONS_CONSUMER_USE, tokenKey, integrations.queueUrl) },
    bind: boundSecrets(INTEGRATIONS_CONSUMER_USE, secrets),
    prefetchSecrets: true,
    timeout: INTEGRATIONS_CONSUMER_TIMEOUT_SECONDS,
  });
  grantTableData(integrationsConsumer, table.cdk.table);
  grantBucket(integrationsConsumer, bucket.cdk.bucket, INTEGRATIONS_CONSUMER_BUCKET_ACCESS);
  grantTokenKey(integrationsConsumer, tokenKey);
  integrations.grantSendMessages(integrationsConsumer);
  suppressBoundSecrets(integrationsConsumer);
  integrationsConsumer.addEventSource(new sources.SqsEventSource(integrations, { batchSize: 1, reportBatchItemFailures: true }));

  // The memory consumer: one exchange per invocation (batch size 1), partial batch responses as the handler reports
  // (core/queue consumeInOrder). Model extraction and embeddings (Bedrock), the table; no bucket, no integrations.
  const memoryConsumer = new Function(stack, "MemoryConsumer", {
    handler: MEMORY_CONSUMER_HANDLER,
    description: "Learn memory facts from copilot exchanges",
    environment,
    timeout: MEMORY_CONSUMER_TIMEOUT_SECONDS,
  });
  grantTableData(memoryConsumer, table.cdk.table);
  grantBucket(memoryConsumer, bucket.cdk.bucket, MEMORY_CONSUMER_BUCKET_ACCESS);
  memoryConsumer.addToRolePolicy(bedrockInvokeStatement(stack));
  suppressBedrockRegions(memoryConsumer);
  memoryConsumer.addEventSource(new sources.SqsEventSource(memory, { batchSize: 1, reportBatchItemFailures: true }));
  // Memory's outbox sweeper, on an EventBridge schedule: reads and deletes owed records in the table and sends their
  // exchanges again to the memory queue; no bucket, no Bedrock (the consumer learns).
  const memorySweeper = new Function(stack, "MemorySweeper", {
    handler: MEMORY_SWEEPER_HANDLER,
    description: "Send again copilot exchanges still owed to memory",
    environment: { ...environment, MEMORY_QUEUE_URL: memory.queueUrl },
    timeout: 60,
  });
  grantTableData(memorySweeper, table.cdk.table);
  memory.grantSendMessages(memorySweeper);
  new Cron(stack, "MemorySweep", { schedule: MEMORY_SWEEPER_SCHEDULE, job: memorySweeper });
  alarmOnErrors(memorySweeper, alarms);
  for (const dlq of [paymentsDeadLetters, integrationsDeadLetters, memoryDeadLetters]) alarmOnDeadLetters(dlq, alarms);

  const origins = parameters.CORS_ORIGINS.value.split(",").map((s) => s.trim()).filter(Boolean);
  const served = groups().filter((group) => !isStreamingGroup(group));
  const methods = [...new Set(served.flatMap((group) => routesOf(group).map(([, route]) => route.method)))] as ("GET" | "POST" | "PUT" | "PATCH" | "DELETE")[];
  const api = new HttpApi(stack, "Api", {
    cors: {
      allowOrigins: origins.length ? origins : ["*"],
      allowHeaders: GATEWAY_CORS_ALLOW_HEADERS,
      allowMethods: methods,
      exposeHeaders: ["x-request-id", "retry-after", "idempotent-replayed"],
      maxAge: "1 day",
    },
    accessLog: true,
  });
  const httpApi = api.cdk.httpApi as apigwv2.HttpApi;
  // The same issuer and audience the handlers verify (core/config.ts); API Gateway finds the issuer's keys through
  // its OpenID discovery document ({issuer}/.well-known/openid-configuration).
  const jwt = new HttpJwtAuthorizer("jwt", parameters.JWT_ISSUER.value, { authorizerName: "jwt", jwtAudience: [parameters.JWT_AUDIENCE.value] });
  const open = new apigwv2.HttpNoneAuthorizer();
  // The routes of the route table, each group's on one shared integration; API Gateway may invoke the group's
  // function for this API only.
  for (const group of served) {
    const fn = functions[group];
    const integration = new GroupIntegration(`Integration_${group}`, fn);
    for (const [, route] of routesOf(group)) {
      new apigwv2.HttpRoute(api, `Route_${route.method}_${route.path}`, {
        httpApi,
        routeKey: apigwv2.HttpRouteKey.with(route.path, apigwv2.HttpMethod[route.method as keyof typeof apigwv2.HttpMethod]),
        integration,
        authorizer: routeAuthorizer(route) === "jwt" ? jwt : open,
      });
    }
    fn.addPermission("ApiInvoke", {
      principal: new iam.ServicePrincipal("apigateway.amazonaws.com"),
      sourceArn: stack.formatArn({ service: "execute-api", resource: httpApi.apiId, resourceName: "*", arnFormat: ArnFormat.SLASH_RESOURCE_NAME }),
    });
  }

  // This API's own URL, for the OAuth redirect URIs. Set after the API exists: the function's environment then refers
  // to the HTTP API resource, which refers to no function (the routes' integrations do), so there is no cycle.
  for (const group of callbacks) functions[group].addEnvironment("API_URL", api.url);

  // Routes open by design carry no authorizer; each keeps AwsSolutions-APIG4 suppressed with its own reason.
  for (const node of api.node.findAll()) {
    if (!(node instanceof apigwv2.CfnRoute) || node.authorizationType !== "NONE") continue;
    const reason = OPEN_ROUTE_REASONS[node.routeKey];
    if (reason) NagSuppressions.addResourceSuppressions(node, [{ id: "AwsSolutions-APIG4", reason }]);
  }

  const longRunning = Object.fromEntries(
    Object.entries(functions)
      .filter(([group]) => timeoutOf(group) > DEFAULT_TIMEOUT_SECONDS || isStreamingGroup(group))
      .map(([group, fn]) => [`${pascal(group)}FunctionUrl`, fn.url ?? ""]),
  );
  stack.addOutputs({ ApiUrl: api.url, ...longRunning });
  return { api, functions, payments, paymentsDeadLetters, paymentsConsumer, integrations, integrationsDeadLetters, integrationsConsumer, memory, memoryDeadLetters, memoryConsumer, memorySweeper };
}
