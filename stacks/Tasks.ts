import { aws_iam as iam, aws_logs as logs, aws_scheduler as scheduler, aws_stepfunctions as sfn, RemovalPolicy } from "aws-cdk-lib";
import { NagSuppressions } from "cdk-nag";
import { Config, Cron, Function, use, type StackContext } from "sst/constructs";
import { TASK_STEPS, taskArnPlaceholder, taskDefinition, LONGEST_TASK_SECONDS, type TaskStepName } from "../functions/steps/task.asl";
import { CYCLE_SCHEDULE } from "../core/cycle";
import { ENTROPY_SCAN_SCHEDULE } from "../core/entropy/settings";
import { alarmOnErrors, alarmOnExecutions } from "./Alarms";
import { bedrockInvokeStatement, grantBucket, grantTableData, grantTokenKey, sesSendStatement, settingsFrom, suppressBedrockRegions, suppressBoundSecrets, type BucketAccess } from "./defaults";
import { boundSecrets, integrationEnvironment, type IntegrationUse } from "./integrations";
import { runtimeEnvironment, Secrets } from "./Secrets";
import { Storage } from "./Storage";
import type { IConstruct } from "constructs";

/** The handler module of a task state machine step (DESIGN.md section 3: one Step Functions task per file). */
export const taskStepHandler = (step: TaskStepName) => `functions/steps/${TASK_STEPS[step]}.handler`;

/** The `DefinitionSubstitutions` key of a step: its ARN placeholder without the `${...}` around it. */
export const taskSubstitutionKey = (step: TaskStepName) => taskArnPlaceholder(step).slice(2, -1);

/**
 * Each step function's timeout, seconds. The worker outlives the Run state's own timeout (the task type's, at most
 * LONGEST_TASK_SECONDS): Step Functions cuts the task off at its timeout and runs Fail, and the worker, whose own
 * deadline is the same, stops by itself; a Lambda timeout first would end it without a reason.
 */
export const TASK_STEP_TIMEOUT_SECONDS: Readonly<Record<TaskStepName, number>> = { Run: LONGEST_TASK_SECONDS + 60, Fail: 60 };

/** The task sweeper (core/task/sweeper.ts) and how often it runs (DESIGN.md 6.5; the local runtime: every 30 s). */
export const TASK_SWEEPER_HANDLER = "functions/events/task-sweeper.handler";
export const TASK_SWEEPER_SCHEDULE = "rate(1 minute)";

/** The overnight research cycles (core/cycle) and their schedule: EventBridge Scheduler, 02:00 UTC (spec 02). */
export const TASK_CYCLES_HANDLER = "functions/events/task-cycles.handler";
export const CYCLES_SCHEDULE_EXPRESSION = CYCLE_SCHEDULE;

/**
 * What the worker does with the uploads bucket: it reads extractions and mention files (synthesis, file-store research
 * over the workspace's sources), writes and replaces document content (validation kit, drafting) and mention files.
 */
export const TASK_WORKER_BUCKET_ACCESS: readonly BucketAccess[] = ["read", "write", "delete"];

/** The worker reads the file store (fs_research): Google's tokens, addresses, and its OAuth app for a refresh. */
export const TASK_WORKER_INTEGRATIONS: IntegrationUse = { opens: ["GOOGLE"], oauthApps: ["GOOGLE"], defers: false };

/** The scheduled entropy scanner (core/entropy `scanDue`) and its schedule: daily at 04:00 UTC, after the cycles. */
export const ENTROPY_SCANNER_HANDLER = "functions/events/entropy-scanner.handler";
export const ENTROPY_SCAN_SCHEDULE_EXPRESSION = ENTROPY_SCAN_SCHEDULE;
/** The scanner stops starting scans 2 minutes before its end (functions/events/entropy-scanner.ts): Lambda's longest. */
export const ENTROPY_SCANNER_TIMEOUT_SECONDS = 900;

/**
 * Suppress AwsSolutions-IAM5 on a function allowed calls on this state machine's executions (`grantExecution`:
 * `…:execution:<machine name>:*`), for the sweeper here and the tasks group (stacks/Api.ts).
 */
export function suppressExecutions(fn: IConstruct): void {
  NagSuppressions.addResourceSuppressions(
    fn,
    [
      {
        id: "AwsSolutions-IAM5",
        reason: "Executions are named per task attempt at run time (<task id>-<attempt>); the grant covers the executions of this one state machine.",
        appliesTo: [{ regex: "/^Resource::arn:<AWS::Partition>:states:[^:]+:[^:]+:execution:.*:\\*$/" }],
      },
    ],
    true,
  );
}

/**
 * The Tasks stack: background tasks and schedules (spec 02 Background task; DESIGN.md 6.5).
 *
 * - One Lambda per step of `functions/steps/task.asl.ts`: Run (the worker: the agent loop and the core operations,
 *   so table, bucket, Bedrock, the integration token key for the file store, and SES for the cycles' digest from
 *   MAIL_FROM only) and Fail (the table only).
 * - The Standard state machine deployed from that same ASL (one execution per attempt of a task, so the console shows
 *   each task's trace), each `${Task<Step>Arn}` substituted, allowed to invoke exactly those two functions, logging
 *   every execution event without execution data, traced.
 * - The sweeper on an EventBridge rule every minute: it starts executions (new attempts, cycle retries) and asks
 *   whether an attempt's execution still runs (DescribeExecution).
 * - The overnight research cycles: EventBridge Scheduler at cron(0 2 * * ? *) in UTC invokes the cycles function, which
 *   starts one execution per cycle.
 * - The entropy scanner (issue #21): EventBridge Scheduler daily at 04:00 UTC; the table and Bedrock embeddings.
 *
 * @returns the state machine and the functions, for the Api stack: the tasks group starts and stops executions
 *   (TASK_STATE_MACHINE_ARN), the progress group reads the table's stream.
 */
export function Tasks({ stack, app }: StackContext) {
  const { table, bucket, tokenKey } = use(Storage);
  const { parameters, secrets, alarms } = use(Secrets);
  const environment = runtimeEnvironment(app.stage, { tableName: table.tableName, bucketName: bucket.bucketName }, parameters);
  const mailFrom = settingsFrom(["MAIL_FROM"]).MAIL_FROM;
  const workerSecrets = boundSecrets(TASK_WORKER_INTEGRATIONS, secrets as Record<string, Config.Secret>);

  const run = new Function(stack, "TaskRun", {
    handler: taskStepHandler("Run"),
    description: "Background task worker: one attempt of a task (Run state)",
    timeout: TASK_STEP_TIMEOUT_SECONDS.Run,
    memorySize: 1024,
    environment: {
      ...environment,
      ...integrationEnvironment(TASK_WORKER_INTEGRATIONS, tokenKey),
      // The research cycles' digest: SES from MAIL_FROM, links to the app.
      MAIL_ENGINE: "ses",
      ...settingsFrom(["MAIL_FROM", "APP_URL"]),
    },
    bind: workerSecrets,
    prefetchSecrets: true,
  });
  grantTableData(run, table.cdk.table);
  grantBucket(run, bucket.cdk.bucket, TASK_WORKER_BUCKET_ACCESS);
  grantTokenKey(run, tokenKey);
  run.addToRolePolicy(bedrockInvokeStatement(stack));
  suppressBedrockRegions(run);
  suppressBoundSecrets(run);
  // Without MAIL_FROM there is no sender to allow: a digest then fails with 503 naming MAIL_FROM (core/mail).
  if (mailFrom) run.addToRolePolicy(sesSendStatement(stack, mailFrom));

  const fail = new Function(stack, "TaskFail", {
    handler: taskStepHandler("Fail"),
    description: "Background task: write a failed task's reason (Fail state)",
    timeout: TASK_STEP_TIMEOUT_SECONDS.Fail,
    environment,
  });
  grantTableData(fail, table.cdk.table);
  const steps: Record<TaskStepName, Function> = { Run: run, Fail: fail };

  const machine = new sfn.StateMachine(stack, "TaskMachine", {
    stateMachineType: sfn.StateMachineType.STANDARD,
    definitionBody: sfn.DefinitionBody.fromString(JSON.stringify(taskDefinition)),
    definitionSubstitutions: Object.fromEntries((Object.keys(steps) as TaskStepName[]).map((s) => [taskSubstitutionKey(s), steps[s].functionArn])),
    tracingEnabled: true,
    // Every execution event, so a task can be followed step by step in the console; without execution data (prompts).
    logs: {
      destination: new logs.LogGroup(stack, "TaskMachineLogs", {
        retention: logs.RetentionDays.ONE_MONTH,
        removalPolicy: app.stage === "prod" ? RemovalPolicy.RETAIN : RemovalPolicy.DESTROY,
      }),
      level: sfn.LogLevel.ALL,
      includeExecutionData: false,
    },
  });
  // A definition given as a string carries no construct references: the invoke grant is written out, on the
  // unqualified ARNs the ASL calls.
  machine.addToRolePolicy(new iam.PolicyStatement({ actions: ["lambda:InvokeFunction"], resources: Object.values(steps).map((fn) => fn.functionArn) }));
  NagSuppressions.addResourceSuppressions(
    machine,
    [
      {
        id: "AwsSolutions-IAM5",
        reason:
          "CDK's grants for the state machine's X-Ray tracing (xray:PutTraceSegments, PutTelemetryRecords, GetSampling*) " +
          "and CloudWatch Logs delivery (logs:CreateLogDelivery and the other log-delivery calls) support no resource ARN, only *.",
        appliesTo: ["Resource::*"],
      },
    ],
    true,
  );

  // The sweeper: starts new attempts and the cycles' retries, describes an attempt's execution; 5 minutes at most.
  const sweeper = new Function(stack, "TaskSweeper", {
    handler: TASK_SWEEPER_HANDLER,
    description: "Resume or fail background tasks whose worker died; retry failed research cycles",
    timeout: 300,
    environment: { ...environment, TASK_STATE_MACHINE_ARN: machine.stateMachineArn },
  });
  grantTableData(sweeper, table.cdk.table);
  machine.grantStartExecution(sweeper);
  machine.grantExecution(sweeper, "states:DescribeExecution");
  suppressExecutions(sweeper);
  new Cron(stack, "TaskSweep", { schedule: TASK_SWEEPER_SCHEDULE, job: sweeper });
  alarmOnExecutions(machine, alarms);
  alarmOnErrors(sweeper, alarms);

  // The overnight research cycles, at 02:00 UTC from EventBridge Scheduler (its role may invoke this function only).
  const cycles = new Function(stack, "TaskCycles", {
    handler: TASK_CYCLES_HANDLER,
    description: "Start the overnight research cycles (02:00 UTC)",
    timeout: 300,
    environment: { ...environment, TASK_STATE_MACHINE_ARN: machine.stateMachineArn },
  });
  grantTableData(cycles, table.cdk.table);
  machine.grantStartExecution(cycles);
  // Each schedule has its own role, allowed to invoke its one function, unqualified (CDK's grantInvoke would add every
  // version, `:*`), and only from this account's schedules.
  const schedule = (id: string, fn: Function, expression: string, description: string) => {
    alarmOnErrors(fn, alarms);
    const role = new iam.Role(stack, `${id}Role`, {
      assumedBy: new iam.ServicePrincipal("scheduler.amazonaws.com", { conditions: { StringEquals: { "aws:SourceAccount": stack.account } } }),
      description: `EventBridge Scheduler: ${description}`,
    });
    role.addToPolicy(new iam.PolicyStatement({ actions: ["lambda:InvokeFunction"], resources: [fn.functionArn] }));
    return new scheduler.CfnSchedule(stack, id, {
      description,
      scheduleExpression: expression,
      scheduleExpressionTimezone: "Etc/UTC",
      flexibleTimeWindow: { mode: "OFF" },
      state: "ENABLED",
      // A failed delivery is retried for an hour: both handlers are idempotent per day (core/cycle; core/entropy skips
      // a workspace scanned recently), so a repeat is harmless.
      target: { arn: fn.functionArn, roleArn: role.roleArn, retryPolicy: { maximumRetryAttempts: 3, maximumEventAgeInSeconds: 3600 } },
    });
  };
  schedule("ResearchCycles", cycles, CYCLES_SCHEDULE_EXPRESSION, "Overnight research cycles (spec 02: nightly at 02:00 UTC)");

  // The entropy scanner: every workspace due a scan (stale sources, contradictory insights), reading through indexes
  // and embedding insights (Bedrock); no bucket. Daily, after the cycles (which scan their own workspaces).
  const entropyScanner = new Function(stack, "EntropyScanner", {
    handler: ENTROPY_SCANNER_HANDLER,
    description: "Scan due workspaces for stale sources and contradictory insights (daily)",
    timeout: ENTROPY_SCANNER_TIMEOUT_SECONDS,
    environment,
  });
  grantTableData(entropyScanner, table.cdk.table);
  entropyScanner.addToRolePolicy(bedrockInvokeStatement(stack));
  suppressBedrockRegions(entropyScanner);
  schedule("EntropyScan", entropyScanner, ENTROPY_SCAN_SCHEDULE_EXPRESSION, "Daily entropy scan of the workspaces due one (issue #21)");

  stack.addOutputs({ TaskStateMachineArn: machine.stateMachineArn });
  return { machine, run, fail, sweeper, cycles, entropyScanner };
}
