/**
 * The memory run hook's `after` (core/memory/hook.ts) with real conversations in DynamoDB Local: it only enqueues; the
 * memory consumer (through the in-process queue) reads the user message the answer replied to; a failed run teaches
 * nothing; a deleted conversation teaches nothing.
 */
import { describe, expect, it, vi } from "vitest";
import * as Chat from "../../../core/chat";
import { memoryHook } from "../../../core/memory/hook";
import { allFacts } from "../../../core/memory/store";
import { registeredQueue } from "../../../core/queue";
import type { LocalFifoQueue } from "../../../core/queue/local";
import { newWorkspace } from "../../support/api";
import { db } from "../../../core/db/service";
import { headVersion } from "../../../core/memory/store";
import { learnFromStatement } from "../../../core/memory/learn";

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

  it("with the answer's time the consumer finds the statement without looking the answer up by id; a job queued without it is looked up", async () => {
    const byId = vi.spyOn(db().entities.message.query, "byId");
    try {
      const timed = await exchange("We use Linear for issue tracking.");
      await Chat.appendMessage(timed.conv, { role: "user", content: "We use Jira for issue tracking." });
      await memoryHook.after(timed.ctx, { assistantMessageId: timed.answer.id, assistantCreatedAt: timed.answer.created_at, succeeded: true });
      await learned();
      expect(byId).not.toHaveBeenCalled();
      expect((await allFacts(timed.workspace.id, timed.owner.id)).map((f) => [f.content, f.source_message_id])).toEqual([["We use Linear for issue tracking.", timed.asked.id]]);

      const old = await exchange("We use Notion for documentation.");
      await memoryHook.after(old.ctx, { assistantMessageId: old.answer.id, succeeded: true });
      await learned();
      expect(byId).toHaveBeenCalledTimes(1);
      expect((await allFacts(old.workspace.id, old.owner.id)).map((f) => f.content)).toEqual(["We use Notion for documentation."]);

      // A job naming another user than the conversation's teaches nothing, to either of them.
      const other = await exchange("We use Asana for planning.");
      await memoryHook.after({ ...other.ctx, userId: timed.owner.id }, { assistantMessageId: other.answer.id, assistantCreatedAt: other.answer.created_at, succeeded: true });
      await learned();
      expect(await allFacts(other.workspace.id, timed.owner.id)).toEqual([]);
      expect(await allFacts(other.workspace.id, other.owner.id)).toEqual([]);

      // A deleted conversation still teaches nothing when the job carries the time.
      const gone = await exchange("We use Figma for design.");
      await Chat.remove(gone.owner.id, gone.conv.id);
      await memoryHook.after(gone.ctx, { assistantMessageId: gone.answer.id, assistantCreatedAt: gone.answer.created_at, succeeded: true });
      await learned();
      expect(await allFacts(gone.workspace.id, gone.owner.id)).toEqual([]);
    } finally {
      byId.mockRestore();
    }
  });

  it("a statement the rules find no fact in reads no memory", async () => {
    const x = await exchange("We use Linear for issue tracking.");
    await memoryHook.after(x.ctx, { assistantMessageId: x.answer.id, assistantCreatedAt: x.answer.created_at, succeeded: true });
    await learned();
    const version = await headVersion(x.workspace.id, x.owner.id);
    const heads = vi.spyOn(db().entities.memoryHead, "get");
    const facts = vi.spyOn(db().entities.memoryFact.query, "byUser");
    try {
      const none = await learnFromStatement({ workspaceId: x.workspace.id, userId: x.owner.id, conversationId: x.conv.id, messageId: x.asked.id, text: "What do users struggle with when they sign in?", at: new Date().toISOString() }, { model: null });
      expect(none).toEqual({ extractor: "rules", facts: [] });
      expect(heads).not.toHaveBeenCalled();
      expect(facts).not.toHaveBeenCalled();
      // A statement with a fact reads the memory (its head first) and reconciles against it.
      const again = await learnFromStatement({ workspaceId: x.workspace.id, userId: x.owner.id, conversationId: x.conv.id, messageId: x.asked.id, text: "We use Linear for issue tracking.", at: x.asked.created_at }, { model: null });
      expect(again.facts.map((f) => f.action)).toEqual(["same"]);
      expect(heads).toHaveBeenCalled();
      expect(await headVersion(x.workspace.id, x.owner.id)).toBe(version);
    } finally {
      heads.mockRestore();
      facts.mockRestore();
    }
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
