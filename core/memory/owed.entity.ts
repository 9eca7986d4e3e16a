import { Entity } from "electrodb";

/*
 * An exchange owed to memory (the outbox of the memory queue; core/memory/owed.ts):
 *   ws#<workspace> / conversation#<conv id>#memowed#<assistant message id>
 * written in the same transaction as the assistant message it names (core/chat `appendMessage`'s `alongside`), so a
 * process that dies between storing the answer and sending the exchange leaves this record behind. Under the
 * conversation's sort-key prefix, so deleting the conversation or the workspace removes it with the messages; it
 * expires with the message (same `ttl`).
 *
 * gsi3 `memowed#due` / `<due_at>`: one sparse partition of every owed exchange by when the sweeper may send it again
 * (the billing holds' `open` index is the same shape): the sweeper reads its old end instead of scanning.
 */

/** The constant partition of the `due` index (ElectroDB keys are built from attributes). */
export const OWED_SWEEP = "due";

const wsKey = { field: "pk", composite: ["workspace_id"], template: "ws#${workspace_id}", casing: "none" } as const;

/** One copilot exchange the memory consumer has not yet learned from (or decided teaches nothing). */
export const buildMemoryOwedEntity = () => new Entity({
  model: { entity: "memory_owed", version: "1", service: "r2d" },
  attributes: {
    workspace_id: { type: "string", required: true, readOnly: true },
    conversation_id: { type: "string", required: true, readOnly: true },
    /** The assistant message that answered: the exchange's id (and the queue's deduplication id). */
    assistant_message_id: { type: "string", required: true, readOnly: true },
    /** The conversation's owner, whose memory learns from it. */
    user_id: { type: "string", required: true, readOnly: true },
    /** The assistant message's created_at (ISO 8601): with the ids, its primary key. */
    answered_at: { type: "string", required: true, readOnly: true },
    /** Always `OWED_SWEEP`: the partition of the `due` index. Set again with `due_at` (ElectroDB rebuilds both keys). */
    sweep: { type: "string", required: true, default: () => OWED_SWEEP },
    /** When the sweeper may send the exchange (again), ISO 8601. */
    due_at: { type: "string", required: true },
    /** Times the sweeper has sent it again (the hook's own send is not counted). */
    sends: { type: "number", required: true, default: 0 },
    /** Epoch seconds: the message's own expiry, so the record goes with it. */
    ttl: { type: "number", readOnly: true },
    created_at: { type: "string", required: true, readOnly: true, default: () => new Date().toISOString() },
  },
  indexes: {
    byExchange: {
      pk: wsKey,
      sk: {
        field: "sk",
        composite: ["conversation_id", "assistant_message_id"],
        template: "conversation#${conversation_id}#memowed#${assistant_message_id}",
        casing: "none",
      },
    },
    due: {
      index: "gsi3",
      pk: { field: "gsi3pk", composite: ["sweep"], template: "memowed#${sweep}", casing: "none" },
      sk: { field: "gsi3sk", composite: ["due_at"], template: "${due_at}", casing: "none" },
    },
  },
});
export type MemoryOwedEntity = ReturnType<typeof buildMemoryOwedEntity>;
