import * as z from "zod";
import * as Memory from "../../memory";
import type { ReadTool } from "./types";

/**
 * The agent's reads of the user's memory (spec 01 Memory; DESIGN.md 6.6): what the person the agent works for told it
 * in earlier conversations, in this workspace. Both answer empty when memory is off or unavailable.
 */
export const searchMemory: ReadTool<{ query: string; top_k: number }> = {
  name: "search_memory",
  description:
    "Search what this user told you in earlier conversations (their memory: facts about them, their team, product, users, goals, tools and recent context), by meaning. Use when the request depends on something they may have said before.",
  cues: ["remember", "did i tell you", "i told you", "i mentioned", "what do you know about us", "what do you know about me", "recall"],
  gated: false,
  input: z.object({ query: z.string().trim().min(1).max(Memory.MAX_QUERY_CHARS), top_k: z.int().min(1).max(Memory.MAX_TOP_K).default(Memory.DEFAULT_TOP_K) }).strict(),
  async run(ctx, input) {
    const res = await Memory.search(ctx.userId, { workspace_id: ctx.workspaceId, query: input.query, top_k: input.top_k });
    return {
      total: res.total,
      memories: res.memories.map((m) => ({ content: m.content, kind: m.metadata.kind, stated_at: m.metadata.timestamp, score: m.score, disputed: m.metadata.contradicts.length > 0 })),
    };
  },
};

export const memoryProfile: ReadTool<Record<string, never>> = {
  name: "memory_profile",
  description:
    "Read this user's memory profile in this workspace: the stable facts they told you (static) and their recent, dated context (dynamic).",
  cues: ["my profile", "what do you remember", "about me", "about our team", "memory"],
  gated: false,
  input: z.object({}).strict(),
  async run(ctx) {
    return Memory.profile(ctx.userId, { workspace_id: ctx.workspaceId });
  },
};

export const MEMORY_TOOLS: readonly ReadTool[] = [searchMemory, memoryProfile];
