/**
 * The backfill of a slim list (core/db/slim-index.ts) writes the gsi4 keys its entity's index writes on a create: both
 * come from the one index definition (ElectroDB's conversions), so they cannot drift apart.
 */
import { describe, expect, it } from "vitest";
import { db } from "../../../core/db/service";
import { TASK_LIST_INDEX } from "../../../core/task/task.entity";
import { ANSWER_INDEX } from "../../../core/chat/conversation.entity";

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

  it("are refused when an item lacks a key attribute", () => {
    expect(TASK_LIST_INDEX.keysOf("ws-1", { id: "t-1" })).toBeUndefined();
  });
});
