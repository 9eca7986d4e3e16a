/**
 * Work a provider rate-limited, deferred through the Queue port (DESIGN.md 6.4: never a sleep inside a request): the
 * `integrations` queue (SQS standard in AWS, the in-process queue locally) delivers the job after the provider's own
 * wait (retry-after or the rate-limit reset), and its consumer (functions/events/integrations-consumer.ts) runs it.
 */
import { randomUUID } from "node:crypto";
import { queue } from "../queue";

/**
 * How long a request (or a queued job) works through a provider's items before it queues the rest, ms. A provider
 * paces its answers (GitHub: 3 s between issue creations; slow reads under load), so a request does what fits well
 * inside API Gateway's 29 s and answers with the rest queued (execution-ticket push and sync, code-host and planner sync).
 */
export const WORK_BUDGET_MS = 12_000;

/** SQS's largest message delay, seconds: a longer provider wait is waited out in steps (the job re-defers itself). */
export const MAX_DELAY_SECONDS = 900;

/** A deferred job. `codehost.sync`: sync the code-host links not synced since `started_at` (ISO). */
export type IntegrationJob =
  | { type: "codehost.sync"; workspace_id: string; user_id: string; started_at: string }
  /** Sync the planner links not synced since `started_at` (Linear rate-limited a batched query, or the work budget ran out). */
  | { type: "planner.sync"; workspace_id: string; user_id: string; started_at: string }
  /** Push the named execution tickets of a document (the provider rate-limited an earlier push part-way). */
  | { type: "tickets.push"; workspace_id: string; user_id: string; document_id: string; platform: "codehost" | "planner" | "tickets"; ticket_ids: string[]; destination: string }
  /** Sync a document's pushed execution tickets not synced since `started_at` (ISO). */
  | { type: "tickets.sync"; workspace_id: string; user_id: string; document_id: string; started_at: string };

/**
 * Send a job to run after `delaySeconds` (clamped to 1..900).
 * @throws AppError SERVICE_UNAVAILABLE (503) naming INTEGRATIONS_QUEUE_URL when no queue is configured
 */
export async function deferJob(job: IntegrationJob, delaySeconds: number): Promise<void> {
  const q = await queue("integrations");
  await q.send({
    body: JSON.stringify(job),
    // A standard queue in AWS (no groups); the ids keep the local FIFO stand-in from holding one job behind another.
    groupId: randomUUID(),
    deduplicationId: randomUUID(),
    delaySeconds: Math.min(MAX_DELAY_SECONDS, Math.max(1, Math.ceil(delaySeconds))),
  });
}
