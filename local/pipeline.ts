import { StateMachine } from "aws-local-stepfunctions";
import pLimit, { type LimitFunction } from "p-limit";
import { extractionDefinition, STEP_TASKS, type StepTaskName } from "../functions/steps/extraction.asl";
import { executionName, type ExtractionInput, type WorkflowRunner } from "../core/pipeline";
import { outsideRequestScope } from "../core/context";

type TaskHandler = (input: unknown) => Promise<unknown>;

const inFlight = new Set<Promise<unknown>>();
/** Executions this process runs, by execution name: after a crash none is, which is how the sweeper knows. */
const running = new Set<string>();

/**
 * The extraction definition as the local runner executes it. aws-local-stepfunctions gives a Task state without
 * `TimeoutSeconds` a 60-second timeout, where Step Functions waits for the task (in AWS its Lambda's own 300 s
 * timeout bounds it). Locally there is no Lambda timeout, and OCR or transcription of a minute of audio on a small
 * machine takes longer than 60 s, so such a task would fail with States.Timeout ("Extraction timed out") although
 * the engine was still working within its own limits. Those tasks get the execution's TimeoutSeconds instead.
 */
export function localExtractionDefinition(): typeof extractionDefinition {
  const definition = structuredClone(extractionDefinition) as unknown as {
    TimeoutSeconds: number;
    States: Record<string, { Type: string; TimeoutSeconds?: number }>;
  };
  for (const state of Object.values(definition.States)) {
    if (state.Type === "Task" && state.TimeoutSeconds === undefined) state.TimeoutSeconds = definition.TimeoutSeconds;
  }
  return definition as unknown as typeof extractionDefinition;
}

/**
 * The embedded runtime's workflow runner: aws-local-stepfunctions runs the same ASL definition as Step Functions,
 * each Task state overridden by the same handler module. Wait states are skipped (nothing is polled locally);
 * retry intervals can be shortened with LOCAL_RETRY_INTERVAL_MS (tests).
 *
 * Executions all run at once, as in Step Functions; the two kinds of task that hold real work take turns. At most
 * `parseConcurrency` Parse tasks run at once (default 4): they hold a file's bytes, and four are enough that the
 * I/O steps of some (Validate, Complete) overlap the CPU-bound parsing of others, which the engines bound
 * themselves (PDF worker threads, one OCR worker, one transcription per core). At most `indexConcurrency` Index
 * tasks (default 2) embed mentions at once. The limits are per task, not per execution, so a folder's later files
 * are extracted while earlier ones are still being embedded: a Markdown file does not wait a minute behind a
 * survey export's embedding to reach `completed`.
 */
export function localWorkflowRunner(
  opts: {
    parseConcurrency?: number;
    indexConcurrency?: number;
    /** Handlers that replace a state's step module (tests hold a task to observe the others). */
    handlers?: Partial<Record<StepTaskName, TaskHandler>>;
  } = {},
): WorkflowRunner {
  const machine = new StateMachine(localExtractionDefinition() as never, { validationOptions: { checkPaths: false } });
  const limits: Partial<Record<StepTaskName, LimitFunction>> = {
    Parse: pLimit(opts.parseConcurrency ?? 4),
    Index: pLimit(opts.indexConcurrency ?? 2),
  };
  const taskHandlers: Record<string, TaskHandler> = {};
  for (const [state, file] of Object.entries(STEP_TASKS) as [StepTaskName, string][]) {
    const run =
      opts.handlers?.[state] ??
      (async (input: unknown) => {
        const mod = (await import(`../functions/steps/${file}.ts`)) as { handler: TaskHandler };
        return mod.handler(input);
      });
    const limit = limits[state];
    taskHandlers[state] = limit ? (input) => limit(() => run(input)) : run;
  }
  const retryMs = process.env.LOCAL_RETRY_INTERVAL_MS;
  const retryIntervalOverrides = retryMs
    ? Object.fromEntries(Object.keys(STEP_TASKS).map((state) => [state, Number(retryMs)]))
    : undefined;
  return {
    async startExtraction(input: ExtractionInput) {
      // As Step Functions refuses a second execution of the same name (ExecutionAlreadyExists, core/pipeline): an
      // object-created event repeated while the attempt runs (a presigned POST used again) starts nothing.
      if (running.has(executionName(input))) return;
      // Outside the starting request's scope: a Step Functions execution is no part of the request that started it.
      const execution = outsideRequestScope(() =>
        machine.run(input as never, {
          overrides: {
            taskResourceLocalHandlers: taskHandlers as never,
            waitTimeOverrides: { WaitTextract: 0, WaitTranscribe: 0 },
            ...(retryIntervalOverrides ? { retryIntervalOverrides } : {}),
          },
        }),
      );
      const run = execution.result.catch((err: unknown) => {
        // Every task failure is caught into MarkFailed; reaching here means MarkFailed itself failed.
        console.error(`extraction of source ${input.source_id} failed outside the state machine:`, err);
      });
      const name = executionName(input);
      inFlight.add(run);
      running.add(name);
      void run.finally(() => {
        inFlight.delete(run);
        running.delete(name);
      });
    },
    async isRunning(ref) {
      return running.has(executionName(ref));
    },
  };
}

/** Resolve once no local execution is running (demo and benchmarks wait on this). */
export async function drainLocalWorkflows(): Promise<void> {
  while (inFlight.size > 0) await Promise.allSettled([...inFlight]);
}
