import { defineRoutes, type RouteSpec } from "../../lib/route";
import { CancelTaskInput, ListTasksQuery, SpawnTaskInput, Task, TaskIdParam, TaskList, TaskProgress } from "../../../core/task/schema";

/**
 * Background tasks (spec 02 "Background tasks"; DESIGN.md 6.5). The id routes answer a non-member the 404 of an id
 * that does not exist (docs/decisions.md "404 or 403"). The progress stream is a response-streaming route, so it is
 * its own group (routes/task-progress.ts): a group is either streaming or not.
 */
export const tasksRoutes = defineRoutes({
  "tasks.spawn": {
    method: "POST", path: "/api/tasks/spawn", group: "tasks", access: "user", workspaceScope: "body",
    summary: "Spawn a background task (pending; its execution starts at once)",
    body: SpawnTaskInput,
    // 402: an inactive subscription, or an account that cannot carry the task's run; 403: fs_research without the plan's fs researcher.
    errors: ["SUBSCRIPTION_REQUIRED", "USAGE_LIMIT_EXCEEDED"],
    responses: { 201: Task },
  },
  "tasks.list": {
    method: "GET", path: "/api/tasks", group: "tasks", access: "user", workspaceScope: "query",
    summary: "The workspace's tasks, newest first, optionally of one status",
    query: ListTasksQuery,
    responses: { 200: TaskList },
  },
  "tasks.get": {
    method: "GET", path: "/api/tasks/{task_id}", group: "tasks", access: "user", workspaceScope: "resource",
    summary: "One task with its status and results (the canonical record)",
    params: TaskIdParam,
    responses: { 200: Task },
  },
  "tasks.status": {
    method: "GET", path: "/api/tasks/{task_id}/status", group: "tasks", access: "user", workspaceScope: "resource",
    summary: "The task's progress snapshot: the same shape as one progress event",
    params: TaskIdParam,
    responses: { 200: TaskProgress },
  },
  "tasks.cancel": {
    method: "POST", path: "/api/tasks/{task_id}/cancel", group: "tasks", access: "user", workspaceScope: "resource",
    summary: "Cancel a pending or running task (409 once it completed, failed or was cancelled)",
    params: TaskIdParam,
    body: CancelTaskInput,
    errors: ["INVALID_STATE", "CONFLICT"],
    responses: { 200: Task },
  },
} satisfies Record<string, RouteSpec>);
