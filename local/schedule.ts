/** A running schedule: stop it to end the ticks (waits for a run in flight). */
export interface Schedule {
  stop(): Promise<void>;
}

/**
 * The embedded runtime's stand-in for an EventBridge rate rule: `first` runs at once, then `every` each `intervalMs`.
 * One run at a time: a slow run is neither overtaken nor queued behind by the next tick. Errors go to `onError`
 * (none after `stop`). The timer does not hold the process open.
 */
export function startSchedule(opts: {
  first: () => Promise<void>;
  every: () => Promise<void>;
  intervalMs: number;
  onError: (err: unknown) => void;
}): Schedule {
  let busy = false;
  let stopped = false;
  let current: Promise<void> = Promise.resolve();
  const run = async (work: () => Promise<void>) => {
    if (busy || stopped) return;
    busy = true;
    try {
      await work();
    } catch (err) {
      if (!stopped) opts.onError(err);
    } finally {
      busy = false;
    }
  };
  current = run(opts.first);
  const timer = setInterval(() => {
    if (!busy) current = run(opts.every);
  }, opts.intervalMs);
  timer.unref();
  return {
    async stop() {
      stopped = true;
      clearInterval(timer);
      await current;
    },
  };
}

/** A running cron job: stop it to end the firings (waits for a run in flight). */
export interface CronJob extends Schedule {
  /** When it fires next (UTC instant), or null once stopped. */
  nextRun(): Date | null;
}

/**
 * The embedded runtime's stand-in for an EventBridge Scheduler cron schedule (DESIGN.md 6.5: an in-process cron
 * library locally): `croner` fires `run` on `pattern` (5 fields, read in UTC like EventBridge's `cron(...)`). One run
 * at a time (croner's `protect`); errors go to `onError` (none after `stop`). The timer does not hold the process open.
 */
export async function startCron(opts: { pattern: string; run: () => Promise<void>; onError: (err: unknown) => void }): Promise<CronJob> {
  const { Cron } = await import("croner");
  let stopped = false;
  let current: Promise<void> = Promise.resolve();
  const job = new Cron(opts.pattern, { timezone: "UTC", protect: true, unref: true }, () => {
    current = opts.run().catch((err: unknown) => {
      if (!stopped) opts.onError(err);
    });
    return current;
  });
  return {
    nextRun: () => (stopped ? null : job.nextRun()),
    async stop() {
      stopped = true;
      job.stop();
      await current;
    },
  };
}
