import { aws_lambda as lambda, aws_lambda_event_sources as sources } from "aws-cdk-lib";
import { NagSuppressions } from "cdk-nag";
import { Cron, Function, use, type StackContext } from "sst/constructs";
import { APPROVED_STREAM_FILTER } from "../core/pending-action/pending-action.entity";
import { alarmOnErrors } from "./Alarms";
import { bedrockInvokeStatement, grantBucket, grantTableData, grantTokenKey, suppressBedrockRegions, suppressBoundSecrets, type BucketAccess } from "./defaults";
import { boundSecrets, EXECUTOR_INTEGRATIONS, integrationEnvironment } from "./integrations";
import { runtimeEnvironment, Secrets } from "./Secrets";
import { Storage } from "./Storage";

/** The DynamoDB Streams consumer that executes approved pending actions. */
export const PENDING_ACTION_CONSUMER_HANDLER = "functions/events/pending-actions.handler";
/** The scheduled sweeper that re-drives approved rows the stream left alone and executing rows whose lease expired. */
export const PENDING_ACTION_SWEEPER_HANDLER = "functions/events/pending-action-sweeper.handler";
/** How often the sweeper runs (DESIGN.md 6.2: approved rows older than 30 s are re-driven). */
export const SWEEPER_SCHEDULE = "rate(1 minute)";
/**
 * An execution runs a gated tool, which may be an AI run (synthesis, recommendations, a draft) of a few minutes;
 * the executor's lease is kept alive meanwhile (core/pending-action/executor.ts).
 */
export const EXECUTOR_TIMEOUT_SECONDS = 300;

/**
 * What the executors do with the uploads bucket: the gated tools read stored files and document content, write
 * document content and mention files, and remove replaced ones (they delete no whole prefix, so no listing beyond
 * the one `read` brings). test/stacks/bucket-access.test.ts checks it against the code.
 */
export const EXECUTOR_BUCKET_ACCESS: readonly BucketAccess[] = ["read", "write", "delete"];

/**
 * The PendingActions stack: exactly-once execution of approved pending actions (DESIGN.md 6.2).
 *
 * - The consumer Lambda on the table's stream (event source mapping from TRIM_HORIZON: a replay only finds rows
 *   already claimed or finished), filtered on new images of approved pending actions (APPROVED_STREAM_FILTER), with
 *   partial batch responses, bisection on error and bounded retries; the sweeper covers what retries give up on.
 * - The sweeper Lambda on an EventBridge schedule every minute.
 * Both run gated tools as the approving member, so both get table read/write, the bucket calls of those tools
 * ({@link EXECUTOR_BUCKET_ACCESS}), Bedrock invocation of the catalogue's models, and, for the gated integration writes
 * (a GitHub issue, Linear issues and comments, a Drive file: core/agent/tools), what stacks/integrations.ts
 * `EXECUTOR_INTEGRATIONS` says: the integration token key (TOKEN_KMS_KEY_ID), GitHub's, Linear's and Google's
 * addresses, and the Linear and Google OAuth apps' secrets (their tokens expire; a refresh can run here).
 */
export function PendingActions({ stack, app }: StackContext) {
  const { table, bucket, tokenKey } = use(Storage);
  const { secrets, parameters, alarms } = use(Secrets);
  const environment = {
    ...runtimeEnvironment(app.stage, { tableName: table.tableName, bucketName: bucket.bucketName }, parameters),
    ...integrationEnvironment(EXECUTOR_INTEGRATIONS, tokenKey),
  };
  const bind = boundSecrets(EXECUTOR_INTEGRATIONS, secrets);

  const executor = (id: string, handler: string, description: string) => {
    const fn = new Function(stack, id, { handler, description, environment, bind, prefetchSecrets: bind.length > 0, timeout: EXECUTOR_TIMEOUT_SECONDS });
    grantTableData(fn, table.cdk.table);
    grantBucket(fn, bucket.cdk.bucket, EXECUTOR_BUCKET_ACCESS);
    grantTokenKey(fn, tokenKey);
    fn.addToRolePolicy(bedrockInvokeStatement(stack));
    suppressBedrockRegions(fn);
    if (bind.length > 0) suppressBoundSecrets(fn);
    return fn;
  };

  const consumer = executor("PendingActionConsumer", PENDING_ACTION_CONSUMER_HANDLER, "Execute approved pending actions from the table stream");
  consumer.addEventSource(
    new sources.DynamoEventSource(table.cdk.table, {
      startingPosition: lambda.StartingPosition.TRIM_HORIZON,
      batchSize: 10,
      bisectBatchOnError: true,
      reportBatchItemFailures: true,
      retryAttempts: 3,
      filters: [lambda.FilterCriteria.filter(APPROVED_STREAM_FILTER)],
    }),
  );
  NagSuppressions.addResourceSuppressions(
    consumer,
    [
      {
        id: "AwsSolutions-IAM5",
        reason:
          "Two calls that support no resource ARN, only *: dynamodb:ListStreams (granted by CDK with the table-stream " +
          "event source; the stream reads themselves are on the stream's ARN) and X-Ray tracing (xray:PutTraceSegments, PutTelemetryRecords).",
        appliesTo: ["Resource::*"],
      },
    ],
    true,
  );

  const sweeper = executor("PendingActionSweeper", PENDING_ACTION_SWEEPER_HANDLER, "Re-drive pending actions the stream did not finish");
  new Cron(stack, "PendingActionSweep", { schedule: SWEEPER_SCHEDULE, job: sweeper });
  alarmOnErrors(sweeper, alarms);

  return { consumer, sweeper };
}
