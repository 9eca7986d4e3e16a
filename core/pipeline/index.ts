import { ExecutionAlreadyExists, SFNClient, StartExecutionCommand } from "@aws-sdk/client-sfn";
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

/** Starts workflow executions: Step Functions in AWS, aws-local-stepfunctions on the embedded runtime. */
export interface WorkflowRunner {
  startExtraction(input: ExtractionInput): Promise<void>;
}

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
        new StartExecutionCommand({ stateMachineArn, name: `${input.source_id}-${input.attempt}`, input: JSON.stringify(input) }),
      );
    } catch (err) {
      if (!(err instanceof ExecutionAlreadyExists)) throw err;
    }
  },
};

let runner: WorkflowRunner = stepFunctionsRunner;

/** Install the runner (the embedded runtime installs the local one at start-up). */
export function setWorkflowRunner(next: WorkflowRunner): void {
  runner = next;
}

/** Start text extraction for a source (spec 01 Research source processing: pending -> completed | failed). */
export const startExtraction = (input: ExtractionInput): Promise<void> => runner.startExtraction(input);
