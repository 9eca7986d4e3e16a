import * as z from "zod";

/** Title a conversation gets when none is given (spec 01 Conversation). */
export const DEFAULT_TITLE = "New Conversation";
/** Longest message content accepted on append, in characters (docs/decisions.md "Chat"). */
export const MAX_MESSAGE_CHARS = 100_000;

export const WorkingState = z.enum(["planning", "researching", "drafting", "executing"]);
export type WorkingState = z.infer<typeof WorkingState>;
export const MessageRole = z.enum(["user", "assistant"]);
export type MessageRole = z.infer<typeof MessageRole>;
/** Feedback rating: thumbs up or down (docs/decisions.md "Chat"). */
export const FeedbackRating = z.enum(["positive", "negative"]);

export const Conversation = z
  .object({
    id: z.uuid(),
    workspace_id: z.uuid(),
    user_id: z.uuid(),
    title: z.string(),
    purpose: z.string().nullable().describe("inferred by the agent after its first response"),
    working_state: WorkingState.nullable().describe("set by the agent"),
    resumed_from: z.uuid().nullable().describe("prior conversation this one continues"),
    is_archived: z.boolean(),
    created_at: z.string(),
    updated_at: z.string(),
    last_message_at: z.string().nullable().describe("when the newest message was written; null before the first"),
    message_count: z.int(),
  })
  .meta({ id: "Conversation" });
export type Conversation = z.infer<typeof Conversation>;

/**
 * A message. The assistant-only fields are always present and null when absent (always null on user messages).
 */
export const Message = z
  .object({
    id: z.uuid(),
    conversation_id: z.uuid(),
    role: MessageRole,
    content: z.string(),
    created_at: z.string().describe("ISO 8601; strictly increasing within a conversation"),
    inferred_intent: z.string().nullable(),
    thinking_blocks: z.array(z.unknown()).nullable().describe("extended thinking, when it was on"),
    decision_context: z.record(z.string(), z.unknown()).nullable().describe("configuration snapshot: model, effort, intent"),
    execution_metadata: z.record(z.string(), z.unknown()).nullable().describe("tool steps with timing"),
  })
  .meta({ id: "Message" });
export type Message = z.infer<typeof Message>;

export const ConversationDetail = Conversation.extend({
  messages: z.array(Message).describe("every message, oldest first"),
}).meta({ id: "ConversationDetail" });
export type ConversationDetail = z.infer<typeof ConversationDetail>;

export const ConversationList = z
  .object({ conversations: z.array(Conversation), total: z.int(), has_more: z.boolean() })
  .meta({ id: "ConversationList" });
export type ConversationList = z.infer<typeof ConversationList>;

export const MessageList = z.array(Message).meta({ id: "MessageList" });

export const ConversationSearchHit = z
  .object({
    conversation_id: z.uuid(),
    title: z.string(),
    message_content: z.string().describe("the matching message; at most 1,000 characters around the first match"),
    message_created_at: z.string(),
  })
  .meta({ id: "ConversationSearchHit" });
export type ConversationSearchHit = z.infer<typeof ConversationSearchHit>;

export const ConversationSearchResult = z
  .object({ results: z.array(ConversationSearchHit), total: z.int() })
  .meta({ id: "ConversationSearchResult" });
export type ConversationSearchResult = z.infer<typeof ConversationSearchResult>;

const Title = z.string().trim().min(1).max(200);

export const CreateConversationInput = z
  .object({
    workspace_id: z.uuid(),
    title: Title.optional(),
    resumed_from: z.uuid().optional().describe("a conversation of the same user and workspace that this one continues"),
  })
  .strict()
  .meta({ id: "CreateConversationInput" });
export type CreateConversationInput = z.infer<typeof CreateConversationInput>;

export const UpdateConversationInput = z
  .object({ title: Title.optional(), is_archived: z.boolean().optional() })
  .strict()
  .refine((v) => v.title !== undefined || v.is_archived !== undefined, { message: "Give title or is_archived" })
  .meta({ id: "UpdateConversationInput" });
export type UpdateConversationInput = z.infer<typeof UpdateConversationInput>;

/** Body of archive and restore: no fields; the body may be omitted or `{}`. */
export const ArchiveConversationInput = z
  .object({})
  .strict()
  .meta({ id: "ArchiveConversationInput", description: "no fields; the body may be omitted" });

export const ListConversationsQuery = z.object({
  workspace_id: z.uuid(),
  limit: z.coerce.number().int().min(1).max(100).default(20),
  offset: z.coerce.number().int().min(0).default(0),
  include_archived: z.stringbool().default(false),
});
export type ListConversationsQuery = z.infer<typeof ListConversationsQuery>;

export const SearchConversationsQuery = z.object({
  workspace_id: z.uuid(),
  q: z.string().trim().min(1).max(500),
  limit: z.coerce.number().int().min(1).max(100).default(20),
});
export type SearchConversationsQuery = z.infer<typeof SearchConversationsQuery>;

export const ListMessagesQuery = z.object({
  limit: z.coerce.number().int().min(1).max(500).default(100),
  // ISO 8601 with or without an offset (spec 01 "Timestamps are ISO 8601"); a time without one is UTC, as every
  // timestamp the service gives out is.
  before: z.iso
    .datetime({ offset: true, local: true })
    .transform((t) => (/(Z|[+-]\d{2}:?\d{2})$/i.test(t) ? t : `${t}Z`))
    .optional()
    .describe("only messages created strictly before this instant (UTC when no offset is given)"),
});
export type ListMessagesQuery = z.infer<typeof ListMessagesQuery>;

export const ConversationIdParam = z.object({ conversation_id: z.uuid() });
export const MessageIdParam = z.object({ message_id: z.uuid() });

export const MessageFeedbackInput = z
  .object({
    rating: FeedbackRating,
    tags: z.array(z.string().trim().min(1).max(50)).max(10).default([]),
    comment: z.string().trim().max(2000).optional(),
  })
  .strict()
  .meta({ id: "MessageFeedbackInput" });
export type MessageFeedbackInput = z.infer<typeof MessageFeedbackInput>;

export const MessageFeedback = z
  .object({
    id: z.uuid(),
    message_id: z.uuid(),
    conversation_id: z.uuid(),
    workspace_id: z.uuid(),
    user_id: z.uuid(),
    rating: FeedbackRating,
    tags: z.array(z.string()),
    comment: z.string().nullable(),
    created_at: z.string().describe("when this rating was given (a second post replaces the first)"),
  })
  .meta({ id: "MessageFeedback" });
export type MessageFeedback = z.infer<typeof MessageFeedback>;
