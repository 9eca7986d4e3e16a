/**
 * A task's item and the task list stay within their limits:
 * - `GET /api/tasks` ends a page that would pass one Lambda answer (6 MB; `fitResponse`), `total` counting every task
 *   and `offset` reading on. Tasks as heavy as that take long to build here, so the budget is shrunk: `fitResponse` is
 *   the real one, given a budget that fits two of these tasks.
 * - a step whose value would push the checkpoint past its budget is not checkpointed, nor any step after it (it was a
 *   write DynamoDB refused past 400 KB, failing the task after its work); a completed task keeps no checkpoint.
 */
import { randomUUID } from "node:crypto";
import { afterEach, describe, expect, it, vi } from "vitest";
import { call, newWorkspace } from "../support/api";
import { conversation, settled, spawned } from "../support/tasks";
import { topUp } from "../support/billing";
import { db } from "../../core/db/service";
import { readTask } from "../../core/task";
import { WORK } from "../../core/task/work";
import { CHECKPOINT_MAX_BYTES } from "../../core/task/worker";

const budget = vi.hoisted(() => ({ bytes: undefined as number | undefined }));
vi.mock("../../core/response-size", async (importOriginal) => {
  const real = await importOriginal<typeof import("../../core/response-size")>();
  return { ...real, fitResponse: <T>(items: readonly T[], maxBytes?: number) => real.fitResponse(items, budget.bytes ?? maxBytes) };
});

const research = WORK.research;
afterEach(() => {
  (WORK as Record<string, unknown>).research = research;
  budget.bytes = undefined;
});

describe("task bounds", () => {
  it("GET /api/tasks gives the tasks that fit in one answer, newest first; total counts every task; offset reads the rest", async () => {
    const ws = await newWorkspace("Heavy tasks");
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) {
      const id = randomUUID();
      await db().entities.task.create({
        id, workspace_id: ws.workspace.id, task_type: "research", prompt: `Question ${i} ${"why do exports stall? ".repeat(400)}`, status: "completed", phase: "complete",
        progress_pct: 100, message: "Completed", timeout_seconds: 900, created_by: ws.owner.id, created_at: new Date(Date.UTC(2026, 10, 1, 0, i)).toISOString(),
        result_summary: `Answer ${i}`, result_data: { answer: `“${"the export stalls at ninety percent ".repeat(1_200)}”` },
      }).go();
      ids.unshift(id); // newest first
    }
    const q = (extra: Record<string, string> = {}) => call("GET", "/api/tasks", { token: ws.owner.token, query: { workspace_id: ws.workspace.id, limit: "100", ...extra } });
    const all = await q();
    expect(all.status, all.text).toBe(200);
    expect(all.body.tasks.map((t: { id: string }) => t.id)).toEqual(ids);
    const one = Math.max(...all.body.tasks.map((t: unknown) => Buffer.byteLength(JSON.stringify(JSON.stringify(t)))));
    budget.bytes = 2 * one + 100;
    const first = await q();
    expect(first.body.total).toBe(5);
    expect(first.body.tasks.map((t: { id: string }) => t.id)).toEqual(ids.slice(0, 2));
    const next = await q({ offset: "2" });
    expect(next.body.tasks.map((t: { id: string }) => t.id)).toEqual(ids.slice(2, 4));
  });

  it("a step whose value would pass the checkpoint's budget is not checkpointed: the task completes (it failed at the store), and a completed task keeps no checkpoint", async () => {
    const ws = await newWorkspace("Big step");
    await topUp(ws.owner.id, 100);
    const conv = await conversation(ws.owner.token, ws.workspace.id);
    const big = "x".repeat(CHECKPOINT_MAX_BYTES + 210_000); // about 415 KB: with the task's fields, past DynamoDB's 400 KB item
    let seen: Record<string, unknown> | undefined;
    (WORK as Record<string, unknown>).research = async (ctx: Parameters<typeof research>[0]) => {
      await ctx.step("plan", async () => ({ queries: 2 }));
      const value = await ctx.step("gathered", async () => ({ text: big }));
      await ctx.step("small", async () => ({ n: value.text.length }));
      seen = (await readTask(ctx.task.workspace_id, ctx.task.id))?.checkpoint as Record<string, unknown> | undefined;
      return { summary: "Gathered", data: { length: value.text.length } };
    };
    const id = await spawned(ws, conv, { task_type: "research", prompt: "Gather everything" });
    const done = await settled(ws.owner.token, id);
    expect(done, JSON.stringify(done).slice(0, 500)).toMatchObject({ status: "completed", result_data: { length: big.length } });
    // While it ran: the step before the big one was kept; the big one was not, nor the step after it (which rests on it).
    expect(seen).toEqual({ plan: { queries: 2 } });
    expect((await readTask(ws.workspace.id, id))?.checkpoint).toBeUndefined();
  });
});
