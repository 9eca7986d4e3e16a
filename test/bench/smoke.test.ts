/**
 * Every benchmark in bench/ at its smoke size (BENCH_SIZE=smoke, bench/lib/size.ts), so a benchmark that no longer
 * runs (a plan limit it now hits, a rate limit, a changed API) fails `npm test` instead of rotting unseen. Asserted:
 * it completes (exit code 0), says it ran at the smoke size, and prints a table. Nothing about its figures or its
 * time: at this size they mean nothing.
 *
 * The benchmarks are found as `npm run bench` finds them (bench/lib/discover.ts), so a new one is covered without
 * being listed here. Each runs in a fresh child process through bench/run.ts, as `npm run bench` runs it: most start
 * their own runtime (the object store, the gateway, the event sources) and set process-wide settings. The child gets
 * this process's environment without the test suite's own settings (test/support/setup.ts and applyLocalEnv), so it
 * sees what a developer's `npm run bench -- --smoke <name>` sees, with one difference: BENCH_DYNAMODB_ENDPOINT is the
 * test run's DynamoDB Local (test/support/global-setup.ts), on which each benchmark makes a table of its own
 * (bench/lib/runtime.ts startBenchDynamo), instead of a JVM started per benchmark. Two run at a time; each has its
 * own time bound, counted from its start, after which its process group is stopped.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { join } from "node:path";
import { afterAll, describe, expect, inject, it } from "vitest";
import { BENCH_DIR, discoverBenchmarks } from "../../bench/lib/discover";

const RUN = join(BENCH_DIR, "run.ts");
const ROOT = join(BENCH_DIR, "..");
/** Benchmarks running at once (the suite targets 2 cores). */
const SLOTS = 2;
/** Bound on one benchmark's run, from its start: far above the 5–40 s each takes (slower when the suite runs beside it). */
const RUN_BOUND_MS = 240_000;
/** The vitest bound of a test: its wait for a slot plus its run. */
const TEST_TIMEOUT_MS = 900_000;
/** Settings of the test suite (test/support/setup.ts, local/env.ts applyLocalEnv, vitest) that a benchmark must not inherit. */
const SUITE_SETTINGS = [
  "ACCESS_GATING", "VALIDATE_RESPONSES", "LOG_LEVEL", "POWERTOOLS_LOG_LEVEL", "LOCAL_RETRY_INTERVAL_MS", "MENTION_INDEXING",
  "TABLE_NAME", "BUCKET_NAME", "DYNAMODB_ENDPOINT", "S3_ENDPOINT", "JWT_ISSUER", "JWT_AUDIENCE", "JWT_JWKS",
];

function benchEnv(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, BENCH_SIZE: "smoke", BENCH_DYNAMODB_ENDPOINT: inject("dynamoEndpoint") };
  for (const key of SUITE_SETTINGS) delete env[key];
  for (const key of Object.keys(env)) if (key.startsWith("VITEST") || key === "TEST") delete env[key];
  if (env.NODE_ENV === "test") delete env.NODE_ENV;
  return env;
}

/** A FIFO of SLOTS places. */
let free = SLOTS;
const waiting: (() => void)[] = [];
async function slot<T>(fn: () => Promise<T>): Promise<T> {
  if (free > 0) free--;
  else await new Promise<void>((resolve) => waiting.push(resolve));
  try {
    return await fn();
  } finally {
    const next = waiting.shift();
    if (next) next();
    else free++;
  }
}

const running = new Set<ChildProcess>();

/** Stop a child's whole process group (the benchmark and what it started: DynamoDB Local's JVM, its own children). */
function stopGroup(child: ChildProcess, signal: NodeJS.Signals): void {
  if (child.pid === undefined || child.exitCode !== null || child.signalCode !== null) return;
  try {
    process.kill(-child.pid, signal);
  } catch {
    // already gone
  }
}

interface Run {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
  ms: number;
  timedOut: boolean;
}

/** `node --import tsx bench/run.ts <name>` at the smoke size, in its own process group. */
function runBenchmark(name: string): Promise<Run> {
  return new Promise((resolve, reject) => {
    const started = performance.now();
    const child = spawn(process.execPath, ["--import", "tsx", RUN, name], { cwd: ROOT, env: benchEnv(), detached: true, stdio: ["ignore", "pipe", "pipe"] });
    running.add(child);
    let stdout = "";
    let stderr = "";
    let timedOut = false;
    child.stdout!.setEncoding("utf8").on("data", (d: string) => (stdout += d));
    child.stderr!.setEncoding("utf8").on("data", (d: string) => (stderr += d));
    // SIGTERM first: the benchmark runtime stops its emulators on it (bench/lib/runtime.ts); SIGKILL if it hangs.
    const bound = setTimeout(() => {
      timedOut = true;
      stopGroup(child, "SIGTERM");
      setTimeout(() => stopGroup(child, "SIGKILL"), 10_000).unref();
    }, RUN_BOUND_MS);
    child.on("error", (err) => {
      clearTimeout(bound);
      running.delete(child);
      reject(err);
    });
    child.on("close", (code, signal) => {
      clearTimeout(bound);
      running.delete(child);
      resolve({ code, signal, stdout, stderr, ms: performance.now() - started, timedOut });
    });
  });
}

const tail = (text: string, lines = 40) => text.trimEnd().split("\n").slice(-lines).join("\n");

afterAll(() => {
  for (const child of running) stopGroup(child, "SIGKILL");
});

const names = discoverBenchmarks();

describe("benchmarks at their smoke size (BENCH_SIZE=smoke)", () => {
  it("finds the benchmarks as bench/run.ts does", () => {
    expect(names.length).toBeGreaterThan(0);
    expect(names).toContain("foundation");
  });

  it.concurrent.each(names)(
    "%s completes and prints its table",
    async (name) => {
      const run = await slot(() => runBenchmark(name));
      const output = `--- stdout (end) ---\n${tail(run.stdout)}\n--- stderr (end) ---\n${tail(run.stderr, 20)}`;
      console.info(`bench smoke: ${name} ${run.code === 0 ? "ran" : "FAILED"} in ${(run.ms / 1000).toFixed(1)} s`);
      expect(run.timedOut, `${name} did not finish within ${RUN_BOUND_MS / 1000} s\n${output}`).toBe(false);
      expect(run.code, `bench/${name}.ts failed (exit ${run.code}, signal ${run.signal})\n${output}`).toBe(0);
      expect(run.stdout, `bench/run.ts did not report ${name} done\n${output}`).toContain(`[${name}] done in`);
      // Every benchmark honours the smoke size and says so (bench/lib/size.ts sizeNote), so none runs at full size here.
      expect(run.stdout, `bench/${name}.ts does not print sizeNote(): give it a smoke size (bench/lib/size.ts)\n${output}`).toContain("BENCH_SIZE=smoke");
      // A table of figures: printTable's header rule (bench/lib/stats.ts), at least two columns.
      expect(run.stdout, `bench/${name}.ts printed no table\n${output}`).toMatch(/^-+(?: {2}-+)+$/m);
    },
    TEST_TIMEOUT_MS,
  );
});
