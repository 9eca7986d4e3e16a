import { StateMachine } from "aws-local-stepfunctions";
import { taskDefinition, TASK_STEPS, type TaskStepName } from "../functions/steps/task.asl";
import { taskExecutionName, type TaskExecutionInput, type TaskRunner } from "../core/task/runner";
import { abortWorker, TaskSuperseded } from "../core/task/workers";
import { outsideRequestScope } from "../core/context";

type StepHandler = (input: unknown) => Promise<unknown>;

/** Executions this process runs, by execution name, with how to stop each: after a crash none is, which is how the sweeper knows. */
const running = new Map<string, { abort: () => void; input: TaskExecutionInput }>();
const inFlight = new Set<Promise<unknown>>();

/**
 * The embedded runtime's task runner (DESIGN.md 6.5): aws-local-stepfunctions runs the same ASL definition as Step
 * Functions (functions/steps/task.asl.ts), each Task state overridden by the same handler module. The Run state's
 * `TimeoutSecondsPath` holds here as in AWS (the runner raises States.Timeout into the Catch). Stop aborts the
 * execution and the worker of its attempt at once (in AWS the worker learns it at its next write).
 * @param opts.handlers replace a state's step module (tests)
 */
export function localTaskRunner(opts: { handlers?: Partial<Record<TaskStepName, StepHandler>> } = {}): TaskRunner {
  const machine = new StateMachine(taskDefinition as never, { validationOptions: { checkPaths: false } });
  const handlers: Record<string, StepHandler> = {};
  for (const [state, file] of Object.entries(TASK_STEPS) as [TaskStepName, string][]) {
    handlers[state] =
      opts.handlers?.[state] ??
      (async (input: unknown) => ((await import(`../functions/steps/${file}.ts`)) as { handler: StepHandler }).handler(input));
  }
  return {
    async start(input) {
      const name = taskExecutionName(input);
      if (running.has(name)) return;
      // Outside the starting request's scope: a Step Functions execution is no part of the request that started it.
      const execution = outsideRequestScope(() => machine.run(input as never, { overrides: { taskResourceLocalHandlers: handlers as never }, noThrowOnAbort: true }));
      const run = execution.result.catch((err: unknown) => {
        // Failed executions end in the Fail state (the task is failed there); anything else is the runner's own.
        if ((err as { name?: string }).name !== "ExecutionError") console.error(`task execution ${name} failed outside the state machine:`, err);
      });
      running.set(name, { abort: execution.abort, input });
      inFlight.add(run);
      void run.finally(() => {
        inFlight.delete(run);
        if (running.get(name)?.abort === execution.abort) running.delete(name);
      });
    },
    async stop(ref) {
      const name = taskExecutionName(ref);
      running.get(name)?.abort();
      running.delete(name);
      abortWorker(ref.task_id, ref.attempt);
    },
    async isRunning(ref) {
      return running.has(taskExecutionName(ref));
    },
  };
}

/** Resolve once no local task execution is running (benchmarks and tests wait on this). */
export async function drainLocalTasks(): Promise<void> {
  while (inFlight.size > 0) await Promise.allSettled([...inFlight]);
}

/**
 * Stop this process's executions and workers of a task as if the process had died (no Fail state, no write): what a
 * `kill -9` does to the embedded runtime, for the recovery tests. @returns whether one was running.
 */
export function dropLocalExecution(ref: { task_id: string; attempt: number }): boolean {
  const name = taskExecutionName(ref);
  const execution = running.get(name);
  if (!execution) return false;
  running.delete(name);
  execution.abort();
  abortWorker(ref.task_id, ref.attempt, new TaskSuperseded("the process died"));
  return true;
}

