import { sweepTasks } from "../core/task/sweeper";
import { TaskSettings } from "../core/task/settings";
import { CYCLE_CRON } from "../core/cycle";
import { ENTROPY_SCAN_CRON } from "../core/entropy/settings";
import { handler as sweeperHandler } from "../functions/events/task-sweeper";
import { handler as cyclesHandler } from "../functions/events/task-cycles";
import { startCron, startSchedule, type CronJob, type Schedule } from "./schedule";

/** The embedded runtime's task schedules: the sweeper, the nightly research cycles and the daily entropy scan. */
export interface TaskSchedules {
  sweeper: Schedule;
  cycles: CronJob;
  entropy: CronJob;
  stop(): Promise<void>;
}

/**
 * The task sweeper (the EventBridge rule of stacks/Tasks.ts in AWS), the overnight research cycles at 02:00 UTC and the
 * scheduled entropy scanner at 04:00 UTC (EventBridge Scheduler in AWS; croner here), calling the same handlers. At
 * start-up the sweeper looks at every pending or running task whatever its due time: no execution of a previous
 * process survives it, so a task a crash left pending or running is resumed (or failed) at once. Then every
 * TASK_SWEEP_INTERVAL_SECONDS (default 30 s). The entropy scanner's module (and the language model its contradiction
 * check loads) is imported when it first fires.
 */
export async function startTaskSchedules(opts: { onError?: (err: unknown) => void } = {}): Promise<TaskSchedules> {
  const onError = opts.onError ?? ((err: unknown) => console.error("tasks:", err));
  const sweeper = startSchedule({
    first: async () => (await sweepTasks({ all: true })).errors.forEach(onError),
    every: async () => void (await sweeperHandler()),
    intervalMs: TaskSettings.sweepIntervalMs(),
    onError,
  });
  const cycles = await startCron({ pattern: CYCLE_CRON, run: async () => void (await cyclesHandler()), onError });
  // Without a Lambda context the handler gives itself the embedded runtime's budget (functions/events/entropy-scanner.ts).
  const entropy = await startCron({ pattern: ENTROPY_SCAN_CRON, run: async () => void (await (await import("../functions/events/entropy-scanner")).handler()), onError });
  return {
    sweeper,
    cycles,
    entropy,
    async stop() {
      await Promise.all([sweeper.stop(), cycles.stop(), entropy.stop()]);
    },
  };
}
