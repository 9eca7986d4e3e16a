/**
 * The backfill of a list index (core/db/slim-index.ts) writes the keys its entity's index writes on a create (gsi4
 * for tasks and answers, gsi3 for documents): both come from the one index definition (ElectroDB's conversions), so
 * they cannot drift apart. The documents' mark is the item ElectroDB's create of its entity writes.
 */
import { describe, expect, it } from "vitest";
import { db } from "../../../core/db/service";
import { TASK_LIST_INDEX } from "../../../core/task/task.entity";
import { ANSWER_INDEX } from "../../../core/chat/conversation.entity";
import { DOCUMENT_INDEX, documentIndexMarkKeysOf } from "../../../core/document/document.entity";

const created_at = "2026-11-28T10:00:00.000Z";

describe("slim-list keys of a backfill", () => {
  it("are a task's keys as its create writes them", () => {
    const { Item } = db().entities.task
      .create({ id: "t-1", workspace_id: "ws-1", task_type: "research", prompt: "p", timeout_seconds: 60, created_by: "u-1", created_at })
      .params() as { Item: Record<string, unknown> };
    expect(Item.gsi4pk).toEqual(expect.any(String));
    expect(TASK_LIST_INDEX.keysOf("ws-1", Item)).toEqual({ gsi4pk: Item.gsi4pk, gsi4sk: Item.gsi4sk });
  });

  it("are an assistant message's keys as its create writes them, and none for a user's message", () => {
    const message = (role: "user" | "assistant") => db().entities.message
      .create({ id: `m-${role}`, conversation_id: "c-1", workspace_id: "ws-1", user_id: "u-1", role, content: "x", content_lc: "x", created_at })
      .params() as { Item: Record<string, unknown> };
    const answer = message("assistant").Item;
    expect(answer.gsi4pk).toEqual(expect.any(String));
    expect(ANSWER_INDEX.keysOf("ws-1", answer)).toEqual({ gsi4pk: answer.gsi4pk, gsi4sk: answer.gsi4sk });
    const asked = message("user").Item;
    expect(asked.gsi4pk).toBeUndefined();
    expect(ANSWER_INDEX.keysOf("ws-1", asked)).toBeUndefined();
  });

  it("are a document's gsi3 keys as its create writes them, under the prefix its workspace's mark begins", () => {
    const { Item } = db().entities.document
      .create({ id: "d-1", workspace_id: "ws-1", document_type: "prd", title: "t", content: "c", created_by: "u-1", created_at })
      .params() as { Item: Record<string, unknown> };
    expect(Item.gsi3pk).toEqual(expect.any(String));
    expect(DOCUMENT_INDEX.keysOf("ws-1", Item)).toEqual({ gsi3pk: Item.gsi3pk, gsi3sk: Item.gsi3sk });
    const mark = documentIndexMarkKeysOf("ws-1");
    expect(mark.gsi3pk).toBe(Item.gsi3pk);
    expect(String(Item.gsi3sk).startsWith(mark.gsi3sk)).toBe(true);
  });

  it("give the documents' mark as the create of its entity writes it, conditioned as that create is", () => {
    const put = DOCUMENT_INDEX.mark!("ws-1", 3, "table-1");
    const created = db().entities.documentIndexMark.create({ workspace_id: "ws-1", backfilled: 3, created_at }).params() as { Item: Record<string, unknown>; ConditionExpression: string };
    expect({ ...put.Item, created_at }).toEqual(created.Item);
    expect(put).toMatchObject({ TableName: "table-1", ConditionExpression: created.ConditionExpression });
    expect(put.Item).toMatchObject(documentIndexMarkKeysOf("ws-1"));
    expect(documentIndexMarkKeysOf("ws-1")).toMatchObject({ pk: "ws#ws-1", sk: DOCUMENT_INDEX.markSk });
  });

  it("are refused when an item lacks a key attribute", () => {
    expect(TASK_LIST_INDEX.keysOf("ws-1", { id: "t-1" })).toBeUndefined();
    expect(DOCUMENT_INDEX.keysOf("ws-1", {})).toBeUndefined();
  });
});
