import * as z from "zod";
import { DocumentType } from "../document/schema";

/**
 * Stream prompt: 1 to 10,000 characters (spec 02 Limits), not all whitespace: a blank prompt after a history was
 * dropped from the model's turns, and the model answered the previous question again (and was charged for it).
 */
const prompt = z.string().min(1).max(10_000).refine((s) => s.trim().length > 0, { message: "The prompt is blank" });
/** 1 to 30 model calls per query (spec 02 Limits). */
const maxTurns = z.int().min(1).max(30);

/** `POST /api/stream/chat` body (spec 02 Streaming). */
export const ChatStreamInput = z
  .object({
    workspace_id: z.uuid(),
    prompt,
    conversation_id: z.uuid().optional(),
    session_id: z.string().max(200).optional(),
    max_turns: maxTurns.default(10),
    mode: z.enum(["plan", "research"]).optional(),
    reasoning_mode: z.enum(["fast", "thorough", "deep"]).optional(),
    model: z.string().min(1).max(200).optional().describe("model id override"),
    attachment_ids: z.array(z.uuid()).max(10).default([]),
    language: z.string().regex(/^[a-z]{2,3}(-[A-Za-z0-9]{2,8})*$/, "an ISO language code such as en or pt-BR").optional(),
    effort: z.enum(["low", "medium", "high", "max"]).optional(),
  })
  .strict()
  .meta({ id: "ChatStreamInput" });
export type ChatStreamInput = z.infer<typeof ChatStreamInput>;

/** `POST /api/stream/synthesis` body. */
export const SynthesisStreamInput = z
  .object({
    workspace_id: z.uuid(),
    prompt,
    source_ids: z.array(z.uuid()).min(1).max(20),
    synthesis_type: z.enum(["comprehensive", "quick"]).default("comprehensive"),
    conversation_id: z.uuid().optional(),
    // One budget for the whole query (core/harness/turns.ts): by default it holds a swarm's four specialists.
    max_turns: maxTurns.default(10),
  })
  .strict()
  .meta({ id: "SynthesisStreamInput" });
export type SynthesisStreamInput = z.infer<typeof SynthesisStreamInput>;

/** `POST /api/stream/recommendation` body. */
export const RecommendationStreamInput = z
  .object({
    workspace_id: z.uuid(),
    prompt,
    insight_ids: z.array(z.uuid()).min(1).max(20),
    focus_areas: z.array(z.string().min(1).max(200)).max(10).optional(),
    conversation_id: z.uuid().optional(),
    max_turns: maxTurns.default(5),
  })
  .strict()
  .meta({ id: "RecommendationStreamInput" });
export type RecommendationStreamInput = z.infer<typeof RecommendationStreamInput>;

/** `POST /api/stream/draft` body. */
export const DraftStreamInput = z
  .object({
    workspace_id: z.uuid(),
    prompt,
    document_type: DocumentType.default("prd"),
    recommendation_id: z.uuid().optional(),
    user_instructions: z.string().max(5000).optional(),
    conversation_id: z.uuid().optional(),
    max_turns: maxTurns.default(5),
  })
  .strict()
  .meta({ id: "DraftStreamInput" });
export type DraftStreamInput = z.infer<typeof DraftStreamInput>;

/** `POST /api/stream/pipeline` body: synthesis, then recommendations, then drafting. */
export const PipelineStreamInput = z
  // max_turns: one budget for the whole query (core/harness/turns.ts); by default it holds a swarm's four specialists.
  .object({ workspace_id: z.uuid(), prompt, conversation_id: z.uuid().optional(), max_turns: maxTurns.default(10) })
  .strict()
  .meta({ id: "PipelineStreamInput" });
export type PipelineStreamInput = z.infer<typeof PipelineStreamInput>;

/** What a stream answers: Server-Sent Events (spec 02 Events); described for the OpenAPI document. */
export const EventStream = z
  .string()
  .describe(
    "text/event-stream: `event: <name>` + `data: <json>` per event, every name one of spec 02's Events table: the loop's (token, thinking, tool_use, tool_result, turn), the variants' (progress, creation), the run hooks' (briefing, skill_activated, skill_suggestion), the harness's (harness_complexity, harness_workspace_profile, harness_plan_selected, mission_proposed, agent_thread_start/done, harness_subtask_start/done, harness_stream_alert, harness_swarm_activated/complete, harness_iteration_complete, harness_contract, harness_verifier, harness_retry, harness_degraded, validation_sync, context_metrics), milestone_unlocked, error and done",
  );
