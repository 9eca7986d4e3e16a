import * as z from "zod";
import { defineRoutes, type RouteSpec } from "../../lib/route";
import { TaskIdParam } from "../../../core/task/schema";

/**
 * The progress stream's function timeout, seconds: Lambda's most (15 minutes), so a stream outlasts the longest task
 * (fs_research, 600 s) and 200 polls of 3 s; it closes DEADLINE_MARGIN before it (the client reconnects and catches up).
 */
export const TASK_PROGRESS_TIMEOUT_SECONDS = 900;

/** The progress stream's body: unnamed events, each a `data:` line with one TaskProgress JSON (spec 02 Events). */
export const TaskProgressStream = z
  .string()
  .describe("text/event-stream of unnamed events: `data: <TaskProgress JSON>` per event, no `event:` names; closes on completed, failed or cancelled")
  .meta({ id: "TaskProgressStream" });

/**
 * `GET /api/tasks/{task_id}/progress` (spec 02 "Task progress stream"): a response-streaming Lambda on a Function URL
 * in AWS, the same handler through the local gateway's streaming shim. Membership is checked on every (re)connect: a
 * caller who watched the task as a member and lost the membership gets 403 FORBIDDEN, an outsider the 404 of an
 * unknown id.
 */
export const taskProgressRoutes = defineRoutes({
  "task-progress.stream": {
    method: "GET", path: "/api/tasks/{task_id}/progress", group: "task-progress", access: "user", workspaceScope: "resource",
    streaming: true, produces: "text/event-stream",
    summary: "The task's progress as Server-Sent Events: the current state at once, then every change, until it ends",
    params: TaskIdParam,
    responses: { 200: TaskProgressStream },
  },
} satisfies Record<string, RouteSpec>);
