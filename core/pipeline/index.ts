import {
  DescribeExecutionCommand,
  ExecutionAlreadyExists,
  ExecutionDoesNotExist,
  SFNClient,
  StartExecutionCommand,
  type ExecutionStatus,
} from "@aws-sdk/client-sfn";
import { Config } from "../config";

/** Input of the extraction state machine (functions/steps/extraction.asl.ts). */
export interface ExtractionInput {
  workspace_id: string;
  source_id: string;
  bucket: string;
  key: string;
  /** The source's processing attempt; steps ignore writes from a superseded attempt. */
  attempt: number;
}

/** One execution of the extraction of a source: its processing attempt names it. */
export type ExecutionRef = Pick<ExtractionInput, "source_id" | "attempt">;

/** Starts workflow executions: Step Functions in AWS, aws-local-stepfunctions on the embedded runtime. */
export interface WorkflowRunner {
  startExtraction(input: ExtractionInput): Promise<void>;
  /**
   * Is an execution of this attempt still running? The recovery sweeper (core/pipeline/recovery.ts) restarts a
   * source's work only when none is, so a slow execution is never raced by a second one.
   */
  isRunning(ref: ExecutionRef): Promise<boolean>;
  /**
   * Did this attempt's execution end because the state machine's own TimeoutSeconds ran out (Step Functions'
   * TIMED_OUT)? Such an execution runs no Catch, so MarkFailed never recorded a reason: the recovery sweeper fails
   * the source with one instead of starting the same slow (and, for Textract and Transcribe, paid) work again.
   * Optional: a runner without an execution timeout (the embedded runtime's) leaves it out, which means "no".
   */
  timedOut?(ref: ExecutionRef): Promise<boolean>;
}

/** The execution name of an attempt: a duplicated S3 event cannot start a second execution of the same attempt. */
export const executionName = (ref: ExecutionRef) => `${ref.source_id}-${ref.attempt}`;

let sfn: SFNClient | undefined;

/**
 * Step Functions runner. The execution name is `<source id>-<attempt>`, so a duplicated S3 event cannot start a
 * second execution of the same attempt (ExecutionAlreadyExists is ignored).
 */
export const stepFunctionsRunner: WorkflowRunner = {
  async startExtraction(input) {
    const stateMachineArn = process.env.EXTRACTION_STATE_MACHINE_ARN;
    if (!stateMachineArn) throw new Error("EXTRACTION_STATE_MACHINE_ARN is not set");
    sfn ??= new SFNClient({ region: Config.region() });
    try {
      await sfn.send(
        new StartExecutionCommand({ stateMachineArn, name: executionName(input), input: JSON.stringify(input) }),
      );
    } catch (err) {
      if (!(err instanceof ExecutionAlreadyExists)) throw err;
    }
  },
  async isRunning(ref) {
    const status = await executionStatus(ref);
    return status === "RUNNING" || status === "PENDING_REDRIVE";
  },
  async timedOut(ref) {
    return (await executionStatus(ref)) === "TIMED_OUT";
  },
};

/**
 * The status of an attempt's execution (DescribeExecution): RUNNING, SUCCEEDED, FAILED, TIMED_OUT, ABORTED or
 * PENDING_REDRIVE; undefined when there is none.
 */
async function executionStatus(ref: ExecutionRef): Promise<ExecutionStatus | undefined> {
  const stateMachineArn = process.env.EXTRACTION_STATE_MACHINE_ARN;
  if (!stateMachineArn) throw new Error("EXTRACTION_STATE_MACHINE_ARN is not set");
  sfn ??= new SFNClient({ region: Config.region() });
  // arn:aws:states:<region>:<account>:stateMachine:<name> -> arn:aws:states:<region>:<account>:execution:<name>:<execution>
  const executionArn = `${stateMachineArn.replace(":stateMachine:", ":execution:")}:${executionName(ref)}`;
  try {
    return (await sfn.send(new DescribeExecutionCommand({ executionArn }))).status;
  } catch (err) {
    if (err instanceof ExecutionDoesNotExist) return undefined;
    throw err;
  }
}

let runner: WorkflowRunner = stepFunctionsRunner;

/** Install the runner (the embedded runtime installs the local one at start-up). */
export function setWorkflowRunner(next: WorkflowRunner): void {
  runner = next;
}

/** Start text extraction for a source (spec 01 Research source processing: pending -> completed | failed). */
export const startExtraction = (input: ExtractionInput): Promise<void> => runner.startExtraction(input);

/** Is an execution of this attempt of a source's extraction still running (see WorkflowRunner.isRunning)? */
export const isExtractionRunning = (ref: ExecutionRef): Promise<boolean> => runner.isRunning(ref);

/**
 * Did this attempt's execution end by the state machine's timeout (see WorkflowRunner.timedOut)? False when the
 * runner cannot tell.
 */
export const hasExtractionTimedOut = async (ref: ExecutionRef): Promise<boolean> => (await runner.timedOut?.(ref)) ?? false;
