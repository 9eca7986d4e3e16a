/**
 * Background task settings (spec 02 "Task progress stream", "phases and timeouts"; docs/decisions.md "Background
 * tasks"), read on every call so an operator (or a test) can change them without a restart. Each is an environment
 * variable of the name given; the defaults are the spec's figures where it has one.
 */

const positive = (name: string, fallback: number): number => {
  const raw = process.env[name];
  if (raw === undefined || raw.trim() === "") return fallback;
  const n = Number(raw);
  return Number.isFinite(n) && n > 0 ? n : fallback;
};

export const TaskSettings = {
  /**
   * The engine a task's own run is reserved as at spawn (core/billing/charge.ts `reservationFor`: `local` reserves the
   * minimum charge, a model engine its envelope): AI_ENGINE read by core/ai/select.ts `aiEngine`'s rule. Read here so
   * the tasks and progress functions do not bundle the model clients (select's lazy engines) they never call;
   * test/unit/task/settings.test.ts holds the two to the same answer.
   */
  engine: (): "bedrock" | "openai-compatible" | "local" => {
    const value = process.env.AI_ENGINE;
    return value === "bedrock" || value === "openai-compatible" ? value : "local";
  },
  /** How often a worker writes its heartbeat on the task, ms (`TASK_HEARTBEAT_SECONDS`, default 10). */
  heartbeatMs: () => positive("TASK_HEARTBEAT_SECONDS", 10) * 1000,
  /**
   * A running task whose heartbeat is older than this is looked at by the sweeper, ms (`TASK_STALE_SECONDS`, default
   * 60: six missed heartbeats). A pending task waits as long for its runner to start it.
   */
  staleMs: () => positive("TASK_STALE_SECONDS", 60) * 1000,
  /** Executions a task may have (the first and the sweeper's resumptions) before it fails (`TASK_MAX_ATTEMPTS`, default 3). */
  maxAttempts: () => Math.floor(positive("TASK_MAX_ATTEMPTS", 3)),
  /** How often the embedded runtime's sweeper runs, ms (`TASK_SWEEP_INTERVAL_SECONDS`, default 30; AWS: every minute). */
  sweepIntervalMs: () => positive("TASK_SWEEP_INTERVAL_SECONDS", 30) * 1000,
  /** GetRecords interval of the live channel (the table's stream), ms (`TASK_FEED_POLL_MS`, default 250). */
  feedPollMs: () => positive("TASK_FEED_POLL_MS", 250),
  /**
   * The live channel (`TASK_PROGRESS_LIVE`, default on): `off` makes every progress stream poll the stored state, as
   * it does when the table's stream cannot be read (spec 02: every 3 s, at most 200 times).
   */
  liveChannel: () => !["off", "false", "0", "no"].includes((process.env.TASK_PROGRESS_LIVE ?? "").trim().toLowerCase()),
} as const;

/** Spec 02 Task progress stream: the stored state is polled every 3 s when the live channel is unavailable... */
export const POLL_INTERVAL_MS = 3000;
/** ...at most 200 times (about 10 minutes). */
export const MAX_POLLS = 200;
/** ...and the current state is sent again after 10 s without a message. */
export const SILENCE_MS = 10_000;
