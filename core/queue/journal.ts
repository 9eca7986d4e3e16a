/**
 * The journal of the embedded runtime's queue (./local.ts): one JSON file per message in a directory, so that messages
 * survive a restart of the runtime as they survive one in SQS. A file is written aside, fsynced, renamed over its name
 * and the directory fsynced, so a file either holds a whole record or is absent; a crash mid-write leaves only a
 * temporary file, which the next start removes. Dead letters move to the `dead/` subdirectory and stay there.
 *
 * Layout: `<dir>/<messageId>.json` (waiting or being consumed), `<dir>/dead/<messageId>.json` (dead-lettered),
 * `.<messageId>.<pid>.<random>.tmp` (being written), `<name>.corrupt` (a file that could not be read, set aside).
 */
import { randomUUID } from "node:crypto";
import { mkdirSync, readdirSync, readFileSync, renameSync, rmSync } from "node:fs";
import { open, rename, rm } from "node:fs/promises";
import { join } from "node:path";
import type { QueueMessage } from "./port";

/** One journaled message: what the queue needs to deliver it again after a restart. */
export interface JournalRecord {
  messageId: string;
  /** Order of sending, across restarts: a group's messages are delivered by ascending `seq`. */
  seq: number;
  message: QueueMessage;
  /** When `send()` accepted it, epoch ms (deduplication window, SQS SentTimestamp). */
  sentAt: number;
  /** Receives so far (a receive is recorded before the consumer is called). */
  receiveCount: number;
  /** Not received before this time, epoch ms (the message's delay, or the wait before its next receive). */
  availableAt: number;
}

/** A dead-lettered message, kept in `dead/`. */
export interface DeadRecord extends JournalRecord {
  /** The last failure (see ./local.ts DeadLetter). */
  reason: string;
  /** When it was dead-lettered, epoch ms. */
  deadAt: number;
}

/** What a journal held at start-up: the messages to deliver (by `seq`) and the dead letters (by `deadAt`). */
export interface JournalContents {
  live: JournalRecord[];
  dead: DeadRecord[];
}

/**
 * The sequence number the next message sent takes after a restart: one past the highest `seq` journaled, live or
 * dead (0 for an empty journal), so a group's new messages sort after its journaled ones.
 * @param lists the records read by `load` (any number, any length: a loop, not a spread into `Math.max`, which
 *   overflows the call stack past about 120,000 arguments)
 */
export function nextSeqAfter(...lists: readonly (readonly Pick<JournalRecord, "seq">[])[]): number {
  let next = 0;
  for (const list of lists) for (const record of list) if (record.seq >= next) next = record.seq + 1;
  return next;
}

const DEAD = "dead";
const TEMP = /^\.(.+)\.(\d+)\.[0-9a-f-]+\.tmp$/;

/** A journal directory. Operations on one message must not overlap (./local.ts chains them per message). */
export class QueueJournal {
  private readonly deadDir: string;

  /**
   * @param dir the queue's own directory (created with its `dead/` subdirectory when missing)
   * @throws the fs error when the directory cannot be created
   */
  constructor(readonly dir: string) {
    this.deadDir = join(dir, DEAD);
    mkdirSync(this.deadDir, { recursive: true });
  }

  /**
   * Read every record, synchronously (start-up). A file that is not a whole record is renamed to `<name>.corrupt`
   * and reported through `warn` (one line each); temporary files of an earlier process (a crash mid-write: the
   * message was never acknowledged to its sender) are removed. A message found both waiting and dead (a crash while
   * it was being dead-lettered) is dead.
   * @param warn told of each file skipped
   */
  load(warn: (line: string) => void): JournalContents {
    const dead = this.readDir(this.deadDir, isDead, warn).sort((a, b) => a.deadAt - b.deadAt || a.seq - b.seq);
    const buried = new Set(dead.map((d) => d.messageId));
    const live: JournalRecord[] = [];
    for (const record of this.readDir(this.dir, isRecord, warn)) {
      if (buried.has(record.messageId)) rmSync(this.file(record.messageId), { force: true });
      else live.push(record);
    }
    live.sort((a, b) => a.seq - b.seq);
    return { live, dead };
  }

  /** Record a message, or replace its record, durably (resolves once the record is on disk). @throws the fs error */
  put(record: JournalRecord): Promise<void> {
    return writeDurably(this.dir, `${record.messageId}.json`, record);
  }

  /**
   * Forget a message (consumed). Not fsynced: if a crash undoes the removal, the message is delivered once more,
   * which at-least-once delivery allows. @throws the fs error (a missing file is not one)
   */
  remove(messageId: string): Promise<void> {
    return rm(this.file(messageId), { force: true });
  }

  /** Move a message to the dead letters: the dead record is durable before the waiting one goes. @throws the fs error */
  async bury(record: DeadRecord): Promise<void> {
    await writeDurably(this.deadDir, `${record.messageId}.json`, record);
    await this.remove(record.messageId);
  }

  private file(messageId: string): string {
    return join(this.dir, `${messageId}.json`);
  }

  private readDir<T extends JournalRecord>(dir: string, valid: (v: unknown) => v is T, warn: (line: string) => void): T[] {
    const records: T[] = [];
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      if (!entry.isFile()) continue;
      const path = join(dir, entry.name);
      const temp = TEMP.exec(entry.name);
      // Another queue of this process may be writing it right now (the runtime re-wired); only a dead writer's is stale.
      if (temp) {
        if (Number(temp[2]) !== process.pid) rmSync(path, { force: true });
        continue;
      }
      if (!entry.name.endsWith(".json")) continue;
      let problem: string | undefined;
      try {
        const record: unknown = JSON.parse(readFileSync(path, "utf8"));
        if (valid(record) && `${record.messageId}.json` === entry.name) records.push(record);
        else problem = "not a queue record";
      } catch (err) {
        problem = err instanceof Error ? err.message : String(err);
      }
      if (problem === undefined) continue;
      // Set aside, not deleted: it may be read by a person; and the next start does not report it again.
      let kept = `${path}.corrupt`;
      try {
        renameSync(path, kept);
      } catch {
        kept = path;
      }
      warn(`Queue journal: skipped ${path} (${problem}); the file is kept as ${kept}.`);
    }
    return records;
  }
}

/** Write `value` as JSON to `<dir>/<name>`: to a temporary file, fsync, rename over the name, fsync the directory. */
async function writeDurably(dir: string, name: string, value: unknown): Promise<void> {
  const temp = join(dir, `.${name.replace(/\.json$/, "")}.${process.pid}.${randomUUID()}.tmp`);
  const handle = await open(temp, "w");
  try {
    await handle.writeFile(JSON.stringify(value));
    await handle.sync();
  } finally {
    await handle.close();
  }
  try {
    await rename(temp, join(dir, name));
  } catch (err) {
    await rm(temp, { force: true });
    throw err;
  }
  await syncDirectory(dir);
}

/** fsync a directory, so a rename in it survives a power cut; platforms that cannot open a directory (Windows) skip it. */
async function syncDirectory(dir: string): Promise<void> {
  let handle;
  try {
    handle = await open(dir, "r");
    await handle.sync();
  } catch (err) {
    if (!["EISDIR", "EPERM", "EACCES", "EINVAL", "EBADF"].includes((err as NodeJS.ErrnoException).code ?? "")) throw err;
  } finally {
    await handle?.close();
  }
}

const isString = (v: unknown): v is string => typeof v === "string";
const isNumber = (v: unknown): v is number => typeof v === "number" && Number.isFinite(v);

function isRecord(v: unknown): v is JournalRecord {
  if (typeof v !== "object" || v === null) return false;
  const r = v as Record<string, unknown>;
  const m = r.message as Record<string, unknown> | null | undefined;
  return (
    isString(r.messageId) &&
    isNumber(r.seq) &&
    isNumber(r.sentAt) &&
    isNumber(r.receiveCount) &&
    isNumber(r.availableAt) &&
    typeof m === "object" &&
    m !== null &&
    isString(m.body) &&
    isString(m.groupId) &&
    isString(m.deduplicationId) &&
    (m.delaySeconds === undefined || isNumber(m.delaySeconds))
  );
}

const isDead = (v: unknown): v is DeadRecord => isRecord(v) && isString((v as DeadRecord).reason) && isNumber((v as DeadRecord).deadAt);
