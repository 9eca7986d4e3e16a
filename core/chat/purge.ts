/**
 * Deleting conversations whole: a conversation item, its messages and their feedback share one key prefix in the
 * workspace's partition (`conversation#<id>`, core/chat/conversation.entity.ts). Used by `DELETE
 * /api/chat/conversations/{id}` and by a user's deletion (spec 02 `user.deleted`: their conversations in every
 * workspace are their own data, which no route can reach once they are gone).
 */
import pLimit from "p-limit";
import { db } from "../db/service";
import { deleteKeys, partitionKeys } from "../db/partition";
import { partitionOf } from "../workspace/keys";

/** The key prefix of a conversation's items (itself, its messages, their feedback). */
export const conversationPrefix = (conversationId: string) => `conversation#${conversationId}`;

/**
 * Delete a conversation, its messages and their feedback: one begins_with Query on the prefix, batch deletes, the
 * conversation item last so a failure part-way can be retried. Then the prefix is listed once more: a message appended
 * between the first listing and the conversation's delete (a stream's answer) would be left behind, searchable; none
 * can be appended after it, since an append is conditioned on the conversation item. Can be run again.
 * @throws Error from DynamoDB when deletes keep failing (`deleteKeys`): the caller may run it again
 */
export async function purgeConversation(workspaceId: string, conversationId: string): Promise<void> {
  const own = conversationPrefix(conversationId);
  const pk = partitionOf(workspaceId);
  const keys = await partitionKeys(pk, own);
  await deleteKeys(keys.filter((k) => k.sk !== own));
  await deleteKeys([{ pk, sk: own }]);
  await deleteKeys(await partitionKeys(pk, own));
}

/** Conversations `purgeUserConversations` deletes at once (each a few queries and batch deletes). */
const PURGES_AT_ONCE = 4;

/**
 * Delete every conversation `userId` owns in a workspace (`purgeConversation` each), found on the user's
 * conversation index (gsi2, `chatuser#<user>#ws#<ws>`, its keys only). Can be run again.
 * @returns how many conversations were deleted
 */
export async function purgeUserConversations(workspaceId: string, userId: string): Promise<number> {
  const { data } = await db()
    .entities.conversation.query.byUser({ user_id: userId, workspace_id: workspaceId })
    .go({ pages: "all", attributes: ["id"] });
  await pLimit(PURGES_AT_ONCE).map(data, (c) => purgeConversation(workspaceId, c.id));
  return data.length;
}
