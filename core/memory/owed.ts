/**
 * The memory queue's outbox (DESIGN.md 6.6; docs/decisions.md "Memory"): a copilot answer that memory should learn
 * from is stored together with a record that the exchange is owed (`memoryOwed`, core/memory/owed.entity.ts), in the
 * answer's own transaction (core/memory/hook.ts `withAnswer`). The hook then sends the exchange at once; the consumer
 * learns only while the record is there and deletes it when done, so a redelivered exchange is learned once. A
 * process that dies between storing the answer and the send, or a send that failed, leaves the record, and the
 * sweeper (`sweepOwedExchanges`, every 5 minutes: an EventBridge schedule in AWS, stacks/Api.ts; `startMemorySweep` on
 * the embedded runtime, local/recovery.ts) sends it again once it is due.
 */
import { asWrite, type WriteItem } from "../db/agent-write";
import { db } from "../db/service";
import { isConditionalFailure } from "../db/errors";
import { serviceLog } from "../log";
import { enqueueExchange, learnFromExchange, type ExchangeJob, type LearnResult } from "./learn";
import { memoryAvailable } from "./settings";
import { OWED_SWEEP } from "./owed.entity";

const log = () => serviceLog("memory");

/**
 * How long after the answer an owed exchange is first sent again: longer than the queue can still be working on the
 * hook's own send. An exchange is received at most `MEMORY_MAX_RECEIVE_COUNT` (3) times, each after the last one's
 * visibility timeout (6 x the consumer's 120 s = 720 s) ran out: its last receive starts by 24 minutes and ends by 26.
 * 30 minutes is past that. (Sending it again earlier would be harmless, only wasted: the consumer learns it once.)
 */
export const OWED_AFTER_MS = 30 * 60_000;
/**
 * Sends by the sweeper before an exchange is given up (logged as an error): each waits twice as long as the one
 * before (30 min, 1 h, 2 h, 4 h, 8 h after the previous), so the last is about 15.5 hours after the answer and the
 * record is dropped about 16 hours later: an exchange that failed its consumer every time through a day and a half
 * of retries is not retried forever. Only sends the queue accepted count; one it refused is tried again after the
 * same wait.
 */
export const MAX_RESENDS = 5;
/** Owed exchanges one sweep looks at, at most (the oldest due first); the rest wait for the next sweep. */
export const OWED_SWEEP_LIMIT = 200;

/** The exchange a copilot run's answer owes memory: whose, in which conversation. */
export interface OwedExchange {
  workspaceId: string;
  userId: string;
  conversationId: string;
}

/** A write for the answer's transaction (the shape of core/chat `AppendAlongside`, declared here: no import circle). */
export interface OwedWrite {
  entity: "memoryOwed";
  write(message: { id: string; created_at: string; ttl: number }): WriteItem;
}

/**
 * The record that an answer's exchange is owed to memory, as a write of the answer's own transaction (core/chat
 * `appendMessage`'s `alongside`): created with the message, under its conversation, due `OWED_AFTER_MS` after it,
 * expiring with it.
 */
export function owedWrite(exchange: OwedExchange): OwedWrite {
  return {
    entity: "memoryOwed",
    write: (message) =>
      asWrite(
        db().entities.memoryOwed.create({
          workspace_id: exchange.workspaceId,
          conversation_id: exchange.conversationId,
          assistant_message_id: message.id,
          user_id: exchange.userId,
          answered_at: message.created_at,
          sweep: OWED_SWEEP,
          due_at: new Date(Date.parse(message.created_at) + OWED_AFTER_MS).toISOString(),
          sends: 0,
          ttl: message.ttl,
        }),
      ),
  };
}

const owedKey = (job: Pick<ExchangeJob, "workspace_id" | "conversation_id" | "assistant_message_id">) => ({
  workspace_id: job.workspace_id,
  conversation_id: job.conversation_id,
  assistant_message_id: job.assistant_message_id,
});

/** The owed record of an exchange, if it is still there (strongly consistent). */
export async function owedRecord(job: Pick<ExchangeJob, "workspace_id" | "conversation_id" | "assistant_message_id">) {
  return (await db().entities.memoryOwed.get(owedKey(job)).go({ consistent: true })).data;
}

/**
 * The memory consumer's work for one job. A job sent with a record (`owed`) is learned only while its record is
 * there, and the record is deleted once it is learned or found to teach nothing (memory off, the messages gone): a
 * redelivery, or a second send by the sweeper, then does nothing, and memory the user deleted meanwhile is not
 * learned again from the same exchange. A job without `owed` (sent by code older than the record, or by a test) is
 * learned as before: its facts' ids derive from the message, so learning it again stores nothing new.
 * @returns what was learned; `skipped` when the record was gone (learned before)
 * @throws whatever learning throws (the record stays; the queue retries, then the sweeper)
 */
export async function learnOwedExchange(job: ExchangeJob): Promise<LearnResult & { skipped?: true }> {
  if (job.owed && !(await owedRecord(job))) return { extractor: null, facts: [], skipped: true };
  const result = await learnFromExchange(job);
  if (job.owed) await db().entities.memoryOwed.delete(owedKey(job)).go();
  return result;
}

/** What one sweep of owed exchanges did. */
export interface OwedSweepReport {
  /** Due records the sweep read. */
  due: number;
  /** Exchanges sent to the memory queue again. */
  resent: number;
  /** Sends the queue refused (their errors are in `errors`): not counted against `MAX_RESENDS`, tried again after the
   * backoff. */
  failed: number;
  /** Records dropped because their exchange is gone (conversation, workspace or messages deleted or expired), its
   * user is no longer a member of the workspace, or memory is off. */
  dropped: number;
  /** Records dropped after `MAX_RESENDS` sends (logged). */
  abandoned: number;
  errors: unknown[];
}

/**
 * Send again every owed exchange that is due (`due_at` at or before `now`), oldest due first, at most `limit`: reads
 * the sparse `due` index (never scans). Each record is first moved to its next due time (twice the last wait),
 * conditioned on the due time and send count read, so two sweeps at once send it once; then the exchange goes on the
 * queue, and only once the queue took it is the send counted. A send the queue refuses is reported (`failed`, and its
 * error) and tried again at the due time it was moved to, at the same wait: a queue outage delays the exchange but
 * does not use up its `MAX_RESENDS`. Records whose exchange no longer exists (the assistant message is gone: the
 * conversation, the workspace deleted, or the messages expired), whose user is no longer a member, or that were sent
 * `MAX_RESENDS` times, are deleted instead. Errors are collected, not thrown, so one bad record does not stop the
 * sweep.
 * @param opts.now the sweep's clock (tests pass a later time instead of waiting)
 * @param opts.workspaceId only this workspace's records (tests that share a table)
 */
export async function sweepOwedExchanges(opts: { now?: Date; limit?: number; workspaceId?: string } = {}): Promise<OwedSweepReport> {
  const now = opts.now ?? new Date();
  const { data } = await db()
    .entities.memoryOwed.query.due({ sweep: OWED_SWEEP })
    // `~` sorts after every character of a time: records due at `now` exactly are in range.
    .lte({ due_at: `${now.toISOString()}~` })
    .where((a, op) => (opts.workspaceId ? op.eq(a.workspace_id, opts.workspaceId) : ""))
    .go({ limit: opts.limit ?? OWED_SWEEP_LIMIT });
  const report: OwedSweepReport = { due: data.length, resent: 0, failed: 0, dropped: 0, abandoned: 0, errors: [] };
  for (const owed of data) {
    try {
      const key = owedKey(owed);
      const [{ data: message }, { data: membership }] = await Promise.all([
        // Only the key: an answer's item can be hundreds of KB (its thinking and steps).
        db().entities.message.get({ workspace_id: owed.workspace_id, conversation_id: owed.conversation_id, created_at: owed.answered_at, id: owed.assistant_message_id }).go({ attributes: ["id"] }),
        db().entities.membership.get({ workspace_id: owed.workspace_id, user_id: owed.user_id }).go({ attributes: ["user_id", "deleting_at"] }),
      ]);
      if (!memoryAvailable() || !message || !membership || membership.deleting_at) {
        await db().entities.memoryOwed.delete(key).go();
        report.dropped += 1;
        continue;
      }
      if (owed.sends >= MAX_RESENDS) {
        await db().entities.memoryOwed.delete(key).go();
        report.abandoned += 1;
        log().error("an exchange owed to memory was given up after its retries", { workspace_id: owed.workspace_id, assistant_message_id: owed.assistant_message_id, sends: owed.sends });
        continue;
      }
      // Claimed by moving its due time on, conditioned on the due time read, so that two sweeps at once send it once;
      // moved on whether or not the send then succeeds, so a queue that is down is tried again after the backoff,
      // not at every sweep.
      try {
        await db()
          .entities.memoryOwed.patch(key)
          .set({ sweep: OWED_SWEEP, due_at: new Date(now.getTime() + OWED_AFTER_MS * 2 ** (owed.sends + 1)).toISOString() })
          .where((a, op) => `${op.eq(a.due_at, owed.due_at)} AND ${op.eq(a.sends, owed.sends)}`)
          .go();
      } catch (err) {
        // Learned and deleted meanwhile, or another sweep took it: nothing to send.
        if (isConditionalFailure(err)) continue;
        throw err;
      }
      try {
        await enqueueExchange({
          type: "exchange",
          workspace_id: owed.workspace_id,
          user_id: owed.user_id,
          conversation_id: owed.conversation_id,
          assistant_message_id: owed.assistant_message_id,
          answered_at: owed.answered_at,
          owed: true,
        });
      } catch (err) {
        report.failed += 1;
        throw err;
      }
      // Counted only once the queue took it: an outage of the queue does not use up the exchange's re-sends. A crash
      // between the send and this write leaves it uncounted (one send more at most; the consumer learns it once).
      try {
        await db()
          .entities.memoryOwed.patch(key)
          .set({ sends: owed.sends + 1 })
          .where((a, op) => op.eq(a.sends, owed.sends))
          .go();
      } catch (err) {
        // Learned and deleted already by the consumer: nothing left to count.
        if (!isConditionalFailure(err)) throw err;
      }
      report.resent += 1;
    } catch (err) {
      report.errors.push(err);
    }
  }
  return report;
}
