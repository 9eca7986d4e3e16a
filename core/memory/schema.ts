import * as z from "zod";

/** Memory search query: 1 to 500 characters (spec 01 Limits). */
export const MAX_QUERY_CHARS = 500;
/** Memory search top_k: default 5, at most 20 (spec 01 Limits). */
export const DEFAULT_TOP_K = 5;
export const MAX_TOP_K = 20;

export const FactKind = z.enum(["static", "dynamic"]);
export type FactKind = z.infer<typeof FactKind>;

/** Where a fact was learned: the conversation and the user message that stated it. */
export const FactSource = z
  .object({
    type: z.literal("conversation"),
    conversation_id: z.uuid(),
    message_id: z.uuid().describe("the user message that stated the fact"),
  })
  .meta({ id: "MemorySource" });

/** A memory item (spec 01 Memory: content, metadata with source and timestamp, score); metadata carries more of ours. */
export const MemoryItem = z
  .object({
    content: z.string(),
    metadata: z.object({
      source: FactSource,
      timestamp: z.string().describe("when the fact was stated (ISO 8601)"),
      memory_id: z.uuid(),
      workspace_id: z.uuid(),
      kind: FactKind,
      contradicts: z.array(z.uuid()).describe("current facts from another source that disagree with this one"),
    }),
    score: z.number().describe("cosine relevance to the query, 0 to 1"),
  })
  .meta({ id: "MemoryItem" });
export type MemoryItem = z.infer<typeof MemoryItem>;

/** `GET /api/memory/search` query (spec 01 Memory). Without workspace_id: every workspace the caller is a member of. */
export const SearchMemoryQuery = z.object({
  query: z.string().trim().min(1).max(MAX_QUERY_CHARS),
  workspace_id: z.uuid().optional(),
  top_k: z.coerce.number().int().min(1).max(MAX_TOP_K).default(DEFAULT_TOP_K),
});
export type SearchMemoryQuery = z.infer<typeof SearchMemoryQuery>;

export const MemorySearchResult = z
  .object({
    memories: z.array(MemoryItem),
    total: z.int().describe("current facts relevant to the query (at least the minimum relevance), before top_k"),
    query: z.string(),
  })
  .meta({ id: "MemorySearchResult" });
export type MemorySearchResult = z.infer<typeof MemorySearchResult>;

/** `GET /api/memory/profile` query: the spec names none; workspace_id narrows to one workspace. */
export const ProfileQuery = z.object({ workspace_id: z.uuid().optional() });
export type ProfileQuery = z.infer<typeof ProfileQuery>;

export const MemoryProfile = z
  .object({
    static_facts: z.array(z.string()),
    dynamic_facts: z.array(z.string()),
    is_available: z.boolean(),
  })
  .meta({ id: "MemoryProfile" });
export type MemoryProfile = z.infer<typeof MemoryProfile>;

/** One remembered fact in full, history included (our own endpoint: what is remembered about you). */
export const MemoryFact = z
  .object({
    id: z.uuid(),
    workspace_id: z.uuid(),
    content: z.string(),
    kind: FactKind,
    subject: z.string().describe("what the fact is about; facts of one subject are reconciled"),
    source: FactSource,
    status: z.enum(["current", "superseded"]),
    valid_at: z.string().describe("when it became true as far as we know: the time of the message that stated it"),
    invalid_at: z.string().nullable().describe("when a later fact superseded it; null while current"),
    superseded_by: z.uuid().nullable(),
    contradicts: z.array(z.uuid()).describe("current facts from another source that disagree with this one"),
    created_at: z.string(),
  })
  .meta({ id: "MemoryFact" });
export type MemoryFact = z.infer<typeof MemoryFact>;

export const ListMemoryQuery = z.object({
  workspace_id: z.uuid(),
  status: z.enum(["current", "superseded", "all"]).default("all"),
  limit: z.coerce.number().int().min(1).max(500).default(100),
  offset: z.coerce.number().int().min(0).default(0),
});
export type ListMemoryQuery = z.infer<typeof ListMemoryQuery>;

export const MemoryList = z.object({ memories: z.array(MemoryFact), total: z.int() }).meta({ id: "MemoryList" });
export type MemoryList = z.infer<typeof MemoryList>;

export const MemoryIdParam = z.object({ memory_id: z.uuid() });

export const ForgetAllQuery = z.object({ workspace_id: z.uuid() });
export type ForgetAllQuery = z.infer<typeof ForgetAllQuery>;

export const ForgetAllResult = z
  .object({ workspace_id: z.uuid(), deleted: z.int().describe("facts deleted, current and history") })
  .meta({ id: "ForgetAllResult" });
export type ForgetAllResult = z.infer<typeof ForgetAllResult>;
