import { existsSync, linkSync, mkdirSync, readFileSync, renameSync, rmSync, unlinkSync, writeFileSync } from "node:fs";
import { isAbsolute, join, relative } from "node:path";

/**
 * The lock file of a data folder: the pid of the `npm start` that uses the folder on its first line, then the pids of
 * the processes it started that use the files too (its DynamoDB Local JVM, which outlives a `kill -9` of the runtime).
 */
export const LOCK_FILE = "start.lock";

/** A live process holds the data folder; the CLI prints only the message, one sentence. */
export class DataDirInUseError extends Error {
  override name = "DataDirInUseError";
  readonly pid: number;
  /**
   * @param pid the live holder
   * @param leftover the holder is a process a dead `npm start` left running (its DynamoDB Local), not the runtime
   */
  constructor(pid: number, dataDir: string, leftover = false) {
    const rel = relative(process.cwd(), dataDir);
    const shown = rel === "" ? "." : rel.startsWith("..") || isAbsolute(rel) ? dataDir : `${rel}/`;
    super(
      leftover
        ? `A DynamoDB Local (pid ${pid}) left running by an \`npm start\` that did not stop cleanly is still using ${shown}; stop it (kill ${pid}) first or set DATA_DIR to another folder.`
        : `Another \`npm start\` (pid ${pid}) is already using ${shown}; stop it first or set DATA_DIR to another folder.`,
    );
    this.pid = pid;
  }
}

/** A held lock. `release` is synchronous (it runs in a process `exit` handler) and removes only this holder's file. */
export interface DataLock {
  readonly file: string;
  readonly pid: number;
  /**
   * Name a process this holder started that uses the folder's files too: until it exits, the lock is not stale
   * even if the holder dies. The file is replaced atomically (write aside, rename over it).
   */
  addPid(pid: number): void;
  release(): void;
}

/**
 * Whether a process is running: signal 0 checks without signalling (EPERM: it runs under another user). On Linux a
 * zombie (exited, not yet reaped: a killed runtime's orphans until init collects them) answers signal 0 too, so its
 * state in /proc decides. A pid recycled by an unrelated process after a crash reads as alive: the refusal names it,
 * so it can be checked.
 */
export function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === "EPERM";
  }
  try {
    // /proc/<pid>/stat: "pid (comm) state ..."; comm may hold spaces and parentheses, so read after the last ")".
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return !/^[ZX]/.test(stat.slice(stat.lastIndexOf(")") + 2));
  } catch (err) {
    // Gone since the signal, on a system with /proc; without /proc (macOS) signal 0 is the answer.
    return !((err as NodeJS.ErrnoException).code === "ENOENT" && existsSync("/proc/self/stat"));
  }
}

/** The pids a lock file names (the holder first); empty when the file is gone or unreadable. */
const readPids = (file: string): number[] => {
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return [];
    throw err;
  }
  const pids = text.split("\n").filter((line) => line.trim() !== "").map(Number);
  return pids.length > 0 && pids.every((pid) => Number.isSafeInteger(pid) && pid > 0) ? pids : [];
};

/** The refusal for the first live pid of a lock, or undefined when none is alive (a stale lock). */
function liveHolder(pids: number[], dataDir: string, alive: (pid: number) => boolean): DataDirInUseError | undefined {
  const index = pids.findIndex((pid) => alive(pid));
  return index < 0 ? undefined : new DataDirInUseError(pids[index]!, dataDir, index > 0);
}

const code = (err: unknown) => (err as NodeJS.ErrnoException).code;

/**
 * Take the lock of a data folder for this process (`npm start`, DESIGN.md section 2: one DynamoDB Local per set of
 * files). The pid is written to a private file first and hard-linked to `<dataDir>/start.lock`: the link is atomic and
 * fails when the lock exists, so exactly one of two racing starts wins and the lock never holds a half-written pid.
 * A lock none of whose pids is alive (a crash, `kill -9`, with the runtime's DynamoDB Local gone too) is stale and
 * taken over: it is first moved aside with an atomic rename; if what was moved turns out to be a live holder's fresh
 * lock (another start took it over in between), it is put back and this start refuses.
 * @param opts.pid the holder's pid (default: this process); `alive` the liveness check (default {@link pidAlive})
 * @throws DataDirInUseError when a live process holds the folder: the runtime, or a process it named (`addPid`)
 */
export function takeDataLock(dataDir: string, opts: { pid?: number; alive?: (pid: number) => boolean } = {}): DataLock {
  const pid = opts.pid ?? process.pid;
  const alive = opts.alive ?? pidAlive;
  mkdirSync(dataDir, { recursive: true });
  const file = join(dataDir, LOCK_FILE);
  const mine = join(dataDir, `${LOCK_FILE}.${pid}.${process.hrtime.bigint()}`);
  writeFileSync(mine, `${pid}\n`);
  try {
    for (let attempt = 0; attempt < 5; attempt++) {
      try {
        linkSync(mine, file);
        const pids = [pid];
        const addPid = (other: number) => {
          pids.push(other);
          const next = `${file}.${pid}.next`;
          writeFileSync(next, pids.map((p) => `${p}\n`).join(""));
          renameSync(next, file);
        };
        return { file, pid, addPid, release: () => releaseDataLock(file, pid, alive) };
      } catch (err) {
        if (code(err) !== "EEXIST") throw err;
      }
      const seen = readPids(file);
      const refusal = liveHolder(seen, dataDir, alive);
      if (refusal) throw refusal;
      // Stale (dead pids, or unreadable content): move it aside, then check that what was moved is the stale one.
      const aside = `${mine}.stale`;
      try {
        renameSync(file, aside);
      } catch (err) {
        if (code(err) === "ENOENT") continue; // someone else moved it first: try again
        throw err;
      }
      const moved = readPids(aside);
      const movedRefusal = liveHolder(moved, dataDir, alive);
      if (movedRefusal) {
        renameSync(aside, file);
        throw movedRefusal;
      }
      rmSync(aside, { force: true });
    }
    throw new Error(`Could not take ${file}: it kept changing; try again.`);
  } finally {
    rmSync(mine, { force: true });
  }
}

/**
 * Remove the lock file if `pid` still holds it (never another holder's) and none of the processes it named is still
 * running: a runtime that dies of an uncaught error leaves its DynamoDB Local running, and the lock then keeps naming
 * it. Synchronous (it runs in a process `exit` handler), safe to call twice.
 */
function releaseDataLock(file: string, pid: number, alive: (pid: number) => boolean): void {
  const [holder, ...started] = readPids(file);
  if (holder !== pid || started.some(alive)) return;
  try {
    unlinkSync(file);
  } catch (err) {
    if (code(err) !== "ENOENT") throw err;
  }
}
