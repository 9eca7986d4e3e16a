/**
 * The embedded runtime's stand-ins for asynchronous AWS services start their work outside the request that caused it
 * (core/context.ts `outsideRequestScope`): in AWS an SQS consumer or a Step Functions task is an invocation of its
 * own, which sees none of the request's verified memberships, kept reads or abort signal. Node carries the request's
 * async context into every callback it schedules, so without this a memory job queued by a copilot stream ran with
 * the stream's kept memory head and its abort signal. The same holds for the task change feed, which the first progress
 * stream to subscribe starts and every later one shares, and for a batch of prompts embedded for several streams.
 */
import { randomUUID } from "node:crypto";
import { DynamoDBStreamsClient, GetRecordsCommand } from "@aws-sdk/client-dynamodb-streams";
import { describe, expect, it, vi } from "vitest";
import { currentSignal, requestScope, withAbortSignal, withRequestScope } from "../../../core/context";
import { LocalFifoQueue } from "../../../core/queue/local";
import { drainLocalTasks, localTaskRunner } from "../../../local/tasks";
import { drainLocalWorkflows, localWorkflowRunner } from "../../../local/pipeline";
import { STEP_TASKS, type StepTaskName } from "../../../functions/steps/extraction.asl";
import { taskChanges } from "../../../core/task/changes";
import { Coalescing } from "../../../core/agent/prompt-embedding";
import type { Embedder } from "../../../core/ai/ports";

/** What a piece of work saw of the request scope it ran in. */
const seen = () => ({ scope: requestScope() !== undefined, signal: currentSignal() !== undefined });

describe("work started for a request runs outside its scope", () => {
  it("a local queue's consumer", async () => {
    const consumed: ReturnType<typeof seen>[] = [];
    const queue = new LocalFifoQueue({ name: "scope-test", consumer: async () => void consumed.push(seen()) });
    try {
      await withRequestScope(() =>
        withAbortSignal(new AbortController().signal, async () => {
          requestScope()!.recent.set("kept", { at: Date.now(), value: 1 });
          expect(seen()).toEqual({ scope: true, signal: true }); // the sender's own view
          await queue.send({ body: "{}", groupId: "g", deduplicationId: randomUUID() });
        }),
      );
      await queue.idle();
      expect(consumed).toEqual([{ scope: false, signal: false }]);
    } finally {
      queue.stop();
    }
  });

  it("a local Step Functions execution's tasks", async () => {
    const ran: ReturnType<typeof seen>[] = [];
    const runner = localTaskRunner({ handlers: { Run: async () => (ran.push(seen()), { ok: true }), Fail: async () => ({ failed: true }) } });
    await withRequestScope(() =>
      withAbortSignal(new AbortController().signal, () => runner.start({ workspace_id: randomUUID(), task_id: randomUUID(), attempt: 1, timeout_seconds: 30 })),
    );
    await drainLocalTasks();
    expect(ran).toEqual([{ scope: false, signal: false }]);
  });

  it("a local extraction workflow's tasks", async () => {
    const ran: [string, ReturnType<typeof seen>][] = [];
    // Every state records what it saw; the first fails, so the workflow goes to MarkFailed and ends.
    const handlers = Object.fromEntries(
      (Object.keys(STEP_TASKS) as StepTaskName[]).map((state) => [
        state,
        async () => {
          ran.push([state, seen()]);
          if (state !== "MarkFailed") throw new Error(`${state} fails on purpose`);
          return {};
        },
      ]),
    );
    const runner = localWorkflowRunner({ handlers });
    await withRequestScope(() =>
      withAbortSignal(new AbortController().signal, () => runner.startExtraction({ workspace_id: randomUUID(), source_id: randomUUID(), bucket: "b", key: "k", attempt: 1 })),
    );
    await drainLocalWorkflows();
    expect(ran.length).toBeGreaterThan(0);
    for (const [, view] of ran) expect(view).toEqual({ scope: false, signal: false });
  });

  it("the task change feed's polling, started by the first progress stream to subscribe", async () => {
    const polled: ReturnType<typeof seen>[] = [];
    const send = DynamoDBStreamsClient.prototype.send;
    const spy = vi.spyOn(DynamoDBStreamsClient.prototype, "send").mockImplementation(function (this: DynamoDBStreamsClient, ...args: unknown[]) {
      if (args[0] instanceof GetRecordsCommand) polled.push(seen());
      return (send as (...a: unknown[]) => unknown).apply(this, args);
    } as typeof send);
    let unsubscribe: (() => void) | undefined;
    try {
      const sub = await withRequestScope(() =>
        withAbortSignal(new AbortController().signal, () => taskChanges.subscribe(randomUUID(), { onChange: () => undefined, onUnavailable: () => undefined })),
      );
      unsubscribe = sub.unsubscribe;
      expect(sub.live).toBe(true);
      const deadline = Date.now() + 10_000;
      while (polled.length === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
      expect(polled.length).toBeGreaterThan(0);
      for (const view of polled) expect(view).toEqual({ scope: false, signal: false });
    } finally {
      unsubscribe?.();
      spy.mockRestore();
    }
  });

  it("a batch of prompts embedded for several streams at once", async () => {
    const batches: [number, ReturnType<typeof seen>][] = [];
    // The embedder is the port's stand-in here: what is tested is where the batch runs, not the vectors.
    const inner: Embedder = {
      id: "scope-test",
      dimensions: 2,
      embed: async (texts) => (batches.push([texts.length, seen()]), texts.map(() => Float32Array.of(1, 0))),
    };
    const shared = new Coalescing(inner);
    const asked = (prompt: string) => withRequestScope(() => withAbortSignal(new AbortController().signal, () => shared.embed([prompt])));
    await Promise.all([asked("first stream's prompt"), asked("second stream's prompt")]);
    expect(batches).toEqual([[2, { scope: false, signal: false }]]);
  });
});
