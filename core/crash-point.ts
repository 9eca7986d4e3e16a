import { readFileSync } from "node:fs";

/**
 * The points where a crash test can kill the process (test/flows/pending-action-crash.test.ts, source-crash.test.ts):
 * - `after-claim`: an executor claimed a pending action (executing, under its lease), nothing else happened;
 * - `before-commit`: a gated tool is about to commit its writes together with the action's flip to executed
 *   (core/db/agent-write.ts `commitWrites`): its AI call, locks and reads are done, nothing of it is written;
 * - `after-execute`: the tool returned, the executor has not yet finished the row;
 * - `before-settle`: a charged run's work is done (an approved action's writes and its flip to executed committed, for
 *   a tool whose commit runs inside the run) and its credit reservation is not yet settled (core/billing/charge.ts);
 * - `source-after-complete`: a research source was marked completed, not yet indexed;
 * - `memory-before-send`: a copilot answer was stored with its exchange owed to memory, the exchange not yet sent
 *   (core/memory/hook.ts; test/flows/memory-crash.test.ts).
 */
export type CrashPoint = "after-claim" | "before-commit" | "after-execute" | "before-settle" | "source-after-complete" | "memory-before-send";

/** Where the hook is armed: the point, and how many arrivals at it the process waits for before it dies. */
interface Armed {
  at: string;
  arrivals: number;
}

/**
 * The hook's setting, read at every call (only tests set it): env `R2D_CRASH_FILE` names a JSON file
 * `{"at": "<point>", "arrivals": n}` that a test may rewrite while the process runs (arming it without a restart);
 * otherwise env `R2D_CRASH_AT` names the point and `R2D_CRASH_ARRIVALS` the arrivals (default 1).
 */
function armed(): Armed | null {
  const file = process.env.R2D_CRASH_FILE;
  if (file) {
    try {
      const spec = JSON.parse(readFileSync(file, "utf8")) as Partial<Armed>;
      return spec.at ? { at: spec.at, arrivals: Math.max(1, Number(spec.arrivals ?? 1)) } : null;
    } catch {
      return null; // no file (or a half-written one): not armed
    }
  }
  const at = process.env.R2D_CRASH_AT;
  return at ? { at, arrivals: Math.max(1, Number(process.env.R2D_CRASH_ARRIVALS ?? 1)) } : null;
}

/** Arrivals at each point so far in this process (the barrier of `crashPointReached`). */
const arrived = new Map<string, number>();

/**
 * Test hook for the crash tests: when armed at this point the process kills itself with SIGKILL there, as a machine
 * failure would. Does nothing when not armed. For a point armed with several arrivals use `crashPointReached`.
 */
export function crashPoint(point: CrashPoint): void {
  if (armed()?.at === point) process.kill(process.pid, "SIGKILL");
}

/**
 * The barrier form of `crashPoint`, for points several executions reach concurrently: when armed at `point` with
 * `arrivals` n, each caller waits there (the promise never settles) until the n-th arrives, and then the process
 * kills itself with SIGKILL, so every one of them is interrupted at exactly this point. Resolves at once when not
 * armed at `point`. An arrival that never comes leaves the process waiting; the test's own timeout reports it.
 */
export async function crashPointReached(point: CrashPoint): Promise<void> {
  const spec = armed();
  if (spec?.at !== point) return;
  const n = (arrived.get(point) ?? 0) + 1;
  arrived.set(point, n);
  if (n >= spec.arrivals) process.kill(process.pid, "SIGKILL");
  await new Promise<never>(() => undefined);
}
