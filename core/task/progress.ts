/**
 * `GET /api/tasks/{task_id}/progress` (spec 02 "Task progress stream"), the stream's logic; the handler
 * (functions/http/task-progress.ts) serves it over SSE with the one writer (functions/lib/sse.ts).
 *
 * 1. The membership check comes first, on every (re)connect: a member gets the stream; a caller who watched the task
 *    as a member before and is no longer one gets 403 FORBIDDEN (spec 02); anyone else the 404 of an unknown id
 *    (docs/decisions.md "404 or 403").
 * 2. The current state goes out at once, so a reconnecting client catches up.
 * 3. Then an update on every change of status, phase, progress, message, error or result, woken by the item's own
 *    changes (core/task/changes.ts: the table's stream). Heartbeat-only writes wake nothing new.
 * 4. When the live channel is unavailable, the stored state is polled every 3 s, at most 200 times.
 * 5. After 10 s without a message the current state goes out again (and membership is checked again: a member removed
 *    meanwhile loses the stream, and gets the 403 when reconnecting). While the live channel still has changes on
 *    their way, the re-send repeats the last event, and the changes follow in order.
 * 6. The stream closes on a terminal status, when its client leaves, after the 200 polls, or shortly before the
 *    function's own time runs out (the client reconnects and catches up).
 */
import { AppError, Errors } from "../error";
import { db } from "../db/service";
import { live, requireResourceMember } from "../workspace";
import { isTerminal } from "./status";
import { locateTaskFresh, readTask, toProgress, type TaskItem } from "./index";
import { taskChanges } from "./changes";
import { MAX_POLLS, POLL_INTERVAL_MS, SILENCE_MS } from "./settings";
import type { TaskProgress } from "./schema";

/** Where a progress stream's events go (the SSE writer in the handler). */
export interface ProgressSink {
  /** Send one unnamed event (a `data:` line with the JSON). */
  send(data: TaskProgress): void;
  /** Aborted when the client goes away. */
  readonly signal: AbortSignal;
}

/** How long a watcher record is kept (it only tells a lost membership from none), seconds. */
const WATCHER_TTL_SECONDS = 30 * 86_400;

/** Why a progress stream ended (the benchmark and the tests read it). */
export type ProgressEnd = "terminal" | "client_gone" | "polls_exhausted" | "deadline" | "membership_lost" | "task_gone";

/** A stream whose checks passed: `run` streams until one of the ends above. */
export interface PreparedProgress {
  task: TaskItem;
  run(sink: ProgressSink, opts?: { deadlineMs?: number }): Promise<ProgressEnd>;
}

/**
 * The checks before a progress stream opens (spec 02: membership first, on every reconnect).
 * @throws AppError NOT_FOUND (404) for an unknown task and for an outsider; FORBIDDEN (403) for a caller who watched
 *   this task as a member and is no longer one.
 */
export async function openProgress(userId: string, taskId: string): Promise<PreparedProgress> {
  // Asked again briefly while the id index lags: a stream opened right after the spawn must find its task.
  const found = await locateTaskFresh(taskId);
  if (!found) throw Errors.notFound("Task");
  try {
    await requireResourceMember(userId, found.workspace_id, "Task");
  } catch (err) {
    if (!(err instanceof AppError && err.code === "NOT_FOUND")) throw err;
    const { data: watched } = await db().entities.taskWatcher.get({ workspace_id: found.workspace_id, task_id: taskId, user_id: userId }).go({ consistent: true });
    if (watched || found.created_by === userId) throw new AppError("FORBIDDEN", "You are no longer a member of this task's workspace");
    throw err;
  }
  const task = await readTask(found.workspace_id, taskId);
  if (!task) throw Errors.notFound("Task");
  await db().entities.taskWatcher.put({ workspace_id: task.workspace_id, task_id: task.id, user_id: userId, ttl: Math.floor(Date.now() / 1000) + WATCHER_TTL_SECONDS }).go();
  return { task, run: (sink, opts) => stream(userId, task, sink, opts?.deadlineMs) };
}

/** The event's identity without its heartbeat: a heartbeat alone is no news (the 10 s re-send carries it). */
const newsKey = (p: TaskProgress) => JSON.stringify({ ...p, heartbeat_at: null });

/** Still a member? Read from the table every time (the request's scope holds the membership it checked first). */
async function stillMember(userId: string, workspaceId: string): Promise<boolean> {
  const { data } = await db().entities.membership.get({ workspace_id: workspaceId, user_id: userId }).go({ consistent: true });
  return live(data) !== undefined;
}

type Wake = "change" | "silence" | "poll" | "down" | "deadline" | "abort";

async function stream(userId: string, task: TaskItem, sink: ProgressSink, deadlineMs?: number): Promise<ProgressEnd> {
  const woken = new Set<Wake>();
  let resolveWake: (() => void) | null = null;
  const wake = (why: Wake) => {
    woken.add(why);
    resolveWake?.();
    resolveWake = null;
  };
  const nextWake = () => (woken.size ? Promise.resolve() : new Promise<void>((r) => (resolveWake = r)));
  const timers = new Set<NodeJS.Timeout>();
  const after = (ms: number, why: Wake) => {
    const t = setTimeout(() => {
      timers.delete(t);
      wake(why);
    }, ms);
    timers.add(t);
    return t;
  };
  const onAbort = () => wake("abort");
  sink.signal.addEventListener("abort", onAbort);
  let silence: NodeJS.Timeout | undefined;
  let poll: NodeJS.Timeout | undefined;
  let last = "";
  let lastSent: TaskProgress | undefined;
  /** The newest revision of the item this stream has seen (core/task/task.entity.ts `revision`). */
  let seen = -1;
  const revisionOf = (item: { revision?: unknown }) => (typeof item.revision === "number" ? item.revision : 0);
  const newer = (item: { revision?: unknown }) => {
    const r = revisionOf(item);
    if (r <= seen) return false;
    seen = r;
    return true;
  };
  /** `seen` when a silent read last found the live channel behind the table (-1: it was not behind). */
  let behindAt = -1;
  const send = (p: TaskProgress) => {
    sink.send(p);
    lastSent = p;
    last = newsKey(p);
    if (silence) clearTimeout(silence), timers.delete(silence);
    silence = after(SILENCE_MS, "silence");
  };
  // Subscribed before the first read: every change written after it reaches this stream.
  // Images the live channel delivered, in write order: each becomes an event (if it is news), so no phase is skipped.
  const images: Record<string, unknown>[] = [];
  const feed = await taskChanges.subscribe(task.id, {
    onChange: (item) => {
      images.push(item);
      wake("change");
    },
    onUnavailable: () => wake("down"),
  });
  let live = feed.live;
  let polls = 0;
  if (!live) poll = after(POLL_INTERVAL_MS, "poll");
  if (deadlineMs !== undefined) after(Math.max(0, deadlineMs), "deadline");
  try {
    if (sink.signal.aborted) return "client_gone";
    const current = await readTask(task.workspace_id, task.id);
    if (!current) return "task_gone";
    newer(current);
    send(toProgress(current));
    if (isTerminal(current.status)) return "terminal";
    for (;;) {
      await nextWake();
      const why = new Set(woken);
      woken.clear();
      if (why.has("abort") || sink.signal.aborted) return "client_gone";
      if (why.has("deadline")) return "deadline";
      if (why.has("down") && live) {
        live = false;
        feed.unsubscribe();
        poll = after(POLL_INTERVAL_MS, "poll");
      }
      if (why.has("poll")) polls++;
      // Live: every delivered image in write order; one no newer than what this stream has seen is dropped.
      for (const image of images.splice(0)) {
        if (!newer(image)) continue;
        const p = toProgress(image as TaskItem);
        if (newsKey(p) !== last) send(p);
        if (isTerminal(p.status)) return "terminal";
      }
      const silent = why.has("silence");
      if (!silent && !why.has("poll")) continue;
      if (silent && !(await stillMember(userId, task.workspace_id))) return "membership_lost";
      const item = await readTask(task.workspace_id, task.id);
      if (!item) return "task_gone";
      // Live (so this is the silence re-send): a read newer than the last image processed means images are still on
      // their way (the channel reads every ~250 ms). Sending the read and moving `seen` past them would drop their
      // phases, and a terminal read would close the stream before them. So the re-send repeats what the client has,
      // and the images follow in revision order. Only if the channel delivered nothing by the next silence is the read
      // trusted (an image lost, e.g. to an iterator reset): the stream must not wait forever. A read that differs from
      // what the client has only by its heartbeat (the worker's 10 s beat) holds no phase to skip: it goes out as read.
      if (live && revisionOf(item) > seen && behindAt !== seen && lastSent && newsKey(toProgress(item)) !== last) {
        behindAt = seen;
        send(lastSent);
        continue;
      }
      behindAt = -1;
      newer(item);
      const p = toProgress(item);
      if (silent || newsKey(p) !== last) send(p);
      if (isTerminal(item.status)) return "terminal";
      if (why.has("poll")) {
        if (polls >= MAX_POLLS) return "polls_exhausted";
        poll = after(POLL_INTERVAL_MS, "poll");
      }
    }
  } finally {
    sink.signal.removeEventListener("abort", onAbort);
    for (const t of timers) clearTimeout(t);
    if (poll) clearTimeout(poll);
    feed.unsubscribe();
  }
}
