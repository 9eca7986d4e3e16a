import * as z from "zod";
import { TaskStatus } from "./status";

export { TaskStatus };

/**
 * Task types a client may spawn (spec 02 Background task: "Task types named: validation_kit, fs_research, research,
 * synthesis, recommendation, drafting"). The spec leaves the complete set open; the service adds one type it spawns
 * itself and a client cannot: `research_cycle`, the overnight research cycle (docs/decisions.md "Overnight research
 * cycles").
 */
export const SpawnableTaskType = z.enum(["validation_kit", "fs_research", "research", "synthesis", "recommendation", "drafting"]).meta({ id: "SpawnableTaskType" });
export const TaskType = z.enum([...SpawnableTaskType.options, "research_cycle"]).meta({ id: "TaskType" });
export type TaskType = z.infer<typeof TaskType>;

/** Spec 02 "Task timeouts": validation_kit 240 s, fs_research 600 s, others 300 s. */
export const TASK_TIMEOUT_SECONDS: Readonly<Record<TaskType, number>> = {
  validation_kit: 240,
  fs_research: 600,
  research: 300,
  synthesis: 300,
  recommendation: 300,
  drafting: 300,
  research_cycle: 300,
};

/** The failure text of a task past its timeout (spec 02: "error text ends 'timed out after Ns' on timeout"). */
export const timedOutError = (seconds: number): string => `Task timed out after ${seconds}s`;

/** Spec 02 "Phases by task type", with the progress each phase reports. */
export const PHASES = {
  validation_kit: { assumption_map: 15, research_plan: 50, interview_guide: 80, complete: 100 },
  fs_research: { starting: 5, phase_1_complete: 50, phase_2_complete: 90, complete: 100 },
} as const;

/**
 * One progress event of `GET /api/tasks/{task_id}/progress`, and the body of `GET /api/tasks/{task_id}/status`
 * (spec 02 Task progress stream: "the same shape").
 */
export const TaskProgress = z
  .object({
    id: z.uuid(),
    status: TaskStatus,
    task_type: TaskType,
    progress_pct: z.int().min(0).max(100),
    phase: z.string().describe("pending before the runner starts; per type as spec 02 lists (validation_kit, fs_research), else running; complete at the end"),
    message: z.string().describe("what the worker is doing now, in words"),
    started_at: z.string().nullable(),
    completed_at: z.string().nullable().describe("null until terminal"),
    heartbeat_at: z.string().nullable(),
    error: z.string().nullable().describe("set when failed; ends 'timed out after Ns' on timeout"),
    result_data: z.record(z.string(), z.unknown()),
  })
  .meta({ id: "TaskProgress" });
export type TaskProgress = z.infer<typeof TaskProgress>;

/** The canonical task record (spec 02 Background task, plus its progress fields). */
export const Task = z
  .object({
    id: z.uuid(),
    workspace_id: z.uuid(),
    conversation_id: z.uuid().nullable().describe("the conversation the task was spawned from; null for a research cycle"),
    task_type: TaskType,
    prompt: z.string(),
    target_document_id: z.uuid().nullable(),
    status: TaskStatus,
    result_summary: z.string().nullable(),
    result_data: z.record(z.string(), z.unknown()),
    error: z.string().nullable(),
    created_at: z.string(),
    started_at: z.string().nullable(),
    completed_at: z.string().nullable(),
    progress_pct: z.int().min(0).max(100),
    phase: z.string(),
    message: z.string(),
    heartbeat_at: z.string().nullable(),
    timeout_seconds: z.int().describe("the task type's timeout (spec 02)"),
    created_by: z.uuid().describe("the member who spawned it (a research cycle: the workspace owner)"),
  })
  .meta({ id: "Task" });
export type Task = z.infer<typeof Task>;

/** Prompt bounds: those of a stream prompt (spec 02 Limits: 1 to 10,000 characters). */
export const MAX_PROMPT_CHARS = 10_000;

/** `POST /api/tasks/spawn` body (spec 02 Background tasks). */
export const SpawnTaskInput = z
  .object({
    workspace_id: z.uuid(),
    conversation_id: z.uuid().describe("a conversation of the workspace; the task's outcome is added to it"),
    task_type: SpawnableTaskType,
    prompt: z.string().trim().min(1).max(MAX_PROMPT_CHARS),
    target_document_id: z.uuid().optional().describe("a document of the workspace the task works on (see docs/decisions.md)"),
  })
  .strict()
  .meta({ id: "SpawnTaskInput" });
export type SpawnTaskInput = z.infer<typeof SpawnTaskInput>;

/** `GET /api/tasks` query (spec 02: limit default 20, max 100). */
export const ListTasksQuery = z.object({
  workspace_id: z.uuid(),
  status: TaskStatus.optional(),
  limit: z.coerce.number().int().min(1).max(100).default(20),
  offset: z.coerce.number().int().min(0).default(0),
});
export type ListTasksQuery = z.infer<typeof ListTasksQuery>;

export const TaskList = z.object({ tasks: z.array(Task), total: z.int() }).meta({ id: "TaskList" });

export const TaskIdParam = z.object({ task_id: z.uuid() });

/** `POST /api/tasks/{task_id}/cancel` takes no inputs; an empty (or absent) JSON object. */
export const CancelTaskInput = z.object({}).strict().meta({ id: "CancelTaskInput" });
