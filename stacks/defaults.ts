import type { FunctionProps } from "sst/constructs";
import { ArnFormat, aws_dynamodb as dynamodb, aws_iam as iam, aws_kms as kms, aws_lambda as lambda, aws_s3 as s3, Stack } from "aws-cdk-lib";
import { NagSuppressions } from "cdk-nag";
import type { IConstruct } from "constructs";
import { bedrockResourceArns } from "../core/ai/catalogue";
import { TABLE_KEYS } from "../core/db/table";

/**
 * Props every Lambda of the app starts from (sst.config.ts hands them to `app.setDefaultFunctionProps`).
 * Node 22 matches the version the project pins for local runs; arm64 is cheaper per GB-second; ESM because the
 * project is `"type": "module"`. 30 s fits the HTTP functions, which API Gateway cuts off at 30 s anyway;
 * the Step Functions tasks raise their own timeout.
 *
 * `sharp` is declared external so SST does not `npm install` it into bundles: only the embedded runtime's OCR
 * (core/extract/ocr.ts) loads it, through a dynamic `import("sharp")` that stays dynamic in the bundle and never
 * runs in AWS (images go to Textract). Without this SST installs a native libvips build into every function
 * whose code merely contains that import, which needs network access at deploy time and adds tens of MB.
 */
/**
 * SDK code a Lambda never runs, left out of bundles. The default credential chain takes the function role's keys
 * from the environment (Lambda always sets them) and imports the SSO, shared-ini, process, web-identity and login
 * providers (with the nested STS/SSO/sign-in clients they use) only when those are missing; `bowser` is imported
 * only by the browser user-agent code. About 110 kB of the workspaces bundle. Should one ever be reached, the
 * import resolves against the runtime's own SDK v3 copy where Node can find it, or fails loudly: never silently.
 */
export const NEVER_ON_LAMBDA = [
  "@aws-sdk/credential-provider-sso",
  "@aws-sdk/credential-provider-ini",
  "@aws-sdk/credential-provider-process",
  "@aws-sdk/credential-provider-web-identity",
  "@aws-sdk/credential-provider-login",
  // Not `@aws-sdk/token-providers`: the Bedrock runtime client imports it statically (bearer-token auth), and an ESM
  // import from the function's folder never finds the runtime's copy, so the stream Lambda failed at its first model
  // call (bench/cold.ts). It stays bundled; its SSO-OIDC client (nested-clients) is a dynamic import, left out.
  "@aws-sdk/nested-clients",
  "bowser",
];

/** An esbuild plugin of the esbuild SST bundles with (its own copy, 0.18, typed through SST's props). */
type SstEsbuildPlugin = NonNullable<NonNullable<NonNullable<FunctionProps["nodejs"]>["esbuild"]>["plugins"]>[number];

/**
 * An esbuild plugin that loads `node:http`, `node:https` and `node:http2` (with or without the `node:` prefix) through
 * `require` instead of an ESM import. An ESM import of a builtin builds its ESM facade, which reads every export once:
 * `http`'s lazy `WebSocket`, `CloseEvent` and `MessageEvent` getters then load Node's whole bundled undici during a
 * cold start (30-40 ms of CPU measured on the loaded 2-core benchmark machine) although no function uses them. The
 * SDK's HTTP handler and aws-jwt-verify import these modules; through `require` (the ESM banner SST adds defines it)
 * the module object is the same and its getters stay untouched. Named imports read the same properties as before.
 */

export const builtinsThroughRequire: SstEsbuildPlugin = {
  name: "builtins-through-require",
  setup(build) {
    // The shim's own require of the builtin stays external (else it would resolve to the shim itself).
    build.onResolve({ filter: /^(node:)?(http|https|http2)$/ }, (args) =>
      args.namespace === "builtin-require" ? { path: args.path, external: true } : { path: args.path.replace(/^node:/, ""), namespace: "builtin-require" },
    );
    build.onLoad({ filter: /.*/, namespace: "builtin-require" }, (args) => ({ contents: `module.exports = require("node:${args.path}");`, loader: "js" }));
  },
};

/**
 * An esbuild plugin that gives jira.js zod's CommonJS build instead of the ES module build our own code imports.
 * jira.js reads zod through its `z` namespace export, which keeps every export of zod alive (its locales included,
 * about 350 KB minified). esbuild splits code by module, not by export, so the one copy of zod's ES modules that our
 * code shares with jira.js's chunk was loaded whole at the cold start of every group that can reach Jira (tickets,
 * tickettool), though jira.js itself loads only with the first Jira call. With the CommonJS build, jira.js's zod is a
 * separate set of modules inside jira.js's own chunk; our code keeps its tree-shaken ES build (about 110 KB). The two
 * never exchange schemas: jira.js validates its own responses (core/integration/tickets/jira.ts).
 */
export const jiraZodApart: SstEsbuildPlugin = {
  name: "jira-zod-apart",
  setup(build) {
    build.onResolve({ filter: /^zod$/ }, async (args) => {
      if (!/[\\/]node_modules[\\/]jira\.js[\\/]/.test(args.importer)) return undefined;
      const resolved = await build.resolve("zod/package.json", { resolveDir: args.resolveDir, kind: "require-call" });
      return { path: resolved.path.replace(/package\.json$/, "index.cjs") };
    });
  },
};

export const FUNCTION_DEFAULTS = {
  runtime: "nodejs22.x",
  architecture: "arm_64",
  memorySize: 1024,
  timeout: 30,
  // Minified and split (code behind a dynamic import, such as the S3 client of workspace deletion, is a chunk loaded
  // when reached): the workspaces Lambda loads 0.8 MB at cold start (bench/bundle.ts).
  // `node:http(s)` through require (builtinsThroughRequire): no ESM facade that loads undici at cold start.
  // jira.js gets zod's CommonJS build (jiraZodApart): all of zod loads with jira.js only, not at cold start.
  nodejs: { format: "esm", minify: true, splitting: true, esbuild: { external: ["sharp", ...NEVER_ON_LAMBDA], plugins: [builtinsThroughRequire, jiraZodApart] } },
} satisfies FunctionProps;

/**
 * Engine switches for deployed functions: the AWS adapters (Bedrock, Textract, Transcribe) instead of the local
 * engines the embedded runtime uses (core/ai/select.ts, functions/steps/common.ts).
 */
export const AWS_ENGINES = { AI_ENGINE: "bedrock", EXTRACTION_ENGINES: "aws" } as const;

/** PascalCase of a kebab-case name ("pending-actions" -> "PendingActions"), for construct ids. */
export const pascal = (name: string): string =>
  name
    .split(/[^A-Za-z0-9]+/)
    .filter(Boolean)
    .map((part) => part[0].toUpperCase() + part.slice(1))
    .join("");

/**
 * Invoke rights on exactly the Bedrock models the service may call (DESIGN.md 6.1: "IAM allows exactly the
 * catalogue"), for the functions that call the AI ports (core/ai/bedrock.ts): Converse needs `bedrock:InvokeModel`,
 * ConverseStream `bedrock:InvokeModelWithResponseStream`. The resources are the catalogue's models and the Titan
 * embedding model (`bedrockResourceArns`, core/ai/catalogue.ts): for a cross-region inference profile, the profile in
 * this account and the foundation model it routes to, in any region (the profile picks the region per request).
 * The catalogue is read from the deploying environment (MODEL_CATALOGUE, BEDROCK_MODEL_<TIER>), the same settings the
 * functions get, so a model added there is allowed by the next deploy and nothing else is.
 */
export function bedrockInvokeStatement(stack: { partition: string; account: string }): iam.PolicyStatement {
  return new iam.PolicyStatement({
    actions: ["bedrock:InvokeModel", "bedrock:InvokeModelWithResponseStream"],
    resources: bedrockResourceArns(stack),
  });
}

/**
 * The item-level DynamoDB calls of the service (ElectroDB through core/db): reads (GetItem, BatchGetItem, Query;
 * TransactGetItems is authorized by GetItem), writes (PutItem, UpdateItem, DeleteItem, BatchWriteItem; transactions by
 * the same actions and ConditionCheckItem), and DescribeTable. CDK's `grantReadWriteData` has these plus Scan, which
 * the service never sends (DESIGN.md section 4, convention 4), and the stream reads, which belong to the stream's ARN.
 */
export const TABLE_DATA_ACTIONS = [
  "dynamodb:GetItem",
  "dynamodb:BatchGetItem",
  "dynamodb:Query",
  "dynamodb:ConditionCheckItem",
  "dynamodb:PutItem",
  "dynamodb:UpdateItem",
  "dynamodb:DeleteItem",
  "dynamodb:BatchWriteItem",
  "dynamodb:DescribeTable",
] as const;

/**
 * Table read/write for a function: {@link TABLE_DATA_ACTIONS} on the table and on each of its global secondary indexes
 * by name (core/db/table.ts), where CDK's grant would name every index with `index/*`.
 */
export function grantTableData(fn: iam.IGrantable, table: dynamodb.ITable): void {
  const indexes = Object.keys(TABLE_KEYS.globalIndexes).map((name) => `${table.tableArn}/index/${name}`);
  fn.grantPrincipal.addToPrincipalPolicy(new iam.PolicyStatement({ actions: [...TABLE_DATA_ACTIONS], resources: [table.tableArn, ...indexes] }));
}

/**
 * What a function does with the uploads bucket, each naming the S3 calls of `core/storage` it makes:
 * - `read`: GetObject and HeadObject (getObject, getObjectHead, objectSize), and Textract or Transcribe reading a
 *   stored file with the caller's credentials;
 * - `write`: PutObject (putObject, and the presigned POST, which S3 authorizes with the signer's rights);
 * - `delete`: DeleteObject (deleteObject; DeleteObjects, which deletePrefix sends, is authorized per key by it);
 * - `list`: ListObjectsV2 (deletePrefix).
 */
export type BucketAccess = "read" | "write" | "delete" | "list";

/** The IAM action of each object-level access (on `<bucket>/workspaces/*`). */
export const BUCKET_OBJECT_ACTIONS = { read: "s3:GetObject", write: "s3:PutObject", delete: "s3:DeleteObject" } as const;

/** Every stored object lives under this prefix (core/storage: `workspaces/<workspace id>/...`). */
export const STORED_OBJECTS_PREFIX = "workspaces/";

/**
 * Grant a function exactly the bucket calls it makes (see {@link BucketAccess}), instead of CDK's `grantReadWrite`
 * (which adds `s3:Abort*`, `s3:GetBucket*`, `s3:List*`, `s3:DeleteObject*`, object ACL, tagging, retention and
 * legal-hold rights, on every key). Object actions apply under `workspaces/` only. `s3:ListBucket` on the bucket goes
 * with `list`, and with `read` too: without it S3 answers a missing key with 403 AccessDenied instead of
 * 404 NoSuchKey, and the storage port maps only the 404 to "no such object".
 */
export function grantBucket(fn: iam.IGrantable & IConstruct, bucket: s3.IBucket, access: readonly BucketAccess[]): void {
  const objectActions = access.flatMap((a) => (a === "list" ? [] : [BUCKET_OBJECT_ACTIONS[a]]));
  if (objectActions.length > 0) {
    fn.grantPrincipal.addToPrincipalPolicy(
      new iam.PolicyStatement({ actions: objectActions, resources: [bucket.arnForObjects(`${STORED_OBJECTS_PREFIX}*`)] }),
    );
    NagSuppressions.addResourceSuppressions(
      fn,
      [
        {
          id: "AwsSolutions-IAM5",
          reason:
            "Object keys are made per workspace, source and document at run time (workspaces/<id>/...), so the grant " +
            "names the prefix every stored object lives under; the actions are the single object calls the function makes.",
          appliesTo: [{ regex: "/^Resource::<UploadsBucket[A-Za-z0-9]+\\.Arn>\\/workspaces\\/\\*$/" }],
        },
      ],
      true,
    );
  }
  if (access.includes("read") || access.includes("list")) {
    fn.grantPrincipal.addToPrincipalPolicy(new iam.PolicyStatement({ actions: ["s3:ListBucket"], resources: [bucket.bucketArn] }));
  }
}

/** The settings of `names` that the deploying environment sets (trimmed), for a function's environment. */
export const settingsFrom = (names: readonly string[], env: NodeJS.ProcessEnv = process.env): Record<string, string> =>
  Object.fromEntries(names.flatMap((name) => (env[name]?.trim() ? [[name, env[name]!.trim()]] : [])));

/**
 * The KMS calls of the AWS Encryption SDK's KMS keyring (core/integration/crypto.ts): GenerateDataKey to seal a token
 * set, Decrypt to open one, Encrypt should the keyring ever hold a second key.
 */
export const TOKEN_KEY_ACTIONS = ["kms:Encrypt", "kms:Decrypt", "kms:GenerateDataKey"] as const;

/** Let a function seal and open integration tokens: {@link TOKEN_KEY_ACTIONS} on the token key, no other key. */
export function grantTokenKey(fn: iam.IGrantable, key: kms.IKey): void {
  fn.grantPrincipal.addToPrincipalPolicy(new iam.PolicyStatement({ actions: [...TOKEN_KEY_ACTIONS], resources: [key.keyArn] }));
}

/**
 * Suppress AwsSolutions-IAM5 on the SSM paths SST's Config binding lets a function read, for a function bound to
 * secrets (stacks/Secrets.ts): SST allows ssm:GetParameters under its app's own paths, one parameter per secret.
 */
export function suppressBoundSecrets(fn: IConstruct): void {
  NagSuppressions.addResourceSuppressions(
    fn,
    [
      {
        id: "AwsSolutions-IAM5",
        reason:
          "SST binds a Config.Secret by allowing ssm:GetParameters under its app's own paths (/sst/<app>/<stage>/* and " +
          "/sst/<app>/.fallback/*), where it stores one parameter per secret; the function reads only the secrets bound to it.",
        appliesTo: [{ regex: "/^Resource::arn:<AWS::Partition>:ssm:[^:]+:[^:]+:parameter\\/sst\\/research-to-delivery\\/[^/*]+\\/\\*$/" }],
      },
    ],
    true,
  );
}

/**
 * The address and domain of a MAIL_FROM setting, either `address@domain` or `Display Name <address@domain>`.
 * @throws Error when it holds no e-mail address (the synth stops instead of deploying a sender SES would refuse)
 */
export function mailIdentity(mailFrom: string): { address: string; domain: string } {
  const address = (/<([^<>]+)>\s*$/.exec(mailFrom)?.[1] ?? mailFrom).trim();
  const at = address.lastIndexOf("@");
  if (at <= 0 || at === address.length - 1 || /[\s*]/.test(address)) {
    throw new Error(`MAIL_FROM must be an e-mail address or "Name <address>", got ${JSON.stringify(mailFrom)}`);
  }
  return { address, domain: address.slice(at + 1).toLowerCase() };
}

/**
 * `ses:SendEmail` (SES v2 SendEmail, core/mail/ses.ts) from the configured sender only: the SES identity of its
 * address and of its domain, in this account and region. SES authorizes a send against the identity that covers the
 * From address (the address if it is verified itself, else its domain), so both are named; no other identity, no
 * wildcard.
 */
export function sesSendStatement(stack: Stack, mailFrom: string): iam.PolicyStatement {
  const { address, domain } = mailIdentity(mailFrom);
  const identity = (name: string) => stack.formatArn({ service: "ses", resource: "identity", resourceName: name, arnFormat: ArnFormat.SLASH_RESOURCE_NAME });
  return new iam.PolicyStatement({ actions: ["ses:SendEmail"], resources: [identity(address), identity(domain)] });
}

/**
 * Suppress the AwsSolutions-IAM5 finding on the Bedrock statement of a function that has one: the resources are the
 * catalogue's exact model and profile ids; only the region is a wildcard, because a cross-region inference profile
 * sends each request to whichever region of its geography has capacity, and the foundation model must be allowed there.
 */
export function suppressBedrockRegions(fn: IConstruct): void {
  NagSuppressions.addResourceSuppressions(
    fn,
    [
      {
        id: "AwsSolutions-IAM5",
        reason:
          "Bedrock: the exact models of the catalogue and the embedding model; the region is a wildcard because a " +
          "cross-region inference profile routes each request to any region of its geography.",
        appliesTo: [{ regex: "/^Resource::arn:<AWS::Partition>:bedrock:\\*:(\\d{12}|<AWS::AccountId>)?:(foundation-model|inference-profile)\\/[^*]+$/" }],
      },
    ],
    true,
  );
}

/**
 * The X-Ray rights of a traced function (SST's default `tracing: "active"`): `xray:PutTraceSegments` and
 * `xray:PutTelemetryRecords` have no resource-level permissions, so their statement's resource is `*`.
 */
function suppressTracingWildcard(fn: IConstruct): void {
  NagSuppressions.addResourceSuppressions(
    fn,
    [
      {
        id: "AwsSolutions-IAM5",
        reason: "X-Ray tracing (SST's default, active): xray:PutTraceSegments and xray:PutTelemetryRecords support no resource ARN, only *.",
        appliesTo: ["Resource::*"],
      },
    ],
    true,
  );
}

/** Managed policy every Lambda role of SST and CDK carries (CloudWatch Logs writes only). */
const BASIC_EXECUTION_ROLE = "Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AWSLambdaBasicExecutionRole";

/**
 * cdk-nag suppressions that hold for a whole stack of this app, each with its reason:
 * - AwsSolutions-IAM4, only for AWSLambdaBasicExecutionRole: it grants nothing but creating log streams and putting
 *   log events; SST (every Function, and its per-stack custom-resource handler) and CDK (the S3 notifications handler)
 *   attach it themselves.
 * - AwsSolutions-L1, only on functions running `nodejs22.x`: the runtime is pinned on purpose so deployed functions
 *   run the Node the project pins for local runs (DESIGN.md section 2; npm package `node` 22.x); SST 2.49 also pins its
 *   own custom-resource handler to nodejs22.x. Any other runtime is still checked.
 * - AwsSolutions-IAM5, only for the `*` resource, on traced functions: X-Ray's calls take no resource ARN.
 * Called once per stack after its constructs exist (sst.config.ts).
 */
export function nagStackDefaults(stack: Stack): void {
  NagSuppressions.addStackSuppressions(stack, [
    {
      id: "AwsSolutions-IAM4",
      reason: "AWSLambdaBasicExecutionRole only lets a function write its own CloudWatch logs; SST and CDK attach it to every Lambda role.",
      appliesTo: [BASIC_EXECUTION_ROLE],
    },
  ]);
  for (const node of stack.node.findAll()) {
    if (!(node instanceof lambda.CfnFunction)) continue;
    if (node.runtime === FUNCTION_DEFAULTS.runtime) {
      NagSuppressions.addResourceSuppressions(node, [
        {
          id: "AwsSolutions-L1",
          reason: "nodejs22.x is pinned to match the Node 22 the project runs locally (DESIGN.md section 2); moving to a newer runtime is a deliberate upgrade of both.",
        },
      ]);
    }
    const tracing = stack.resolve(node.tracingConfig) as { mode?: string } | undefined;
    // The L2 function (its role and default policy are its children) holds the X-Ray statement.
    if (tracing?.mode === "Active" && node.node.scope) suppressTracingWildcard(node.node.scope);
  }
}
