/**
 * `GET /api/billing/usage` and `/accomplishments` count the period's chat messages (spec 02 usage type chat_message)
 * without reading the workspace's whole chat history: answers weigh up to ~400 KB each and are kept for the plan's
 * history days, and the count read every `conversation#` item of the partition. It now reads each member's
 * conversation index from the period's start.
 */
import { describe, expect, it } from "vitest";
import * as Chat from "../../core/chat";
import { db } from "../../core/db/service";
import { call, newWorkspace } from "../support/api";
import { readsDuring } from "../support/read-units";

describe("the chat messages of a billing period", () => {
  it("are counted from the period's start, with reads that do not grow with older messages", async () => {
    const { owner, workspace } = await newWorkspace("Chat usage");
    const conv = await Chat.create(owner.id, { workspace_id: workspace.id });
    const key = { id: conv.id, workspace_id: workspace.id, user_id: owner.id };
    // Older history: 6 exchanges with long answers (about 80 KB each).
    for (let i = 0; i < 6; i++) {
      await Chat.appendMessage(key, { role: "user", content: `Question ${i} about exports` });
      await Chat.appendMessage(key, { role: "assistant", content: `Answer ${i}: ${"the export dialog hides the CSV option. ".repeat(2_000)}` });
    }
    // A new billing period starts now: all of that is before it.
    await new Promise((r) => setTimeout(r, 5));
    await db().entities.billingAccount.patch({ user_id: owner.id }).set({ period_start: new Date().toISOString() }).go();
    await new Promise((r) => setTimeout(r, 5));
    await Chat.appendMessage(key, { role: "user", content: "And this period?" });

    const usage = async () => {
      const res = await call("GET", "/api/billing/usage", { token: owner.token, query: { workspace_id: workspace.id } });
      expect(res.status, res.text).toBe(200);
      return res.body.items.find((i: { usage_type: string }) => i.usage_type === "chat_message").current as number;
    };
    const { result: counted, reads } = await readsDuring(workspace.id, usage);
    expect(counted).toBe(1);
    // The old answers (about 480 KB, over 100 read units) are not read: the whole request stays small.
    const units = reads.reduce((n, r) => n + r.units, 0);
    expect(units, JSON.stringify(reads)).toBeLessThan(20);

    const res = await call("GET", "/api/billing/accomplishments", { token: owner.token, query: { workspace_id: workspace.id } });
    expect(res.status, res.text).toBe(200);
    expect(res.body.counts.chat_messages).toBe(1);
  });
});
