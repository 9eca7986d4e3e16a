import { readdirSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

/** The bench/ folder. */
export const BENCH_DIR = join(dirname(fileURLToPath(import.meta.url)), "..");
/** Run first, in this order, when present; the rest follow alphabetically. */
const PREFERRED_ORDER = ["foundation", "bundle"];
const NAME = /^[a-z0-9][a-z0-9-]*$/;

/**
 * Names of the benchmarks: every bench/<name>.ts except run.ts (lib/ is a folder, so never listed). Candidates: the
 * default export is checked when a benchmark is loaded. Used by bench/run.ts and by the smoke test
 * (test/bench/smoke.test.ts), so a new benchmark is run by both without being listed anywhere.
 */
export function discoverBenchmarks(): string[] {
  const names = readdirSync(BENCH_DIR, { withFileTypes: true })
    .filter((e) => e.isFile() && e.name.endsWith(".ts") && !e.name.endsWith(".d.ts") && e.name !== "run.ts")
    .map((e) => e.name.slice(0, -3))
    .filter((n) => NAME.test(n));
  const rank = (n: string) => {
    const i = PREFERRED_ORDER.indexOf(n);
    return i === -1 ? PREFERRED_ORDER.length : i;
  };
  return names.sort((a, b) => rank(a) - rank(b) || a.localeCompare(b));
}
