import { Stack } from "aws-cdk-lib";
import type { SSTConfig } from "sst";
import { Api } from "./stacks/Api";
import { Billing } from "./stacks/Billing";
import { FUNCTION_DEFAULTS, nagStackDefaults } from "./stacks/defaults";
import { PendingActions } from "./stacks/PendingActions";
import { Pipelines } from "./stacks/Pipelines";
import { Secrets } from "./stacks/Secrets";
import { Storage } from "./stacks/Storage";
import { Tasks } from "./stacks/Tasks";

/**
 * SST v2 app (DESIGN.md sections 2-3). Deploy with `npx sst deploy --stage <stage>`; the region comes from
 * `--region`, else AWS_REGION, else us-east-1. Stacks are added in dependency order: settings, storage,
 * the extraction pipeline, then the HTTP API (which starts extractions on reprocess), then the pending-action executor
 * and billing's background work.
 */
export default {
  config(input) {
    return {
      name: "research-to-delivery",
      region: input.region ?? process.env.AWS_REGION ?? "us-east-1",
    };
  },
  stacks(app) {
    app.setDefaultFunctionProps(FUNCTION_DEFAULTS);
    // Only production keeps data when a stage is removed; every other stage cleans up after itself.
    if (app.stage !== "prod") app.setDefaultRemovalPolicy("destroy");
    app.stack(Secrets).stack(Storage).stack(Pipelines).stack(Tasks).stack(Api).stack(PendingActions).stack(Billing);
    // cdk-nag (AwsSolutions, run by the stack test): the suppressions that hold for every stack, each with its reason.
    for (const child of app.node.children) if (child instanceof Stack) nagStackDefaults(child);
  },
} satisfies SSTConfig;
