import { httpGroup } from "../lib/http";
import { chatRoutes } from "./routes/chat";
import { created, noContent, ok } from "../lib/route";
import * as Chat from "../../core/chat";

/** Chat conversations and message feedback (spec 01 Chat conversations; DESIGN.md section 5). */
export const handler = httpGroup(chatRoutes, {
  "chat.create": async ({ user, body }) => created(await Chat.create(user.id, body)),
  "chat.list": async ({ user, query }) => ok(await Chat.list(user.id, query)),
  "chat.search": async ({ user, query }) => ok(await Chat.search(user.id, query)),
  "chat.get": async ({ user, params }) => ok(await Chat.get(user.id, params.conversation_id)),
  "chat.update": async ({ user, params, body }) => ok(await Chat.update(user.id, params.conversation_id, body)),
  "chat.archive": async ({ user, params }) => ok(await Chat.setArchived(user.id, params.conversation_id, true)),
  "chat.restore": async ({ user, params }) => ok(await Chat.setArchived(user.id, params.conversation_id, false)),
  "chat.delete": async ({ user, params }) => {
    await Chat.remove(user.id, params.conversation_id);
    return noContent();
  },
  "chat.messages": async ({ user, params, query }) => ok(await Chat.messages(user.id, params.conversation_id, query)),
  "chat.feedback": async ({ user, params, body }) => ok(await Chat.giveFeedback(user.id, params.message_id, body)),
});
