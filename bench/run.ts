/**
 * Benchmark dispatcher. Benchmarks assert nothing about their figures; `npm test` runs each at its smoke size only
 * (test/bench/smoke.test.ts), to notice one that no longer runs.
 *
 *   npm run bench                 run every benchmark at its full size, each in its own fresh process
 *   npm run bench -- <name> ...   run the named ones (bench/<name>.ts), in this process when only one
 *   npm run bench -- --smoke ...  the same at the smoke size (BENCH_SIZE=smoke; bench/lib/size.ts)
 *   npm run bench -- --list       list the benchmarks found
 *
 * A benchmark is any bench/<name>.ts (not run.ts, not under lib/) whose default export is
 * `async function (): Promise<void>`; it prints its own figures. Exit code: 0 when all ran, 1 when one failed,
 * 2 for an unknown name or option.
 */
import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { discoverBenchmarks as discover } from "./lib/discover";
import { benchSize } from "./lib/size";

const HERE = dirname(fileURLToPath(import.meta.url));

type Bench = () => Promise<void>;

async function load(name: string): Promise<Bench | undefined> {
  const mod = (await import(pathToFileURL(join(HERE, `${name}.ts`)).href)) as { default?: unknown };
  return typeof mod.default === "function" ? (mod.default as Bench) : undefined;
}

/** Run one benchmark in this process. */
async function runHere(name: string): Promise<boolean> {
  const bench = await load(name);
  if (!bench) {
    console.error(`bench/${name}.ts has no default export function; skipped.`);
    return false;
  }
  const t0 = performance.now();
  await bench();
  console.log(`\n[${name}] done in ${((performance.now() - t0) / 1000).toFixed(1)} s (size ${benchSize()})`);
  return true;
}

/** Run one benchmark in a fresh process (same Node and loader flags), so no benchmark sees another's state. */
function runIsolated(name: string): Promise<boolean> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [...process.execArgv, fileURLToPath(import.meta.url), name], { stdio: "inherit" });
    const forward = (signal: NodeJS.Signals) => child.kill(signal);
    process.on("SIGINT", forward);
    process.on("SIGTERM", forward);
    child.on("exit", (code) => {
      process.off("SIGINT", forward);
      process.off("SIGTERM", forward);
      resolve(code === 0);
    });
  });
}

/** The project's pinned Node 22 (npm `node` devDependency), which npm scripts and npx put first on PATH. */
const PINNED_NODE = join(HERE, "..", "node_modules", ".bin", "node");

/** Started with another Node (tsx called directly, system Node first on PATH): run again on the pinned one. */
function rerunOnPinnedNode(): Promise<number> | undefined {
  if (process.versions.node.split(".")[0] === "22" || !existsSync(PINNED_NODE) || process.env.BENCH_RERUN === "1") return undefined;
  console.log(`bench: started on Node ${process.version}; running again on the pinned Node 22 (${PINNED_NODE})`);
  return new Promise((resolve) => {
    const child = spawn(PINNED_NODE, [...process.execArgv, fileURLToPath(import.meta.url), ...process.argv.slice(2)], {
      stdio: "inherit",
      env: { ...process.env, BENCH_RERUN: "1" },
    });
    const forward = (signal: NodeJS.Signals) => child.kill(signal);
    process.on("SIGINT", forward);
    process.on("SIGTERM", forward);
    child.on("exit", (code) => resolve(code ?? 1));
  });
}

async function main(): Promise<number> {
  const rerun = rerunOnPinnedNode();
  if (rerun) return rerun;
  const argv = process.argv.slice(2).filter((a) => a !== "--");
  const available = discover();
  if (argv.includes("--list") || argv.includes("--help") || argv.includes("-h")) {
    console.log(`Benchmarks: ${available.join(", ") || "(none)"}\nUsage: npm run bench [-- [--smoke | --size=smoke|full] <name> ...]`);
    return 0;
  }
  // The size goes to the environment, so the benchmark modules (loaded below) and the isolated children see it.
  for (const a of argv) {
    if (a === "--smoke") process.env.BENCH_SIZE = "smoke";
    else if (a === "--full") process.env.BENCH_SIZE = "full";
    else if (a.startsWith("--size=")) process.env.BENCH_SIZE = a.slice("--size=".length);
  }
  try {
    benchSize();
  } catch (err) {
    console.error((err as Error).message);
    return 2;
  }
  const args = argv.filter((a) => !a.startsWith("--"));
  const badOption = argv.find((a) => a.startsWith("--") && a !== "--smoke" && a !== "--full" && !a.startsWith("--size="));
  if (badOption) {
    console.error(`Unknown option: ${badOption}. Options: --smoke, --full, --size=smoke|full, --list`);
    return 2;
  }
  const unknown = args.filter((a) => !available.includes(a));
  if (unknown.length > 0) {
    console.error(`Unknown benchmark: ${unknown.join(", ")}. Available: ${available.join(", ") || "(none)"}`);
    return 2;
  }
  if (args.length === 1) return (await runHere(args[0]!)) ? 0 : 1;
  const selected = args.length > 0 ? args : available;
  const failed: string[] = [];
  for (const name of selected) {
    console.log(`\n########## bench: ${name} ##########`);
    if (!(await runIsolated(name))) failed.push(name);
  }
  if (failed.length > 0) console.error(`\nFailed or skipped: ${failed.join(", ")}`);
  return failed.length > 0 ? 1 : 0;
}

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    console.error(err);
    process.exit(1);
  },
);
