/**
 * The stream's event names: exactly the table of spec 02 "Events" (Stream format). Every emit site types its name as
 * {@link StreamEventName}, so a name outside the spec does not compile; test/http/stream-event-names.test.ts parses
 * the spec's table and checks this list against it, and the shared SSE reader (test/support/sse.ts) refuses any other
 * name it reads off the wire, so a name that slips past the types (a hook's free string) fails every stream test.
 */
export const STREAM_EVENTS = [
  "token",
  "thinking",
  "tool_use",
  "tool_result",
  "turn",
  "progress",
  "skill_activated",
  "skill_suggestion",
  "briefing",
  "creation",
  "validation_sync",
  "mission_proposed",
  "agent_thread_start",
  "agent_thread_done",
  "harness_subtask_start",
  "harness_subtask_done",
  "harness_complexity",
  "harness_plan_selected",
  "harness_stream_alert",
  "harness_swarm_activated",
  "harness_swarm_complete",
  "harness_contract",
  "harness_verifier",
  "harness_workspace_profile",
  "harness_retry",
  "harness_degraded",
  "harness_iteration_complete",
  "context_metrics",
  "milestone_unlocked",
  "error",
  "done",
] as const;

/** A stream event name of spec 02. */
export type StreamEventName = (typeof STREAM_EVENTS)[number];

const NAMES: ReadonlySet<string> = new Set(STREAM_EVENTS);

/** Whether `name` is one of spec 02's stream events. */
export const isStreamEvent = (name: string): name is StreamEventName => NAMES.has(name);

/** Sends one stream event (the SSE writer behind it batches `token` itself). */
export type Send = (event: StreamEventName, data: unknown) => void;
