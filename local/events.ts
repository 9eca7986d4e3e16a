import { join } from "node:path";
import type { RunningS3 } from "./s3";
import { setWorkflowRunner } from "../core/pipeline";
import { INTEGRATIONS_MAX_RECEIVE_COUNT, PAYMENTS_MAX_RECEIVE_COUNT, setQueue } from "../core/queue";
import { LocalFifoQueue } from "../core/queue/local";
import { localWorkflowRunner } from "./pipeline";
import { localTaskRunner } from "./tasks";
import { setTaskRunner } from "../core/task/runner";
import { MEMORY_MAX_RECEIVE_COUNT } from "../core/memory/settings";

let payments: LocalFifoQueue | undefined;
let integrations: LocalFifoQueue | undefined;
let memory: LocalFifoQueue | undefined;

/** Options of `wireLocalEvents`. */
export interface LocalEventsOptions {
  /**
   * Where the queues journal their messages (`<queueDir>/<queue name>/`, dead letters in its `dead/`), so they survive a
   * restart as SQS messages do: `npm start` puts it under the data folder, beside the table's files. Without it (tests,
   * a table in memory) the queues are in memory only.
   */
  queueDir?: string;
}

/**
 * Wire the embedded runtime's event sources: the local object store's S3 events go to the same consumer Lambda
 * AWS invokes (functions/events/s3-upload.ts), workflows run on the local Step Functions runner, and the payments
 * queue is an in-process FIFO queue delivering SQS-shaped batches to the payments consumer
 * (functions/events/payments-consumer.ts) with the redrive of stacks/Api.ts (5 receives, then the dead-letter list);
 * the integrations and memory queues likewise. Called again, it stops the earlier queues and makes new ones, which
 * deliver what the journal holds (a restart); await the earlier queues' `stop()` first so their writes under way land.
 * @throws the fs error when a queue's journal directory cannot be created or read
 */
export function wireLocalEvents(s3: RunningS3, options: LocalEventsOptions = {}): void {
  const journalDir = (name: string) => (options.queueDir ? { journalDir: join(options.queueDir, name) } : {});
  // One line per journal file skipped at start-up (a crash mid-write) or journal write that failed.
  const warn = (line: string) => {
    if (process.env.LOG_LEVEL !== "SILENT") console.warn(line);
  };
  setWorkflowRunner(localWorkflowRunner());
  setTaskRunner(localTaskRunner());
  s3.onEvent((event) => {
    import("../functions/events/s3-upload")
      .then((m) => m.handler(event))
      .catch((err: unknown) => console.error("S3 event consumer failed:", err));
  });
  void payments?.stop();
  // LOCAL_RETRY_INTERVAL_MS (tests) shortens the waits between receives, as for the local workflows.
  const retryMs = Number(process.env.LOCAL_RETRY_INTERVAL_MS ?? NaN);
  payments = new LocalFifoQueue({
    name: "payments",
    consumer: async (event) => (await import("../functions/events/payments-consumer")).handler(event),
    maxReceiveCount: PAYMENTS_MAX_RECEIVE_COUNT,
    batchSize: 1,
    ...(Number.isFinite(retryMs) ? { retryDelayMs: () => retryMs } : {}),
    ...journalDir("payments"),
    warn,
    onDeadLetter: (letter) => {
      if (process.env.LOG_LEVEL !== "SILENT") console.error(`Payment event dead-lettered after ${letter.receiveCount} attempts: ${letter.reason}`);
    },
  });
  setQueue("payments", payments);
  // Integration jobs (push, sync deferred by a provider's rate limit) go to their consumer after their delay.
  void integrations?.stop();
  integrations = new LocalFifoQueue({
    name: "integrations",
    consumer: async (event) => (await import("../functions/events/integrations-consumer")).handler(event),
    maxReceiveCount: INTEGRATIONS_MAX_RECEIVE_COUNT,
    batchSize: 1,
    ...(Number.isFinite(retryMs) ? { retryDelayMs: () => retryMs } : {}),
    ...journalDir("integrations"),
    warn,
    onDeadLetter: (letter) => {
      if (process.env.LOG_LEVEL !== "SILENT") console.error(`Integration job dead-lettered after ${letter.receiveCount} attempts: ${letter.reason}`);
    },
  });
  setQueue("integrations", integrations);
  // Copilot exchanges to learn facts from (DESIGN.md 6.6), off the response path, in order per user and workspace.
  void memory?.stop();
  memory = new LocalFifoQueue({
    name: "memory",
    consumer: async (event) => (await import("../functions/events/memory-consumer")).handler(event),
    maxReceiveCount: MEMORY_MAX_RECEIVE_COUNT,
    ...(Number.isFinite(retryMs) ? { retryDelayMs: () => retryMs } : {}),
    ...journalDir("memory"),
    warn,
    onDeadLetter: (letter) => {
      if (process.env.LOG_LEVEL !== "SILENT") console.error(`Memory extraction dead-lettered after ${letter.receiveCount} attempts: ${letter.reason}`);
    },
  });
  setQueue("memory", memory);
}

/**
 * Stop the queues (shutdown): nothing more is delivered, and the journal writes under way end before this resolves,
 * so a queue's consumers are not cut off by the table stopping under them and their messages wait on disk.
 */
export async function stopLocalEvents(): Promise<void> {
  await Promise.all([payments?.stop(), integrations?.stop(), memory?.stop()]);
}

/** The embedded runtime's integrations queue (tests wait on `idle()`). */
export function localIntegrationsQueue(): LocalFifoQueue {
  if (!integrations) throw new Error("wireLocalEvents has not run");
  return integrations;
}

/** The embedded runtime's payments queue (tests wait on `idle()` and read `deadLetters`). */
export function localPaymentsQueue(): LocalFifoQueue {
  if (!payments) throw new Error("wireLocalEvents has not run");
  return payments;
}
