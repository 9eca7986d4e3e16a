/**
 * A workspace's assistant messages of a time window, as ids only: the quality dashboard's count of unrated answers
 * (spec 02 `GET /api/admin/quality/feedback`, `unrated_count`; core/observability).
 *
 * Why an index: a message keeps its content, lower-cased copy and thinking blocks (up to ~400 KB), and DynamoDB
 * charges by the whole item read, whatever a ProjectionExpression returns; a filter on the workspace partition read
 * every message ever written to count the window's answers. The sparse `answers` index (gsi4, conversation.entity.ts)
 * holds only assistant messages, slim, sorted by creation time, so the window is a key condition and each answer
 * costs a few dozen bytes. Older workspaces are backfilled once (core/db/slim-index.ts, `ANSWER_INDEX`).
 * docs/decisions.md "Slim list index".
 *
 * Eventually consistent: an answer written a moment ago may not be counted yet (typically well under a second).
 */
import { readIndexed } from "../db/slim-index";
import { db } from "../db/service";
import { ANSWER_INDEX } from "./conversation.entity";

/**
 * Ids of the workspace's assistant messages created at or after `since`: one Query of the `answers` index (a key
 * condition on created_at), beside a read of the workspace's mark; without the mark, from the partition as the
 * backfill read it (once per workspace).
 * @param workspaceId the workspace (the caller has checked membership)
 * @param since ISO-8601 instant, inclusive
 * @throws the DynamoDB client's errors (nothing is swallowed)
 */
export async function answerIdsSince(workspaceId: string, since: string): Promise<string[]> {
  const read = await readIndexed(ANSWER_INDEX, workspaceId, async () =>
    // The partition holds answers only, so a lower bound alone does not run on into other items.
    (await db().entities.message.query.answers({ workspace_id: workspaceId }).gte({ created_at: since }).go({ pages: "all", attributes: ["id"] })).data,
  );
  if (read.marked) return read.data.map((m) => m.id);
  return read.items.filter((m) => String(m.created_at) >= since).map((m) => String(m.id));
}
