/**
 * The background task state machine (spec 02 Background task; DESIGN.md 6.5), defined once: deployed to Step Functions
 * (Standard, so the console shows each task's trace) by stacks/Tasks.ts and run locally by aws-local-stepfunctions
 * with each Task state overridden by the same handler module (local/tasks.ts). One execution per attempt of a task.
 *
 * Input: { workspace_id, task_id, attempt, timeout_seconds } (core/task/runner.ts TaskExecutionInput).
 * Run (the worker: claims the attempt, works, completes the task) -> Done. Run is cut off after the task type's
 * timeout (`TimeoutSecondsPath`: 240, 600 or 300 s, spec 02); that States.Timeout, and any error of the worker, is
 * caught into Fail, which writes the task failed with a reason a person can read ("... timed out after Ns" on
 * timeout), then ends the execution failed, so the console shows it.
 */

/** Task states and the handler module (functions/steps/<file>.ts, export `handler`) each one runs. */
export const TASK_STEPS = {
  Run: "task-run",
  Fail: "task-fail",
} as const;
export type TaskStepName = keyof typeof TASK_STEPS;

/** Placeholder for a task's Lambda ARN in the definition; the stack substitutes it (DefinitionSubstitutions). */
export const taskArnPlaceholder = (step: TaskStepName) => `\${Task${step}Arn}`;

/** The longest a task runs (fs_research, spec 02), seconds; the execution's own bound leaves room for Fail. */
export const LONGEST_TASK_SECONDS = 600;

/**
 * The worker is retried on Lambda's own transient faults (AWS's recommended set for a Lambda task, plus Lambda.Unknown:
 * a runtime that died), with backoff and jitter: a fault before the worker claimed its attempt must not fail a task
 * that never started. A retry of a worker that had claimed it cannot run a second worker of the same attempt (an
 * attempt is claimed once, core/task `claimAttempt`): it ends superseded and the sweeper resumes the task. The worker's
 * own errors are not retried here; one thrown before its claim leaves the task pending (functions/steps/task-fail.ts).
 * Fail is idempotent (a conditional write) and retried on every transient fault.
 */
const RUN_RETRY = [
  { ErrorEquals: ["Lambda.TooManyRequestsException"], IntervalSeconds: 2, MaxAttempts: 5, BackoffRate: 2 },
  { ErrorEquals: ["Lambda.ServiceException", "Lambda.AWSLambdaException", "Lambda.SdkClientException", "Lambda.Unknown"], IntervalSeconds: 1, MaxAttempts: 3, BackoffRate: 2, JitterStrategy: "FULL" },
];
const FAIL_RETRY = [
  {
    ErrorEquals: ["Lambda.TooManyRequestsException", "Lambda.ServiceException", "Lambda.SdkClientException", "Lambda.AWSLambdaException", "ProvisionedThroughputExceededException", "ThrottlingException"],
    IntervalSeconds: 2,
    MaxAttempts: 5,
    BackoffRate: 2,
  },
];

/** The Amazon States Language definition. */
export const taskDefinition = {
  Comment: "Background task: one execution per attempt",
  StartAt: "Run",
  TimeoutSeconds: LONGEST_TASK_SECONDS + 120,
  States: {
    Run: {
      Type: "Task",
      Resource: taskArnPlaceholder("Run"),
      TimeoutSecondsPath: "$.timeout_seconds",
      Retry: RUN_RETRY,
      Catch: [{ ErrorEquals: ["States.ALL"], ResultPath: "$.error", Next: "Fail" }],
      ResultPath: "$.outcome",
      Next: "Done",
    },
    Done: { Type: "Succeed" },
    Fail: {
      Type: "Task",
      Resource: taskArnPlaceholder("Fail"),
      Retry: FAIL_RETRY,
      ResultPath: "$.outcome",
      Next: "Failed",
    },
    Failed: { Type: "Fail", Error: "TaskFailed", Cause: "The task failed; the reason is on the task (GET /api/tasks/{task_id})" },
  },
} as const;
