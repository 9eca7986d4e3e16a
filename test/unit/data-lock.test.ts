/**
 * The data-folder lock of `npm start` (local/data-lock.ts): one runtime per data folder. Taken, refused while a live
 * process holds it, taken over from a dead one, released only by its holder; and atomic across processes racing for
 * it, on a free folder and on a stale lock alike.
 */
import { spawn, spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdtemp, readdir, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { DataDirInUseError, LOCK_FILE, pidAlive, takeDataLock } from "../../local/data-lock";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));

/** The pid of a process that has exited (a crashed `npm start`). */
function deadPid(): number {
  const child = spawnSync(process.execPath, ["-e", "process.stdout.write(String(process.pid))"], { encoding: "utf8" });
  const pid = Number(child.stdout);
  expect(pidAlive(pid)).toBe(false);
  return pid;
}

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), "r2d-lock-"));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe("takeDataLock", () => {
  it("takes a free folder (creating it), writes its pid, and release removes the lock", async () => {
    const data = join(dir, "nested", ".data");

    const lock = takeDataLock(data);

    expect(lock.file).toBe(join(data, LOCK_FILE));
    expect((await readFile(lock.file, "utf8")).trim()).toBe(String(process.pid));
    expect(await readdir(data)).toEqual([LOCK_FILE]);
    lock.release();
    expect(existsSync(lock.file)).toBe(false);
    lock.release();
    expect(takeDataLock(data).pid).toBe(process.pid);
  });

  it("refuses while a live process holds it, in one sentence naming that pid and DATA_DIR, and leaves its lock alone", async () => {
    const data = join(dir, ".data");
    const held = takeDataLock(data, { pid: process.pid });

    let error: unknown;
    try {
      takeDataLock(data, { pid: process.pid + 1 });
    } catch (err) {
      error = err;
    }

    expect(error).toBeInstanceOf(DataDirInUseError);
    const message = (error as Error).message;
    expect((error as DataDirInUseError).pid).toBe(process.pid);
    expect(message).toContain(`(pid ${process.pid})`);
    expect(message).toContain(data);
    expect(message).toContain("DATA_DIR");
    expect(message.split(/[.;]\s+[A-Z]/)).toHaveLength(1);
    expect(message).toMatch(/^Another `npm start` .*\.$/);
    expect((await readFile(held.file, "utf8")).trim()).toBe(String(process.pid));
    expect(await readdir(data)).toEqual([LOCK_FILE]);
  });

  it("names a folder under the working directory relatively (.data/)", () => {
    expect(new DataDirInUseError(42, join(process.cwd(), ".data")).message).toBe(
      "Another `npm start` (pid 42) is already using .data/; stop it first or set DATA_DIR to another folder.",
    );
  });

  it("takes over the lock of a dead process (a crash), and of an unreadable one", async () => {
    const data = join(dir, ".data");
    takeDataLock(data, { pid: deadPid() });

    const lock = takeDataLock(data);

    expect((await readFile(lock.file, "utf8")).trim()).toBe(String(process.pid));
    lock.release();
    await writeFile(join(data, LOCK_FILE), "");
    expect((await readFile(takeDataLock(data).file, "utf8")).trim()).toBe(String(process.pid));
    expect(await readdir(data)).toEqual([LOCK_FILE]);
  });

  it("release removes only its own lock: a lock taken over since then stays", async () => {
    const data = join(dir, ".data");
    const first = takeDataLock(data, { pid: deadPid() });
    const second = takeDataLock(data);

    first.release();

    expect((await readFile(second.file, "utf8")).trim()).toBe(String(process.pid));
    second.release();
    expect(existsSync(second.file)).toBe(false);
  });

  it("a process the holder named (its DynamoDB Local) keeps the lock after the holder died: the refusal names it", async () => {
    const data = join(dir, ".data");
    const crashed = takeDataLock(data, { pid: deadPid() });
    // This test process stands for the JVM the crashed runtime started, which is still running.
    crashed.addPid(process.pid);

    let error: unknown;
    try {
      takeDataLock(data);
    } catch (err) {
      error = err;
    }

    expect(error).toBeInstanceOf(DataDirInUseError);
    expect((error as DataDirInUseError).pid).toBe(process.pid);
    expect((error as Error).message).toBe(
      `A DynamoDB Local (pid ${process.pid}) left running by an \`npm start\` that did not stop cleanly is still using ${data}; stop it (kill ${process.pid}) first or set DATA_DIR to another folder.`,
    );
    expect((await readFile(crashed.file, "utf8")).split("\n").filter(Boolean)).toEqual([String(crashed.pid), String(process.pid)]);
    expect(await readdir(data)).toEqual([LOCK_FILE]);
  });

  it("release keeps the lock while a process the holder named still runs, and removes it once that one is gone", async () => {
    const data = join(dir, ".data");
    const lock = takeDataLock(data);
    lock.addPid(process.pid);
    lock.release();
    expect(existsSync(lock.file)).toBe(true);

    const other = takeDataLock(join(dir, "other"));
    other.addPid(deadPid());
    other.release();
    expect(existsSync(other.file)).toBe(false);
  });
});

describe("pidAlive", () => {
  it("is true for a running process and false for one that has exited", () => {
    expect(pidAlive(process.pid)).toBe(true);
    expect(pidAlive(deadPid())).toBe(false);
  });

  it.runIf(process.platform === "linux")("is false for a zombie (exited, not reaped), which signal 0 still finds", async () => {
    // The parent forks a child that exits at once and never waits for it: the child stays a zombie for as long as
    // the parent lives. (perl-base is part of every Debian system; a shell's `true &` may be reaped by the shell.)
    const parent = spawn("perl", ["-e", "$| = 1; my $pid = fork(); if ($pid == 0) { exit 0 } print \"$pid\\n\"; sleep 10"], { stdio: ["ignore", "pipe", "ignore"] });
    try {
      const zombie = Number(await new Promise<string>((resolve) => parent.stdout.once("data", (d: Buffer) => resolve(d.toString()))));
      let state = "";
      for (let i = 0; i < 100 && state !== "Z"; i++) {
        const stat = await readFile(`/proc/${zombie}/stat`, "utf8");
        state = stat.slice(stat.lastIndexOf(")") + 2, stat.lastIndexOf(")") + 3);
        if (state !== "Z") await new Promise((r) => setTimeout(r, 20));
      }
      expect(state).toBe("Z");
      expect(() => process.kill(zombie, 0)).not.toThrow();

      expect(pidAlive(zombie)).toBe(false);
    } finally {
      parent.kill("SIGKILL");
    }
  });
});

describe("processes racing for one folder", () => {
  /**
   * Start `n` processes, wait until each is ready, then tell them all at once to try the lock; each keeps what it got
   * until told to stop (so a winner still holds the lock while the others try).
   */
  async function race(data: string, n: number): Promise<string[]> {
    const script = join(dir, "take.ts");
    await writeFile(
      script,
      `import { createInterface } from "node:readline";
import { takeDataLock } from ${JSON.stringify(pathToFileURL(join(ROOT, "local/data-lock.ts")).href)};
const lines = createInterface({ input: process.stdin });
lines.once("line", () => {
  try { takeDataLock(process.argv[2]!); console.log("took"); } catch (err) { console.log((err as Error).name); }
});
lines.once("close", () => process.exit(0));
console.log("ready");
`,
    );
    const children = Array.from({ length: n }, () =>
      spawn(process.execPath, ["--import", "tsx", script, data], { cwd: ROOT, stdio: ["pipe", "pipe", "inherit"] }),
    );
    const lineOf = (child: (typeof children)[number], index: number) =>
      new Promise<string>((resolve, reject) => {
        let out = "";
        const onData = (chunk: Buffer) => {
          out += chunk.toString();
          const lines = out.split("\n");
          if (lines.length > index + 1) {
            child.stdout.off("data", onData);
            resolve(lines[index]!.trim());
          }
        };
        child.stdout.on("data", onData);
        child.once("exit", (code) => reject(new Error(`racer exited (${code}) early: ${out}`)));
      });
    const answers = children.map((child) => lineOf(child, 1));
    await Promise.all(children.map((child) => lineOf(child, 0)));
    for (const child of children) child.stdin.write("go\n");
    const results = await Promise.all(answers);
    // Every racer has answered while all of them are still alive; now let them go.
    await Promise.all(children.map((child) => new Promise((resolve) => (child.once("exit", resolve), child.stdin.end()))));
    return results.sort();
  }

  it("exactly one of three takes a free folder; the others refuse", async () => {
    const answers = await race(join(dir, "free"), 3);
    expect(answers).toEqual(["DataDirInUseError", "DataDirInUseError", "took"]);
  }, 20_000);

  it("exactly one of three takes over a stale lock; the others refuse", async () => {
    const data = join(dir, "stale");
    takeDataLock(data, { pid: deadPid() });

    const answers = await race(data, 3);

    expect(answers).toEqual(["DataDirInUseError", "DataDirInUseError", "took"]);
    expect(await readdir(data)).toEqual([LOCK_FILE]);
  }, 20_000);
});
