import { Config } from "../core/config";
import { sweepSources } from "../core/pipeline/recovery";
import { handler as sweeperHandler } from "../functions/events/source-sweeper";
import { startSchedule, type Schedule } from "./schedule";

/**
 * The embedded runtime's schedule for the research-source recovery sweeper (the EventBridge rule of
 * stacks/Pipelines.ts in AWS). At start-up it looks at every unsettled source whatever its due time: no execution of
 * a previous process survives it, so a source left pending or unindexed by a crash is picked up at once. Then the
 * same handler AWS runs, every `intervalMs` (default Config.sourceSweepIntervalSeconds).
 *
 * Run it only where this process's workflow runner is the one that executes the table's sources (`npm start`, the
 * demo): the runner is how the sweeper knows an execution still runs.
 */
export function startSourceRecovery(opts: { intervalMs?: number; onError?: (err: unknown) => void } = {}): Schedule {
  const onError = opts.onError ?? ((err: unknown) => console.error("source recovery:", err));
  return startSchedule({
    first: async () => (await sweepSources({ all: true })).errors.forEach(onError),
    every: async () => void (await sweeperHandler()),
    intervalMs: opts.intervalMs ?? Config.sourceSweepIntervalSeconds() * 1000,
    onError,
  });
}
