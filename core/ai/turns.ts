/**
 * A conversation as a model API accepts it (DESIGN.md 6.1; issue #18 point 2). Whatever earlier runs of a
 * conversation left behind (a run aborted before any text, a crash between the user's message and the answer, a
 * history cut in the middle of a tool exchange), what reaches a model is a valid request:
 *
 * - no blank text blocks and no empty turns (Converse refuses both);
 * - roles alternate, beginning and ending with a user turn (two user turns in a row are merged into one, in order);
 * - tool blocks only when tools are offered (Converse refuses `toolUse`/`toolResult` without a `toolConfig`): without
 *   tools they become text saying what was called and what came back;
 * - thinking blocks only in assistant turns and only while thinking is on (they are sent back unchanged then).
 */
import type { ConversationTurn, TurnContent } from "./ports";

/** What the request will offer the model. */
export interface TurnRules {
  /** Tools are offered (a `toolConfig` is sent). */
  tools: boolean;
  /** Extended thinking is on for this request. */
  thinking: boolean;
}

const clip = (s: string, n = 2000) => (s.length > n ? `${s.slice(0, n)}…` : s);

/** A tool block as text, for a request that offers no tools. */
function asText(part: TurnContent): TurnContent {
  if (part.type === "tool_use") return { type: "text", text: `[called ${part.name} with ${clip(JSON.stringify(part.input))}]` };
  if (part.type === "tool_result") {
    const body = typeof part.content === "string" ? part.content : JSON.stringify(part.content);
    return { type: "text", text: `[${part.status === "error" ? "tool error" : "tool result"}: ${clip(body ?? "null")}]` };
  }
  return part;
}

function keep(part: TurnContent, role: ConversationTurn["role"], rules: TurnRules): TurnContent | null {
  switch (part.type) {
    case "text":
      return part.text.trim() === "" ? null : part;
    case "thinking":
    case "redacted_thinking":
      return role === "assistant" && rules.thinking ? part : null;
    case "tool_use":
    case "tool_result":
      return rules.tools ? part : asText(part);
  }
}

/**
 * The turns of `messages` made valid for one request under `rules` (see the module comment). Content is kept in
 * order; nothing is invented: a history that holds no user text at all gives an empty list.
 * @returns turns that alternate user/assistant, start and end with a user turn, and hold no blank blocks
 */
export function validTurns(messages: readonly ConversationTurn[], rules: TurnRules): ConversationTurn[] {
  const out: ConversationTurn[] = [];
  for (const turn of messages) {
    const content = turn.content.map((p) => keep(p, turn.role, rules)).filter((p): p is TurnContent => p !== null);
    if (content.length === 0) continue;
    const last = out.at(-1);
    if (last && last.role === turn.role) last.content = [...last.content, ...content];
    else out.push({ role: turn.role, content });
  }
  // A model conversation opens with the user and waits on the user's last word.
  while (out[0]?.role === "assistant") out.shift();
  while (out.at(-1)?.role === "assistant") out.pop();
  return pairToolBlocks(out).map(orderThinkingFirst);
}

/**
 * A tool call must be answered in the very next user turn, and a tool result must answer a call of the turn before
 * (a history cut between the two would be refused): a block without its partner becomes text.
 */
function pairToolBlocks(turns: ConversationTurn[]): ConversationTurn[] {
  const ids = (turn: ConversationTurn | undefined, type: "tool_use" | "tool_result") =>
    new Set((turn?.content ?? []).flatMap((p) => (p.type === type ? [p.id] : [])));
  return turns.map((turn, i) => {
    const partners = turn.role === "assistant" ? ids(turns[i + 1], "tool_result") : ids(turns[i - 1], "tool_use");
    const own = turn.role === "assistant" ? "tool_use" : "tool_result";
    return { role: turn.role, content: turn.content.map((p) => (p.type === own && !partners.has(p.id) ? asText(p) : p)) };
  });
}

/**
 * Anthropic reads an assistant turn's thinking before its text and tool calls: a merged turn (two assistant
 * messages in a row) keeps each thinking block ahead of the rest, in their own order.
 */
function orderThinkingFirst(turn: ConversationTurn): ConversationTurn {
  if (turn.role !== "assistant") return turn;
  const isThinking = (p: TurnContent) => p.type === "thinking" || p.type === "redacted_thinking";
  const thinking = turn.content.filter(isThinking);
  if (thinking.length === 0 || turn.content.slice(0, thinking.length).every(isThinking)) return turn;
  return { role: turn.role, content: [...thinking, ...turn.content.filter((p) => !isThinking(p))] };
}

/**
 * Characters of earlier conversation a run is handed at most: about 30,000–40,000 tokens of English. Claude's
 * context window is 200,000 tokens and holds the request's `max_tokens` too (up to 64,000 on Sonnet 4), the system
 * prompt, the tools and the run's own tool results (24,000 characters each), so a long conversation is cut here
 * rather than refused by the model on every later message ("Input is too long").
 */
export const HISTORY_MAX_CHARS = 120_000;

/** Put before the kept end of a message cut to fit the history. */
const CUT_MARK = "[…the start of this message is cut]\n";

/**
 * The newest of `messages` (oldest first) whose text fits in `maxChars` together, oldest first. A newest message
 * longer than the budget on its own is kept by its end (the part a reply follows on from), marked as cut.
 * @param maxChars a budget of characters (default HISTORY_MAX_CHARS)
 */
export function recentHistory<T extends { content: string }>(messages: readonly T[], maxChars = HISTORY_MAX_CHARS): T[] {
  const kept: T[] = [];
  let left = maxChars;
  for (let i = messages.length - 1; i >= 0; i--) {
    const m = messages[i]!;
    if (m.content.length <= left) {
      kept.push(m);
      left -= m.content.length;
      continue;
    }
    if (kept.length === 0) kept.push({ ...m, content: `${CUT_MARK}${m.content.slice(m.content.length - Math.max(0, maxChars - CUT_MARK.length))}` });
    break;
  }
  return kept.reverse();
}
