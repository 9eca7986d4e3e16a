/** The points where a crash test can kill the process (test/flows/pending-action-crash.test.ts, source-crash.test.ts). */
export type CrashPoint = "after-claim" | "after-execute" | "source-after-complete";

/**
 * Test hook for the crash tests: with env `R2D_CRASH_AT` set to this point the process kills itself with SIGKILL
 * there, as a machine failure would. Does nothing when unset.
 */
export function crashPoint(point: CrashPoint): void {
  if (process.env.R2D_CRASH_AT === point) process.kill(process.pid, "SIGKILL");
}
