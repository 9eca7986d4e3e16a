import { aws_iam as iam, aws_logs as logs, aws_s3 as s3, aws_s3_notifications as s3n, aws_stepfunctions as sfn, RemovalPolicy } from "aws-cdk-lib";
import { NagSuppressions } from "cdk-nag";
import { Cron, Function, use, type StackContext } from "sst/constructs";
import { STEP_TASKS, arnPlaceholder, extractionDefinition, type StepTaskName } from "../functions/steps/extraction.asl";
import { alarmOnErrors, alarmOnExecutions } from "./Alarms";
import { bedrockInvokeStatement, grantBucket, grantTableData, suppressBedrockRegions, type BucketAccess } from "./defaults";
import { runtimeEnvironment, Secrets } from "./Secrets";
import { Storage, UPLOAD_PREFIX } from "./Storage";

/** The handler module of a Step Functions task (DESIGN.md section 3: one task per file). */
export const stepHandler = (task: StepTaskName) => `functions/steps/${STEP_TASKS[task]}.handler`;

/** The scheduled sweeper that recovers sources whose extraction or indexing died (core/pipeline/recovery.ts). */
export const SOURCE_SWEEPER_HANDLER = "functions/events/source-sweeper.handler";
/** How often the source recovery sweeper runs. */
export const SOURCE_SWEEPER_SCHEDULE = "rate(1 minute)";

/** The S3 event consumer that validates an upload and starts extraction. */
export const UPLOAD_HANDLER = "functions/events/s3-upload.handler";

/** The `DefinitionSubstitutions` key of a task: its ARN placeholder without the `${...}` around it. */
export const substitutionKey = (task: StepTaskName) => arnPlaceholder(task).slice(2, -1);

// The AWS calls of each task (core/extract/textract.ts, core/extract/transcribe.ts). Textract and Transcribe have
// no resource-level scoping for these calls, hence "*"; each action goes only to the task that makes it.
const SERVICE_ACTIONS: Partial<Record<StepTaskName, string[]>> = {
  // PNG and JPEG images are read with Textract's synchronous text detection inside Parse (functions/steps/parse.ts);
  // PDFs and TIFFs go to StartTextract.
  Parse: ["textract:DetectDocumentText"],
  StartTextract: ["textract:StartDocumentTextDetection"],
  CheckTextract: ["textract:GetDocumentTextDetection"],
  StartTranscribe: ["transcribe:StartTranscriptionJob"],
  CheckTranscribe: ["transcribe:GetTranscriptionJob"],
};
/** Tasks that call the AI ports (Index embeds the source's mentions with the Embedder). */
const AI_TASKS: readonly StepTaskName[] = ["Index"];

/**
 * What each task does with the uploads bucket (stacks/defaults.ts `BucketAccess`). Validate sniffs the file's head and
 * deletes a rejected file; Parse reads the file (and Textract reads images with the task's rights) and stores the
 * extraction; StartTextract and StartTranscribe hand the stored file to the service, which reads it with the caller's
 * rights; the Check tasks store the extraction; Complete deletes an extraction whose source went away meanwhile; Index
 * reads the extraction and stores or removes the mentions file; MarkFailed deletes the failed attempt's validated copy.
 * test/stacks/bucket-access.test.ts checks this table against the code.
 */
export const STEP_BUCKET_ACCESS: Readonly<Record<StepTaskName, readonly BucketAccess[]>> = {
  // Read the upload, copy the checked version (CopyObject: read on the source, write on the copy), delete a refused one.
  Validate: ["read", "write", "delete"],
  Parse: ["read", "write"],
  StartTextract: ["read"],
  CheckTextract: ["write"],
  StartTranscribe: ["read"],
  CheckTranscribe: ["write"],
  Complete: ["delete"],
  Index: ["read", "write", "delete"],
  MarkFailed: ["delete"],
};
/** The upload consumer deletes an upload whose source no longer exists; it starts extractions, reads nothing. */
export const UPLOAD_BUCKET_ACCESS: readonly BucketAccess[] = ["delete"];
/**
 * The recovery sweeper checks that an upload exists, indexes (reads the extraction, stores the mentions), and
 * finishes document deletions (lists and deletes a document's stored texts: core/document/deletion.ts).
 */
export const SOURCE_SWEEPER_BUCKET_ACCESS: readonly BucketAccess[] = ["read", "write", "list", "delete"];

/**
 * The Pipelines stack: research source extraction (spec 01 Research source processing).
 *
 * - One Lambda per Task state of `functions/steps/extraction.asl.ts` (5 minutes, 2 GB: parsing and OCR are
 *   CPU- and memory-bound), each with table read/write and the bucket calls it makes ({@link STEP_BUCKET_ACCESS}).
 *   Textract and Transcribe read the object with the caller's credentials, so their tasks need the bucket read as
 *   well as the service actions; the Index task may invoke Bedrock (embeddings).
 * - The Standard state machine deployed from that same ASL, each `${<Task>Arn}` substituted with the task's ARN,
 *   allowed to invoke exactly those functions, logging every execution event (without execution data) and traced.
 * - The S3 object-created notification under `workspaces/` to `functions/events/s3-upload.handler`, which starts
 *   an execution (EXTRACTION_STATE_MACHINE_ARN). The notification sits on an imported reference to the bucket so
 *   its custom resource lives in this stack: Storage never depends on Pipelines, so there is no stack cycle.
 *
 * @returns the state machine and the functions, for the Api stack (reprocess starts an execution too).
 */
export function Pipelines({ stack, app }: StackContext) {
  const { table, bucket } = use(Storage);
  const { parameters, alarms } = use(Secrets);
  const environment = runtimeEnvironment(app.stage, { tableName: table.tableName, bucketName: bucket.bucketName }, parameters);

  const grantStorage = (fn: Function, access: readonly BucketAccess[]) => {
    grantTableData(fn, table.cdk.table);
    grantBucket(fn, bucket.cdk.bucket, access);
  };

  const tasks = Object.fromEntries(
    (Object.keys(STEP_TASKS) as StepTaskName[]).map((task) => {
      const fn = new Function(stack, `Step${task}`, {
        handler: stepHandler(task),
        description: `Extraction task ${task}`,
        timeout: 300,
        memorySize: 2048,
        environment,
      });
      grantStorage(fn, STEP_BUCKET_ACCESS[task]);
      const actions = SERVICE_ACTIONS[task];
      if (actions) {
        // A policy of its own, so its suppression covers these service actions and nothing else of the role.
        const service = new iam.Policy(stack, `Step${task}Service`, {
          roles: [fn.role!],
          statements: [new iam.PolicyStatement({ actions, resources: ["*"] })],
        });
        NagSuppressions.addResourceSuppressions(service, [
          {
            id: "AwsSolutions-IAM5",
            reason: `${actions.join(", ")}: Textract and Transcribe offer no resource-level permissions for their text-detection and transcription calls, so IAM can only allow them on *; which stored files the task can hand over is limited by its own S3 grant.`,
            appliesTo: ["Resource::*"],
          },
        ]);
        // Deployed before the function (not its role, which the policy names), like the role's default policy.
        fn.node.defaultChild!.node.addDependency(service);
      }
      if (AI_TASKS.includes(task)) {
        fn.addToRolePolicy(bedrockInvokeStatement(stack));
        suppressBedrockRegions(fn);
      }
      return [task, fn];
    }),
  ) as Record<StepTaskName, Function>;

  const extraction = new sfn.StateMachine(stack, "Extraction", {
    stateMachineType: sfn.StateMachineType.STANDARD,
    definitionBody: sfn.DefinitionBody.fromString(JSON.stringify(extractionDefinition)),
    definitionSubstitutions: Object.fromEntries(
      (Object.keys(tasks) as StepTaskName[]).map((task) => [substitutionKey(task), tasks[task].functionArn]),
    ),
    tracingEnabled: true,
    // Every execution event (state entered and exited, task scheduled, succeeded, failed), so a stuck or failed source
    // can be followed step by step; without execution data, which would copy file text and names into the logs.
    logs: {
      destination: new logs.LogGroup(stack, "ExtractionLogs", {
        retention: logs.RetentionDays.ONE_MONTH,
        removalPolicy: app.stage === "prod" ? RemovalPolicy.RETAIN : RemovalPolicy.DESTROY,
      }),
      level: sfn.LogLevel.ALL,
      includeExecutionData: false,
    },
  });
  // A definition given as a string carries no construct references, so CDK cannot infer these grants. The ASL calls
  // each task by its unqualified ARN, so that is all the role may invoke (grantInvoke would add every version, `:*`).
  extraction.addToRolePolicy(
    new iam.PolicyStatement({ actions: ["lambda:InvokeFunction"], resources: Object.values(tasks).map((fn) => fn.functionArn) }),
  );
  NagSuppressions.addResourceSuppressions(
    extraction,
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

  const onUpload = new Function(stack, "OnUpload", {
    handler: UPLOAD_HANDLER,
    description: "Validate a research upload and start its extraction",
    environment: { ...environment, EXTRACTION_STATE_MACHINE_ARN: extraction.stateMachineArn },
  });
  grantStorage(onUpload, UPLOAD_BUCKET_ACCESS);
  extraction.grantStartExecution(onUpload);

  const uploads = s3.Bucket.fromBucketAttributes(stack, "UploadsRef", {
    bucketArn: bucket.bucketArn,
    bucketName: bucket.bucketName,
  });
  uploads.addEventNotification(s3.EventType.OBJECT_CREATED, new s3n.LambdaDestination(onUpload), { prefix: UPLOAD_PREFIX });

  // Recovery: the durable record drives the work. The sweeper asks Step Functions whether an attempt's execution
  // still runs (DescribeExecution), starts a new one when it does not, and indexes (Bedrock embeddings) what the
  // Index step left; 5 minutes, as an Index task.
  const sweeper = new Function(stack, "SourceSweeper", {
    handler: SOURCE_SWEEPER_HANDLER,
    description: "Recover research sources whose extraction or indexing did not finish",
    timeout: 300,
    memorySize: 1024,
    environment: { ...environment, EXTRACTION_STATE_MACHINE_ARN: extraction.stateMachineArn },
  });
  grantStorage(sweeper, SOURCE_SWEEPER_BUCKET_ACCESS);
  extraction.grantStartExecution(sweeper);
  // DescribeExecution is the one read it makes (core/pipeline/index.ts), on this state machine's executions only.
  extraction.grantExecution(sweeper, "states:DescribeExecution");
  NagSuppressions.addResourceSuppressions(
    sweeper,
    [
      {
        id: "AwsSolutions-IAM5",
        reason: "Executions are named per source attempt at run time (<source id>-<attempt>); the grant covers the executions of this one state machine.",
        appliesTo: [{ regex: "/^Resource::arn:<AWS::Partition>:states:[^:]+:[^:]+:execution:.*:\\*$/" }],
      },
    ],
    true,
  );
  sweeper.addToRolePolicy(bedrockInvokeStatement(stack));
  suppressBedrockRegions(sweeper);
  new Cron(stack, "SourceSweep", { schedule: SOURCE_SWEEPER_SCHEDULE, job: sweeper });
  alarmOnExecutions(extraction, alarms);
  alarmOnErrors(sweeper, alarms);

  stack.addOutputs({ ExtractionStateMachineArn: extraction.stateMachineArn });
  return { extraction, tasks, onUpload, sweeper };
}
