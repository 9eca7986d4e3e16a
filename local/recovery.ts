import { Config } from "../core/config";
import { sweepSources } from "../core/pipeline/recovery";
import { handler as sweeperHandler } from "../functions/events/source-sweeper";

/** A running source recovery sweeper: stop it to end the schedule (waits for a sweep in flight). */
export interface SourceRecovery {
  stop(): Promise<void>;
}

/**
 * The embedded runtime's schedule for the research-source recovery sweeper (the EventBridge rule of
 * stacks/Pipelines.ts in AWS). At start-up it looks at every unsettled source whatever its due time: no execution of
 * a previous process survives it, so a source left pending or unindexed by a crash is picked up at once. Then the
 * same handler AWS runs, every `intervalMs` (default Config.sourceSweepIntervalSeconds).
 *
 * Run it only where this process's workflow runner is the one that executes the table's sources (`npm start`, the
 * demo): the runner is how the sweeper knows an execution still runs.
 */
export function startSourceRecovery(opts: { intervalMs?: number; onError?: (err: unknown) => void } = {}): SourceRecovery {
  const onError = opts.onError ?? ((err: unknown) => console.error("source recovery:", err));
  let busy = false;
  let stopped = false;
  let current: Promise<void> = Promise.resolve();
  const run = async (first: boolean) => {
    // One sweep at a time: a slow one (indexing embeds) is neither overtaken nor queued behind by the next tick.
    if (busy || stopped) return;
    busy = true;
    try {
      if (first) (await sweepSources({ all: true })).errors.forEach(onError);
      else await sweeperHandler();
    } catch (err) {
      onError(err);
    } finally {
      busy = false;
    }
  };
  current = run(true);
  const timer = setInterval(() => {
    if (!busy) current = run(false);
  }, opts.intervalMs ?? Config.sourceSweepIntervalSeconds() * 1000);
  timer.unref();
  return {
    async stop() {
      stopped = true;
      clearInterval(timer);
      await current;
    },
  };
}
