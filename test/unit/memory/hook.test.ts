/**
 * The memory run hook's `after` (core/memory/hook.ts) with real conversations in DynamoDB Local: it only enqueues; the
 * memory consumer (through the in-process queue) reads the user message the answer replied to; a failed run teaches
 * nothing; a deleted conversation teaches nothing.
 */
import { describe, expect, it } from "vitest";
import * as Chat from "../../../core/chat";
import { memoryHook } from "../../../core/memory/hook";
import { allFacts } from "../../../core/memory/store";
import { registeredQueue } from "../../../core/queue";
import type { LocalFifoQueue } from "../../../core/queue/local";
import { newWorkspace } from "../../support/api";

const learned = () => (registeredQueue("memory") as LocalFifoQueue).idle();

async function exchange(userText: string) {
  const { owner, workspace } = await newWorkspace("Hook");
  const conv = await Chat.openConversation(owner.id, workspace.id, undefined, userText);
  const asked = await Chat.appendMessage(conv, { role: "user", content: userText });
  const answer = await Chat.appendMessage(conv, { role: "assistant", content: "Noted." });
  const ctx = {
    userId: owner.id, workspaceId: workspace.id, conversationId: conv.id, resumedFrom: null, priorMessageCount: 0, prompt: userText,
    send: () => undefined, signal: new AbortController().signal,
  };
  return { owner, workspace, conv, asked, answer, ctx };
}

describe("memoryHook.after", () => {
  it("learns from the user message the answer replied to, not from a later one", async () => {
    const x = await exchange("We use Linear for issue tracking.");
    // The user keeps talking before the consumer runs: the later message is not this exchange's.
    await Chat.appendMessage(x.conv, { role: "user", content: "We use Jira for issue tracking." });
    await memoryHook.after(x.ctx, { assistantMessageId: x.answer.id, succeeded: true });
    await learned();
    const facts = await allFacts(x.workspace.id, x.owner.id);
    expect(facts.map((f) => [f.content, f.source_message_id, f.source_conversation_id])).toEqual([["We use Linear for issue tracking.", x.asked.id, x.conv.id]]);
  });

  it("a failed run teaches nothing, and neither does a conversation deleted before the consumer ran", async () => {
    const failed = await exchange("We use Linear for issue tracking.");
    await memoryHook.after(failed.ctx, { assistantMessageId: failed.answer.id, succeeded: false });
    const gone = await exchange("We use Notion for documentation.");
    await Chat.remove(gone.owner.id, gone.conv.id);
    await memoryHook.after(gone.ctx, { assistantMessageId: gone.answer.id, succeeded: true });
    await learned();
    expect(await allFacts(failed.workspace.id, failed.owner.id)).toEqual([]);
    expect(await allFacts(gone.workspace.id, gone.owner.id)).toEqual([]);
  });
});
