import { DescribeExecutionCommand, ExecutionAlreadyExists, ExecutionDoesNotExist, SFNClient, StartExecutionCommand, StopExecutionCommand } from "@aws-sdk/client-sfn";
import { Config } from "../config";

/** Input of the task state machine (functions/steps/task.asl.ts): one execution per attempt of a task. */
export interface TaskExecutionInput {
  workspace_id: string;
  task_id: string;
  /** The task's attempt this execution runs; the steps write nothing for a superseded attempt. */
  attempt: number;
  /** The task type's timeout (spec 02), read by the Run state's `TimeoutSecondsPath`. */
  timeout_seconds: number;
}

/** One execution: a task's attempt names it. */
export type TaskExecutionRef = Pick<TaskExecutionInput, "task_id" | "attempt">;

/** The execution name of an attempt (Step Functions names are unique per state machine for 90 days). */
export const taskExecutionName = (ref: TaskExecutionRef) => `${ref.task_id}-${ref.attempt}`;

/**
 * Runs task executions (DESIGN.md 6.5): Step Functions Standard in AWS, aws-local-stepfunctions on the embedded runtime
 * (local/tasks.ts), both the same definition.
 */
export interface TaskRunner {
  /** Start the execution of an attempt; a second start of the same attempt does nothing. */
  start(input: TaskExecutionInput): Promise<void>;
  /** Stop the execution of an attempt (a cancelled task); one already ended is left as it is. */
  stop(ref: TaskExecutionRef, cause: string): Promise<void>;
  /** Is an execution of this attempt still running? The sweeper resumes a task only when none is. */
  isRunning(ref: TaskExecutionRef): Promise<boolean>;
}

let sfn: SFNClient | undefined;
const client = () => (sfn ??= new SFNClient({ region: Config.region() }));

function stateMachineArn(): string {
  const arn = process.env.TASK_STATE_MACHINE_ARN;
  if (!arn) throw new Error("TASK_STATE_MACHINE_ARN is not set");
  return arn;
}

/** arn:aws:states:<region>:<account>:stateMachine:<name> -> ...:execution:<name>:<execution> */
const executionArn = (ref: TaskExecutionRef) => `${stateMachineArn().replace(":stateMachine:", ":execution:")}:${taskExecutionName(ref)}`;

/** The Step Functions runner (TASK_STATE_MACHINE_ARN, stacks/Tasks.ts): StartExecution, StopExecution, DescribeExecution. */
export const stepFunctionsTaskRunner: TaskRunner = {
  async start(input) {
    try {
      await client().send(new StartExecutionCommand({ stateMachineArn: stateMachineArn(), name: taskExecutionName(input), input: JSON.stringify(input) }));
    } catch (err) {
      if (!(err instanceof ExecutionAlreadyExists)) throw err;
    }
  },
  async stop(ref, cause) {
    try {
      await client().send(new StopExecutionCommand({ executionArn: executionArn(ref), cause: cause.slice(0, 32_000) }));
    } catch (err) {
      if (!(err instanceof ExecutionDoesNotExist)) throw err;
    }
  },
  async isRunning(ref) {
    try {
      const { status } = await client().send(new DescribeExecutionCommand({ executionArn: executionArn(ref) }));
      return status === "RUNNING" || status === "PENDING_REDRIVE";
    } catch (err) {
      if (err instanceof ExecutionDoesNotExist) return false;
      throw err;
    }
  },
};

let runner: TaskRunner = stepFunctionsTaskRunner;

/** Install the runner (the embedded runtime installs the local one, local/events.ts). */
export function setTaskRunner(next: TaskRunner): void {
  runner = next;
}

/** The installed runner. */
export const taskRunner = (): TaskRunner => runner;
