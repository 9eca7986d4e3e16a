/**
 * The extraction state machine (spec 01 Research source processing), defined once: deployed to Step Functions
 * by stacks/Pipelines.ts and run locally by aws-local-stepfunctions with each Task state overridden by the same
 * handler module (local/pipeline.ts).
 *
 * Input: { workspace_id, source_id, bucket, key, attempt }. Validate replaces `key` with the key of the bytes it
 * checked (a presigned upload is copied to the source's `validated/` key, which no presigned POST can overwrite).
 * Validate -> Route (Choice) -> one of: Parse (in-Lambda parsers; all formats on the embedded runtime),
 * Textract (async text detection, polled; PDFs and TIFFs), Transcribe (speaker labels, polled) -> Complete. A polled
 * job that is still running after JOB_DEADLINE_SECONDS fails the source (through MarkFailed, before the execution's
 * own TimeoutSeconds, which no Catch sees).
 * Any failure is caught into MarkFailed, which records a reason a user can act on.
 * Index (embedding the source's mentions for synthesis) runs after Complete: the text is already usable, so an
 * Index failure ends in IndexSkipped (synthesis embeds on the fly) instead of failing the source.
 */

/** Task states and the handler module (functions/steps/<file>.ts, export `handler`) each one runs. */
export const STEP_TASKS = {
  Validate: "validate",
  Parse: "parse",
  StartTextract: "textract-start",
  CheckTextract: "textract-check",
  StartTranscribe: "transcribe-start",
  CheckTranscribe: "transcribe-check",
  Complete: "complete",
  Index: "index",
  MarkFailed: "fail",
} as const;
export type StepTaskName = keyof typeof STEP_TASKS;

/**
 * The execution's own limit (the definition's TimeoutSeconds). An execution that reaches it ends TIMED_OUT: no Catch
 * runs, so MarkFailed never does, and the recovery sweeper (core/pipeline/recovery.ts) fails the source instead.
 */
export const EXECUTION_TIMEOUT_SECONDS = 3600;

/**
 * How long a Textract or Transcribe job may stay IN_PROGRESS, from its start (StartTextract / StartTranscribe stamp
 * `job.started_at`), before CheckTextract / CheckTranscribe fail the source with a reason (functions/steps/jobs.ts).
 * Well below EXECUTION_TIMEOUT_SECONDS, so the failure goes through MarkFailed: what runs before the job (Validate:
 * a head read and a server-side copy) and after the deadline (one last Check, at most its Lambda's 300 s, then
 * MarkFailed, or Complete on success) fits in the remaining 15 minutes.
 */
export const JOB_DEADLINE_SECONDS = EXECUTION_TIMEOUT_SECONDS - 15 * 60;

/** Placeholder for a task's Lambda ARN in the definition; the stack substitutes it (DefinitionSubstitutions). */
export const arnPlaceholder = (task: StepTaskName) => `\${${task}Arn}`;

/**
 * Lambda's transient faults, AWS's recommended Retry set for a Lambda task (plus Lambda.Unknown: a runtime that died).
 * Exported so the other state machine (task.asl.ts) can share it; this file imports nothing, so no cycle.
 */
export const LAMBDA_TRANSIENT_ERRORS = [
  "Lambda.ServiceException",
  "Lambda.AWSLambdaException",
  "Lambda.SdkClientException",
  "Lambda.TooManyRequestsException",
  "Lambda.Unknown",
] as const;

// Throttling (the services' and Lambda's) and transient Lambda faults are retried with jittered exponential backoff;
// anything else is a real failure.
// Retrying is safe: every step is idempotent (Start steps use a per-attempt job name / client token, Check steps only poll).
const RETRY = [
  {
    ErrorEquals: [
      "ThrottlingException",
      "ProvisionedThroughputExceededException",
      "ProvisionedThroughputExceeded",
      "TooManyRequestsException",
      "LimitExceededException",
      ...LAMBDA_TRANSIENT_ERRORS,
    ],
    IntervalSeconds: 2,
    MaxAttempts: 5,
    BackoffRate: 2,
    JitterStrategy: "FULL",
  },
];
const CATCH = [{ ErrorEquals: ["States.ALL"], ResultPath: "$.error", Next: "MarkFailed" }];

const task = (name: StepTaskName, next: string | null, extra: Record<string, unknown> = {}) => ({
  Type: "Task",
  Resource: arnPlaceholder(name),
  Retry: RETRY,
  ...(name === "MarkFailed" ? {} : { Catch: CATCH }),
  ...(next ? { Next: next } : { End: true }),
  ...extra,
});

/** The Amazon States Language definition. */
export const extractionDefinition = {
  Comment: "Research source text extraction",
  StartAt: "Validate",
  TimeoutSeconds: EXECUTION_TIMEOUT_SECONDS,
  States: {
    Validate: task("Validate", "Route"),
    Route: {
      Type: "Choice",
      Choices: [
        { Variable: "$.route", StringEquals: "textract", Next: "StartTextract" },
        { Variable: "$.route", StringEquals: "transcribe", Next: "StartTranscribe" },
      ],
      Default: "Parse",
    },
    Parse: task("Parse", "Complete"),
    StartTextract: task("StartTextract", "WaitTextract"),
    WaitTextract: { Type: "Wait", Seconds: 5, Next: "CheckTextract" },
    CheckTextract: task("CheckTextract", "TextractDone"),
    TextractDone: {
      Type: "Choice",
      Choices: [{ Variable: "$.job.status", StringEquals: "IN_PROGRESS", Next: "WaitTextract" }],
      Default: "Complete",
    },
    StartTranscribe: task("StartTranscribe", "WaitTranscribe"),
    WaitTranscribe: { Type: "Wait", Seconds: 15, Next: "CheckTranscribe" },
    CheckTranscribe: task("CheckTranscribe", "TranscribeDone"),
    TranscribeDone: {
      Type: "Choice",
      Choices: [{ Variable: "$.job.status", StringEquals: "IN_PROGRESS", Next: "WaitTranscribe" }],
      Default: "Complete",
    },
    Complete: task("Complete", "Index"),
    Index: task("Index", null, { Catch: [{ ErrorEquals: ["States.ALL"], ResultPath: "$.indexError", Next: "IndexSkipped" }] }),
    IndexSkipped: { Type: "Succeed" },
    MarkFailed: task("MarkFailed", null),
  },
} as const;
