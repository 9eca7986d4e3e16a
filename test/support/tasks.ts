/**
 * Background tasks through the API (spec 02 Tasks) for the task suites: a conversation to report to, a spawned task,
 * the task once it ended, and a runner whose first attempt dies as a killed Lambda would.
 */
import { expect } from "vitest";
import { call, type newWorkspace } from "./api";
import { waitFor } from "./multipart";
import { setTaskRunner } from "../../core/task";
import { dropLocalExecution, localTaskRunner } from "../../local/tasks";
import type { TaskExecutionInput } from "../../core/task/runner";

type Ws = Awaited<ReturnType<typeof newWorkspace>>;

/** A new conversation of the workspace, by its owner's token: a task's outcome message goes there. */
export async function conversation(token: string, workspaceId: string): Promise<string> {
  const res = await call("POST", "/api/chat/conversations", { token, body: { workspace_id: workspaceId } });
  expect(res.status, res.text).toBe(201);
  return res.body.id as string;
}

/** A task of the workspace's owner, spawned over the API (201), by its id. */
export async function spawned(ws: Ws, conv: string, body: Record<string, unknown>): Promise<string> {
  const res = await call("POST", "/api/tasks/spawn", { token: ws.owner.token, body: { workspace_id: ws.workspace.id, conversation_id: conv, ...body } });
  expect(res.status, res.text).toBe(201);
  return res.body.id as string;
}

/** The task once it reached a terminal status (polled through GET /api/tasks/{id}). */
export async function settled(token: string, id: string, timeoutMs = 90_000) {
  return waitFor(async () => {
    const res = await call("GET", `/api/tasks/${id}`, { token });
    expect(res.status, res.text).toBe(200);
    return ["completed", "failed", "cancelled"].includes(res.body.status) ? res.body : null;
  }, timeoutMs, 50);
}

/** The Run state's real step, for runners that hold it first. */
export const realRun = async (input: unknown) => (await import("../../functions/steps/task-run")).handler(input as TaskExecutionInput);

/**
 * The next task's first attempt runs until `until` returns (by default: until its worker stops, whatever it ended
 * with), and then its execution is dropped (as kill -9 would) and its Run never answers. Later attempts run as usual.
 */
export function firstAttemptDies(until: (input: TaskExecutionInput, run: Promise<unknown>) => Promise<void> = async (_, run) => void (await run.catch(() => undefined))) {
  let first = true;
  setTaskRunner(
    localTaskRunner({
      handlers: {
        Run: async (input) => {
          const i = input as TaskExecutionInput;
          if (!first || i.attempt !== 1) return realRun(input);
          first = false;
          await until(i, realRun(input));
          dropLocalExecution(i);
          return new Promise(() => undefined);
        },
      },
    }),
  );
}
