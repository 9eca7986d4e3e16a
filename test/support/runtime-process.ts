import { spawn, type ChildProcess } from "node:child_process";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { randomUUID } from "node:crypto";
import { tmpdir } from "node:os";
import { fileURLToPath } from "node:url";
import { join } from "node:path";
import { freePort } from "../../local/dynamodb";
import { devIdp } from "../../local/idp";
import { waitFor } from "./multipart";
import type { CrashPoint } from "../../core/crash-point";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
/** How long the embedded runtime may take to print that it is running (DynamoDB Local's JVM starts first). */
export const START_TIMEOUT = 90_000;

/**
 * The embedded runtime (`local/start.ts`) as a child process group on a data directory of its own, for crash tests:
 * start it, kill -9 all of it (the runtime, tsx and the DynamoDB Local JVM it started), start it again. DynamoDB
 * Local's port is fixed, so the test process can keep talking to it across restarts.
 */
export class RuntimeProcess {
  child: ChildProcess | undefined;
  output = "";

  constructor(readonly opts: { port: number; dynamoPort: number; dataDir: string; env: Record<string, string> }) {}

  /** A runtime on a fresh data directory (removed by `dispose`) and free ports, started once. */
  static async start(prefix: string, env: Record<string, string>): Promise<RuntimeProcess> {
    const [dataDir, port, dynamoPort] = await Promise.all([mkdtemp(join(tmpdir(), `${prefix}-`)), freePort(), freePort()]);
    const runtime = new RuntimeProcess({ port, dynamoPort, dataDir, env });
    await runtime.start();
    return runtime;
  }

  /** A bearer token from the runtime's dev identity provider (it keeps its keys in the data directory). */
  async token(claims: { email: string; name: string }): Promise<string> {
    return (await devIdp(this.opts.dataDir)).sign(claims);
  }

  get base(): string {
    return `http://127.0.0.1:${this.opts.port}`;
  }

  /** Start the runtime; resolves once it prints that it is running. `env` adds to the constructor's. */
  async start(env: Record<string, string> = {}): Promise<void> {
    this.output = "";
    const proc = spawn(join(ROOT, "node_modules/.bin/tsx"), ["local/start.ts", "--port", String(this.opts.port), "--data", this.opts.dataDir], {
      cwd: ROOT,
      // Its own process group: a kill -9 of the group also takes the DynamoDB Local JVM the runtime started.
      detached: true,
      stdio: ["ignore", "pipe", "pipe"],
      env: { ...process.env, DYNAMODB_PORT: String(this.opts.dynamoPort), ...this.opts.env, ...env },
    });
    this.child = proc;
    proc.stdout!.on("data", (d: Buffer) => (this.output += d.toString()));
    proc.stderr!.on("data", (d: Buffer) => (this.output += d.toString()));
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`runtime did not start within ${START_TIMEOUT} ms:\n${this.output}`)), START_TIMEOUT);
      proc.stdout!.on("data", () => {
        if (!this.output.includes("is running at")) return;
        clearTimeout(timer);
        resolve();
      });
      proc.once("exit", (code, signal) => {
        clearTimeout(timer);
        reject(new Error(`runtime exited at start (${code ?? signal}):\n${this.output}`));
      });
    });
  }

  /** Kill the child's whole process group with SIGKILL, if still there. */
  killGroup(): void {
    if (!this.child?.pid) return;
    try {
      process.kill(-this.child.pid, "SIGKILL");
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== "ESRCH") throw err;
    }
  }

  /** Resolves when the current child has exited (it is not restarted). */
  exited(timeoutMs: number): Promise<NodeJS.Signals | number | null> {
    const proc = this.child!;
    return new Promise((resolve, reject) => {
      if (proc.exitCode !== null || proc.signalCode !== null) return resolve(proc.signalCode ?? proc.exitCode);
      const timer = setTimeout(() => reject(new Error(`runtime still running after ${timeoutMs} ms:\n${this.output}`)), timeoutMs);
      proc.once("exit", (code, signal) => {
        clearTimeout(timer);
        resolve(signal ?? code);
      });
    });
  }

  /** Kill -9 everything of the current child and wait until it is gone (the JVM's port is free again). */
  async crash(): Promise<void> {
    this.killGroup();
    await this.exited(30_000);
    await waitFor(async () => {
      try {
        await fetch(`http://127.0.0.1:${this.opts.dynamoPort}`);
        return false;
      } catch {
        return true;
      }
    }, 30_000, 100);
  }

  /** Stop for good at the end of a test file, and remove the data directory. */
  async dispose(): Promise<void> {
    const proc = this.child;
    this.killGroup();
    if (proc) await this.exited(30_000).catch(() => undefined);
    await rm(this.opts.dataDir, { recursive: true, force: true });
  }
}

/** A runtime whose crash hook (core/crash-point.ts) the test arms through a file, at any time, without a restart. */
export interface CrashableRuntime {
  runtime: RuntimeProcess;
  /** Arm the hook at `at` for `arrivals` arrivals (default 1), or disarm it (`null`); the runtime reads it at each point. */
  arm(spec: { at: CrashPoint; arrivals?: number } | null): Promise<void>;
  /** Stop the runtime, remove its data directory and the hook file. */
  dispose(): Promise<void>;
}

/**
 * Start the embedded runtime for a crash test: table and bucket named after `name`, the crash hook disarmed and read
 * from a file of its own, and this process pointed at the child's DynamoDB Local (`DYNAMODB_ENDPOINT`, `TABLE_NAME`;
 * its fixed port survives restarts) for set-up, checks and sweeps run here.
 * @param env more settings of the child (lease and sweep intervals)
 */
export async function startCrashableRuntime(name: string, env: Record<string, string> = {}): Promise<CrashableRuntime> {
  const hookFile = join(tmpdir(), `${name}-hook-${randomUUID()}.json`);
  const arm = (spec: { at: CrashPoint; arrivals?: number } | null) => writeFile(hookFile, JSON.stringify(spec ? { arrivals: 1, ...spec } : {}));
  await arm(null);
  const runtime = await RuntimeProcess.start(name, { TABLE_NAME: name, BUCKET_NAME: `${name}-uploads`, R2D_CRASH_AT: "", R2D_CRASH_FILE: hookFile, ...env });
  const running = JSON.parse(await readFile(join(runtime.opts.dataDir, "runtime.json"), "utf8")) as { dynamoEndpoint: string; tableName: string };
  process.env.DYNAMODB_ENDPOINT = running.dynamoEndpoint;
  process.env.TABLE_NAME = running.tableName;
  return {
    runtime,
    arm,
    dispose: async () => {
      await runtime.dispose();
      await rm(hookFile, { force: true });
    },
  };
}
