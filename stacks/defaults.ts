import type { FunctionProps } from "sst/constructs";
import { aws_iam as iam } from "aws-cdk-lib";

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
  "@aws-sdk/token-providers",
  "@aws-sdk/nested-clients",
  "bowser",
];

export const FUNCTION_DEFAULTS = {
  runtime: "nodejs22.x",
  architecture: "arm_64",
  memorySize: 1024,
  timeout: 30,
  // Minified and split (code behind a dynamic import, such as the S3 client of workspace deletion, is a chunk loaded
  // when reached): the workspaces Lambda loads 0.8 MB at cold start (bench/bundle.ts).
  nodejs: { format: "esm", minify: true, splitting: true, esbuild: { external: ["sharp", ...NEVER_ON_LAMBDA] } },
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
 * Invoke rights on Bedrock models for the functions that call the AI ports (core/ai/bedrock.ts): Converse needs
 * `bedrock:InvokeModel`, ConverseStream `bedrock:InvokeModelWithResponseStream`. The default model ids are
 * cross-region inference profiles (`us.anthropic...`), which route to foundation models in other regions, so the
 * grant covers the account's inference profiles and foundation models in every region.
 */
export function bedrockInvokeStatement(stack: { partition: string; account: string }): iam.PolicyStatement {
  return new iam.PolicyStatement({
    actions: ["bedrock:InvokeModel", "bedrock:InvokeModelWithResponseStream"],
    resources: [
      `arn:${stack.partition}:bedrock:*::foundation-model/*`,
      `arn:${stack.partition}:bedrock:*:${stack.account}:inference-profile/*`,
    ],
  });
}
