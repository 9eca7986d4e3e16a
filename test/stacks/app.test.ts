import { execFile } from "node:child_process";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { mkdtemp, readdir, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { promisify } from "node:util";
import { Aspects } from "aws-cdk-lib";
import { Annotations, Match, Template } from "aws-cdk-lib/assertions";
import { AwsSolutionsChecks } from "cdk-nag";
import { App, getStack } from "sst/constructs";
import { initProject, setProject, useProject } from "sst/project.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import sstConfig from "../../sst.config";
import { createTableInput, RUN_LIST_ATTRIBUTES, SLIM_LIST_ATTRIBUTES, TABLE_KEYS } from "../../core/db/table";
import { toApiGatewayEvent } from "../../local/apigw";
import { groups, routes, routesOf, timeoutOf, DEFAULT_TIMEOUT_SECONDS } from "../../functions/http/routes";
import { STEP_TASKS, extractionDefinition, type StepTaskName } from "../../functions/steps/extraction.asl";
import {
  Api,
  BEDROCK_GROUPS,
  GROUP_BUCKET_ACCESS,
  GROUP_SECRETS,
  groupHandler,
  INTEGRATIONS_CONSUMER_BUCKET_ACCESS,
  INTEGRATIONS_CONSUMER_HANDLER,
  INTEGRATIONS_CONSUMER_TIMEOUT_SECONDS,
  isStreamingGroup,
  GROUPS_READING_TABLE_STREAM,
  GROUPS_RUNNING_TASKS,
  MEMORY_CONSUMER_BUCKET_ACCESS,
  MEMORY_CONSUMER_HANDLER,
  MEMORY_CONSUMER_TIMEOUT_SECONDS,
  MEMORY_SENDER_GROUPS,
  MEMORY_SWEEPER_HANDLER,
  MEMORY_SWEEPER_SCHEDULE,
  TABLE_STREAM_ACTIONS,
  MAIL_ENGINE,
  OPEN_ROUTE_REASONS,
  PAYMENTS_CONSUMER_HANDLER,
  PAYMENTS_CONSUMER_TIMEOUT_SECONDS,
  routeAuthorizer,
  routeKey,
  callbackGroups,
} from "../../stacks/Api";
import {
  EXECUTOR_INTEGRATIONS,
  GROUP_INTEGRATIONS,
  INTEGRATIONS_CONSUMER_USE,
  PROVIDER_ADDRESSES,
  oauthAppSecrets,
  type IntegrationUse,
  type Provider,
} from "../../stacks/integrations";
import { INTEGRATIONS_MAX_RECEIVE_COUNT, PAYMENTS_MAX_RECEIVE_COUNT } from "../../core/queue";
import { MEMORY_MAX_RECEIVE_COUNT } from "../../core/memory/settings";
import { Tasks } from "../../stacks/Tasks";
import {
  Pipelines,
  SOURCE_SWEEPER_BUCKET_ACCESS,
  SOURCE_SWEEPER_HANDLER,
  SOURCE_SWEEPER_SCHEDULE,
  STEP_BUCKET_ACCESS,
  UPLOAD_BUCKET_ACCESS,
  UPLOAD_HANDLER,
  stepHandler,
  substitutionKey,
} from "../../stacks/Pipelines";
import {
  EXECUTOR_BUCKET_ACCESS,
  EXECUTOR_TIMEOUT_SECONDS,
  PENDING_ACTION_CONSUMER_HANDLER,
  PENDING_ACTION_SWEEPER_HANDLER,
  PendingActions,
  SWEEPER_SCHEDULE,
} from "../../stacks/PendingActions";
import { APPROVED_STREAM_FILTER } from "../../core/pending-action/pending-action.entity";
import { Secrets } from "../../stacks/Secrets";
import { Billing, CREDIT_SWEEPER_HANDLER, CREDIT_SWEEPER_SCHEDULE } from "../../stacks/Billing";
import { ACCESS_LOG_PREFIX, ACCESS_LOG_RETENTION_DAYS, Storage, UPLOAD_PREFIX } from "../../stacks/Storage";
import { BUCKET_OBJECT_ACTIONS, mailIdentity, pascal, STORED_OBJECTS_PREFIX, TABLE_DATA_ACTIONS, TOKEN_KEY_ACTIONS, type BucketAccess } from "../../stacks/defaults";
import { bedrockResourceArns, DEFAULT_CATALOGUE, EMBEDDING_MODEL_ID } from "../../core/ai/catalogue";
import type { RouteSpec } from "../../functions/lib/route";

/*
 * Stack tests (DESIGN.md section 2): the whole app is synthesized once, offline, the way `sst deploy` does it but
 * without the STS call: initProject reads sst.config.ts, an App in "deploy" mode runs the config's stacks, and
 * app.finish() runs SST's deferred tasks, which bundle every function with esbuild (a missing or broken handler
 * fails here). NODE_ENV=test is SST's own switch for skipping the bootstrap-stack lookup in AWS.
 */

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
// Bundling ~20 functions takes 30-60 s on an idle 2-core machine and stretches with CPU contention (a full
// `npm test` runs other files beside this one), hence the generous limit on the one beforeAll that does it.
const BUILD_TIMEOUT = 600_000;
const execFileAsync = promisify(execFile);

// Deploy-time settings as an operator would export them; values distinct enough to trace into the template.
const SETTINGS = {
  JWT_ISSUER: "https://idp.example.test/",
  JWT_AUDIENCE: "r2d-api",
  ADMIN_EMAILS: "ops@example.test",
  ACCESS_GATING: undefined,
  JWT_JWKS_URI: undefined,
  FOUNDER_EMAILS: undefined,
  CORS_ORIGINS: undefined,
  // Billing settings: two set, the rest left out (they reach only the billing group, and only when set).
  STRIPE_PRICE_PRO_MONTHLY: "price_test_pro_monthly",
  APP_URL: "https://app.example.test",
  STRIPE_PRICE_PRO_YEARLY: undefined,
  STRIPE_PRICE_GROWTH_MONTHLY: undefined,
  STRIPE_PRICE_GROWTH_YEARLY: undefined,
  // Model catalogue: the defaults, with the small tier pointed at a model outside them (added to the catalogue, so
  // it must reach the functions and the Bedrock grant alike).
  MODEL_CATALOGUE: undefined,
  BEDROCK_MODEL_SMALL: "us.anthropic.claude-haiku-4-5-20251001-v1:0",
  BEDROCK_MODEL_MID: undefined,
  BEDROCK_MODEL_LARGE: undefined,
  // Provider addresses: some set (they must reach exactly the functions that call the provider), some left to their
  // defaults (then absent everywhere). API_URL is the stack's own.
  GITHUB_API_URL: "https://ghe.example.test/api/v3",
  GITHUB_WEB_URL: undefined,
  LINEAR_API_URL: "https://linear-api.example.test",
  LINEAR_WEB_URL: undefined,
  ATLASSIAN_API_URL: "https://atlassian-api.example.test",
  ATLASSIAN_AUTH_URL: "https://atlassian-auth.example.test",
  GOOGLE_API_URL: "https://google-api.example.test",
  GOOGLE_AUTH_URL: undefined,
  GOOGLE_TOKEN_URL: "https://google-token.example.test",
  API_URL: undefined,
  // Growth: the sender (with a display name) and the spreadsheet.
  MAIL_FROM: "Research to Delivery <no-reply@mail.example.test>",
  GOOGLE_SHEETS_ID: "sheet-test-id",
  // Operational alarms: the address subscribed to the stage's alarm topic.
  ALARM_EMAIL: "oncall@example.test",
};

type Resource = { Type: string; Properties: Record<string, any> };
type Resources = Record<string, Resource>;

let work: string;
let outdir: string;
let savedEnv: Record<string, string | undefined>;
const templates = {} as Record<"Secrets" | "Storage" | "Pipelines" | "Tasks" | "Api" | "PendingActions" | "Billing", Template>;

/** The handler file of a `path/to/file.handler` string, as SST looks it up. */
const handlerFile = (handler: string) => join(ROOT, `${handler.slice(0, handler.lastIndexOf("."))}.ts`);

const resourcesOf = (template: Template, type: string): Resources => template.findResources(type) as Resources;

/** Lambda functions of a template keyed by logical id, with the handler SST's bundler gave them. */
const lambdas = (template: Template) => resourcesOf(template, "AWS::Lambda::Function");

/** The single logical id of the Lambda whose handler is `handler`; fails when there are none or several. */
function lambdaIdFor(template: Template, handler: string): string {
  const ids = Object.entries(lambdas(template))
    .filter(([, r]) => r.Properties.Handler === handler)
    .map(([id]) => id);
  expect(ids, `Lambdas with handler ${handler}`).toHaveLength(1);
  return ids[0];
}

const getAttArn = (logicalId: string) => ({ "Fn::GetAtt": [logicalId, "Arn"] });

/** Each queue's policy refuses requests not sent over TLS. */
function expectTlsOnlyQueues(template: Template, queueIds: string[]): void {
  for (const queueId of queueIds) {
    const statements = Object.values(resourcesOf(template, "AWS::SQS::QueuePolicy"))
      .filter((p) => JSON.stringify(p.Properties.Queues) === JSON.stringify([{ Ref: queueId }]))
      .flatMap((p) => p.Properties.PolicyDocument.Statement);
    expect(statements, queueId).toEqual(
      expect.arrayContaining([expect.objectContaining({ Effect: "Deny", Action: "sqs:*", Condition: { Bool: { "aws:SecureTransport": "false" } } })]),
    );
  }
}

/**
 * The queue's consumer: the one event source mapping on the queue (and the only one of the handler's function), one
 * message a batch, with partial batch responses. @returns the consumer function's logical id and properties
 */
function expectPartialBatchConsumer(template: Template, queueId: string, handler: string) {
  const consumerId = lambdaIdFor(template, handler);
  const mappings = Object.values(resourcesOf(template, "AWS::Lambda::EventSourceMapping"))
    .map((r) => r.Properties)
    .filter((m) => JSON.stringify(m.EventSourceArn) === JSON.stringify(getAttArn(queueId)) || JSON.stringify(m.FunctionName) === JSON.stringify({ Ref: consumerId }));
  expect(mappings).toEqual([
    expect.objectContaining({ EventSourceArn: getAttArn(queueId), FunctionName: { Ref: consumerId }, BatchSize: 1, FunctionResponseTypes: ["ReportBatchItemFailures"] }),
  ]);
  return { consumerId, consumer: lambdas(template)[consumerId].Properties };
}

/** The template's one EventBridge rule runs `handler` every minute, allowed to invoke it; @returns the Lambda's id. */
function expectRunEveryMinute(template: Template, handler: string): string {
  const fnId = lambdaIdFor(template, handler);
  const rules = Object.values(resourcesOf(template, "AWS::Events::Rule")).map((r) => r.Properties);
  expect(rules).toHaveLength(1);
  expect(rules[0].ScheduleExpression).toBe("rate(1 minute)");
  expect(rules[0].Targets).toEqual([expect.objectContaining({ Arn: getAttArn(fnId) })]);
  template.hasResourceProperties("AWS::Lambda::Permission", { Action: "lambda:InvokeFunction", Principal: "events.amazonaws.com", FunctionName: getAttArn(fnId) });
  return fnId;
}

/** Every IAM statement of the policies attached to a Lambda's role. */
function statementsOf(template: Template, fnId: string): { Effect: string; Action: string | string[]; Resource: unknown; Condition?: unknown }[] {
  const role = lambdas(template)[fnId].Properties.Role["Fn::GetAtt"][0] as string;
  return Object.values(resourcesOf(template, "AWS::IAM::Policy"))
    .map((r) => r.Properties)
    .filter((p) => p.Roles.some((r: { Ref: string }) => r.Ref === role))
    .flatMap((p) => p.PolicyDocument.Statement);
}
const actionsIn = (statement: { Action: string | string[] }) => [statement.Action].flat();

/** The storage stack's exports, as the other stacks import them. */
const imported = (what: RegExp) => ({ "Fn::ImportValue": expect.stringMatching(what) });
const UPLOADS_ARN = /UploadsBucket.*Arn/;
const TOKEN_KEY_ARN = /IntegrationTokens.*Arn/;
const TABLE_ARN = /Table[0-9A-F]+Arn/;

/**
 * The function's table grant: the item-level actions on the table and on each named index, nothing wider (no `index/*`,
 * no Scan), in one statement.
 */
function expectTableGrant(template: Template, fnId: string): void {
  // Stream reads of an event source (on the stream's ARN, and ListStreams on `*`) are the event source's, not this grant.
  const dynamo = statementsOf(template, fnId).filter(
    (st) => actionsIn(st).some((a) => a.startsWith("dynamodb:")) && st.Resource !== "*" && !JSON.stringify(st.Resource).includes("StreamArn"),
  );
  expect(dynamo, fnId).toHaveLength(1);
  expect(actionsIn(dynamo[0]).sort()).toEqual([...TABLE_DATA_ACTIONS].sort());
  expect(dynamo[0].Resource).toEqual([
    imported(TABLE_ARN),
    ...Object.keys(TABLE_KEYS.globalIndexes).map((name) => ({ "Fn::Join": ["", [imported(TABLE_ARN), `/index/${name}`]] })),
  ]);
}

/**
 * The function's bucket grant is exactly `access`: the object actions on `workspaces/*` of the uploads bucket, and
 * s3:ListBucket on the bucket with read or list; no other S3 action anywhere in its policies.
 */
function expectBucketGrant(template: Template, fnId: string, access: readonly BucketAccess[], label: string): void {
  const s3 = statementsOf(template, fnId).filter((st) => actionsIn(st).some((a) => a.startsWith("s3:")));
  const objectActions = access.flatMap((a) => (a === "list" ? [] : [BUCKET_OBJECT_ACTIONS[a]])).sort();
  const lists = access.includes("read") || access.includes("list");
  const expected = [
    ...(objectActions.length ? [{ Effect: "Allow", Action: objectActions.length === 1 ? objectActions[0] : objectActions, Resource: { "Fn::Join": ["", [imported(UPLOADS_ARN), `/${STORED_OBJECTS_PREFIX}*`]] } }] : []),
    ...(lists ? [{ Effect: "Allow", Action: "s3:ListBucket", Resource: imported(UPLOADS_ARN) }] : []),
  ];
  const normalized = s3.map((st) => ({ ...st, Action: Array.isArray(st.Action) ? [...st.Action].sort() : st.Action }));
  expect(normalized, label).toEqual(expected);
}

/** The function may invoke exactly the catalogue's models and the embedding model, or (`false`) no Bedrock at all. */
function expectBedrockGrant(template: Template, stack: Parameters<typeof getStack>[0], fnId: string, granted: boolean, label: string): void {
  const bedrock = statementsOf(template, fnId).filter((st) => actionsIn(st).some((a) => a.startsWith("bedrock:")));
  if (!granted) {
    expect(bedrock, label).toEqual([]);
    return;
  }
  const resolved = getStack(stack).resolve(bedrockResourceArns(getStack(stack)));
  expect(bedrock, label).toEqual([
    { Effect: "Allow", Action: ["bedrock:InvokeModel", "bedrock:InvokeModelWithResponseStream"], Resource: resolved },
  ]);
}

/** Every file SST bundled for a function (its chunks, and packages installed beside them), as one string. */
function bundleText(fn: Resource): string {
  const dir = join(outdir, `asset.${(fn.Properties.Code.S3Key as string).replace(/\.zip$/, "")}`);
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile() && /\.(m?js|cjs)$/.test(entry.name))
    .map((entry) => readFileSync(join(entry.parentPath, entry.name), "utf8"))
    .join("\n");
}

/**
 * What a bundle shows its code does with integrations: whose tokens it opens (oauth4webapi comes with
 * core/integration/oauth.ts `grantOf`), which providers it calls (each provider's SDK leaves its own string: Octokit's
 * user agent, the Linear SDK's, jira.js's schema-mismatch option, Drive's namespace), and whether it defers work to
 * the integrations queue (the job types of core/integration/jobs.ts, as the call sites build them).
 */
const PROVIDER_MARKS: Record<Provider, string> = { GITHUB: "octokit-core.js/", LINEAR: '"@linear/sdk"', ATLASSIAN: "onSchemaMismatch", GOOGLE: "drive_v3" };
const PROVIDERS = Object.keys(PROVIDER_MARKS) as Provider[];
const integrationsSeen = new Map<string, { opensTokens: boolean; calls: Provider[]; defers: boolean }>();
function integrationsIn(fn: Resource): { opensTokens: boolean; calls: Provider[]; defers: boolean } {
  const key = fn.Properties.Code.S3Key as string;
  if (!integrationsSeen.has(key)) {
    const text = bundleText(fn);
    integrationsSeen.set(key, {
      opensTokens: text.includes("oauth4webapi/v"),
      calls: PROVIDERS.filter((p) => text.includes(PROVIDER_MARKS[p])),
      defers: /type:"(codehost|planner|tickets)\.(sync|push)"/.test(text),
    });
  }
  return integrationsSeen.get(key)!;
}

/**
 * Only what `*` may stand for in a function's policies: X-Ray's calls (every traced function) and, for the extraction
 * tasks, the Textract and Transcribe calls (neither has resource-level permissions). Anything else with `*` fails here,
 * which keeps the `Resource::*` suppressions of the stacks honest.
 */
function expectWildcardsOnlyFor(template: Template, fnId: string, allowed: RegExp): void {
  for (const st of statementsOf(template, fnId).filter((x) => x.Resource === "*")) {
    for (const action of actionsIn(st)) expect(action, fnId).toMatch(allowed);
  }
}
const TRACING = /^xray:(PutTraceSegments|PutTelemetryRecords)$/;

/** AWS's recommended Retry set for a Lambda task, and Lambda.Unknown (a runtime that died); written out, not imported. */
const LAMBDA_TRANSIENT_FAULTS = ["Lambda.AWSLambdaException", "Lambda.SdkClientException", "Lambda.ServiceException", "Lambda.TooManyRequestsException", "Lambda.Unknown"];

/** Every stack's template, by stack name. */
const allTemplates = () => Object.entries(templates) as [string, Template][];

/** The `Fn::GetAtt` target of a `{ "Fn::GetAtt": [id, "Arn"] }`, else undefined. */
const getAttTarget = (value: unknown): string | undefined => {
  const att = (value as { "Fn::GetAtt"?: [string, string] } | undefined)?.["Fn::GetAtt"];
  return att?.[1] === "Arn" ? att[0] : undefined;
};

/**
 * How an alarm of `stackName` names the stage's alarm topic: a Ref in the Secrets stack that holds it, the Secrets
 * stack's export of that Ref anywhere else.
 */
function alarmTopicIn(stackName: string): unknown {
  const topics = Object.keys(resourcesOf(templates.Secrets, "AWS::SNS::Topic"));
  expect(topics).toHaveLength(1);
  if (stackName === "Secrets") return { Ref: topics[0] };
  const outputs = Object.values(templates.Secrets.toJSON().Outputs ?? {}) as { Value: unknown; Export?: { Name: string } }[];
  const exported = outputs.filter((o) => JSON.stringify(o.Value) === JSON.stringify({ Ref: topics[0] }) && o.Export);
  expect(exported).toHaveLength(1);
  return { "Fn::ImportValue": exported[0].Export!.Name };
}

/** The stack's CloudWatch alarms on `metric` of `namespace` whose one dimension `dimension` is `value`. */
function alarmsOn(template: Template, namespace: string, metric: string, dimension: string, value: unknown) {
  return Object.values(resourcesOf(template, "AWS::CloudWatch::Alarm"))
    .map((r) => r.Properties)
    .filter((a) => a.Namespace === namespace && a.MetricName === metric && JSON.stringify(a.Dimensions) === JSON.stringify([{ Name: dimension, Value: value }]));
}

/** The alarm fires on the first 5-minute datapoint above 0, treats missing data as fine and notifies the alarm topic. */
function expectAlarmToTopic(alarms: Record<string, any>[], stackName: string, label: string): void {
  expect(alarms, label).toHaveLength(1);
  expect(alarms[0], label).toMatchObject({
    Threshold: 0,
    ComparisonOperator: "GreaterThanThreshold",
    EvaluationPeriods: 1,
    DatapointsToAlarm: 1,
    Period: 300,
    TreatMissingData: "notBreaching",
  });
  expect(alarms[0].AlarmActions, label).toEqual([alarmTopicIn(stackName)]);
}

describe("handler modules referenced by the stacks", () => {
  const handlers = [
    ...groups().map(groupHandler),
    ...(Object.keys(STEP_TASKS) as StepTaskName[]).map(stepHandler),
    UPLOAD_HANDLER,
    SOURCE_SWEEPER_HANDLER,
    PENDING_ACTION_CONSUMER_HANDLER,
    PENDING_ACTION_SWEEPER_HANDLER,
    PAYMENTS_CONSUMER_HANDLER,
    INTEGRATIONS_CONSUMER_HANDLER,
    MEMORY_CONSUMER_HANDLER,
    MEMORY_SWEEPER_HANDLER,
    CREDIT_SWEEPER_HANDLER,
  ];
  it.each(handlers)("%s exists", (handler) => {
    expect(existsSync(handlerFile(handler)), `${handlerFile(handler)} is missing`).toBe(true);
  });
});

describe("synthesized app", () => {
  beforeAll(async () => {
    savedEnv = Object.fromEntries(Object.keys(SETTINGS).map((k) => [k, process.env[k]]));
    for (const [k, v] of Object.entries(SETTINGS)) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
    // SST runs (cores - 1) bundling jobs, one on a 2-core runner; the jobs mostly wait on esbuild and npm.
    process.env.SST_BUILD_CONCURRENCY ??= "4";
    // SST's own test switch (App.isRunningSSTTest): skips the bootstrap-stack lookup, the one AWS call of a synth.
    process.env.NODE_ENV = "test";

    work = await mkdtemp(join(tmpdir(), "r2d-stacks-"));
    outdir = join(work, "cdk.out");
    await initProject({ stage: "test", root: ROOT });
    // Bundles go to a private directory: concurrent runs would otherwise rebuild into the same .sst/artifacts.
    const project = useProject();
    setProject({ ...project, paths: { ...project.paths, artifacts: join(work, "artifacts") } });

    const app = new App(
      { mode: "deploy", name: project.config.name, stage: project.config.stage, region: project.config.region, account: "123456789012" },
      { outdir },
    );
    await sstConfig.stacks(app);
    // cdk-nag's AwsSolutions pack over every stack; suppressed findings are logged (as info) with their reasons.
    Aspects.of(app).add(new AwsSolutionsChecks({ reports: false, logIgnores: true, verbose: true }));
    await app.finish();
    // One synthesis for every assertion: SST's synthesis aspects keep state between runs (a second run fails on its
    // own construct-id check), and Annotations.fromStack forces a new one; it gets this assembly instead.
    const assembly = app.synth();
    app.synth = () => assembly;
    templates.Secrets = Template.fromStack(getStack(Secrets));
    templates.Storage = Template.fromStack(getStack(Storage));
    templates.Pipelines = Template.fromStack(getStack(Pipelines));
    templates.Tasks = Template.fromStack(getStack(Tasks));
    templates.Api = Template.fromStack(getStack(Api));
    templates.PendingActions = Template.fromStack(getStack(PendingActions));
    templates.Billing = Template.fromStack(getStack(Billing));
  }, BUILD_TIMEOUT);

  afterAll(async () => {
    for (const [k, v] of Object.entries(savedEnv ?? {})) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
    // A failed build leaves SST's other bundling jobs still writing; retry until they let go.
    if (work) await rm(work, { recursive: true, force: true, maxRetries: 10, retryDelay: 500 });
  });

  describe("Bedrock", () => {
    it("allows exactly the catalogue's models and the embedding model, wherever Bedrock is granted", () => {
      // The default catalogue, the small tier pointed at a model outside it (SETTINGS), and Titan embeddings.
      const profiles = [...DEFAULT_CATALOGUE.map((m) => m.id), SETTINGS.BEDROCK_MODEL_SMALL];
      const arn = (rest: string) => ({ "Fn::Join": ["", ["arn:", { Ref: "AWS::Partition" }, rest]] });
      const expected = [
        ...profiles.flatMap((id) => [
          arn(`:bedrock:*:123456789012:inference-profile/${id}`),
          arn(`:bedrock:*::foundation-model/${id.replace(/^us\./, "")}`),
        ]),
        arn(`:bedrock:*::foundation-model/${EMBEDDING_MODEL_ID}`),
      ];
      let statements = 0;
      for (const [name, stack] of Object.entries({ Api, Pipelines, PendingActions, Tasks })) {
        const resolved = getStack(stack).resolve(bedrockResourceArns(getStack(stack)));
        expect(resolved, name).toHaveLength(expected.length);
        expect(resolved, name).toEqual(expect.arrayContaining(expected));
        const template = Template.fromStack(getStack(stack));
        for (const policy of Object.values(resourcesOf(template, "AWS::IAM::Policy"))) {
          for (const st of policy.Properties.PolicyDocument.Statement as { Action: string | string[]; Resource: unknown }[]) {
            if (!actionsIn(st).some((a) => a.startsWith("bedrock:"))) continue;
            statements += 1;
            expect(actionsIn(st), name).toEqual(["bedrock:InvokeModel", "bedrock:InvokeModelWithResponseStream"]);
            expect(st.Resource, name).toEqual(resolved);
            expect(JSON.stringify(st.Resource), name).not.toMatch(/(foundation-model|inference-profile)\/\*/);
          }
        }
      }
      // The AI groups and the memory consumer, the Index task, the source sweeper, the two pending-action executors, the
      // task worker and the entropy scanner.
      expect(statements).toBe(BEDROCK_GROUPS.length + 1 + 1 + 1 + 2 + 2);
      for (const stack of [Secrets, Storage, Billing]) expect(JSON.stringify(Template.fromStack(getStack(stack)).toJSON())).not.toContain("bedrock:");
    });

    it("hands the functions the catalogue settings the grant was made from", () => {
      for (const template of [templates.Api, templates.Pipelines, templates.PendingActions, templates.Billing, templates.Tasks]) {
        for (const fn of Object.values(lambdas(template)).filter((r) => String(r.Properties.Handler).startsWith("functions/"))) {
          expect(fn.Properties.Environment.Variables.BEDROCK_MODEL_SMALL, fn.Properties.Handler).toBe(SETTINGS.BEDROCK_MODEL_SMALL);
          expect(fn.Properties.Environment.Variables.MODEL_CATALOGUE, fn.Properties.Handler).toBeUndefined();
        }
      }
    });
  });

  describe("cdk-nag AwsSolutions", () => {
    const stacks = { Secrets, Storage, Pipelines, Tasks, Api, PendingActions, Billing };
    const NAG = Match.stringLikeRegexp("AwsSolutions-.*");
    /** Suppressed findings as cdk-nag logs them: rule, finding and the reason given beside the suppression. */
    const suppressedIn = (stack: (typeof stacks)[keyof typeof stacks]) =>
      Annotations.fromStack(getStack(stack))
        .findInfo("*", Match.stringLikeRegexp("^CdkNagSuppression"))
        .map((m) => {
          const text = String(m.entry.data);
          const parsed = /^CdkNagSuppression(\[(?<finding>[\s\S]*)\])?: (?<rule>AwsSolutions-[A-Za-z0-9]+) was triggered but suppressed\.\s+Provided reason: "(?<reason>[\s\S]*)"\s*$/.exec(text);
          expect(parsed, text).not.toBeNull();
          const { finding, rule, reason } = parsed!.groups as { finding?: string; rule: string; reason: string };
          return { path: m.id, finding: finding ?? "", rule, reason };
        });

    it("leaves no error or warning of the pack unsuppressed in any stack", () => {
      for (const [name, stack] of Object.entries(stacks)) {
        const annotations = Annotations.fromStack(getStack(stack));
        const open = [...annotations.findError("*", NAG), ...annotations.findWarning("*", NAG)].map(
          (m) => `${m.id}: ${String(m.entry.data).split("\n")[0]}`,
        );
        expect(open, name).toEqual([]);
      }
    });

    it("ran the pack on every stack, and each suppression is one of the decided kinds, with its reason", () => {
      const all = Object.values(stacks).flatMap(suppressedIn);
      // Every stack has at least its SST custom-resource handler on the pinned runtime, so the pack ran where this holds.
      for (const [name, stack] of Object.entries(stacks)) expect(suppressedIn(stack).some((s) => s.rule === "AwsSolutions-L1"), name).toBe(true);
      expect([...new Set(all.map((s) => s.rule))].sort()).toEqual([
        "AwsSolutions-APIG4",
        "AwsSolutions-IAM4",
        "AwsSolutions-IAM5",
        "AwsSolutions-L1",
      ]);
      for (const s of all) expect(s.reason.trim().length, `${s.path} ${s.rule}`).toBeGreaterThan(40);
      // IAM4 only for the basic execution role; IAM5 only for the wildcards decided in the stacks.
      for (const s of all.filter((x) => x.rule === "AwsSolutions-IAM4")) {
        expect(s.finding).toBe("Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AWSLambdaBasicExecutionRole");
      }
      for (const s of all.filter((x) => x.rule === "AwsSolutions-IAM5")) {
        expect(s.finding, s.path).toMatch(
          /^Resource::(\*|<UploadsBucket[A-Za-z0-9]+\.Arn>\/workspaces\/\*|arn:<AWS::Partition>:bedrock:\*:(123456789012)?:(foundation-model|inference-profile)\/[^*]+|arn:<AWS::Partition>:ssm:[^:]+:123456789012:parameter\/sst\/research-to-delivery\/(test|\.fallback)\/\*|arn:<AWS::Partition>:states:[^:]+:123456789012:execution:.*:\*)$/,
        );
      }
      // APIG4 is suppressed only on the routes open by design, once each, with that route's own reason.
      const open = Object.values(routes as Record<string, RouteSpec>).filter((r) => !r.streaming && routeAuthorizer(r) === "none");
      expect(open.every((r) => r.access === "public" || r.access === "webhook")).toBe(true);
      const apig4 = all.filter((s) => s.rule === "AwsSolutions-APIG4");
      expect(apig4).toHaveLength(open.length);
      expect(apig4.map((s) => s.reason).sort()).toEqual(open.map((r) => OPEN_ROUTE_REASONS[routeKey(r)]).sort());
    });
  });

  it("names stacks after the stage and app", () => {
    expect(getStack(Api).stackName).toBe("test-research-to-delivery-Api");
    expect(getStack(Storage).stackName).toBe("test-research-to-delivery-Storage");
  });

  it("bundles every function without installed packages, except Swagger UI for the docs group", async () => {
    const stacks = [templates.Pipelines, templates.Api, templates.PendingActions, templates.Billing, templates.Tasks];
    const ours = stacks.flatMap((t) => Object.values(lambdas(t)).filter((r) => String(r.Properties.Handler).startsWith("functions/")));
    // Groups, the three queue consumers and the memory sweeper (Api), step tasks, the upload consumer and the source sweeper (Pipelines), the
    // executor pair (PendingActions), the credit sweeper (Billing), the two task steps, the task sweeper, the cycles and
    // the entropy scanner (Tasks).
    expect(ours.length).toBe(groups().length + 4 + Object.keys(STEP_TASKS).length + 2 + 2 + 1 + 5);
    for (const fn of ours) {
      const dir = join(outdir, `asset.${(fn.Properties.Code.S3Key as string).replace(/\.zip$/, "")}`);
      const installed = existsSync(join(dir, "node_modules"))
        ? (await readdir(join(dir, "node_modules"))).filter((name) => !name.startsWith("."))
        : [];
      // swagger-ui-dist comes with its own dependency (@scarf/scarf); nothing else may be installed anywhere:
      // a native package such as sharp would be npm-installed for Linux at deploy time.
      if (fn.Properties.Handler === groupHandler("docs")) expect(installed).toContain("swagger-ui-dist");
      else expect(installed, fn.Properties.Handler).toEqual([]);
    }
  });

  describe("Storage", () => {
    it("has one table with the shared key shape, TTL and a stream of both images", () => {
      const tables = Object.values(resourcesOf(templates.Storage, "AWS::DynamoDB::Table"));
      expect(tables).toHaveLength(1);
      const t = tables[0].Properties;
      expect(t.BillingMode).toBe("PAY_PER_REQUEST");
      expect(t.KeySchema).toEqual([
        { AttributeName: TABLE_KEYS.partitionKey, KeyType: "HASH" },
        { AttributeName: TABLE_KEYS.sortKey, KeyType: "RANGE" },
      ]);
      expect(t.TimeToLiveSpecification).toEqual({ AttributeName: "ttl", Enabled: true });
      expect(t.StreamSpecification).toEqual({ StreamViewType: "NEW_AND_OLD_IMAGES" });
      expect(t.PointInTimeRecoverySpecification).toEqual({ PointInTimeRecoveryEnabled: true });

      const expectedIndexes = Object.entries(TABLE_KEYS.globalIndexes).map(([name, k]) => ({
        IndexName: name,
        KeySchema: [
          { AttributeName: k.partitionKey, KeyType: "HASH" },
          { AttributeName: k.sortKey, KeyType: "RANGE" },
        ],
        // gsi4's slim list entries and gsi5's runs: the deployed index projects exactly what DynamoDB Local's
        // create-table does.
        Projection:
          name === "gsi4"
            ? { ProjectionType: "INCLUDE", NonKeyAttributes: [...SLIM_LIST_ATTRIBUTES] }
            : name === "gsi5"
              ? { ProjectionType: "INCLUDE", NonKeyAttributes: [...RUN_LIST_ATTRIBUTES] }
              : { ProjectionType: "ALL" },
      }));
      expect(expectedIndexes.map((i) => i.IndexName)).toEqual(["gsi1", "gsi2", "gsi3", "gsi4", "gsi5"]);
      expect(t.GlobalSecondaryIndexes).toHaveLength(5);
      expect(t.GlobalSecondaryIndexes).toEqual(expect.arrayContaining(expectedIndexes));
      expect(expectedIndexes.map((i) => i.Projection)).toEqual(createTableInput("t").GlobalSecondaryIndexes.map((i) => i.Projection));

      const keyAttrs = ["pk", "sk", "gsi1pk", "gsi1sk", "gsi2pk", "gsi2sk", "gsi3pk", "gsi3sk", "gsi4pk", "gsi4sk", "gsi5pk", "gsi5sk"];
      expect(t.AttributeDefinitions).toHaveLength(keyAttrs.length);
      expect(t.AttributeDefinitions).toEqual(expect.arrayContaining(keyAttrs.map((a) => ({ AttributeName: a, AttributeType: "S" }))));
    });

    /** The uploads bucket (the one with CORS) and the bucket of its access logs, by logical id. */
    const buckets = () => {
      const all = Object.entries(resourcesOf(templates.Storage, "AWS::S3::Bucket"));
      expect(all).toHaveLength(2);
      const uploads = all.find(([, b]) => b.Properties.CorsConfiguration)!;
      const logs = all.find(([id]) => id !== uploads[0])!;
      return { uploads, logs };
    };
    /** The bucket policy statements of a bucket. */
    const policyOf = (bucketId: string) =>
      Object.values(resourcesOf(templates.Storage, "AWS::S3::BucketPolicy"))
        .filter((p) => JSON.stringify(p.Properties.Bucket) === JSON.stringify({ Ref: bucketId }))
        .flatMap((p) => p.Properties.PolicyDocument.Statement);
    const DENY_PLAIN_HTTP = expect.objectContaining({ Effect: "Deny", Condition: { Bool: { "aws:SecureTransport": "false" } } });
    const PRIVATE = { BlockPublicAcls: true, BlockPublicPolicy: true, IgnorePublicAcls: true, RestrictPublicBuckets: true };

    it("has a private uploads bucket that accepts browser POST uploads", () => {
      const [uploadsId, uploads] = buckets().uploads;
      const b = uploads.Properties;
      expect(b.PublicAccessBlockConfiguration).toEqual(PRIVATE);
      expect(b.OwnershipControls).toEqual({ Rules: [{ ObjectOwnership: "BucketOwnerEnforced" }] });
      expect(b.CorsConfiguration.CorsRules).toEqual([
        expect.objectContaining({ AllowedMethods: expect.arrayContaining(["POST", "GET"]), AllowedOrigins: ["*"] }),
      ]);
      // SST's enforceSSL: a bucket policy denying plain-HTTP access.
      expect(policyOf(uploadsId)).toEqual(expect.arrayContaining([DENY_PLAIN_HTTP]));
      // Notifications belong to the Pipelines stack; one here too would make the stacks depend on each other.
      expect(Object.keys(resourcesOf(templates.Storage, "Custom::S3BucketNotifications"))).toHaveLength(0);
    });

    it("logs access to the uploads bucket into a private, TLS-only log bucket that S3 log delivery may write to", () => {
      const { uploads: [uploadsId, uploads], logs: [logsId, logs] } = buckets();
      expect(uploads.Properties.LoggingConfiguration).toEqual({ DestinationBucketName: { Ref: logsId }, LogFilePrefix: ACCESS_LOG_PREFIX });
      expect(logs.Properties).toMatchObject({
        PublicAccessBlockConfiguration: PRIVATE,
        // No ACLs: log delivery is granted by the bucket policy below, not the LogDeliveryWrite ACL.
        OwnershipControls: { Rules: [{ ObjectOwnership: "BucketOwnerEnforced" }] },
        LifecycleConfiguration: { Rules: [expect.objectContaining({ ExpirationInDays: ACCESS_LOG_RETENTION_DAYS, Status: "Enabled" })] },
      });
      expect(logs.Properties.AccessControl).toBeUndefined();
      expect(logs.Properties.LoggingConfiguration).toBeUndefined();
      const statements = policyOf(logsId);
      expect(statements).toEqual(expect.arrayContaining([DENY_PLAIN_HTTP]));
      expect(statements).toEqual(
        expect.arrayContaining([
          {
            Effect: "Allow",
            Principal: { Service: "logging.s3.amazonaws.com" },
            Action: "s3:PutObject",
            Resource: { "Fn::Join": ["", [{ "Fn::GetAtt": [logsId, "Arn"] }, `/${ACCESS_LOG_PREFIX}*`]] },
            Condition: { ArnLike: { "aws:SourceArn": { "Fn::GetAtt": [uploadsId, "Arn"] } }, StringEquals: { "aws:SourceAccount": "123456789012" } },
          },
        ]),
      );
    });
  });

  describe("Secrets", () => {
    it("records every parameter in SSM with the deploy-time value or its default", () => {
      const params = Object.values(resourcesOf(templates.Secrets, "AWS::SSM::Parameter")).map((r) => r.Properties);
      const value = (name: string) =>
        params.find((p) => p.Name === `/sst/research-to-delivery/test/Parameter/${name}/value`)?.Value as string | undefined;
      expect(value("JWT_ISSUER")).toBe("https://idp.example.test/");
      expect(value("JWT_AUDIENCE")).toBe("r2d-api");
      expect(value("JWT_JWKS_URI")).toBe("https://idp.example.test/.well-known/jwks.json");
      expect(value("ADMIN_EMAILS")).toBe("ops@example.test");
      expect(value("FOUNDER_EMAILS")).toBe(",");
      expect(value("ACCESS_GATING")).toBe("true");
      expect(value("CORS_ORIGINS")).toBe("*");
    });
  });

  describe("Api", () => {
    // SSE routes are served on their streaming Function URL only (API Gateway cannot stream).
    const allRoutes = Object.values(routes).filter((r) => !("streaming" in r && r.streaming));

    it("has exactly one Lambda per endpoint group and no other application function but the three queue consumers and the memory sweeper", () => {
      const handlers = Object.values(lambdas(templates.Api))
        .map((r) => r.Properties.Handler as string)
        .filter((h) => h.startsWith("functions/"));
      expect(handlers.sort()).toEqual([...groups().map(groupHandler), PAYMENTS_CONSUMER_HANDLER, INTEGRATIONS_CONSUMER_HANDLER, MEMORY_CONSUMER_HANDLER, MEMORY_SWEEPER_HANDLER].sort());
    });

    it("queues verified payment events on an SQS FIFO queue with a dead-letter queue, consumed one at a time", () => {
      // The payment queues (the memory queues are FIFO too, tested below).
      const queues = Object.fromEntries(Object.entries(resourcesOf(templates.Api, "AWS::SQS::Queue")).filter(([id, q]) => q.Properties.FifoQueue && id.startsWith("PaymentEvents")));
      expect(Object.keys(queues)).toHaveLength(2);
      const [mainId, main] = Object.entries(queues).find(([, q]) => q.Properties.RedrivePolicy)!;
      const [dlqId, dlq] = Object.entries(queues).find(([id]) => id !== mainId)!;
      expect(main.Properties).toMatchObject({
        FifoQueue: true,
        VisibilityTimeout: 6 * PAYMENTS_CONSUMER_TIMEOUT_SECONDS,
        RedrivePolicy: { deadLetterTargetArn: getAttArn(dlqId), maxReceiveCount: PAYMENTS_MAX_RECEIVE_COUNT },
      });
      expect(PAYMENTS_MAX_RECEIVE_COUNT).toBe(5);
      expect(dlq.Properties).toMatchObject({ FifoQueue: true, MessageRetentionPeriod: 14 * 86_400 });
      // Both queues refuse requests not sent over TLS.
      expectTlsOnlyQueues(templates.Api, [mainId, dlqId]);

      const { consumerId, consumer } = expectPartialBatchConsumer(templates.Api, mainId, PAYMENTS_CONSUMER_HANDLER);
      expect(consumer.Timeout).toBe(PAYMENTS_CONSUMER_TIMEOUT_SECONDS);
      // It reads Stripe with the key and maps price ids to plans with the billing settings.
      expect(Object.keys(consumer.Environment.Variables)).toContain("SST_Secret_value_STRIPE_SECRET_KEY");
      expect(consumer.Environment.Variables).toMatchObject({ STRIPE_PRICE_PRO_MONTHLY: "price_test_pro_monthly" });

      // The webhooks group sends to it (and only it gets the queue's URL).
      const policies = Object.values(resourcesOf(templates.Api, "AWS::IAM::Policy")).map((r) => r.Properties);
      const actionsOfFn = (fnId: string) => {
        const role = lambdas(templates.Api)[fnId].Properties.Role["Fn::GetAtt"][0] as string;
        return policies.filter((p) => p.Roles.some((r: { Ref: string }) => r.Ref === role)).flatMap((p) => p.PolicyDocument.Statement);
      };
      for (const group of groups()) {
        const fnId = lambdaIdFor(templates.Api, groupHandler(group));
        const vars = lambdas(templates.Api)[fnId].Properties.Environment.Variables;
        const sends = actionsOfFn(fnId).some((st: { Action: string | string[]; Resource: unknown }) =>
          [st.Action].flat().includes("sqs:SendMessage") && JSON.stringify(st.Resource).includes(`"${mainId}"`));
        if (group === "webhooks") {
          expect(vars.PAYMENTS_QUEUE_URL).toEqual({ Ref: mainId });
          expect(sends).toBe(true);
        } else {
          expect(vars.PAYMENTS_QUEUE_URL, group).toBeUndefined();
          expect(sends, group).toBe(false);
        }
      }
      const consumerActions = actionsOfFn(consumerId).flatMap((st: { Action: string | string[] }) => [st.Action].flat());
      expect(consumerActions).toEqual(expect.arrayContaining(["sqs:ReceiveMessage", "sqs:DeleteMessage", "dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:Query"]));
    });

    it("gives the billing group, and only it, the Stripe price ids and app address the deploy sets", () => {
      for (const group of groups()) {
        const vars = lambdas(templates.Api)[lambdaIdFor(templates.Api, groupHandler(group))].Properties.Environment.Variables;
        if (group === "billing") {
          expect(vars).toMatchObject({ STRIPE_PRICE_PRO_MONTHLY: "price_test_pro_monthly", APP_URL: "https://app.example.test" });
          expect(vars.STRIPE_PRICE_GROWTH_YEARLY).toBeUndefined();
        } else {
          expect(vars.STRIPE_PRICE_PRO_MONTHLY, group).toBeUndefined();
        }
      }
    });

    /** The environment variables of a Lambda of the Api stack, by handler. */
    const envOf = (handler: string) => lambdas(templates.Api)[lambdaIdFor(templates.Api, handler)].Properties.Environment.Variables as Record<string, unknown>;
    const secretsIn = (env: Record<string, unknown>) =>
      Object.keys(env).filter((k) => k.startsWith("SST_Secret_value_")).map((k) => k.slice("SST_Secret_value_".length)).sort();
    /** Every function of the app's stacks that runs our code, as [template, logical id, handler]. */
    const ourFunctions = () =>
      [templates.Api, templates.Pipelines, templates.PendingActions, templates.Billing].flatMap((template) =>
        Object.entries(lambdas(template))
          .filter(([, r]) => String(r.Properties.Handler).startsWith("functions/"))
          .map(([id, r]) => [template, id, r.Properties.Handler as string] as const),
      );

    it("queues deferred integration work on an SQS standard queue with a dead-letter queue, both TLS only, consumed with partial batch responses", () => {
      const queues = resourcesOf(templates.Api, "AWS::SQS::Queue");
      const standard = Object.entries(queues).filter(([, q]) => !q.Properties.FifoQueue);
      expect(standard).toHaveLength(2);
      const [mainId, main] = standard.find(([, q]) => q.Properties.RedrivePolicy)!;
      const [dlqId, dlq] = standard.find(([id]) => id !== mainId)!;
      // Standard, not FIFO: each job carries its own delay (GitHub's retry-after), which FIFO queues refuse.
      expect(main.Properties.FifoQueue).toBeUndefined();
      expect(main.Properties).toMatchObject({
        VisibilityTimeout: 6 * INTEGRATIONS_CONSUMER_TIMEOUT_SECONDS,
        RedrivePolicy: { deadLetterTargetArn: getAttArn(dlqId), maxReceiveCount: INTEGRATIONS_MAX_RECEIVE_COUNT },
      });
      expect(INTEGRATIONS_MAX_RECEIVE_COUNT).toBe(3);
      expect(dlq.Properties.FifoQueue).toBeUndefined();
      expect(dlq.Properties.MessageRetentionPeriod).toBe(14 * 86_400);
      expectTlsOnlyQueues(templates.Api, [mainId, dlqId]);

      // The consumer: an event source mapping on the main queue, with partial batch responses.
      const { consumerId, consumer } = expectPartialBatchConsumer(templates.Api, mainId, INTEGRATIONS_CONSUMER_HANDLER);
      expect(consumer.Timeout).toBe(INTEGRATIONS_CONSUMER_TIMEOUT_SECONDS);
      // It opens GitHub, Linear and Jira tokens, may refresh one with the OAuth apps, and re-defers what a provider limits again.
      expect(consumer.Environment.Variables).toMatchObject({
        INTEGRATIONS_QUEUE_URL: { Ref: mainId }, TOKEN_KMS_KEY_ID: imported(TOKEN_KEY_ARN),
        GITHUB_API_URL: SETTINGS.GITHUB_API_URL, LINEAR_API_URL: SETTINGS.LINEAR_API_URL, ATLASSIAN_API_URL: SETTINGS.ATLASSIAN_API_URL, ATLASSIAN_AUTH_URL: SETTINGS.ATLASSIAN_AUTH_URL,
      });
      expect(secretsIn(consumer.Environment.Variables)).toEqual(["ATLASSIAN_CLIENT_ID", "ATLASSIAN_CLIENT_SECRET", "GITHUB_CLIENT_ID", "GITHUB_CLIENT_SECRET", "LINEAR_CLIENT_ID", "LINEAR_CLIENT_SECRET"]);
      const consumerActions = statementsOf(templates.Api, consumerId).flatMap(actionsIn);
      expect(consumerActions).toEqual(expect.arrayContaining(["sqs:ReceiveMessage", "sqs:DeleteMessage", "sqs:SendMessage"]));
      expectTableGrant(templates.Api, consumerId);
      expectBucketGrant(templates.Api, consumerId, INTEGRATIONS_CONSUMER_BUCKET_ACCESS, "integrations consumer");
      expectBedrockGrant(templates.Api, Api, consumerId, false, "integrations consumer");
      expectWildcardsOnlyFor(templates.Api, consumerId, TRACING);

      // Exactly the groups whose code defers work (a job type in the bundle) send to it and have the queue's URL: the
      // code host's and the planner's syncs, the execution tickets' push and sync.
      const senders = groups().filter((group) => integrationsIn(lambdas(templates.Api)[lambdaIdFor(templates.Api, groupHandler(group))]).defers);
      expect(senders.sort()).toEqual(["codehost", "planner", "tickets"]);
      expect(integrationsIn(lambdas(templates.Api)[consumerId]).defers).toBe(true);
      for (const group of groups()) {
        const fnId = lambdaIdFor(templates.Api, groupHandler(group));
        const sends = statementsOf(templates.Api, fnId).some((st) => actionsIn(st).includes("sqs:SendMessage") && JSON.stringify(st.Resource).includes(`"${mainId}"`));
        expect(sends, group).toBe(senders.includes(group));
        expect(Boolean(GROUP_INTEGRATIONS[group]?.defers), group).toBe(senders.includes(group));
        expect(envOf(groupHandler(group)).INTEGRATIONS_QUEUE_URL, group).toEqual(senders.includes(group) ? { Ref: mainId } : undefined);
      }
      // The pending-action executors defer nothing there (the executor retries a limited action itself).
      for (const handler of [PENDING_ACTION_CONSUMER_HANDLER, PENDING_ACTION_SWEEPER_HANDLER]) {
        const fnId = lambdaIdFor(templates.PendingActions, handler);
        expect(integrationsIn(lambdas(templates.PendingActions)[fnId]).defers, handler).toBe(false);
        expect(lambdas(templates.PendingActions)[fnId].Properties.Environment.Variables.INTEGRATIONS_QUEUE_URL, handler).toBeUndefined();
        expect(statementsOf(templates.PendingActions, fnId).flatMap(actionsIn).filter((a) => a.startsWith("sqs:")), handler).toEqual([]);
      }
    });

    /** The declared integration use of a function of ours (stacks/integrations.ts), by its handler. */
    const declaredUse = (handler: string): IntegrationUse | undefined => {
      if (handler === INTEGRATIONS_CONSUMER_HANDLER) return INTEGRATIONS_CONSUMER_USE;
      if (handler === PENDING_ACTION_CONSUMER_HANDLER || handler === PENDING_ACTION_SWEEPER_HANDLER) return EXECUTOR_INTEGRATIONS;
      const group = groups().find((g) => groupHandler(g) === handler);
      return group ? GROUP_INTEGRATIONS[group] : undefined;
    };

    it("wraps integration tokens with a rotating KMS key that only the functions opening tokens may use, and no other key", () => {
      const keys = Object.values(resourcesOf(templates.Storage, "AWS::KMS::Key")).map((r) => r.Properties);
      expect(keys).toHaveLength(1);
      expect(keys[0].EnableKeyRotation).toBe(true);
      // The holders are the functions whose bundle opens tokens (oauth4webapi comes with core/integration/oauth.ts):
      // the four kinds' groups, the execution tickets, the copilot's stream, the integrations consumer and the
      // executors of the gated tools; and exactly those are declared in stacks/integrations.ts.
      const functions = ourFunctions();
      const holders = functions.filter(([template, fnId]) => integrationsIn(lambdas(template)[fnId]).opensTokens).map(([, , handler]) => handler);
      expect(holders.sort()).toEqual(
        [...["codehost", "filestore", "planner", "stream", "tickets", "tickettool"].map(groupHandler), INTEGRATIONS_CONSUMER_HANDLER, PENDING_ACTION_CONSUMER_HANDLER, PENDING_ACTION_SWEEPER_HANDLER].sort(),
      );
      for (const [template, fnId, handler] of functions) {
        const kmsStatements = statementsOf(template, fnId)
          .filter((st) => actionsIn(st).some((a) => a.startsWith("kms:")))
          .map((st) => ({ ...st, Action: actionsIn(st).sort() }));
        const env = lambdas(template)[fnId].Properties.Environment.Variables;
        expect(Boolean(declaredUse(handler)), handler).toBe(holders.includes(handler));
        if (holders.includes(handler)) {
          expect(kmsStatements, handler).toEqual([{ Effect: "Allow", Action: [...TOKEN_KEY_ACTIONS].sort(), Resource: imported(TOKEN_KEY_ARN) }]);
          expect(env.TOKEN_KMS_KEY_ID, handler).toEqual(imported(TOKEN_KEY_ARN));
        } else {
          expect(kmsStatements, handler).toEqual([]);
          expect(env.TOKEN_KMS_KEY_ID, handler).toBeUndefined();
        }
      }
    });

    it("gives every function that calls a provider that provider's addresses as the deploy sets them, and no other's", () => {
      let checked = 0;
      for (const [template, fnId, handler] of ourFunctions()) {
        const { calls } = integrationsIn(lambdas(template)[fnId]);
        // What the code calls is what the stacks declare (a new tool in a bundle fails here until it is declared).
        expect([...(declaredUse(handler)?.opens ?? [])].sort(), handler).toEqual([...calls].sort());
        const env = lambdas(template)[fnId].Properties.Environment.Variables as Record<string, unknown>;
        for (const provider of PROVIDERS) {
          for (const name of PROVIDER_ADDRESSES[provider]) {
            const set = SETTINGS[name as keyof typeof SETTINGS];
            // Set by the deploy: passed where the provider is called; unset: left to core/config.ts's public default.
            expect(env[name], `${handler} ${name}`).toBe(set !== undefined && calls.includes(provider) ? set : undefined);
          }
        }
        checked += calls.length;
      }
      // codehost 1, planner 1, tickettool 1, filestore 1, tickets 3, stream 3, consumer 3, the two executors 3 each.
      expect(checked).toBe(1 + 1 + 1 + 1 + 3 + 3 + 3 + 3 + 3);
    });

    it("binds an OAuth app's secrets to its own group and wherever its expiring tokens may be refreshed", () => {
      for (const [template, fnId, handler] of ourFunctions()) {
        const { calls } = integrationsIn(lambdas(template)[fnId]);
        const bound = secretsIn(lambdas(template)[fnId].Properties.Environment.Variables);
        const group = groups().find((g) => groupHandler(g) === handler);
        for (const provider of PROVIDERS) {
          const holds = oauthAppSecrets(provider).every((name) => bound.includes(name));
          expect(holds || oauthAppSecrets(provider).every((name) => !bound.includes(name)), `${handler} ${provider}: both or neither`).toBe(true);
          // Linear, Atlassian and Google tokens expire: whoever opens them may refresh. GitHub OAuth app tokens do not:
          // only the codehost group (connect, callback) and the consumer hold GitHub's app.
          const expected = provider === "GITHUB" ? group === "codehost" || handler === INTEGRATIONS_CONSUMER_HANDLER : calls.includes(provider);
          expect(holds, `${handler} holds the ${provider} OAuth app`).toBe(expected);
        }
      }
      expect(GROUP_SECRETS).toMatchObject({
        codehost: ["GITHUB_CLIENT_ID", "GITHUB_CLIENT_SECRET"],
        planner: ["LINEAR_CLIENT_ID", "LINEAR_CLIENT_SECRET"],
        tickettool: ["ATLASSIAN_CLIENT_ID", "ATLASSIAN_CLIENT_SECRET"],
        filestore: ["GOOGLE_CLIENT_ID", "GOOGLE_CLIENT_SECRET"],
      });
      // The executors' secrets are prefetched like the groups' (one prefetcher each), with the SSM read suppressed.
      expect(Object.values(resourcesOf(templates.PendingActions, "Custom::SecretPrefetcher"))).toHaveLength(2);
    });

    it("gives each group serving an OAuth callback this API's own URL and the frontend's", () => {
      expect(callbackGroups().sort()).toEqual(["codehost", "filestore", "planner", "tickettool"]);
      // API_URL is the HTTP API's own endpoint (the ApiUrl output), so each redirect URI is this API's callback route.
      const [apiId] = Object.keys(resourcesOf(templates.Api, "AWS::ApiGatewayV2::Api"));
      for (const group of groups()) {
        const vars = envOf(groupHandler(group));
        if (callbackGroups().includes(group)) {
          expect(vars.API_URL, group).toEqual({ "Fn::GetAtt": [apiId, "ApiEndpoint"] });
          expect(vars.API_URL, group).toEqual(Object.values(templates.Api.findOutputs("ApiUrl"))[0].Value);
          expect(vars.APP_URL, group).toBe(SETTINGS.APP_URL);
        } else {
          expect(vars.API_URL, group).toBeUndefined();
          // The app's address reaches only the callbacks, billing (checkout returns) and growth (its mails' links).
          expect(vars.APP_URL, group).toBe(["billing", "growth"].includes(group) ? SETTINGS.APP_URL : undefined);
        }
      }
    });

    it("mails from the growth group through SES, allowed to send as the MAIL_FROM identity only", () => {
      const vars = envOf(groupHandler("growth"));
      expect(MAIL_ENGINE).toBe("ses");
      expect(vars).toMatchObject({ MAIL_ENGINE: "ses", MAIL_FROM: SETTINGS.MAIL_FROM, GOOGLE_SHEETS_ID: SETTINGS.GOOGLE_SHEETS_ID, ADMIN_EMAILS: SETTINGS.ADMIN_EMAILS, APP_URL: SETTINGS.APP_URL });
      expect(secretsIn(vars)).toEqual(["GOOGLE_SHEETS_CREDENTIALS"]);
      const fnId = lambdaIdFor(templates.Api, groupHandler("growth"));
      const ses = statementsOf(templates.Api, fnId).filter((st) => actionsIn(st).some((a) => a.startsWith("ses:")));
      expect(ses).toHaveLength(1);
      expect(ses[0]).toMatchObject({ Effect: "Allow", Action: "ses:SendEmail" });
      // The identity of the sender's address and of its domain, in this account and region; nothing else.
      const resources = [ses[0].Resource].flat().map((r) => JSON.stringify(r));
      expect(resources).toHaveLength(2);
      expect(resources.some((r) => /:ses:[a-z0-9-]+:123456789012:identity\/no-reply@mail\.example\.test"/.test(r)), resources.join()).toBe(true);
      expect(resources.some((r) => /:ses:[a-z0-9-]+:123456789012:identity\/mail\.example\.test"/.test(r)), resources.join()).toBe(true);
      expect(resources.join()).not.toContain("*");
      expectBucketGrant(templates.Api, fnId, [], "growth");
      // No other function may send mail.
      for (const [template, id, handler] of ourFunctions()) {
        if (id === fnId && template === templates.Api) continue;
        expect(statementsOf(template, id).flatMap(actionsIn).filter((a) => a.startsWith("ses:")), handler).toEqual([]);
      }
      expect(mailIdentity("no-reply@Mail.Example.test")).toEqual({ address: "no-reply@Mail.Example.test", domain: "mail.example.test" });
      expect(mailIdentity("R2D <hi@example.test>")).toEqual({ address: "hi@example.test", domain: "example.test" });
      expect(() => mailIdentity("nobody")).toThrow(/MAIL_FROM/);
    });

    it("routes every row of the route table to its group's function", () => {
      const apiRoutes = Object.values(resourcesOf(templates.Api, "AWS::ApiGatewayV2::Route")).map((r) => r.Properties);
      const integrations = resourcesOf(templates.Api, "AWS::ApiGatewayV2::Integration");
      expect(apiRoutes.map((r) => r.RouteKey).sort()).toEqual(allRoutes.map(routeKey).sort());

      for (const group of groups().filter((g) => !isStreamingGroup(g))) {
        const fnId = lambdaIdFor(templates.Api, groupHandler(group));
        for (const [id, spec] of routesOf(group)) {
          const route = apiRoutes.find((r) => r.RouteKey === routeKey(spec));
          expect(route, `route ${id}`).toBeDefined();
          // Target is "integrations/<ref>"; the integration proxies to the group's Lambda.
          const integrationId = route!.Target["Fn::Join"][1][1].Ref as string;
          const integration = integrations[integrationId];
          expect(integration.Properties, `integration of ${id}`).toMatchObject({
            IntegrationType: "AWS_PROXY",
            PayloadFormatVersion: "2.0",
            IntegrationUri: getAttArn(fnId),
          });
          // Routes that need a user go through the JWT authorizer; docs and webhooks reach their function directly.
          if (spec.access === "user" || spec.access === "admin") {
            expect(route!.AuthorizationType, `${id} authorization`).toBe("JWT");
            expect(route!.AuthorizerId, `${id} authorizer`).toEqual({ Ref: jwtAuthorizerId() });
          } else {
            expect(route!.AuthorizationType, `${id} authorization`).toBe("NONE");
            expect(route!.AuthorizerId, `${id} authorizer`).toBeUndefined();
          }
        }
      }
    });

    /** The logical id of the HTTP API's one authorizer, checked to be the JWT authorizer of the deploy's issuer. */
    const jwtAuthorizerId = () => {
      const authorizers = Object.entries(resourcesOf(templates.Api, "AWS::ApiGatewayV2::Authorizer"));
      expect(authorizers).toHaveLength(1);
      return authorizers[0][0];
    };

    it("puts the JWT authorizer of the deploy's issuer and audience in front of every route that needs a user", () => {
      const [authorizer] = Object.values(resourcesOf(templates.Api, "AWS::ApiGatewayV2::Authorizer")).map((r) => r.Properties);
      expect(authorizer).toMatchObject({
        AuthorizerType: "JWT",
        IdentitySource: ["$request.header.Authorization"],
        JwtConfiguration: { Issuer: "https://idp.example.test/", Audience: ["r2d-api"] },
      });
      const apiRoutes = Object.values(resourcesOf(templates.Api, "AWS::ApiGatewayV2::Route")).map((r) => r.Properties);
      const guarded = allRoutes.filter((r) => routeAuthorizer(r) === "jwt");
      expect(guarded.length).toBeGreaterThan(80);
      expect(apiRoutes.filter((r) => r.AuthorizationType === "JWT").map((r) => r.RouteKey).sort()).toEqual(guarded.map(routeKey).sort());
      // Open by design: `public` and `webhook` routes only (the OpenAPI document and Swagger UI, the signed webhooks,
      // OAuth redirects), each with the reason it is open written down in the stack.
      const openKeys = apiRoutes.filter((r) => r.AuthorizationType === "NONE").map((r) => r.RouteKey as string).sort();
      expect(openKeys).toEqual(allRoutes.filter((r) => routeAuthorizer(r) === "none").map(routeKey).sort());
      expect(openKeys).toEqual(
        expect.arrayContaining([
          "GET /api/docs",
          "GET /api/docs/{asset}",
          "GET /api/openapi.json",
          "POST /api/webhooks/idp",
          "POST /api/webhooks/payments",
          "GET /api/integrations/codehost/callback",
          "POST /api/waitlist",
        ]),
      );
      for (const key of openKeys) expect(OPEN_ROUTE_REASONS[key], `${key}: why is it open?`).toEqual(expect.any(String));
    });

    it("lets API Gateway invoke each group function", () => {
      const permissions = Object.values(resourcesOf(templates.Api, "AWS::Lambda::Permission")).map((r) => r.Properties);
      for (const group of groups().filter((g) => !isStreamingGroup(g))) {
        const fnId = lambdaIdFor(templates.Api, groupHandler(group));
        expect(
          permissions.some((p) => p.Principal === "apigateway.amazonaws.com" && JSON.stringify(p.FunctionName) === JSON.stringify(getAttArn(fnId))),
          `invoke permission for ${group}`,
        ).toBe(true);
      }
    });

    it("gives every group function the runtime environment core/config.ts reads", () => {
      for (const group of groups()) {
        const fn = lambdas(templates.Api)[lambdaIdFor(templates.Api, groupHandler(group))].Properties;
        const env = fn.Environment.Variables;
        expect(env).toMatchObject({
          STAGE: "test",
          JWT_ISSUER: "https://idp.example.test/",
          JWT_AUDIENCE: "r2d-api",
          JWT_JWKS_URI: "https://idp.example.test/.well-known/jwks.json",
          ADMIN_EMAILS: "ops@example.test",
          FOUNDER_EMAILS: ",",
          ACCESS_GATING: "true",
          CORS_ORIGINS: "*",
          AI_ENGINE: "bedrock",
          EXTRACTION_ENGINES: "aws",
        });
        // Storage names and the state machine come from the other stacks as CloudFormation imports.
        for (const key of ["TABLE_NAME", "BUCKET_NAME", "EXTRACTION_STATE_MACHINE_ARN"]) {
          expect(env[key], `${group} ${key}`).toEqual({ "Fn::ImportValue": expect.any(String) });
        }
        expect(fn).toMatchObject({ Runtime: "nodejs22.x", Architectures: ["arm64"], MemorySize: 1024, Timeout: timeoutOf(group) });
      }
    });

    it("gives the long-running AI groups their timeout and a Function URL (API Gateway stops at 30 s)", () => {
      const urls = Object.values(resourcesOf(templates.Api, "AWS::Lambda::Url")).map((r) => r.Properties);
      const long = groups().filter((g) => timeoutOf(g) > DEFAULT_TIMEOUT_SECONDS || isStreamingGroup(g));
      expect(long).toEqual(expect.arrayContaining(["synthesis", "generation", "stream"]));
      expect(urls).toHaveLength(long.length);
      for (const group of long) {
        const id = lambdaIdFor(templates.Api, groupHandler(group));
        expect(urls.some((u) => JSON.stringify(u.TargetFunctionArn).includes(id)), `${group} has a Function URL`).toBe(true);
        expect(lambdas(templates.Api)[id].Properties.Timeout).toBeGreaterThan(30);
      }
    });

    it("serves every SSE group of the route table on a Function URL in RESPONSE_STREAM mode and the others buffered", () => {
      const urls = Object.values(resourcesOf(templates.Api, "AWS::Lambda::Url")).map((r) => r.Properties);
      const streaming = groups().filter(isStreamingGroup);
      expect(streaming.sort()).toEqual(["stream", "task-progress"]);
      const streamUrls = streaming.map((group) => {
        const fnId = lambdaIdFor(templates.Api, groupHandler(group));
        const url = urls.find((u) => JSON.stringify(u.TargetFunctionArn).includes(`"${fnId}"`));
        expect(url, group).toMatchObject({ InvokeMode: "RESPONSE_STREAM", AuthType: "NONE" });
        expect(lambdas(templates.Api)[fnId].Properties.Timeout, group).toBe(timeoutOf(group));
        expect(Object.keys(templates.Api.findOutputs(`${pascal(group)}FunctionUrl`)), group).toEqual([`${pascal(group)}FunctionUrl`]);
        return url;
      });
      expect(timeoutOf("stream")).toBeGreaterThanOrEqual(300);
      expect(timeoutOf("task-progress")).toBe(900);
      for (const u of urls.filter((x) => !streamUrls.includes(x))) expect(u.InvokeMode ?? "BUFFERED").toBe("BUFFERED");
    });

    it("queues copilot exchanges for memory on an SQS FIFO queue with a dead-letter queue, consumed with partial batch responses", () => {
      const queues = resourcesOf(templates.Api, "AWS::SQS::Queue");
      const memory = Object.entries(queues).filter(([id]) => id.startsWith("MemoryExchanges"));
      expect(memory).toHaveLength(2);
      const [mainId, main] = memory.find(([, q]) => q.Properties.RedrivePolicy)!;
      const [dlqId, dlq] = memory.find(([id]) => id !== mainId)!;
      expect(main.Properties).toMatchObject({
        FifoQueue: true,
        VisibilityTimeout: 6 * MEMORY_CONSUMER_TIMEOUT_SECONDS,
        RedrivePolicy: { deadLetterTargetArn: getAttArn(dlqId), maxReceiveCount: MEMORY_MAX_RECEIVE_COUNT },
      });
      expect(dlq.Properties).toMatchObject({ FifoQueue: true, MessageRetentionPeriod: 14 * 86_400 });
      expectTlsOnlyQueues(templates.Api, [mainId, dlqId]);

      const { consumerId, consumer } = expectPartialBatchConsumer(templates.Api, mainId, MEMORY_CONSUMER_HANDLER);
      expect(consumer.Timeout).toBe(MEMORY_CONSUMER_TIMEOUT_SECONDS);
      expect(consumer.Environment.Variables).toMatchObject({ AI_ENGINE: "bedrock", TABLE_NAME: { "Fn::ImportValue": expect.any(String) } });
      expect(statementsOf(templates.Api, consumerId).flatMap(actionsIn)).toEqual(expect.arrayContaining(["sqs:ReceiveMessage", "sqs:DeleteMessage"]));
      expectTableGrant(templates.Api, consumerId);
      expectBucketGrant(templates.Api, consumerId, MEMORY_CONSUMER_BUCKET_ACCESS, "memory consumer");
      // Model extraction and the facts' embeddings.
      expect(bundleText(lambdas(templates.Api)[consumerId]).includes('"BedrockRuntimeClient"')).toBe(true);
      expectBedrockGrant(templates.Api, Api, consumerId, true, "memory consumer");
      expectWildcardsOnlyFor(templates.Api, consumerId, TRACING);

      // Exactly the groups whose code sends exchanges (the memory hook's FIFO group of workspace and user is in their
      // bundle) have the queue's URL and may send to it.
      const sendsExchanges = (fn: Resource) => /groupId:`\$\{[A-Za-z_$][\w$]*\.workspace_id\}:\$\{[A-Za-z_$][\w$]*\.user_id\}`/.test(bundleText(fn));
      const senders = groups().filter((group) => sendsExchanges(lambdas(templates.Api)[lambdaIdFor(templates.Api, groupHandler(group))]));
      expect(senders).toEqual(["stream"]);
      expect([...MEMORY_SENDER_GROUPS].sort()).toEqual(senders);
      for (const group of groups()) {
        const fnId = lambdaIdFor(templates.Api, groupHandler(group));
        const sends = statementsOf(templates.Api, fnId).some((st) => actionsIn(st).includes("sqs:SendMessage") && JSON.stringify(st.Resource).includes(`"${mainId}"`));
        expect(sends, group).toBe(senders.includes(group));
        expect(envOf(groupHandler(group)).MEMORY_QUEUE_URL, group).toEqual(senders.includes(group) ? { Ref: mainId } : undefined);
      }
      // The task worker runs the agent loop without the run hooks: it sends no exchange.
      const worker = Object.values(lambdas(templates.Tasks)).find((r) => r.Properties.Handler === "functions/steps/task-run.handler")!;
      expect(sendsExchanges(worker)).toBe(false);
      expect(worker.Properties.Environment.Variables.MEMORY_QUEUE_URL).toBeUndefined();
    });

    it("runs memory's outbox sweeper every 5 minutes, allowed the table and to send to the memory queue, nothing else", () => {
      expect(MEMORY_SWEEPER_SCHEDULE).toBe("rate(5 minutes)");
      const fnId = lambdaIdFor(templates.Api, MEMORY_SWEEPER_HANDLER);
      const mainId = Object.entries(resourcesOf(templates.Api, "AWS::SQS::Queue")).find(([id, q]) => id.startsWith("MemoryExchanges") && q.Properties.RedrivePolicy)![0];
      // The Api stack's one schedule.
      const rules = Object.values(resourcesOf(templates.Api, "AWS::Events::Rule")).map((r) => r.Properties);
      expect(rules).toHaveLength(1);
      expect(rules[0].ScheduleExpression).toBe("rate(5 minutes)");
      expect(rules[0].Targets).toEqual([expect.objectContaining({ Arn: getAttArn(fnId) })]);
      templates.Api.hasResourceProperties("AWS::Lambda::Permission", { Action: "lambda:InvokeFunction", Principal: "events.amazonaws.com", FunctionName: getAttArn(fnId) });
      const fn = lambdas(templates.Api)[fnId].Properties;
      expect(fn.Environment.Variables).toMatchObject({ MEMORY_QUEUE_URL: { Ref: mainId }, TABLE_NAME: { "Fn::ImportValue": expect.any(String) } });
      // It sends what it finds owed to the memory queue (the exchange's FIFO group of workspace and user is in its bundle).
      expect(/groupId:`\$\{[A-Za-z_$][\w$]*\.workspace_id\}:\$\{[A-Za-z_$][\w$]*\.user_id\}`/.test(bundleText(lambdas(templates.Api)[fnId]))).toBe(true);
      const sends = statementsOf(templates.Api, fnId).filter((st) => actionsIn(st).includes("sqs:SendMessage"));
      expect(sends.map((st) => st.Resource)).toEqual([getAttArn(mainId)]);
      expect(statementsOf(templates.Api, fnId).flatMap(actionsIn).filter((a) => a.startsWith("sqs:") && !/^sqs:(SendMessage|GetQueueAttributes|GetQueueUrl)$/.test(a))).toEqual([]);
      expectTableGrant(templates.Api, fnId);
      expectBucketGrant(templates.Api, fnId, [], "memory sweeper");
      expectBedrockGrant(templates.Api, Api, fnId, false, "memory sweeper");
      expectWildcardsOnlyFor(templates.Api, fnId, TRACING);
    });

    it("lets the tasks group start and stop executions of the task state machine, and no other group", () => {
      const machineArn = (value: unknown) => JSON.stringify(value).includes("TaskMachine");
      for (const group of groups()) {
        const fnId = lambdaIdFor(templates.Api, groupHandler(group));
        const states = statementsOf(templates.Api, fnId).filter((st) => actionsIn(st).some((a) => a.startsWith("states:")));
        const env = envOf(groupHandler(group));
        if (GROUPS_RUNNING_TASKS.includes(group)) {
          expect(machineArn(env.TASK_STATE_MACHINE_ARN), group).toBe(true);
          expect(env.TASK_STATE_MACHINE_ARN, group).toEqual({ "Fn::ImportValue": expect.any(String) });
          expect(states.flatMap(actionsIn).sort(), group).toEqual(["states:StartExecution", "states:StopExecution"]);
          const start = states.find((st) => actionsIn(st).includes("states:StartExecution"))!;
          expect(start.Resource, group).toEqual({ "Fn::ImportValue": expect.any(String) });
          // StopExecution on this machine's executions only: arn:…:execution:<machine name>:*.
          const stop = states.find((st) => actionsIn(st).includes("states:StopExecution"))!;
          expect(JSON.stringify(stop.Resource), group).toMatch(/:execution:/);
          expect(JSON.stringify(stop.Resource), group).toContain("Fn::ImportValue");
        } else {
          expect(env.TASK_STATE_MACHINE_ARN, group).toBeUndefined();
          // research starts extractions (another machine); nobody else has any Step Functions right.
          expect(states.flatMap(actionsIn).filter((a) => a !== "states:StartExecution"), group).toEqual([]);
          expect(states.some((st) => machineArn(st.Resource)), group).toBe(false);
        }
      }
      expect(GROUPS_RUNNING_TASKS).toEqual(["tasks"]);
    });

    it("lets the task-progress group read the table's stream, by its ARN, and no other group", () => {
      const streamArn = { "Fn::ImportValue": expect.stringMatching(/StreamArn/) };
      expect(GROUPS_READING_TABLE_STREAM).toEqual(["task-progress"]);
      for (const group of groups()) {
        const fnId = lambdaIdFor(templates.Api, groupHandler(group));
        const reads = statementsOf(templates.Api, fnId).filter((st) => actionsIn(st).some((a) => /^dynamodb:(DescribeStream|GetShardIterator|GetRecords|ListStreams)$/.test(a)));
        const env = envOf(groupHandler(group));
        if (GROUPS_READING_TABLE_STREAM.includes(group)) {
          expect(env.TABLE_STREAM_ARN, group).toEqual(streamArn);
          expect(reads.map((st) => ({ ...st, Action: actionsIn(st).sort() })), group).toEqual([{ Effect: "Allow", Action: [...TABLE_STREAM_ACTIONS].sort(), Resource: streamArn }]);
        } else {
          expect(env.TABLE_STREAM_ARN, group).toBeUndefined();
          expect(reads, group).toEqual([]);
        }
      }
    });

    it("grants each group function table read/write, exactly the bucket calls of its routes, and nothing wider", () => {
      for (const group of groups()) {
        const fnId = lambdaIdFor(templates.Api, groupHandler(group));
        // Transactions have no IAM action of their own: TransactWriteItems is authorized by the item actions.
        expectTableGrant(templates.Api, fnId);
        expectBucketGrant(templates.Api, fnId, GROUP_BUCKET_ACCESS[group] ?? [], group);
        expectWildcardsOnlyFor(templates.Api, fnId, TRACING);
      }
      // The groups that never touch the bucket get no S3 right at all.
      for (const group of ["auth", "billing", "chat", "docs", "pending-actions", "recommendations"]) {
        const fnId = lambdaIdFor(templates.Api, groupHandler(group));
        expect(statementsOf(templates.Api, fnId).flatMap(actionsIn).filter((a) => a.startsWith("s3:")), group).toEqual([]);
      }
      const consumerId = lambdaIdFor(templates.Api, PAYMENTS_CONSUMER_HANDLER);
      expectTableGrant(templates.Api, consumerId);
      expectBucketGrant(templates.Api, consumerId, [], "payments consumer");
    });

    it("lets exactly the groups whose code calls Bedrock invoke it, and only on the catalogue's models", () => {
      for (const group of groups()) {
        const fnId = lambdaIdFor(templates.Api, groupHandler(group));
        const callsBedrock = bundleText(lambdas(templates.Api)[fnId]).includes('"BedrockRuntimeClient"');
        expect(BEDROCK_GROUPS.includes(group), `${group}: Bedrock client in its bundle`).toBe(callsBedrock);
        expectBedrockGrant(templates.Api, Api, fnId, callsBedrock, group);
      }
      expectBedrockGrant(templates.Api, Api, lambdaIdFor(templates.Api, PAYMENTS_CONSUMER_HANDLER), false, "payments consumer");
    });

    it("binds secrets only to the groups that use them, prefetched into the environment", () => {
      for (const group of groups()) {
        const fnId = lambdaIdFor(templates.Api, groupHandler(group));
        const env = lambdas(templates.Api)[fnId].Properties.Environment.Variables as Record<string, unknown>;
        const bound = Object.keys(env).filter((k) => k.startsWith("SST_Secret_value_")).map((k) => k.slice("SST_Secret_value_".length));
        expect(bound.sort(), group).toEqual([...(GROUP_SECRETS[group] ?? [])].sort());
      }
      expect(GROUP_SECRETS.webhooks).toContain("IDP_WEBHOOK_SECRET");
      const prefetchers = Object.values(resourcesOf(templates.Api, "Custom::SecretPrefetcher"));
      // One per group with secrets, the payments consumer's (STRIPE_SECRET_KEY) and the integrations consumer's (GitHub).
      expect(prefetchers.length).toBe(groups().filter((g) => (GROUP_SECRETS[g] ?? []).length > 0).length + 2);
    });

    it("ships swagger-ui-dist with the docs function", () => {
      const fn = lambdas(templates.Api)[lambdaIdFor(templates.Api, groupHandler("docs"))].Properties;
      const assetHash = (fn.Code.S3Key as string).replace(/\.zip$/, "");
      const assetDir = join(outdir, `asset.${assetHash}`);
      expect(existsSync(join(assetDir, "functions/http/docs.mjs"))).toBe(true);
      for (const file of ["swagger-ui.css", "swagger-ui-bundle.js", "swagger-ui-standalone-preset.js"]) {
        expect(existsSync(join(assetDir, "node_modules/swagger-ui-dist", file)), file).toBe(true);
      }
    });

    it("serves Swagger UI's files from the docs bundle as it will be deployed", async () => {
      const fn = lambdas(templates.Api)[lambdaIdFor(templates.Api, groupHandler("docs"))].Properties;
      const bundle = join(outdir, `asset.${(fn.Code.S3Key as string).replace(/\.zip$/, "")}`, `${fn.Handler.slice(0, fn.Handler.lastIndexOf("."))}.mjs`);
      const event = toApiGatewayEvent({ method: "GET", path: "/api/docs/swagger-ui.css", headers: {} }, { asset: "swagger-ui.css" }, "GET /api/docs/{asset}");
      // Plain Node loads the bundle the way the Lambda runtime does (no Vite transform, only its own node_modules).
      const script = `const { handler } = await import(${JSON.stringify(pathToFileURL(bundle).href)});
        const res = await handler(${JSON.stringify(event)}, { awsRequestId: "stack-test", getRemainingTimeInMillis: () => 30000 });
        process.stdout.write(JSON.stringify(res));`;
      const { stdout } = await execFileAsync(process.execPath, ["--input-type=module", "-e", script], { cwd: work, env: { ...process.env, LOG_LEVEL: "SILENT" } });
      const res = JSON.parse(stdout) as { statusCode: number; headers: Record<string, string>; body: string };
      expect(res.statusCode).toBe(200);
      expect(res.headers["content-type"]).toMatch(/^text\/css/);
      expect(res.body).toContain(".swagger-ui");
    }, 60_000);

    it("allows browser calls with CORS and outputs the API URL", () => {
      const apis = Object.values(resourcesOf(templates.Api, "AWS::ApiGatewayV2::Api")).map((r) => r.Properties);
      expect(apis).toHaveLength(1);
      expect(apis[0].ProtocolType).toBe("HTTP");
      expect(apis[0].CorsConfiguration).toMatchObject({
        AllowOrigins: ["*"],
        AllowHeaders: expect.arrayContaining(["authorization", "content-type"]),
        AllowMethods: expect.arrayContaining([...new Set(allRoutes.map((r) => r.method))]),
      });
      expect(Object.keys(templates.Api.findOutputs("ApiUrl"))).toEqual(["ApiUrl"]);
    });
  });

  describe("Alarms", () => {
    it("has one alarm topic for the stage, in the Secrets stack, TLS only, e-mailing the deploy's ALARM_EMAIL", () => {
      for (const [name, template] of allTemplates()) template.resourceCountIs("AWS::SNS::Topic", name === "Secrets" ? 1 : 0);
      const topic = alarmTopicIn("Secrets");
      templates.Secrets.resourceCountIs("AWS::SNS::Subscription", 1);
      templates.Secrets.hasResourceProperties("AWS::SNS::Subscription", { Protocol: "email", Endpoint: SETTINGS.ALARM_EMAIL, TopicArn: topic });
      templates.Secrets.hasResourceProperties("AWS::SNS::TopicPolicy", {
        Topics: [topic],
        PolicyDocument: { Statement: Match.arrayWith([Match.objectLike({ Effect: "Deny", Condition: { Bool: { "aws:SecureTransport": "false" } } })]) },
      });
    });

    it("alarms every dead-letter queue on a visible message, to the alarm topic", () => {
      let dlqs = 0;
      for (const [name, template] of allTemplates()) {
        // Every queue any queue's redrive policy sends to, so a new dead-letter queue without an alarm fails here.
        const targets = new Set(
          Object.values(resourcesOf(template, "AWS::SQS::Queue"))
            .map((q) => getAttTarget(q.Properties.RedrivePolicy?.deadLetterTargetArn))
            .filter((id): id is string => id !== undefined),
        );
        for (const dlq of targets) {
          expectAlarmToTopic(alarmsOn(template, "AWS/SQS", "ApproximateNumberOfMessagesVisible", "QueueName", { "Fn::GetAtt": [dlq, "QueueName"] }), name, dlq);
          dlqs += 1;
        }
      }
      // The payments, integrations and memory dead-letter queues (Api), at least.
      expect(dlqs).toBeGreaterThanOrEqual(3);
    });

    it("alarms failed and timed-out executions of every state machine, to the alarm topic", () => {
      let machines = 0;
      for (const [name, template] of allTemplates()) {
        for (const id of Object.keys(resourcesOf(template, "AWS::StepFunctions::StateMachine"))) {
          for (const metric of ["ExecutionsFailed", "ExecutionsTimedOut"]) {
            expectAlarmToTopic(alarmsOn(template, "AWS/States", metric, "StateMachineArn", { Ref: id }), name, `${id} ${metric}`);
          }
          machines += 1;
        }
      }
      // Extraction (Pipelines) and the background task machine (Tasks).
      expect(machines).toBe(2);
    });

    it("alarms errors of every scheduled function, to the alarm topic", () => {
      let scheduled = 0;
      for (const [name, template] of allTemplates()) {
        const fnIds = new Set(Object.keys(lambdas(template)));
        const targets = [
          ...Object.values(resourcesOf(template, "AWS::Events::Rule"))
            .filter((r) => r.Properties.ScheduleExpression)
            .flatMap((r) => (r.Properties.Targets as { Arn: unknown }[]).map((t) => t.Arn)),
          ...Object.values(resourcesOf(template, "AWS::Scheduler::Schedule")).map((r) => r.Properties.Target.Arn),
        ].map(getAttTarget);
        for (const fnId of targets) {
          expect(fnIds.has(fnId!), `${name}: schedule target ${fnId}`).toBe(true);
          expectAlarmToTopic(alarmsOn(template, "AWS/Lambda", "Errors", "FunctionName", { Ref: fnId }), name, fnId!);
          scheduled += 1;
        }
      }
      // Source sweeper (Pipelines), task sweeper, cycles and entropy scanner (Tasks), memory sweeper (Api), pending-action
      // sweeper (PendingActions), credit sweeper (Billing).
      expect(scheduled).toBe(7);
    });
  });

  describe("Pipelines", () => {
    const tasks = Object.keys(STEP_TASKS) as StepTaskName[];

    const stateMachine = () => {
      const machines = Object.values(resourcesOf(templates.Pipelines, "AWS::StepFunctions::StateMachine"));
      expect(machines).toHaveLength(1);
      return machines[0].Properties;
    };

    it("deploys the shared ASL with every task, its Retry and its Catch", () => {
      const sm = stateMachine();
      const definition = JSON.parse(sm.DefinitionString as string);
      expect(definition).toEqual(JSON.parse(JSON.stringify(extractionDefinition)));
      for (const task of tasks) {
        const state = definition.States[task];
        expect(state, task).toMatchObject({ Type: "Task", Resource: `\${${substitutionKey(task)}}` });
        expect(state.Retry[0].ErrorEquals, task).toEqual(expect.arrayContaining(LAMBDA_TRANSIENT_FAULTS));
        expect(state.Retry[0]).toMatchObject({ IntervalSeconds: 2, MaxAttempts: 5, BackoffRate: 2, JitterStrategy: "FULL" });
        // Every task but the failure recorder catches everything (into MarkFailed, or its own fallback).
        const source = extractionDefinition.States[task] as { Catch?: unknown };
        if (task === "MarkFailed") expect(state.Catch).toBeUndefined();
        else {
          expect(state.Catch, task).toEqual(source.Catch);
          expect(state.Catch[0].ErrorEquals, task).toEqual(["States.ALL"]);
        }
      }
    });

    it("runs the tasks with the AWS engines and the shared runtime environment", () => {
      for (const task of tasks) {
        const env = lambdas(templates.Pipelines)[lambdaIdFor(templates.Pipelines, stepHandler(task))].Properties.Environment.Variables;
        expect(env, task).toMatchObject({ STAGE: "test", AI_ENGINE: "bedrock", EXTRACTION_ENGINES: "aws" });
        expect(env.TABLE_NAME, task).toEqual({ "Fn::ImportValue": expect.any(String) });
        expect(env.BUCKET_NAME, task).toEqual({ "Fn::ImportValue": expect.any(String) });
      }
    });

    it("substitutes each task's ARN with its own Lambda (5 minutes, 2 GB)", () => {
      const sm = stateMachine();
      expect(Object.keys(sm.DefinitionSubstitutions).sort()).toEqual(tasks.map(substitutionKey).sort());
      for (const task of tasks) {
        const fnId = lambdaIdFor(templates.Pipelines, stepHandler(task));
        expect(sm.DefinitionSubstitutions[substitutionKey(task)], task).toEqual(getAttArn(fnId));
        expect(lambdas(templates.Pipelines)[fnId].Properties).toMatchObject({
          Timeout: 300,
          MemorySize: 2048,
          Runtime: "nodejs22.x",
          Architectures: ["arm64"],
        });
      }
    });

    it("lets the state machine invoke every task function", () => {
      const smRole = stateMachine().RoleArn["Fn::GetAtt"][0] as string;
      const statements = Object.values(resourcesOf(templates.Pipelines, "AWS::IAM::Policy"))
        .map((r) => r.Properties)
        .filter((p) => p.Roles.some((r: { Ref: string }) => r.Ref === smRole))
        .flatMap((p) => p.PolicyDocument.Statement);
      for (const task of tasks) {
        const fnId = lambdaIdFor(templates.Pipelines, stepHandler(task));
        expect(
          statements.some((s: { Action: string; Resource: unknown }) => s.Action === "lambda:InvokeFunction" && JSON.stringify(s.Resource).includes(`"${fnId}"`)),
          `invoke ${task}`,
        ).toBe(true);
      }
    });

    it("gives Textract, Transcribe and Bedrock to their own tasks only", () => {
      const policies = Object.values(resourcesOf(templates.Pipelines, "AWS::IAM::Policy")).map((r) => r.Properties);
      const actionsOf = (task: StepTaskName) => {
        const role = lambdas(templates.Pipelines)[lambdaIdFor(templates.Pipelines, stepHandler(task))].Properties.Role["Fn::GetAtt"][0];
        return policies
          .filter((p) => p.Roles.some((r: { Ref: string }) => r.Ref === role))
          .flatMap((p) => p.PolicyDocument.Statement.flatMap((s: { Action: string | string[] }) => s.Action));
      };
      // Exactly the AWS calls each task's code makes (core/extract/textract.ts, transcribe.ts, ai/bedrock.ts).
      const expected: Partial<Record<StepTaskName, string[]>> = {
        Parse: ["textract:DetectDocumentText"],
        StartTextract: ["textract:StartDocumentTextDetection"],
        CheckTextract: ["textract:GetDocumentTextDetection"],
        StartTranscribe: ["transcribe:StartTranscriptionJob"],
        CheckTranscribe: ["transcribe:GetTranscriptionJob"],
        Index: ["bedrock:InvokeModel", "bedrock:InvokeModelWithResponseStream"],
      };
      for (const task of tasks) {
        const service = actionsOf(task).filter((a: string) => /^(textract|transcribe|bedrock):/.test(a));
        expect(service.sort(), task).toEqual((expected[task] ?? []).sort());
      }
      for (const task of tasks) {
        const fnId = lambdaIdFor(templates.Pipelines, stepHandler(task));
        expectBedrockGrant(templates.Pipelines, Pipelines, fnId, task === "Index", task);
        expectWildcardsOnlyFor(templates.Pipelines, fnId, new RegExp(`${TRACING.source}|^(${(expected[task] ?? []).filter((a) => !a.startsWith("bedrock:")).join("|") || "-"})$`));
      }
      // The Textract/Transcribe rights are a policy of their own per task, deployed before the task's function.
      const servicePolicies = Object.entries(resourcesOf(templates.Pipelines, "AWS::IAM::Policy")).filter(([, p]) =>
        (p.Properties.PolicyDocument.Statement as { Action: string | string[] }[]).some((st) => actionsIn(st).some((a) => /^(textract|transcribe):/.test(a))),
      );
      expect(servicePolicies).toHaveLength(5);
      for (const [policyId, policy] of servicePolicies) {
        const [fnId, fn] = Object.entries(lambdas(templates.Pipelines)).find(([, f]) => f.Properties.Role["Fn::GetAtt"][0] === policy.Properties.Roles[0].Ref)!;
        expect((fn as Resource & { DependsOn?: string[] }).DependsOn, fnId).toContain(policyId);
      }
    });

    it("grants each task table read/write and exactly the bucket calls it makes", () => {
      for (const task of tasks) {
        const fnId = lambdaIdFor(templates.Pipelines, stepHandler(task));
        expectTableGrant(templates.Pipelines, fnId);
        expectBucketGrant(templates.Pipelines, fnId, STEP_BUCKET_ACCESS[task], task);
      }
      // Textract and Transcribe read the file with the task's rights, so the tasks that hand it over can read it.
      for (const task of ["Parse", "StartTextract", "StartTranscribe"] as const) expect(STEP_BUCKET_ACCESS[task]).toContain("read");
      expectBucketGrant(templates.Pipelines, lambdaIdFor(templates.Pipelines, UPLOAD_HANDLER), UPLOAD_BUCKET_ACCESS, "upload consumer");
      expectBucketGrant(templates.Pipelines, lambdaIdFor(templates.Pipelines, SOURCE_SWEEPER_HANDLER), SOURCE_SWEEPER_BUCKET_ACCESS, "source sweeper");
    });

    it("logs every execution event without execution data, traces, and invokes only the tasks' own ARNs", () => {
      const sm = stateMachine();
      const logGroups = Object.keys(resourcesOf(templates.Pipelines, "AWS::Logs::LogGroup"));
      expect(sm.LoggingConfiguration).toEqual({
        Level: "ALL",
        IncludeExecutionData: false,
        Destinations: [{ CloudWatchLogsLogGroup: { LogGroupArn: { "Fn::GetAtt": [expect.toBeOneOf(logGroups), "Arn"] } } }],
      });
      expect(sm.TracingConfiguration).toEqual({ Enabled: true });
      const smRole = sm.RoleArn["Fn::GetAtt"][0] as string;
      const invokes = Object.values(resourcesOf(templates.Pipelines, "AWS::IAM::Policy"))
        .map((r) => r.Properties)
        .filter((p) => p.Roles.some((r: { Ref: string }) => r.Ref === smRole))
        .flatMap((p) => p.PolicyDocument.Statement)
        .filter((st: { Action: string | string[] }) => actionsIn(st).includes("lambda:InvokeFunction"));
      expect(invokes).toEqual([
        {
          Effect: "Allow",
          Action: "lambda:InvokeFunction",
          Resource: expect.arrayContaining(tasks.map((task) => getAttArn(lambdaIdFor(templates.Pipelines, stepHandler(task))))),
        },
      ]);
      expect(invokes[0].Resource).toHaveLength(tasks.length);
    });

    it("runs the source recovery sweeper every minute, allowed to describe and start executions and to embed", () => {
      expect(SOURCE_SWEEPER_SCHEDULE).toBe("rate(1 minute)");
      const sweeperId = expectRunEveryMinute(templates.Pipelines, SOURCE_SWEEPER_HANDLER);
      const smId = Object.keys(resourcesOf(templates.Pipelines, "AWS::StepFunctions::StateMachine"))[0];
      expect(lambdas(templates.Pipelines)[sweeperId].Properties.Environment.Variables.EXTRACTION_STATE_MACHINE_ARN).toEqual({ Ref: smId });
      const role = lambdas(templates.Pipelines)[sweeperId].Properties.Role["Fn::GetAtt"][0];
      const actions = Object.values(resourcesOf(templates.Pipelines, "AWS::IAM::Policy"))
        .map((r) => r.Properties)
        .filter((p) => p.Roles.some((r: { Ref: string }) => r.Ref === role))
        .flatMap((p) => p.PolicyDocument.Statement.flatMap((st: { Action: string | string[] }) => st.Action));
      expect(actions).toEqual(
        expect.arrayContaining(["states:StartExecution", "states:DescribeExecution", "dynamodb:Query", "dynamodb:UpdateItem", "s3:GetObject", "bedrock:InvokeModel"]),
      );
      // Of the executions, it reads DescribeExecution alone (core/pipeline/index.ts), on this state machine's only.
      const executionReads = statementsOf(templates.Pipelines, sweeperId).filter((st) => JSON.stringify(st.Resource).includes(":execution:"));
      expect(executionReads).toHaveLength(1);
      expect(executionReads[0].Action).toBe("states:DescribeExecution");
      expect(JSON.stringify(executionReads[0].Resource)).toContain(`{"Ref":"${smId}"}`);
      expectBedrockGrant(templates.Pipelines, Pipelines, sweeperId, true, "source sweeper");
      expectTableGrant(templates.Pipelines, sweeperId);
      expectWildcardsOnlyFor(templates.Pipelines, sweeperId, TRACING);
    });

    it("starts extraction from object-created events under workspaces/", () => {
      const onUploadId = lambdaIdFor(templates.Pipelines, UPLOAD_HANDLER);
      const notifications = Object.values(resourcesOf(templates.Pipelines, "Custom::S3BucketNotifications")).map((r) => r.Properties);
      expect(notifications).toHaveLength(1);
      expect(notifications[0].BucketName).toEqual({ "Fn::ImportValue": expect.any(String) });
      expect(notifications[0].NotificationConfiguration).toEqual({
        LambdaFunctionConfigurations: [
          {
            Events: ["s3:ObjectCreated:*"],
            Filter: { Key: { FilterRules: [{ Name: "prefix", Value: UPLOAD_PREFIX }] } },
            LambdaFunctionArn: getAttArn(onUploadId),
          },
        ],
      });
      templates.Pipelines.hasResourceProperties("AWS::Lambda::Permission", {
        Action: "lambda:InvokeFunction",
        Principal: "s3.amazonaws.com",
        FunctionName: getAttArn(onUploadId),
      });

      const env = lambdas(templates.Pipelines)[onUploadId].Properties.Environment.Variables;
      const smId = Object.keys(resourcesOf(templates.Pipelines, "AWS::StepFunctions::StateMachine"))[0];
      expect(env.EXTRACTION_STATE_MACHINE_ARN).toEqual({ Ref: smId });
      templates.Pipelines.hasResourceProperties("AWS::IAM::Policy", {
        PolicyDocument: { Statement: Match.arrayWith([Match.objectLike({ Action: "states:StartExecution", Resource: { Ref: smId } })]) },
      });
    });
  });

  describe("PendingActions", () => {
    const actionsOf = (fnId: string) => {
      const role = lambdas(templates.PendingActions)[fnId].Properties.Role["Fn::GetAtt"][0] as string;
      return Object.values(resourcesOf(templates.PendingActions, "AWS::IAM::Policy"))
        .map((r) => r.Properties)
        .filter((p) => p.Roles.some((r: { Ref: string }) => r.Ref === role))
        .flatMap((p) => p.PolicyDocument.Statement.flatMap((s: { Action: string | string[] }) => s.Action));
    };

    it("executes approved pending actions from the table stream, filtered on approved rows, with partial batch failures", () => {
      const consumerId = lambdaIdFor(templates.PendingActions, PENDING_ACTION_CONSUMER_HANDLER);
      const mappings = Object.values(resourcesOf(templates.PendingActions, "AWS::Lambda::EventSourceMapping")).map((r) => r.Properties);
      expect(mappings).toHaveLength(1);
      expect(mappings[0]).toMatchObject({
        FunctionName: { Ref: consumerId },
        StartingPosition: "TRIM_HORIZON",
        FunctionResponseTypes: ["ReportBatchItemFailures"],
        BisectBatchOnFunctionError: true,
        MaximumRetryAttempts: 3,
        FilterCriteria: { Filters: [{ Pattern: JSON.stringify(APPROVED_STREAM_FILTER) }] },
      });
      // The stream of the Storage stack's table, imported across stacks.
      expect(mappings[0].EventSourceArn).toEqual({ "Fn::ImportValue": expect.any(String) });
      expect(JSON.parse(mappings[0].FilterCriteria.Filters[0].Pattern)).toEqual({
        dynamodb: { NewImage: { __edb_e__: { S: ["pending_action"] }, status: { S: ["approved"] } } },
      });
      expect(actionsOf(consumerId)).toEqual(expect.arrayContaining(["dynamodb:GetRecords", "dynamodb:GetShardIterator", "dynamodb:DescribeStream"]));
    });

    it("runs the sweeper every minute from an EventBridge schedule", () => {
      expect(SWEEPER_SCHEDULE).toBe("rate(1 minute)");
      expectRunEveryMinute(templates.PendingActions, PENDING_ACTION_SWEEPER_HANDLER);
    });

    it("gives both executors the runtime environment, the table, the bucket, Bedrock and time for an AI tool", () => {
      for (const handler of [PENDING_ACTION_CONSUMER_HANDLER, PENDING_ACTION_SWEEPER_HANDLER]) {
        const fnId = lambdaIdFor(templates.PendingActions, handler);
        const fn = lambdas(templates.PendingActions)[fnId].Properties;
        expect(fn, handler).toMatchObject({ Timeout: EXECUTOR_TIMEOUT_SECONDS, Runtime: "nodejs22.x", Architectures: ["arm64"] });
        expect(fn.Environment.Variables, handler).toMatchObject({ STAGE: "test", AI_ENGINE: "bedrock", EXTRACTION_ENGINES: "aws" });
        expect(fn.Environment.Variables.TABLE_NAME, handler).toEqual({ "Fn::ImportValue": expect.any(String) });
        expect(actionsOf(fnId), handler).toEqual(
          expect.arrayContaining(["dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:Query", "dynamodb:ConditionCheckItem", "s3:GetObject", "bedrock:InvokeModel"]),
        );
        expectTableGrant(templates.PendingActions, fnId);
        expectBucketGrant(templates.PendingActions, fnId, EXECUTOR_BUCKET_ACCESS, handler);
        expectBedrockGrant(templates.PendingActions, PendingActions, fnId, true, handler);
        // The stream consumer also has CDK's dynamodb:ListStreams, which takes no resource ARN.
        expectWildcardsOnlyFor(templates.PendingActions, fnId, handler === PENDING_ACTION_CONSUMER_HANDLER ? /^(xray:(PutTraceSegments|PutTelemetryRecords)|dynamodb:ListStreams)$/ : TRACING);
      }
    });
  });

  describe("Billing", () => {
    it("runs the stale credit-reservation sweeper every 5 minutes, with the table and nothing else", () => {
      expect(CREDIT_SWEEPER_SCHEDULE).toBe("rate(5 minutes)");
      const fnId = lambdaIdFor(templates.Billing, CREDIT_SWEEPER_HANDLER);
      const rules = Object.values(resourcesOf(templates.Billing, "AWS::Events::Rule")).map((r) => r.Properties);
      expect(rules).toHaveLength(1);
      expect(rules[0].ScheduleExpression).toBe("rate(5 minutes)");
      expect(rules[0].Targets).toEqual([expect.objectContaining({ Arn: getAttArn(fnId) })]);
      const fn = lambdas(templates.Billing)[fnId].Properties;
      expect(fn.Environment.Variables.TABLE_NAME).toEqual({ "Fn::ImportValue": expect.any(String) });
      const role = fn.Role["Fn::GetAtt"][0] as string;
      const actions = Object.values(resourcesOf(templates.Billing, "AWS::IAM::Policy"))
        .map((r) => r.Properties)
        .filter((p) => p.Roles.some((r: { Ref: string }) => r.Ref === role))
        .flatMap((p) => p.PolicyDocument.Statement.flatMap((st: { Action: string | string[] }) => st.Action));
      expect(actions).toEqual(expect.arrayContaining(["dynamodb:Query", "dynamodb:UpdateItem", "dynamodb:ConditionCheckItem"]));
      expect(actions.some((a: string) => a.startsWith("s3:") || a.startsWith("bedrock:"))).toBe(false);
      expectTableGrant(templates.Billing, fnId);
      expectWildcardsOnlyFor(templates.Billing, fnId, TRACING);
    });
  });
});
