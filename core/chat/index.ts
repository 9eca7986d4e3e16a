import { randomUUID } from "node:crypto";
import type { EntityItem } from "electrodb";
import { createWriteTransaction } from "electrodb";
import { v5 as uuidv5 } from "uuid";
import { AppError, Errors } from "../error";
import { cancelCodes, isConditionalFailure } from "../db/errors";
import { db, type EntityName } from "../db/service";
import type { WriteItem } from "../db/agent-write";
import { getAll } from "../db/bulk";
import { purgeConversation } from "./purge";
import { locateFresh, requireMember, requireResourceMember } from "../workspace";
import { limitsOfWorkspace } from "../billing/counters";
import type { PlanLimits } from "../billing/plans";
import { fitNewest } from "../response-size";
import type { ConversationEntity, MessageEntity, MessageFeedbackEntity } from "./conversation.entity";
import {
  DEFAULT_TITLE,
  MAX_MESSAGE_CHARS,
  type Conversation as ConversationView,
  type ConversationDetail,
  type ConversationList,
  type ConversationSearchResult,
  type CreateConversationInput,
  type ListConversationsQuery,
  type ListMessagesQuery,
  type Message as MessageView,
  type MessageFeedback as FeedbackView,
  type MessageFeedbackInput,
  type SearchConversationsQuery,
  type UpdateConversationInput,
  type WorkingState,
} from "./schema";

export * from "./schema";
export type { ConversationView, MessageView, FeedbackView };

type ConversationItem = EntityItem<ConversationEntity>;
type MessageItem = EntityItem<MessageEntity>;
type FeedbackItem = EntityItem<MessageFeedbackEntity>;

/** Sort-key prefix of a conversation and all its children (messages, feedback) in the workspace partition. */

/**
 * Largest message item we write, in bytes of content, its lower-cased copy and the assistant's JSON fields together;
 * DynamoDB refuses items over 400 KB and the keys and other attributes need the rest.
 */
const MAX_MESSAGE_BYTES = 380_000;
/** The fields only an assistant message carries (spec 01 Message), stored as JSON. */
const ASSISTANT_FIELDS = ["inferred_intent", "thinking_blocks", "decision_context", "execution_metadata"] as const;
/** How many characters of a matching message a search result carries. */
const SNIPPET_CHARS = 1_000;
/** Attempts of an append racing other appends to the same conversation. */
const APPEND_ATTEMPTS = 8;
/** Namespace of feedback ids (one feedback per message and user keeps its id across replacements). */
const FEEDBACK_NAMESPACE = "3b9f6a52-1c7e-4d2a-9f85-6e0c4b7d2a13";

export const toConversationView = (c: ConversationItem): ConversationView => ({
  id: c.id,
  workspace_id: c.workspace_id,
  user_id: c.user_id,
  title: c.title,
  purpose: c.purpose ?? null,
  working_state: c.working_state ?? null,
  resumed_from: c.resumed_from ?? null,
  is_archived: c.is_archived,
  created_at: c.created_at,
  updated_at: c.updated_at,
  last_message_at: c.last_message_at ?? null,
  message_count: c.message_count,
});

export const toMessageView = (m: MessageItem): MessageView => ({
  id: m.id,
  conversation_id: m.conversation_id,
  role: m.role,
  content: m.content,
  created_at: m.created_at,
  inferred_intent: m.inferred_intent ?? null,
  thinking_blocks: (m.thinking_blocks as unknown[] | undefined) ?? null,
  decision_context: (m.decision_context as Record<string, unknown> | undefined) ?? null,
  execution_metadata: (m.execution_metadata as Record<string, unknown> | undefined) ?? null,
});

const toFeedbackView = (f: FeedbackItem): FeedbackView => ({
  id: f.id,
  message_id: f.message_id,
  conversation_id: f.conversation_id,
  workspace_id: f.workspace_id,
  user_id: f.user_id,
  rating: f.rating,
  tags: f.tags ?? [],
  comment: f.comment ?? null,
  created_at: f.created_at,
});

async function conversationItem(workspaceId: string, conversationId: string): Promise<ConversationItem | null> {
  const { data } = await db().entities.conversation.get({ workspace_id: workspaceId, id: conversationId }).go({ consistent: true });
  return data;
}

/**
 * Resolve a conversation fetched by id alone. Conversations are private: one that does not exist, or that belongs to
 * someone else (another member of its workspace included), is 404, so its existence is not revealed.
 * @throws AppError NOT_FOUND (404), also when the owner is no longer a member of its workspace.
 */
export async function requireConversation(userId: string, conversationId: string): Promise<ConversationItem> {
  // The id index lags its table: a conversation another container created a moment ago is looked for again briefly.
  const found = await locateFresh(async () => (await db().entities.conversation.query.byId({ id: conversationId }).go({ limit: 1 })).data[0]);
  if (!found || found.user_id !== userId) throw Errors.notFound("Conversation");
  await requireResourceMember(userId, found.workspace_id, "Conversation");
  const item = await conversationItem(found.workspace_id, conversationId);
  if (!item) throw Errors.notFound("Conversation");
  // Past the plan's chat history: not readable (as if TTL had removed it already).
  if (activityOf(item) < (await historyWindow(item.workspace_id)).since) throw Errors.notFound("Conversation");
  return item;
}

/** Every message of a conversation, oldest first (strongly consistent). */
async function allMessages(workspaceId: string, conversationId: string): Promise<MessageItem[]> {
  const { data } = await db()
    .entities.message.query.byConversation({ workspace_id: workspaceId, conversation_id: conversationId })
    .go({ pages: "all", consistent: true });
  return data;
}

/**
 * Write a new conversation. It expires with the plan's history window like one whose last message is now (an empty
 * conversation is otherwise never removed, and once outside the window no one can see or delete it).
 * @param title the user's title (`title_source: user`), or undefined for an automatic one (`auto`, replaceable by
 *   the agent) from `autoTitle`.
 */
async function insert(
  userId: string,
  workspaceId: string,
  fields: { title?: string; autoTitle?: string; resumed_from?: string },
): Promise<ConversationView> {
  const { data } = await db()
    .entities.conversation.create({
      id: randomUUID(),
      workspace_id: workspaceId,
      user_id: userId,
      title: fields.title ?? fields.autoTitle ?? DEFAULT_TITLE,
      title_source: fields.title ? "user" : "auto",
      ...(fields.resumed_from ? { resumed_from: fields.resumed_from } : {}),
      ttl: (await historyWindow(workspaceId)).ttl,
    })
    .go();
  return toConversationView(data as ConversationItem);
}

/**
 * `POST /api/chat/conversations` (spec 01 Chat conversations): a new, empty conversation of the caller. Title
 * defaults to 'New Conversation'.
 * @throws AppError FORBIDDEN (403) non-member; NOT_FOUND (404) unknown workspace; VALIDATION_ERROR (422) when
 *   `resumed_from` is not a conversation of the caller in the same workspace.
 */
export async function create(userId: string, input: CreateConversationInput): Promise<ConversationView> {
  await requireMember(userId, input.workspace_id);
  if (input.resumed_from) {
    const prior = await conversationItem(input.workspace_id, input.resumed_from);
    if (!prior || prior.user_id !== userId) {
      throw Errors.validation(
        [{ loc: ["body", "resumed_from"], msg: "Not one of your conversations in this workspace", type: "unknown_conversation" }],
        "resumed_from must name one of your conversations in this workspace",
      );
    }
  }
  return insert(userId, input.workspace_id, { title: input.title, resumed_from: input.resumed_from });
}

/** The instant a conversation was last active: its newest message, or its creation when it has none. */
const activityOf = (c: ConversationItem) => c.last_message_at ?? c.created_at;

/**
 * The chat-history window of a workspace (spec 02 Limits: Plans, chat history 30 / 90 / 365 days): the days of the
 * owner's plan in effect (`entitlementOf`: a lapsed plan's are the trial's), the oldest time still listed and
 * readable, and the TTL (epoch seconds) a write made now gets. Older conversations and messages are neither listed
 * nor readable, whatever TTL has not removed yet; the window follows the plan at read time, the TTL the plan at write.
 * @param known the owner's plan limits when the caller has just read them (a run's reservation: `Charge.entitlement`),
 *   else they are read (one GetItem of the owner's account)
 */
export async function historyWindow(workspaceId: string, now = Date.now(), known?: Pick<PlanLimits, "chat_history_days">): Promise<{ days: number; since: string; ttl: number }> {
  const days = (known ?? (await limitsOfWorkspace(workspaceId)).limits).chat_history_days;
  return { days, since: new Date(now - days * 86_400_000).toISOString(), ttl: Math.floor(now / 1000) + days * 86_400 };
}

/**
 * `GET /api/chat/conversations`: the caller's conversations in the workspace, most recently active first (newest
 * message, or creation for a conversation without messages), then id; archived ones only with `include_archived`.
 * @throws AppError FORBIDDEN (403), NOT_FOUND (404) unknown workspace.
 */
export async function list(userId: string, q: ListConversationsQuery): Promise<ConversationList> {
  await requireMember(userId, q.workspace_id);
  const { data } = await db()
    .entities.conversation.query.byUser({ user_id: userId, workspace_id: q.workspace_id })
    .go({ pages: "all" });
  const { since } = await historyWindow(q.workspace_id);
  const visible = data
    .filter((c) => (q.include_archived || !c.is_archived) && activityOf(c) >= since)
    .sort((a, b) => activityOf(b).localeCompare(activityOf(a)) || b.id.localeCompare(a.id));
  const page = visible.slice(q.offset, q.offset + q.limit);
  return { conversations: page.map(toConversationView), total: visible.length, has_more: q.offset + page.length < visible.length };
}

/** At most SNIPPET_CHARS of `content`, around the first occurrence of `needle` in `lower` (its lower-cased copy). */
function snippet(content: string, lower: string, needle: string): string {
  if (content.length <= SNIPPET_CHARS) return content;
  const at = Math.max(0, lower.indexOf(needle));
  // Lower-casing can change lengths (rarely); clamp into the original string.
  const start = Math.min(Math.max(0, at - 200), content.length - SNIPPET_CHARS);
  const end = start + SNIPPET_CHARS;
  return `${start > 0 ? "…" : ""}${content.slice(start, end)}${end < content.length ? "…" : ""}`;
}

/**
 * `GET /api/chat/conversations/search`: messages of the caller's conversations in the workspace (archived included)
 * whose content contains `q`, case-insensitively; newest message first. One paginated Query over the caller's
 * messages in the workspace (gsi2) with a `contains` filter on the lower-cased copy of each message.
 * @returns up to `limit` hits and the total number of matching messages.
 * @throws AppError FORBIDDEN (403), NOT_FOUND (404) unknown workspace.
 */
export async function search(userId: string, q: SearchConversationsQuery): Promise<ConversationSearchResult> {
  await requireMember(userId, q.workspace_id);
  const needle = q.q.toLowerCase();
  const { data } = await db()
    .entities.message.query.byUser({ user_id: userId, workspace_id: q.workspace_id })
    .where((attr, op) => op.contains(attr.content_lc, needle))
    .go({ pages: "all", order: "desc" });
  const { since } = await historyWindow(q.workspace_id);
  const inWindow = data.filter((m) => m.created_at >= since);
  const hits = inWindow.slice(0, q.limit);
  const ids = [...new Set(hits.map((m) => m.conversation_id))];
  const titles = new Map<string, string>();
  if (ids.length) {
    const convs = await getAll(ids.map((id) => ({ workspace_id: q.workspace_id, id })), (keys) => db().entities.conversation.get(keys).go());
    for (const c of convs) titles.set(c.id, c.title);
  }
  return {
    results: hits.map((m) => ({
      conversation_id: m.conversation_id,
      title: titles.get(m.conversation_id) ?? DEFAULT_TITLE,
      message_content: snippet(m.content, m.content_lc, needle),
      message_created_at: m.created_at,
    })),
    total: inWindow.length,
  };
}

/**
 * `GET /api/chat/conversations/{id}`: owner only; the conversation with its messages, oldest first: every message
 * in the history window, or, when they weigh more than one answer may (LIST_RESPONSE_BYTES; a message with its
 * thinking can weigh 400 KB), the newest that fit; the older ones come from `GET .../messages` with `before` set to
 * the first one's `created_at` (`message_count` says how many there are).
 */
export async function get(userId: string, conversationId: string): Promise<ConversationDetail> {
  const item = await requireConversation(userId, conversationId);
  const { since } = await historyWindow(item.workspace_id);
  const messages = (await allMessages(item.workspace_id, item.id)).filter((m) => m.created_at >= since);
  return { ...toConversationView(item), messages: fitNewest(messages.map(toMessageView)) };
}

/** `PATCH /api/chat/conversations/{id}`: title and/or is_archived; owner only. A title set here is the user's. */
export async function update(userId: string, conversationId: string, input: UpdateConversationInput): Promise<ConversationView> {
  const item = await requireConversation(userId, conversationId);
  try {
    const { data } = await db()
      .entities.conversation.patch({ workspace_id: item.workspace_id, id: item.id })
      .set({
        ...(input.title !== undefined ? { title: input.title, title_source: "user" as const } : {}),
        ...(input.is_archived !== undefined ? { is_archived: input.is_archived } : {}),
      })
      .go({ response: "all_new" });
    return toConversationView(data as ConversationItem);
  } catch (err) {
    // The patch's existence condition: the conversation was deleted since it was read.
    if (isConditionalFailure(err)) throw Errors.notFound("Conversation");
    throw err;
  }
}

/** `POST .../archive` (true) and `POST .../restore` (false); owner only; idempotent. */
export async function setArchived(userId: string, conversationId: string, archived: boolean): Promise<ConversationView> {
  return update(userId, conversationId, { is_archived: archived });
}

/**
 * `DELETE /api/chat/conversations/{id}`: owner only; removes the conversation, its messages and their feedback
 * (one begins_with Query on the conversation's prefix, batch deletes, the conversation item last so a failure
 * part-way can be retried). Then the prefix is listed once more: a message appended between the first listing and
 * the conversation's delete (a stream's answer) would be left behind, searchable; none can be appended after it,
 * since an append is conditioned on the conversation item.
 */
export async function remove(userId: string, conversationId: string): Promise<void> {
  const item = await requireConversation(userId, conversationId);
  await purgeConversation(item.workspace_id, item.id);
}

/**
 * A `before` cursor as a stored `created_at` compares: ISO text of a four-digit year. An instant from year 10000 on
 * (an offset reaches it from 9999-12-31) is written "+010000-..." and would sort before every message; it is after
 * every message, so it becomes a key above them all. (One before year 0 is written "-00...", below them all: right.)
 */
function cursorKey(before: string): string {
  const at = new Date(before).getTime();
  return at >= Date.UTC(10_000, 0, 1) ? "9999-12-31T23:59:59.999Z~" : new Date(at).toISOString();
}

/**
 * The newest `n` messages created strictly before `before` (an ISO instant; none means now), oldest first.
 * Created-at values are unique and increasing within a conversation, so a page's first `created_at` is the exact
 * cursor of the next (older) page.
 */
async function newest(workspaceId: string, conversationId: string, n: number, before?: string): Promise<MessageItem[]> {
  if (n < 1) return [];
  const query = db().entities.message.query.byConversation({ workspace_id: workspaceId, conversation_id: conversationId });
  // `between` from the conversation's first message key to the cursor: a plain `lt` would also reach the
  // conversation item and other conversations' messages. No stored key ends at the cursor, so the bound is strict.
  const ranged = before ? query.between({ created_at: "" }, { created_at: cursorKey(before) }) : query;
  const { data } = await ranged.go({ order: "desc", count: n, consistent: true });
  return data.reverse();
}

/**
 * `GET /api/chat/conversations/{id}/messages`: owner only; the `limit` newest messages before the `before` cursor,
 * returned oldest first; fewer when they weigh more than one answer may (the newest that fit, `fitNewest`): the next
 * page is before the first one given.
 */
export async function messages(userId: string, conversationId: string, q: ListMessagesQuery): Promise<MessageView[]> {
  const item = await requireConversation(userId, conversationId);
  const { since } = await historyWindow(item.workspace_id);
  return fitNewest((await newest(item.workspace_id, item.id, q.limit, q.before)).filter((m) => m.created_at >= since).map(toMessageView));
}

/**
 * `POST /api/chat/messages/{id}/feedback` (DESIGN.md section 5): the caller's rating of an assistant message in one
 * of their conversations. One per user and message: a second post replaces the first (same id, new created_at).
 * @throws AppError NOT_FOUND (404) unknown message or someone else's conversation; VALIDATION_ERROR (422) not an
 *   assistant message; NOT_FOUND (404) too when the caller left the workspace.
 */
export async function giveFeedback(userId: string, messageId: string, input: MessageFeedbackInput): Promise<FeedbackView> {
  // As for conversations: a message the stream's `done` named a moment ago may not be in the id index yet.
  const message = await locateFresh(async () => (await db().entities.message.query.byId({ id: messageId }).go({ limit: 1 })).data[0]);
  if (!message || message.user_id !== userId) throw Errors.notFound("Message");
  await requireResourceMember(userId, message.workspace_id, "Message");
  if (message.role !== "assistant") {
    throw Errors.validation(
      [{ loc: ["path", "message_id"], msg: "Feedback is for assistant messages only", type: "not_assistant_message" }],
      "Feedback can only be given on assistant messages",
    );
  }
  const feedback = {
    id: uuidv5(`${messageId}:${userId}`, FEEDBACK_NAMESPACE),
    workspace_id: message.workspace_id,
    conversation_id: message.conversation_id,
    message_id: messageId,
    user_id: userId,
    rating: input.rating,
    tags: [...new Set(input.tags)],
    ...(input.comment ? { comment: input.comment } : {}),
    created_at: new Date().toISOString(),
  };
  // Conditioned on the conversation still being there: a deletion removes its items, then the conversation, then
  // what was written meanwhile, so feedback written after the deletion would be left behind for good.
  const result = await createWriteTransaction(db().pick("conversation", "messageFeedback"), ({ conversation, messageFeedback }) => [
    conversation.check({ workspace_id: message.workspace_id, id: message.conversation_id }).where((a, op) => op.exists(a.id)).commit(),
    messageFeedback.put(feedback).commit(),
  ]).go();
  if (result.canceled) {
    if (cancelCodes(result)[0] === "ConditionalCheckFailed") throw Errors.notFound("Message");
    throw new AppError("CONFLICT", "The feedback could not be stored while the conversation changed; try again", { retryable: true });
  }
  return toFeedbackView(feedback as FeedbackItem);
}

/**
 * A workspace's message feedback by date, newest first (the admin quality dashboard reads this; no membership
 * check: callers are admins or internal).
 * @param opts.since only feedback given at or after this ISO instant; `limit` caps the result (default 500).
 */
export async function feedbackOf(workspaceId: string, opts: { since?: string; limit?: number } = {}): Promise<FeedbackView[]> {
  const query = db().entities.messageFeedback.query.byWorkspaceDate({ workspace_id: workspaceId });
  // `between` up to past any ISO instant: a plain `gte` would run on into other items of the index partition.
  const ranged = opts.since ? query.between({ created_at: new Date(opts.since).toISOString() }, { created_at: "9999~" }) : query;
  const { data } = await ranged.go({ order: "desc", count: opts.limit ?? 500 });
  return data.map(toFeedbackView);
}

// ---------------------------------------------------------------------------------------------------------------
// Operations of the copilot's agent loop (core/agent, DESIGN.md 6.1).
// ---------------------------------------------------------------------------------------------------------------

/** An automatic title from a prompt: its first 60 characters, whitespace collapsed; the default when empty. */
export const titleFromPrompt = (prompt: string): string => {
  const flat = prompt.replace(/\s+/g, " ").trim();
  return flat ? [...flat].slice(0, 60).join("").trim() : DEFAULT_TITLE;
};

/**
 * Load a conversation the user owns in the workspace, or create one (title from the prompt's first 60 chars) when
 * id is undefined. A created conversation's title is automatic: an answer's append may replace it (`AppendOptions.inferred`).
 * @param userId the caller; must be a member of the workspace
 * @param conversationId an existing conversation of the caller in `workspaceId`, or undefined to start one
 * @param firstPrompt the user's prompt (used only for a new conversation's title)
 * @param opts.deferCreate a new conversation is not stored now: the first `appendMessage` creates it in the same
 *   transaction as its first message (`UnsavedConversation`), so a stream stores its opening prompt in one write and
 *   a stream that never runs leaves no empty conversation behind
 * @param opts.limits the owner's plan limits when the caller has just read them (a run's reservation), for the
 *   history window; else they are read
 * @throws AppError NOT_FOUND (404) when the id names no conversation of this user in this workspace, or one last
 *   active before the plan's chat-history window (as `get` answers it); FORBIDDEN (403) non-member.
 */
export async function openConversation(
  userId: string,
  workspaceId: string,
  conversationId: string | undefined,
  firstPrompt: string,
  opts: { deferCreate?: boolean; limits?: Pick<PlanLimits, "chat_history_days"> } = {},
): Promise<OpenedConversation> {
  await requireMember(userId, workspaceId);
  if (conversationId === undefined && opts.deferCreate) {
    const now = new Date().toISOString();
    const item: ConversationItem = {
      id: randomUUID(), workspace_id: workspaceId, user_id: userId, title: titleFromPrompt(firstPrompt), title_source: "auto",
      is_archived: false, message_count: 0, created_at: now, updated_at: now,
    };
    return { ...toConversationView(item), unsaved: true, title_source: "auto" };
  }
  if (conversationId === undefined) return { ...(await insert(userId, workspaceId, { autoTitle: titleFromPrompt(firstPrompt) })), title_source: "auto" };
  const [item, { since }] = await Promise.all([conversationItem(workspaceId, conversationId), historyWindow(workspaceId, Date.now(), opts.limits)]);
  // Outside the window it is neither listed nor readable (spec 02 Limits), so it cannot be continued either.
  if (!item || item.user_id !== userId || activityOf(item) < since) throw Errors.notFound("Conversation");
  return { ...toConversationView(item), title_source: item.title_source };
}

/** A conversation as `openConversation` opened it: its view, and who chose its title when it was opened. */
export type OpenedConversation = (ConversationView | UnsavedConversation) & { title_source: ConversationItem["title_source"] };

/** What the agent appends: a user prompt, or an assistant answer with its optional metadata (spec 01 Message). */
export interface NewMessage {
  role: "user" | "assistant";
  /** At most 100,000 characters. */
  content: string;
  inferred_intent?: string;
  thinking_blocks?: unknown[];
  decision_context?: Record<string, unknown>;
  execution_metadata?: Record<string, unknown>;
}

function checkMessage(message: NewMessage, contentLc: string): void {
  const errors: { loc: (string | number)[]; msg: string; type: string }[] = [];
  if (message.role !== "user" && message.role !== "assistant") {
    errors.push({ loc: ["message", "role"], msg: "role must be user or assistant", type: "enum" });
  }
  if (message.content.length > MAX_MESSAGE_CHARS) {
    errors.push({ loc: ["message", "content"], msg: `At most ${MAX_MESSAGE_CHARS} characters`, type: "too_big" });
  }
  if (message.role === "user") {
    for (const key of ASSISTANT_FIELDS) {
      if (message[key] !== undefined) errors.push({ loc: ["message", key], msg: "Only assistant messages carry this", type: "unexpected" });
    }
  }
  const bytes = messageBytes(message, contentLc);
  if (bytes > MAX_MESSAGE_BYTES) {
    errors.push({ loc: ["message"], msg: `The message takes ${bytes} bytes; at most ${MAX_MESSAGE_BYTES} fit in one item`, type: "too_big" });
  }
  if (errors.length) throw Errors.validation(errors, "Message rejected");
}

/** Bytes a message takes in its item, as `checkMessage` counts them: content, its lower-cased copy, the JSON fields. */
function messageBytes(message: NewMessage, contentLc = message.content.toLowerCase()): number {
  return Buffer.byteLength(message.content) + Buffer.byteLength(contentLc) + ASSISTANT_FIELDS.reduce((sum, key) => sum + (message[key] === undefined ? 0 : Buffer.byteLength(JSON.stringify(message[key]))), 0);
}

/** `text` cut to at most `bytes` bytes of UTF-8 (never inside a character). */
function cutToBytes(text: string, bytes: number): string {
  if (Buffer.byteLength(text) <= bytes) return text;
  let cut = Buffer.from(text).subarray(0, Math.max(0, bytes)).toString("utf8");
  if (cut.endsWith("\uFFFD")) cut = cut.slice(0, -1); // a character cut in two
  return cut;
}

/** Room kept for the assistant's other fields when its content alone is cut to bytes (`fitMessage`). */
const FIELDS_ROOM_BYTES = 20_000;

/** `text` cut to at most `chars` characters (never between a surrogate pair), with a visible marker saying how much went. */
function cutAnswer(text: string, chars: number): string {
  const marker = (left: number) => `\n\n[Answer cut to fit the message: ${left} more characters]`;
  let keep = Math.max(0, chars - marker(text.length).length);
  if (/[\uD800-\uDBFF]/.test(text.charAt(keep - 1))) keep--; // a character cut in two
  return `${text.slice(0, keep)}${marker(text.length - keep)}`;
}

/** The message with its execution_metadata's steps cut to the first and last `keep` (and a count of those left out). */
function withSteps(message: NewMessage, steps: unknown[], keep: number): NewMessage {
  const kept = keep * 2 >= steps.length ? steps : [...steps.slice(0, keep), ...steps.slice(steps.length - keep)];
  if (kept === steps) return message;
  return { ...message, execution_metadata: { ...message.execution_metadata, steps: kept, steps_left_out: steps.length - kept.length } };
}

/**
 * An assistant message made to fit its item (`MAX_MESSAGE_CHARS`, `MAX_MESSAGE_BYTES`), so an answer the client has
 * already received whole is stored rather than refused (422) after the stream. In this order, each only as far as
 * needed: content over 100,000 characters (or whose bytes alone fill the item) is cut and ends with a visible marker
 * saying how much was cut; the tool steps of `execution_metadata` keep the first and last ones, with
 * `steps_left_out` counting the others; each thinking block's text (spec 01 Message `thinking_blocks`, kept whole by
 * the copilot) is cut to an equal share of what the rest leaves, and marked so; a cut block loses its signature (it no
 * longer verifies), a redacted block its opaque data. A message that fits, and a user message, are returned as they
 * are (what does not fit then is `appendMessage`'s 422).
 */
export function fitMessage(message: NewMessage): NewMessage {
  if (message.role !== "assistant") return message;
  let m = message;
  if (m.content.length > MAX_MESSAGE_CHARS) m = { ...m, content: cutAnswer(m.content, MAX_MESSAGE_CHARS) };
  // Content and its lower-cased copy must leave room for the other fields: a long answer of multi-byte characters.
  for (let chars = m.content.length; messageBytes({ role: m.role, content: m.content }) > MAX_MESSAGE_BYTES - FIELDS_ROOM_BYTES && chars > 0; ) {
    chars = Math.floor(chars * 0.9);
    m = { ...m, content: cutAnswer(message.content, chars) };
  }
  if (messageBytes(m) <= MAX_MESSAGE_BYTES) return m;
  // Tool steps before thinking: the steps of a long run are a log; its thinking is its reasoning. The message without
  // its thinking must fit; the thinking then gets what is left.
  const steps = (m.execution_metadata as { steps?: unknown } | undefined)?.steps;
  if (Array.isArray(steps) && steps.length > 2 && messageBytes({ ...m, thinking_blocks: undefined }) > MAX_MESSAGE_BYTES) {
    let keep = Math.ceil(steps.length / 2);
    let trimmed = withSteps(m, steps, keep);
    while (keep > 0 && messageBytes({ ...trimmed, thinking_blocks: undefined }) > MAX_MESSAGE_BYTES) {
      keep = keep > 1 ? Math.floor(keep / 2) : 0;
      trimmed = withSteps(m, steps, keep);
    }
    m = trimmed;
  }
  const blocks = m.thinking_blocks as ({ type: string; content?: string; signature?: string; data?: string } | null)[] | undefined;
  if (!blocks?.length || messageBytes(m) <= MAX_MESSAGE_BYTES) return m;
  const others = messageBytes({ ...m, thinking_blocks: undefined });
  const fit = (share: number) =>
    blocks.map((b) => {
      if (!b || typeof b !== "object") return b;
      if (b.type === "redacted_thinking") return Buffer.byteLength(b.data ?? "") <= share ? b : { type: "redacted_thinking", data: "", cut: true };
      const text = b.content ?? "";
      if (Buffer.byteLength(JSON.stringify(b)) <= share) return b;
      const kept = cutToBytes(text, share);
      return { type: b.type, content: `${kept}\n[cut to fit the message: ${text.length - kept.length} more characters]`, cut: true };
    });
  // An equal share of the room left, less the blocks' JSON and markers; JSON escapes can grow a text, so a share that
  // still does not fit is halved.
  for (let share = Math.floor((MAX_MESSAGE_BYTES - others - 2_000) / blocks.length) - 120; share > 0; share = Math.floor(share / 2)) {
    const fitted = { ...m, thinking_blocks: fit(share) };
    if (messageBytes(fitted) <= MAX_MESSAGE_BYTES) return fitted;
  }
  return { ...m, thinking_blocks: fit(0) };
}

/**
 * A new conversation not stored yet (`openConversation` with `deferCreate`): its automatic title and creation time are
 * fixed; `appendMessage` stores it with its first message.
 */
export interface UnsavedConversation extends ConversationView {
  unsaved: true;
}

/** What a caller of `appendMessage` may already know, to spare its reads. */
export interface AppendOptions {
  /**
   * The conversation's state as the caller last saw it (after its own previous append, say), tried first instead of
   * reading the conversation. A stale one costs one more attempt (the transaction is conditioned on `message_count`),
   * never a message out of order.
   */
  expected?: { message_count: number; last_message_at: string | null };
  /**
   * The workspace's chat history window in days (`historyWindow(...).days`), when the caller has it: one read of the
   * payer's plan per stream instead of one per message. The message expires that many days after it is written.
   */
  historyDays?: number;
  /**
   * What the agent inferred of the conversation (its purpose, working state and title), set by the same transaction,
   * without a write of their own. The title replaces only an automatic one ("New Conversation" or the opening of the
   * first prompt; not a title the user gave, nor one the agent already set), cut to 200 characters, by a condition of
   * the transaction, so a rename racing the append wins; the append is then tried again without it.
   */
  inferred?: { purpose?: string; working_state?: WorkingState; title?: string };
  /**
   * Write the message at most once, for a writer that may try again after a failure it cannot see through (a lost
   * response, a crash before it recorded the write): `id` is the message's id (derived from what it is about), and
   * `guard` a write of `entity` committed in the same transaction whose condition fails once the message is written
   * (a mark on the item the message is about, which that same write sets). A message's key holds its time, so its id
   * alone cannot refuse a second copy; the guard does. When the guard refuses, nothing is written and
   * `AlreadyAppended` is thrown.
   */
  once?: { id: string; entity: EntityName; guard: WriteItem };
  /**
   * Writes of other entities committed in the same transaction as the message (after it and `once`'s guard), each
   * built from the message as this attempt stores it: its id, created_at (ISO 8601) and ttl (epoch seconds). For a
   * record of work owed because of the message (the memory outbox, core/memory/owed.ts): it exists exactly when the
   * message does. A write whose condition fails cancels the append (tried again like a lost race).
   */
  alongside?: AppendAlongside[];
}

/** One write of `AppendOptions.alongside`: the entity it writes and the write, built from the stored message. */
export interface AppendAlongside {
  entity: EntityName;
  write(message: { id: string; created_at: string; ttl: number }): WriteItem;
}

/** `appendMessage` with `once`: the message was written before (its guard's condition refused this write). */
export class AlreadyAppended extends Error {
  override name = "AlreadyAppended";
  constructor(readonly messageId: string) {
    super(`The message ${messageId} was written before`);
  }
}

/**
 * Append one message; updates the conversation's last_message_at, message_count and updated_at (one transaction).
 * An `UnsavedConversation` is created by that same transaction, with the message as its first (a create that finds
 * the conversation there already appends to it instead).
 * Returns the stored message. `created_at` is strictly greater than the previous message's (at least 1 ms later,
 * even within one millisecond or under clock skew), and the transaction is conditioned on the conversation's
 * message_count, so concurrent appends are serialised (retried) and messages keep the order they were appended in.
 * @param conversation the conversation (its stored owner is used for the search index)
 * @param message user messages carry only role and content; assistant messages may carry the other fields
 * @param opts what the caller knows already (`AppendOptions`): the conversation's state and the message's expiry;
 *   and what is written with the message (`once`, `alongside`)
 * @throws AppError VALIDATION_ERROR (422) content over 100,000 characters, an item over DynamoDB's size limit, or
 *   assistant-only fields on a user message; NOT_FOUND (404) the conversation is gone; CONFLICT (409) when
 *   concurrent appends kept winning; AlreadyAppended when `opts.once`'s guard says the message was written before.
 */
export async function appendMessage(
  conversation: { id: string; workspace_id: string; user_id: string } | UnsavedConversation,
  message: NewMessage,
  opts: AppendOptions = {},
): Promise<MessageView> {
  const contentLc = message.content.toLowerCase();
  checkMessage(message, contentLc);
  const ttl = opts.historyDays !== undefined ? Math.floor(Date.now() / 1000) + opts.historyDays * 86_400 : (await historyWindow(conversation.workspace_id)).ttl;
  const { title: inferredTitle, ...inferred } = opts.inferred ?? {};
  const title = inferredTitle === undefined ? "" : cleanTitle(inferredTitle);
  for (let attempt = 0; attempt < APPEND_ATTEMPTS; attempt++) {
    // The caller's view first; after a cancelled attempt (stale view, or the conversation gone), the table's.
    const unsaved = attempt === 0 && "unsaved" in conversation ? conversation : undefined;
    const known = unsaved
      ? { id: unsaved.id, workspace_id: unsaved.workspace_id, user_id: unsaved.user_id, message_count: 0, last_message_at: null }
      : attempt === 0 && opts.expected ? { id: conversation.id, workspace_id: conversation.workspace_id, user_id: conversation.user_id, ...opts.expected } : undefined;
    const conv = known ?? (await conversationItem(conversation.workspace_id, conversation.id));
    if (!conv) throw Errors.notFound("Conversation");
    // The caller's view (it saw an automatic title) is checked by the transaction's condition; a conversation read
    // from the table shows its title_source.
    const retitle = title !== "" && (known !== undefined || (conv as ConversationItem).title_source === "auto");
    const previous = conv.last_message_at ? Date.parse(conv.last_message_at) : Number.NEGATIVE_INFINITY;
    const createdAt = new Date(Math.max(Date.now(), previous + 1)).toISOString();
    const item = {
      id: opts.once?.id ?? randomUUID(),
      conversation_id: conv.id,
      workspace_id: conv.workspace_id,
      user_id: conv.user_id,
      role: message.role,
      content: message.content,
      content_lc: contentLc,
      created_at: createdAt,
      ttl,
      ...(message.inferred_intent !== undefined ? { inferred_intent: message.inferred_intent } : {}),
      ...(message.thinking_blocks !== undefined ? { thinking_blocks: message.thinking_blocks } : {}),
      ...(message.decision_context !== undefined ? { decision_context: message.decision_context } : {}),
      ...(message.execution_metadata !== undefined ? { execution_metadata: message.execution_metadata } : {}),
    };
    const alongside = (opts.alongside ?? []).map((a) => a.write({ id: item.id, created_at: createdAt, ttl }));
    const entities: EntityName[] = [...new Set<EntityName>(["conversation", "message", ...(opts.once ? [opts.once.entity] : []), ...(opts.alongside ?? []).map((a) => a.entity)])];
    const result = await createWriteTransaction(db().pick(...entities), ({ conversation: c, message: m }) => [
      unsaved
        ? c
            .create({
              id: unsaved.id, workspace_id: unsaved.workspace_id, user_id: unsaved.user_id, ...(retitle ? { title, title_source: "agent" } : { title: unsaved.title, title_source: "auto" }),
              message_count: 1, last_message_at: createdAt, ttl, created_at: unsaved.created_at, ...inferred,
            })
            .commit()
        : c
            .patch({ workspace_id: conv.workspace_id, id: conv.id })
            .set({ message_count: conv.message_count + 1, last_message_at: createdAt, ttl, ...inferred, ...(retitle ? { title, title_source: "agent" as const } : {}) })
            .where((attr, op) => (retitle ? `${op.eq(attr.message_count, conv.message_count)} AND ${op.eq(attr.title_source, "auto")}` : op.eq(attr.message_count, conv.message_count)))
            .commit(),
      m.create(item).commit(),
      ...(opts.once ? [opts.once.guard as never] : []),
      ...alongside.map((w) => w as never),
    ]).go();
    if (!result.canceled) return toMessageView(item as MessageItem);
    if (opts.once && cancelCodes(result)[2] === "ConditionalCheckFailed") throw new AlreadyAppended(opts.once.id);
    // A stale view of the caller's is read again at once; a race lost against another append backs off first.
    if (!known) await new Promise((r) => setTimeout(r, 5 + Math.random() * 20 * (attempt + 1)));
  }
  throw new AppError("CONFLICT", "The conversation kept changing while a message was appended; try again");
}

/**
 * The last `n` messages of a conversation, chronological (the agent's history). Strongly consistent, so a message
 * appended just before is included. `n` < 1 gives [].
 */
export async function history(conversation: { id: string; workspace_id: string }, n: number): Promise<MessageView[]> {
  return (await newest(conversation.workspace_id, conversation.id, Math.floor(n))).map(toMessageView);
}

/** An inferred title as stored: whitespace runs made one space, trimmed, at most 200 characters ("" for none). */
const cleanTitle = (title: string): string => title.replace(/\s+/g, " ").trim().slice(0, 200);

