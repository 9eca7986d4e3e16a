import { defineRoutes, type RouteSpec } from "../../lib/route";
import {
  ChatStreamInput,
  DraftStreamInput,
  EventStream,
  PipelineStreamInput,
  RecommendationStreamInput,
  SynthesisStreamInput,
} from "../../../core/agent/schema";

// At most three streams per user at once (core/agent/copilot.ts): a fourth is 429 before its stream opens.
const sse = { streaming: true, produces: "text/event-stream", group: "stream", access: "user", workspaceScope: "body", method: "POST", errors: ["RATE_LIMITED", "USAGE_LIMIT_EXCEEDED"] } as const;

/**
 * The SSE endpoints (spec 02 Streaming, DESIGN.md 6.1): one response-streaming Lambda on a Function URL in AWS,
 * the same handler through the local gateway's streaming shim. Bad bodies get the 422 envelope before the stream opens.
 */
export const streamRoutes = defineRoutes({
  "stream.chat": { ...sse, path: "/api/stream/chat", summary: "Ask the copilot; its answer, tool steps and pending actions stream as SSE", body: ChatStreamInput, responses: { 200: EventStream } },
  "stream.synthesis": { ...sse, path: "/api/stream/synthesis", summary: "Synthesize sources with progress, then the copilot reports (SSE)", body: SynthesisStreamInput, responses: { 200: EventStream } },
  "stream.recommendation": { ...sse, path: "/api/stream/recommendation", summary: "Generate recommendations with progress, then the copilot reports (SSE)", body: RecommendationStreamInput, responses: { 200: EventStream } },
  "stream.draft": { ...sse, path: "/api/stream/draft", summary: "Draft a document with progress, then the copilot reports (SSE)", body: DraftStreamInput, responses: { 200: EventStream } },
  "stream.pipeline": { ...sse, path: "/api/stream/pipeline", summary: "Synthesis, recommendations and a PRD in sequence with progress (SSE)", body: PipelineStreamInput, responses: { 200: EventStream } },
} satisfies Record<string, RouteSpec>);
