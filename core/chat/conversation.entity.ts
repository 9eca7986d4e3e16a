import { createConversions, Entity } from "electrodb";
import { SLIM_LIST_ATTRIBUTES, slimKeysOf, type SlimKeys } from "../db/table";
import type { SlimIndex } from "../db/slim-index";

/*
 * A conversation and its children share one sort-key prefix in the workspace partition:
 *   conversation#<conv id>                                          the conversation
 *   conversation#<conv id>#msg#<created_at>#<msg id>                its messages (created_at strictly increases
 *                                                                   within a conversation, so they sort in order)
 *   conversation#<conv id>#feedback#<msg id>#<user id>              feedback on its messages (one per user and message)
 * so one Query with begins_with reads a conversation's messages, deleting a conversation removes them all, and
 * deleting the workspace partition removes everything.
 *
 * Secondary indexes:
 *   gsi1  conversation#<id> / message#<id>: look-up by id alone.
 *   gsi2  chatuser#<user>#ws#<ws>: a user's conversations in a workspace (`conv#...`) and their messages
 *         (`msg#<created_at>#<id>`, newest last) for search.
 *   gsi3  ws#<ws> / feedback#<created_at>#<id>: a workspace's message feedback by date (quality dashboard).
 *   gsi4  wsanswers#<ws> / answer#<created_at>#<id>: a workspace's assistant messages by date, slim (only
 *         `SLIM_LIST_ATTRIBUTES`; sparse: user messages have no entry), for the quality dashboard's unrated count.
 */

const wsKey = { field: "pk", composite: ["workspace_id"], template: "ws#${workspace_id}", casing: "none" } as const;
const userKey = { field: "gsi2pk", composite: ["user_id", "workspace_id"], template: "chatuser#${user_id}#ws#${workspace_id}", casing: "none" } as const;

/** A copilot conversation (spec 01 Conversation), private to the user who created it. */
export const buildConversationEntity = () => new Entity({
  model: { entity: "conversation", version: "1", service: "r2d" },
  attributes: {
    id: { type: "string", required: true },
    workspace_id: { type: "string", required: true },
    user_id: { type: "string", required: true },
    title: { type: "string", required: true },
    /**
     * Who chose the title: `auto` (the default or the first prompt's opening), `user` (create or PATCH), `agent`
     * (`appendMessage`'s `inferred` title). The agent may replace only an `auto` title.
     */
    title_source: { type: ["auto", "user", "agent"] as const, required: true, default: "auto" },
    purpose: { type: "string" },
    working_state: { type: ["planning", "researching", "drafting", "executing"] as const },
    resumed_from: { type: "string" },
    is_archived: { type: "boolean", required: true, default: false },
    message_count: { type: "number", required: true, default: 0 },
    last_message_at: { type: "string" },
    /**
     * Epoch seconds after which DynamoDB's TTL deletes the conversation: its last activity plus the chat-history days
     * of the owner's plan in effect at that write (spec 02 Limits: Plans, chat history; core/chat `historyWindow`).
     */
    ttl: { type: "number" },
    created_at: { type: "string", required: true, readOnly: true, default: () => new Date().toISOString() },
    updated_at: { type: "string", required: true, default: () => new Date().toISOString(), set: () => new Date().toISOString(), watch: "*" },
  },
  indexes: {
    byWorkspace: { pk: wsKey, sk: { field: "sk", composite: ["id"], template: "conversation#${id}", casing: "none" } },
    byId: {
      index: "gsi1",
      pk: { field: "gsi1pk", composite: ["id"], template: "conversation#${id}", casing: "none" },
      sk: { field: "gsi1sk", composite: [], template: "conversation", casing: "none" },
    },
    byUser: {
      index: "gsi2",
      pk: userKey,
      sk: { field: "gsi2sk", composite: ["created_at", "id"], template: "conv#${created_at}#${id}", casing: "none" },
    },
  },
});
export type ConversationEntity = ReturnType<typeof buildConversationEntity>;

/**
 * One message of a conversation (spec 01 Message). Immutable once written. `content_lc` is a lower-cased copy of
 * `content` for case-insensitive search (a `contains` filter on the user's gsi2 partition). `user_id` is the
 * conversation owner's, whatever the role.
 */
export const buildMessageEntity = () => new Entity({
  model: { entity: "message", version: "1", service: "r2d" },
  attributes: {
    id: { type: "string", required: true, readOnly: true },
    conversation_id: { type: "string", required: true, readOnly: true },
    workspace_id: { type: "string", required: true, readOnly: true },
    user_id: { type: "string", required: true, readOnly: true },
    role: { type: ["user", "assistant"] as const, required: true, readOnly: true },
    content: { type: "string", required: true, readOnly: true },
    content_lc: { type: "string", required: true, readOnly: true },
    inferred_intent: { type: "string", readOnly: true },
    thinking_blocks: { type: "any", readOnly: true },
    decision_context: { type: "any", readOnly: true },
    execution_metadata: { type: "any", readOnly: true },
    /** Epoch seconds after which DynamoDB's TTL deletes the message: its time plus the plan's chat-history days. */
    ttl: { type: "number", readOnly: true },
    created_at: { type: "string", required: true, readOnly: true },
  },
  indexes: {
    byConversation: {
      pk: wsKey,
      sk: {
        field: "sk",
        composite: ["conversation_id", "created_at", "id"],
        template: "conversation#${conversation_id}#msg#${created_at}#${id}",
        casing: "none",
      },
    },
    byId: {
      index: "gsi1",
      pk: { field: "gsi1pk", composite: ["id"], template: "message#${id}", casing: "none" },
      sk: { field: "gsi1sk", composite: [], template: "message", casing: "none" },
    },
    byUser: {
      index: "gsi2",
      pk: userKey,
      sk: { field: "gsi2sk", composite: ["created_at", "id"], template: "msg#${created_at}#${id}", casing: "none" },
    },
    /**
     * The workspace's assistant messages by date, counted by the quality dashboard without reading their content and
     * thinking (a message may weigh ~400 KB; an index entry carries only id, created_at and ElectroDB's identifiers).
     * The backfill of older messages writes these keys raw, as ElectroDB's conversions build them (`answerKeysOf`).
     */
    answers: {
      index: "gsi4",
      // The index's INCLUDE projection (core/db/table.ts) less `status`, which a message has not (ElectroDB refuses
      // a projection naming an attribute the entity lacks).
      projection: SLIM_LIST_ATTRIBUTES.filter((a) => a !== "status"),
      // Sparse: ElectroDB writes the keys only for an assistant message (a message is never updated).
      condition: (attr) => attr.role === "assistant",
      pk: { field: "gsi4pk", composite: ["workspace_id"], template: "wsanswers#${workspace_id}", casing: "none" },
      sk: { field: "gsi4sk", composite: ["created_at", "id"], template: "answer#${created_at}#${id}", casing: "none" },
    },
  },
});
export type MessageEntity = ReturnType<typeof buildMessageEntity>;

let messageConversions: ReturnType<typeof createConversions> | undefined;

/**
 * The keys of an assistant message's `answers` (gsi4) entry, built by ElectroDB from the index above (its
 * conversions), for the backfill of older messages: the templates are written once.
 */
const answerKeysOf = (workspaceId: string, message: { created_at: string; id: string }): SlimKeys =>
  slimKeysOf((messageConversions ??= createConversions(buildMessageEntity() as never)).byAccessPattern.answers.fromComposite.toKeys({ workspace_id: workspaceId, ...message }));

/**
 * The assistant messages' slim list for core/db/slim-index.ts: the `message` items under the partition's
 * `conversation#` prefix whose role is assistant, keyed as `answers` writes them; the backfill reads back id,
 * created_at and role. The workspace's mark is the raw item `ws#<ws>` / `answerindex`.
 */
export const ANSWER_INDEX: SlimIndex<"gsi4"> = {
  index: "gsi4",
  markSk: "answerindex",
  skPrefix: "conversation#",
  entity: "message",
  attributes: ["id", "created_at", "role"],
  keysOf: (workspaceId, m) =>
    m.role === "assistant" && typeof m.id === "string" && typeof m.created_at === "string" ? answerKeysOf(workspaceId, { created_at: m.created_at, id: m.id }) : undefined,
};

/**
 * A user's feedback on an assistant message (DESIGN.md section 5: for the quality dashboard). Keyed by message and
 * user, so a second post replaces the first; gsi3 lists a workspace's feedback by date.
 */
export const buildMessageFeedbackEntity = () => new Entity({
  model: { entity: "message_feedback", version: "1", service: "r2d" },
  attributes: {
    id: { type: "string", required: true },
    workspace_id: { type: "string", required: true },
    conversation_id: { type: "string", required: true },
    message_id: { type: "string", required: true },
    user_id: { type: "string", required: true },
    rating: { type: ["positive", "negative"] as const, required: true },
    tags: { type: "list", items: { type: "string" }, default: () => [] },
    comment: { type: "string" },
    created_at: { type: "string", required: true, default: () => new Date().toISOString() },
  },
  indexes: {
    byMessage: {
      pk: wsKey,
      sk: {
        field: "sk",
        composite: ["conversation_id", "message_id", "user_id"],
        template: "conversation#${conversation_id}#feedback#${message_id}#${user_id}",
        casing: "none",
      },
    },
    byWorkspaceDate: {
      index: "gsi3",
      pk: { field: "gsi3pk", composite: ["workspace_id"], template: "ws#${workspace_id}", casing: "none" },
      sk: { field: "gsi3sk", composite: ["created_at", "id"], template: "feedback#${created_at}#${id}", casing: "none" },
    },
  },
});
export type MessageFeedbackEntity = ReturnType<typeof buildMessageFeedbackEntity>;
