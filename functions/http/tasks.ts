import { httpGroup } from "../lib/http";
import { tasksRoutes } from "./routes/tasks";
import { created, ok } from "../lib/route";
import * as Task from "../../core/task";

/** Background tasks (spec 02 "Background tasks"): spawn, list, get, status, cancel. */
export const handler = httpGroup(tasksRoutes, {
  "tasks.spawn": async ({ user, body }) => created(await Task.spawn(user.id, body)),
  "tasks.list": async ({ user, query }) => ok(await Task.list(user.id, query)),
  "tasks.get": async ({ user, params }) => ok(await Task.get(user.id, params.task_id)),
  "tasks.status": async ({ user, params }) => ok(await Task.status(user.id, params.task_id)),
  "tasks.cancel": async ({ user, params }) => ok(await Task.cancel(user.id, params.task_id)),
});
