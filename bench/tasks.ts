/**
 * Task progress benchmark (issue #23): the progress stream `GET /api/tasks/{task_id}/progress` through the local
 * gateway over real sockets, read with fetch + eventsource-parser.
 *
 *   npm run bench -- tasks      (or: npx tsx bench/run.ts tasks)
 *
 * 1. Latency from a phase change to the client: tasks whose worker is a stand-in that claims its attempt and then
 *    writes a new phase every PHASE_GAP_MS through the real write path (core/task writeProgress: one conditional
 *    update of the item), in this process, so the write's end and the event's arrival are read on one clock. Each
 *    sample is (event received) − (write returned) for one phase. Twice:
 *    - live channel: the table's stream read from DynamoDB Local (core/task/changes.ts, GetRecords every
 *      TASK_FEED_POLL_MS, default 250 ms), then a strongly consistent read is not needed: the record carries the image;
 *    - polling (TASK_PROGRESS_LIVE=off, what a stream does when the live channel is unavailable): the stored state
 *      every 3 s (spec 02), so a phase shows at the next poll. Phases are spaced beyond 3 s so none is skipped.
 * 2. 100 concurrent progress streams held by the local gateway: 10 tasks × 10 streams of one user, opened at once.
 *    Held: each received the current state. Then every task moves to a new phase at once: how long until all 100
 *    streams have it (fan-out), and the process's memory (RSS, heap) before, with the 100 open, and per stream. Then
 *    the tasks complete and every stream must close on its own (spec 02: the stream closes on a terminal status).
 *
 * The main user buys the Pro plan through the simulated paid upgrade (bench/lib/billing.ts): each task reserves its
 * run at spawn, more than a trial's credits cover.
 */
import { createParser } from "eventsource-parser";
import { startBenchRuntime, type BenchRuntime } from "./lib/runtime";
import { fmtBytes, fmtMs, printTable, Recorder, type Summary } from "./lib/stats";
import { busyWarning, machineLine } from "./lib/machine";
import { simulatePaidUpgrade } from "./lib/billing";
import { sized, sizeNote } from "./lib/size";

const LIVE_TASKS = sized(10, 2);
const LIVE_PHASES = sized(10, 2);
const POLL_TASKS = sized(10, 1);
const POLL_PHASES = sized(3, 1);
const STREAM_TASKS = sized(10, 2);
const STREAMS_PER_TASK = 10;
/** Gap between two phase writes of a task: live, well above the feed's poll; polling, beyond the 3 s poll. */
const LIVE_GAP_MS = 400;
const POLL_GAP_MS = 3_400;
const DEADLINE_MS = 120_000;

interface Stream {
  events: { phase: string; status: string; at: number }[];
  closed: Promise<void>;
  abort(): void;
}

/** Open one progress stream and record each event's arrival (performance.now()). */
async function openStream(base: string, token: string, taskId: string): Promise<Stream> {
  const controller = new AbortController();
  const events: Stream["events"] = [];
  const res = await fetch(new URL(`/api/tasks/${taskId}/progress`, base), { headers: { authorization: `Bearer ${token}` }, signal: controller.signal });
  if (res.status !== 200 || !res.body) throw new Error(`progress stream of ${taskId}: HTTP ${res.status} ${await res.text()}`);
  const parser = createParser({ onEvent: (e) => events.push({ ...(JSON.parse(e.data) as { phase: string; status: string }), at: performance.now() }) });
  const decoder = new TextDecoder();
  const closed = (async () => {
    try {
      for await (const chunk of res.body!) parser.feed(decoder.decode(chunk as Uint8Array, { stream: true }));
    } catch (err) {
      if (!controller.signal.aborted) throw err;
    }
  })();
  return { events, closed, abort: () => controller.abort() };
}

const waitUntil = async (check: () => boolean, what: string, timeoutMs = DEADLINE_MS) => {
  const deadline = performance.now() + timeoutMs;
  while (!check()) {
    if (performance.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 5));
  }
};

const latencyRow = (name: string, s: Summary): (string | number)[] => [name, s.n, fmtMs(s.min), fmtMs(s.p50), fmtMs(s.p90), fmtMs(s.p99), fmtMs(s.max)];
const LATENCY_HEADERS = ["measure", "n", "min ms", "p50 ms", "p90 ms", "p99 ms", "max ms"];

export default async function tasks(): Promise<void> {
  console.log(`tasks benchmark — ${machineLine()}`);
  const warn = busyWarning();
  if (warn) console.log(warn);
  if (sizeNote()) console.log(sizeNote());
  process.env.AI_ENGINE = "local";
  const rt: BenchRuntime = await startBenchRuntime({ tableName: "r2d-bench-tasks", bucketName: "r2d-bench-tasks" });
  try {
    const Task = await import("../core/task");
    const { localTaskRunner } = await import("../local/tasks");
    const { TaskSettings } = await import("../core/task/settings");
    const { taskChanges } = await import("../core/task/changes");

    // The stand-in worker: claims the attempt, then each phase it is told to write, then completes; writes are timed.
    const writes = new Map<string, number>();
    const commands = new Map<string, (phase: string | null) => Promise<void>>();
    Task.setTaskRunner(
      localTaskRunner({
        handlers: {
          Run: async (raw) => {
            const input = raw as { workspace_id: string; task_id: string; attempt: number };
            await Task.claimAttempt(input.workspace_id, input.task_id, input.attempt);
            await new Promise<void>((finish) => {
              commands.set(input.task_id, async (phase) => {
                if (phase === null) {
                  await Task.completeTask(input.workspace_id, input.task_id, input.attempt, { summary: "bench", data: {} });
                  finish();
                  return;
                }
                await Task.writeProgress(input.workspace_id, input.task_id, input.attempt, { phase, message: phase });
                writes.set(`${input.task_id}:${phase}`, performance.now());
              });
            });
            return { task_id: input.task_id, attempt: input.attempt, outcome: "completed" };
          },
        },
      }),
    );

    const token = await rt.idp.sign({ email: "bench-tasks@example.com", name: "bench tasks" });
    const call = async <T>(method: string, path: string, expect: number, body?: unknown): Promise<T> => {
      const res = await fetch(new URL(path, rt.base), { method, headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { "content-type": "application/json" }) }, body: body === undefined ? undefined : JSON.stringify(body) });
      const text = await res.text();
      if (res.status !== expect) throw new Error(`${method} ${path}: expected ${expect}, got ${res.status}: ${text.slice(0, 300)}`);
      return JSON.parse(text) as T;
    };
    await call("GET", "/api/auth/me", 200);
    const ws = await call<{ id: string }>("POST", "/api/workspaces", 201, { name: "bench tasks" });
    const upgraded = await simulatePaidUpgrade(rt, { token, workspaceId: ws.id, plan: "pro" });
    console.log(`user on ${upgraded.plan} (${upgraded.monthly_quota} credits a month) through the simulated paid upgrade`);
    const conv = await call<{ id: string }>("POST", "/api/chat/conversations", 201, { workspace_id: ws.id });
    const spawn = async () => {
      const t = await call<{ id: string }>("POST", "/api/tasks/spawn", 201, { workspace_id: ws.id, conversation_id: conv.id, task_type: "research", prompt: "bench" });
      await waitUntil(() => commands.has(t.id), `task ${t.id} to be claimed`);
      return t.id;
    };

    /** Phase changes of `n` tasks, `phases` each, `gap` apart, one stream per task: latency of each phase to its stream. */
    const latencies = async (n: number, phases: number, gapMs: number): Promise<{ recorder: Recorder; missed: number }> => {
      const ids = await Promise.all(Array.from({ length: n }, spawn));
      const streams = await Promise.all(ids.map((id) => openStream(rt.base, token, id)));
      await waitUntil(() => streams.every((s) => s.events.length >= 1), "the first event of every stream");
      const recorder = new Recorder();
      // Tasks start at staggered offsets, so the writes do not all land in one poll or one GetRecords round.
      await Promise.all(
        ids.map(async (id, k) => {
          await new Promise((r) => setTimeout(r, (k * gapMs) / n));
          for (let p = 0; p < phases; p++) {
            await commands.get(id)!(`phase_${p}`);
            await new Promise((r) => setTimeout(r, gapMs));
          }
        }),
      );
      let missed = 0;
      await waitUntil(() => streams.every((s) => s.events.some((e) => e.phase === `phase_${phases - 1}`)), "the last phase on every stream", gapMs * 3 + 10_000).catch(() => undefined);
      ids.forEach((id, k) => {
        for (let p = 0; p < phases; p++) {
          const written = writes.get(`${id}:phase_${p}`)!;
          const seen = streams[k]!.events.find((e) => e.phase === `phase_${p}`);
          if (seen) recorder.record(Math.max(0, seen.at - written));
          else missed++;
        }
      });
      await Promise.all(ids.map((id) => commands.get(id)!(null)));
      await Promise.all(streams.map((s) => s.closed));
      return { recorder, missed };
    };

    // 1. Phase change → client.
    const live = await latencies(LIVE_TASKS, LIVE_PHASES, LIVE_GAP_MS);
    process.env.TASK_PROGRESS_LIVE = "off";
    const polled = await latencies(POLL_TASKS, POLL_PHASES, POLL_GAP_MS);
    delete process.env.TASK_PROGRESS_LIVE;
    console.log(`\n1. Latency from a phase write (core/task writeProgress returned) to the event on the client, one stream per task`);
    console.log(`   live: ${LIVE_TASKS} tasks × ${LIVE_PHASES} phases, ${LIVE_GAP_MS} ms apart; the table's stream read every ${TaskSettings.feedPollMs()} ms`);
    console.log(`   polling: ${POLL_TASKS} tasks × ${POLL_PHASES} phases, ${POLL_GAP_MS} ms apart; the stored state read every 3 s (spec 02)`);
    printTable(LATENCY_HEADERS, [latencyRow("live channel", live.recorder.summary()), latencyRow("polling (live off)", polled.recorder.summary())]);
    if (live.missed + polled.missed) console.log(`   phases never seen: live ${live.missed}, polling ${polled.missed}`);

    // 2. 100 concurrent streams.
    global.gc?.();
    const before = process.memoryUsage();
    const ids = await Promise.all(Array.from({ length: STREAM_TASKS }, spawn));
    const t0 = performance.now();
    const streams = (await Promise.all(ids.map((id) => Promise.all(Array.from({ length: STREAMS_PER_TASK }, () => openStream(rt.base, token, id)))))).flat();
    await waitUntil(() => streams.every((s) => s.events.length >= 1), "the first event of every stream");
    const openMs = performance.now() - t0;
    const held = streams.filter((s) => s.events[0]?.status === "pending" || s.events[0]?.status === "running").length;
    global.gc?.();
    const open = process.memoryUsage();
    const t1 = performance.now();
    await Promise.all(ids.map((id) => commands.get(id)!("fan_out")));
    const written = performance.now();
    await waitUntil(() => streams.every((s) => s.events.some((e) => e.phase === "fan_out")), "the fan-out phase on every stream");
    const fanOut = new Recorder();
    for (const s of streams) fanOut.record(s.events.find((e) => e.phase === "fan_out")!.at - written);
    const allMs = performance.now() - t1;
    await Promise.all(ids.map((id) => commands.get(id)!(null)));
    const closedAll = await Promise.race([Promise.all(streams.map((s) => s.closed)).then(() => true), new Promise<boolean>((r) => setTimeout(() => r(false), 30_000))]);
    if (!closedAll) streams.forEach((s) => s.abort());
    const n = streams.length;
    console.log(`\n2. ${n} concurrent progress streams (${STREAM_TASKS} tasks × ${STREAMS_PER_TASK}), one user, through the local gateway${global.gc ? "" : " (no --expose-gc: memory figures include garbage)"}`);
    printTable(
      ["measure", "value"],
      [
        ["streams held (first event received)", `${held} of ${n}`],
        ["time to open all and receive the first event", `${fmtMs(openMs)} ms`],
        ["fan-out: one phase change per task to all streams", `${fmtMs(allMs)} ms`],
        ["fan-out latency p50 / p99", `${fmtMs(fanOut.summary().p50)} / ${fmtMs(fanOut.summary().p99)} ms`],
        ["RSS before → with the streams open", `${fmtBytes(before.rss)} → ${fmtBytes(open.rss)}`],
        ["heap used before → with the streams open", `${fmtBytes(before.heapUsed)} → ${fmtBytes(open.heapUsed)}`],
        ["RSS / heap per stream", `${fmtBytes(Math.max(0, open.rss - before.rss) / n)} / ${fmtBytes(Math.max(0, open.heapUsed - before.heapUsed) / n)}`],
        ["all streams closed on completed", closedAll ? "yes" : "no (aborted after 30 s)"],
        ["stream records delivered by the live channel", String(taskChanges.delivered)],
      ],
    );
  } finally {
    await rt.stop();
  }
}
