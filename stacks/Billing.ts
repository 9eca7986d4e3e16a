import { Cron, Function, use, type StackContext } from "sst/constructs";
import { alarmOnErrors } from "./Alarms";
import { grantTableData } from "./defaults";
import { runtimeEnvironment, Secrets } from "./Secrets";
import { Storage } from "./Storage";

/** The scheduled sweeper that releases credit reservations of runs that died before settling (core/billing/sweeper.ts). */
export const CREDIT_SWEEPER_HANDLER = "functions/events/credit-sweeper.handler";
/** How often it runs: holds are stale after 20 minutes, so a 5-minute rate frees them within 25. */
export const CREDIT_SWEEPER_SCHEDULE = "rate(5 minutes)";

/**
 * The Billing stack's background work (DESIGN.md 6.3): the stale-reservation sweeper on an EventBridge schedule, with
 * read/write on the table (it releases holds through the ledger's transactions) and nothing else.
 */
export function Billing({ stack, app }: StackContext) {
  const { table, bucket } = use(Storage);
  const { parameters, alarms } = use(Secrets);
  const environment = runtimeEnvironment(app.stage, { tableName: table.tableName, bucketName: bucket.bucketName }, parameters);
  const sweeper = new Function(stack, "CreditSweeper", {
    handler: CREDIT_SWEEPER_HANDLER,
    description: "Release credit reservations of runs that died before settling",
    environment,
    timeout: 60,
  });
  grantTableData(sweeper, table.cdk.table);
  new Cron(stack, "CreditSweep", { schedule: CREDIT_SWEEPER_SCHEDULE, job: sweeper });
  alarmOnErrors(sweeper, alarms);
  return { sweeper };
}
