import { defineRoutes, type RouteSpec } from "../../lib/route";
import {
  ArchiveConversationInput,
  Conversation,
  ConversationDetail,
  ConversationIdParam,
  ConversationList,
  ConversationSearchResult,
  CreateConversationInput,
  ListConversationsQuery,
  ListMessagesQuery,
  MessageFeedback,
  MessageFeedbackInput,
  MessageIdParam,
  MessageList,
  SearchConversationsQuery,
  UpdateConversationInput,
} from "../../../core/chat/schema";

/**
 * Chat conversations (spec 01 Chat conversations) and message feedback (DESIGN.md section 5). Conversations are
 * private to their creator: the routes by id answer 404 to anyone else, members of the workspace included, so they
 * carry no workspace scope (a non-member gets 404 there, not 403; docs/decisions.md "Chat").
 */
export const chatRoutes = defineRoutes({
  "chat.create": {
    method: "POST", path: "/api/chat/conversations", group: "chat", access: "user", workspaceScope: "body",
    summary: "Start a conversation (title defaults to 'New Conversation')",
    body: CreateConversationInput,
    responses: { 201: Conversation },
  },
  "chat.list": {
    method: "GET", path: "/api/chat/conversations", group: "chat", access: "user", workspaceScope: "query",
    summary: "The caller's conversations in a workspace, most recent message first; archived hidden unless include_archived",
    query: ListConversationsQuery,
    responses: { 200: ConversationList },
  },
  "chat.search": {
    method: "GET", path: "/api/chat/conversations/search", group: "chat", access: "user", workspaceScope: "query",
    summary: "Case-insensitive substring search over the messages of the caller's conversations (archived included), newest first",
    query: SearchConversationsQuery,
    responses: { 200: ConversationSearchResult },
  },
  "chat.get": {
    method: "GET", path: "/api/chat/conversations/{conversation_id}", group: "chat", access: "user",
    summary: "One of the caller's conversations with all its messages, oldest first",
    params: ConversationIdParam,
    responses: { 200: ConversationDetail },
  },
  "chat.update": {
    method: "PATCH", path: "/api/chat/conversations/{conversation_id}", group: "chat", access: "user",
    summary: "Rename, archive or restore a conversation",
    params: ConversationIdParam,
    body: UpdateConversationInput,
    responses: { 200: Conversation },
  },
  "chat.archive": {
    method: "POST", path: "/api/chat/conversations/{conversation_id}/archive", group: "chat", access: "user",
    summary: "Archive a conversation (soft delete)",
    params: ConversationIdParam,
    body: ArchiveConversationInput,
    responses: { 200: Conversation },
  },
  "chat.restore": {
    method: "POST", path: "/api/chat/conversations/{conversation_id}/restore", group: "chat", access: "user",
    summary: "Restore an archived conversation",
    params: ConversationIdParam,
    body: ArchiveConversationInput,
    responses: { 200: Conversation },
  },
  "chat.delete": {
    method: "DELETE", path: "/api/chat/conversations/{conversation_id}", group: "chat", access: "user",
    summary: "Delete a conversation permanently, with its messages and their feedback",
    params: ConversationIdParam,
    responses: { 204: null },
  },
  "chat.messages": {
    method: "GET", path: "/api/chat/conversations/{conversation_id}/messages", group: "chat", access: "user",
    summary: "The newest messages before a cursor, oldest first",
    params: ConversationIdParam,
    query: ListMessagesQuery,
    responses: { 200: MessageList },
  },
  "chat.feedback": {
    method: "POST", path: "/api/chat/messages/{message_id}/feedback", group: "chat", access: "user",
    summary: "Rate an assistant message of one of the caller's conversations (a second rating replaces the first)",
    params: MessageIdParam,
    body: MessageFeedbackInput,
    responses: { 200: MessageFeedback },
    // A transaction conflict with a concurrent write of the conversation (retryable).
    errors: ["CONFLICT"],
  },
} satisfies Record<string, RouteSpec>);
