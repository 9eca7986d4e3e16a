import { Config } from "../core/config";
import { sweepSources } from "../core/pipeline/recovery";
import { handler as sweeperHandler } from "../functions/events/source-sweeper";
import { handler as creditSweeperHandler } from "../functions/events/credit-sweeper";
import { handler as memorySweeperHandler } from "../functions/events/memory-sweeper";
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

/** How often the embedded runtime releases stale credit reservations (the 5-minute EventBridge rule of stacks/Billing.ts). */
const CREDIT_SWEEP_INTERVAL_MS = 5 * 60_000;

/**
 * The embedded runtime's schedule for the stale-reservation sweeper (core/billing/sweeper.ts): at start-up and then
 * every 5 minutes, the same handler AWS runs. Holds are stale only after 20 minutes, so a run of this process is
 * never released under it.
 */
export function startCreditSweep(opts: { intervalMs?: number; onError?: (err: unknown) => void } = {}): Schedule {
  const onError = opts.onError ?? ((err: unknown) => console.error("credit reservation sweep:", err));
  const sweep = async () => void (await creditSweeperHandler());
  return startSchedule({ first: sweep, every: sweep, intervalMs: opts.intervalMs ?? CREDIT_SWEEP_INTERVAL_MS, onError });
}

/** How often the embedded runtime sends owed memory exchanges again (the 5-minute EventBridge rule of stacks/Api.ts). */
const MEMORY_SWEEP_INTERVAL_MS = 5 * 60_000;

/**
 * The embedded runtime's schedule for memory's outbox sweeper (core/memory/owed.ts): at start-up and then every 5
 * minutes, the same handler AWS runs. An exchange is sent again only 30 minutes after its answer, so one this process
 * is still sending or learning is not sent twice; one a crash left unsent is sent by the first sweep once it is due.
 */
export function startMemorySweep(opts: { intervalMs?: number; onError?: (err: unknown) => void } = {}): Schedule {
  const onError = opts.onError ?? ((err: unknown) => console.error("memory outbox sweep:", err));
  const sweep = async () => void (await memorySweeperHandler());
  return startSchedule({ first: sweep, every: sweep, intervalMs: opts.intervalMs ?? MEMORY_SWEEP_INTERVAL_MS, onError });
}
