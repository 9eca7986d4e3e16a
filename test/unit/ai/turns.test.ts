/**
 * validTurns (core/ai/turns.ts): whatever a stored conversation holds, what reaches a model is a valid request; and
 * recentHistory: a long conversation is cut to its newest messages within the history's budget.
 */
import { describe, expect, it } from "vitest";
import { HISTORY_MAX_CHARS, recentHistory, validTurns } from "../../../core/ai/turns";
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

describe("recentHistory", () => {
  const msg = (role: "user" | "assistant", n: number, tag: string) => ({ role, content: `${tag}:${"x".repeat(n - tag.length - 1)}` });

  it("keeps the whole history when it fits", () => {
    const h = [msg("user", 10, "a"), msg("assistant", 10, "b")];
    expect(recentHistory(h, 20)).toEqual(h);
  });

  it("keeps the newest messages that fit together, oldest first, and drops everything older", () => {
    const h = [msg("user", 50, "old"), msg("assistant", 40, "mid"), msg("user", 30, "new"), msg("assistant", 20, "newest")];
    expect(recentHistory(h, 100).map((m) => m.content.split(":")[0])).toEqual(["mid", "new", "newest"]);
    // The first message that does not fit ends the history: a smaller one before it is not taken (no gaps).
    expect(recentHistory([msg("user", 5, "tiny"), msg("assistant", 90, "big"), msg("user", 20, "last")], 100).map((m) => m.content.split(":")[0])).toEqual(["last"]);
  });

  it("cuts a newest message longer than the budget to its end, marked, within the budget", () => {
    const long = { role: "assistant" as const, content: `${"a".repeat(500)}THE END` };
    const [kept, ...rest] = recentHistory([msg("user", 10, "q"), long], 100);
    expect(rest).toEqual([]);
    expect(kept!.content.length).toBeLessThanOrEqual(100);
    expect(kept!.content.startsWith("[…the start of this message is cut]")).toBe(true);
    expect(kept!.content.endsWith("THE END")).toBe(true);
  });

  it("holds 20 messages of the largest size a message may have (100,000 characters) to the default budget", () => {
    const h = Array.from({ length: 20 }, (_, i) => msg(i % 2 ? "assistant" : "user", 100_000, `m${i}`));
    const kept = recentHistory(h);
    expect(kept.reduce((n, m) => n + m.content.length, 0)).toBeLessThanOrEqual(HISTORY_MAX_CHARS);
    expect(kept.at(-1)!.content.startsWith("m19:")).toBe(true);
  });
});
