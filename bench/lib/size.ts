/**
 * The size a benchmark runs at, chosen by one setting: `BENCH_SIZE=smoke|full` (default `full`).
 *
 * - `full`: the counts the figures in bench/README.md were measured with (`npm run bench`).
 * - `smoke`: the same code paths at a tiny size, so a benchmark that no longer runs is noticed: `npm test` runs every
 *   benchmark at this size (test/bench/smoke.test.ts) and asserts only that it completes and prints its table. Its
 *   figures mean nothing.
 *
 * `npm run bench -- --smoke [name ...]` sets it for a run (bench/run.ts). Benchmarks read it when their module loads
 * (`sized(full, smoke)` at the top level) or when they run; either way it must be set before either.
 */
export type BenchSize = "smoke" | "full";

const SIZES: readonly BenchSize[] = ["smoke", "full"];

/** The size of this run, from `BENCH_SIZE` (unset or empty: full). */
export function benchSize(): BenchSize {
  const value = (process.env.BENCH_SIZE ?? "").trim().toLowerCase() || "full";
  if (!(SIZES as readonly string[]).includes(value)) throw new Error(`BENCH_SIZE must be smoke or full, not "${process.env.BENCH_SIZE}"`);
  return value as BenchSize;
}

/** True at the smoke size. */
export const isSmoke = (): boolean => benchSize() === "smoke";

/** `full` at the full size, `smoke` at the smoke size. */
export function sized<T>(full: T, smoke: T): T {
  return isSmoke() ? smoke : full;
}

/** A line for a benchmark's header when it runs at the smoke size (empty at the full size). */
export function sizeNote(): string {
  return isSmoke() ? "BENCH_SIZE=smoke: a tiny run that checks the benchmark still works; its figures mean nothing." : "";
}
