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
export const FUNCTION_DEFAULTS = {
  runtime: "nodejs22.x",
  architecture: "arm_64",
  memorySize: 1024,
  timeout: 30,
  // Minified and split: each HTTP Lambda loads about 1 MB at cold start, which keeps it short (bench/bundle.ts).
  nodejs: { format: "esm", minify: true, splitting: true, esbuild: { external: ["sharp"] } },
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
