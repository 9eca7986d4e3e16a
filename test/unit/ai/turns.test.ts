/** validTurns (core/ai/turns.ts): whatever a stored conversation holds, what reaches a model is a valid request. */
import { describe, expect, it } from "vitest";
import { validTurns } from "../../../core/ai/turns";
import type { ConversationTurn } from "../../../core/ai/ports";

const user = (text: string): ConversationTurn => ({ role: "user", content: [{ type: "text", text }] });
const assistant = (text: string): ConversationTurn => ({ role: "assistant", content: [{ type: "text", text }] });
const rules = { tools: true, thinking: false };

describe("validTurns", () => {
  it("drops blank answers and merges the user turns they leave side by side, in order", () => {
    const turns = validTurns([user("first"), assistant(""), user("second"), assistant("   "), user("third")], rules);
    expect(turns).toEqual([{ role: "user", content: [{ type: "text", text: "first" }, { type: "text", text: "second" }, { type: "text", text: "third" }] }]);
  });

  it("merges two user turns left by a crash and keeps the answers between others", () => {
    const turns = validTurns([user("a"), assistant("A"), user("b"), user("c")], rules);
    expect(turns.map((t) => t.role)).toEqual(["user", "assistant", "user"]);
    expect(turns[2]!.content).toHaveLength(2);
  });

  it("opens with the user and ends on the user's word", () => {
    const turns = validTurns([assistant("hello"), user("q"), assistant("a")], rules);
    expect(turns).toEqual([user("q")]);
    expect(validTurns([assistant("only")], rules)).toEqual([]);
  });

  it("turns tool blocks into text when no tools are offered", () => {
    const history: ConversationTurn[] = [
      user("q"),
      { role: "assistant", content: [{ type: "tool_use", id: "t1", name: "list_sources", input: { limit: 5 } }] },
      { role: "user", content: [{ type: "tool_result", id: "t1", status: "success", content: { sources: [] } }] },
    ];
    const turns = validTurns(history, { tools: false, thinking: false });
    expect(turns.flatMap((t) => t.content.map((c) => c.type))).toEqual(["text", "text", "text"]);
    expect(turns[1]!.content[0]).toEqual({ type: "text", text: '[called list_sources with {"limit":5}]' });
    expect(validTurns(history, rules)).toEqual(history); // with tools, nothing changes
  });

  it("turns a tool call without its result (a history cut between them) into text, and an orphan result too", () => {
    const turns = validTurns(
      [
        user("q"),
        { role: "assistant", content: [{ type: "text", text: "Looking" }, { type: "tool_use", id: "t1", name: "workspace_summary", input: {} }] },
        { role: "user", content: [{ type: "tool_result", id: "t9", status: "error", content: "gone" }, { type: "text", text: "next" }] },
      ],
      rules,
    );
    expect(turns.flatMap((t) => t.content.map((c) => c.type))).toEqual(["text", "text", "text", "text", "text"]);
  });

  it("keeps signed thinking, unchanged and first, only in assistant turns and only while thinking is on", () => {
    const thinking = { type: "thinking" as const, text: "Let me check.", signature: "sig==" };
    const history: ConversationTurn[] = [
      user("q"),
      { role: "assistant", content: [thinking, { type: "tool_use", id: "t1", name: "workspace_summary", input: {} }] },
      { role: "user", content: [{ type: "tool_result", id: "t1", status: "success", content: {} }] },
    ];
    expect(validTurns(history, { tools: true, thinking: true })[1]!.content[0]).toBe(thinking);
    expect(validTurns(history, { tools: true, thinking: false })[1]!.content.map((c) => c.type)).toEqual(["tool_use"]);
    const merged = validTurns([user("q"), assistant("earlier"), { role: "assistant", content: [{ type: "redacted_thinking", data: "AAAA" }, { type: "text", text: "later" }] }, user("r")], { tools: true, thinking: true });
    expect(merged[1]!.content.map((c) => c.type)).toEqual(["redacted_thinking", "text", "text"]);
  });
});
