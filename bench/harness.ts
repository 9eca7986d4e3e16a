/**
 * Harness benchmark (issue #21): what the copilot's harness (core/harness) costs around a run, what a mission's
 * parallel threads save, and how long the independent verifier takes on a large workspace.
 *
 *   npm run bench -- harness      (or: npx tsx bench/run.ts harness)
 *
 * The embedded runtime in this process (DynamoDB Local, the local object store, the gateway), the local engine. A
 * workspace gets three real research files through the API (../shared/realdata/jupyter: the JupyterLab accessibility
 * usability results, a podcast transcript, the 2015 notebook UX survey README; the smoke size: the README alone) and
 * 20 insights (smoke: 5) whose quotes are sentences of those files.
 *
 * 1. Harness overhead per run, excluding model time: `Harness.start` (pre-flight: sizing, the workspace snapshot and
 *    profile) plus `Harness.run` minus the time inside the agent loop (the local engine and its tools), i.e. the
 *    post-flight contract, verifier, RQS and the mid-stream checks, for "What do users struggle with?" (a search,
 *    then an answer citing insights and quoting sources). p50/p99 over RUNS runs after a warm-up. Target < 50 ms.
 * 2. A mission of 4 independent subtasks as parallel threads against the same 4 one after another (each depends on
 *    the previous): wall time and their ratio, on the local engine as it is (CPU-bound: its sentence encoder), and
 *    with every model call given MODEL_LATENCY_MS of waiting first, as a model behind a network is.
 * 3. The verifier on a workspace of VERIFIER_INSIGHTS insights (written straight to the table, each with a quote of
 *    one of the three sources): `verify` over all of them (every quote checked verbatim in its source's stored text,
 *    every frequency against its distinct sources), p50 over VERIFIER_REPEATS.
 */
import { randomUUID } from "node:crypto";
import { readFile } from "node:fs/promises";
import type { ModelStreamEvent, StreamRequest, StreamingModel } from "../core/ai/ports";
import type { AgentEvent } from "../core/agent/loop";
import type { LoopRunner } from "../core/harness";
import { startBenchRuntime } from "./lib/runtime";
import { fmtMs, printTable, Recorder } from "./lib/stats";
import { busyWarning, machineLine } from "./lib/machine";
import { sized, sizeNote } from "./lib/size";

const RUNS = sized(30, 3);
const MISSION_REPEATS = sized(5, 1);
const VERIFIER_INSIGHTS = sized(1000, 40);
const VERIFIER_REPEATS = sized(5, 1);
const MODEL_LATENCY_MS = sized(400, 50);
const SEED_INSIGHTS = sized(20, 5);
const FILES = sized(
  [
    "jupyter/usability-research/2023-05-jupyterlab-accessibility-usability-results.md",
    "jupyter/transcripts/practical-ai-74-tania-allard-jupyter-notebooks.md",
    "jupyter/surveys/2015-notebook-ux-survey-README.md",
  ],
  ["jupyter/surveys/2015-notebook-ux-survey-README.md"],
);
const QUESTIONS = ["What do users struggle with?", "Which research sources do we have?", "What do users ask for?", "Give me an overview of the workspace"];

/** Sentences of a text fit to quote: 6 to 30 words, on one line. */
const sentences = (text: string) =>
  text
    .split(/(?<=[.!?])\s+|\n+/)
    .map((s) => s.trim())
    .filter((s) => /^[A-Z]/.test(s) && s.split(/\s+/).length >= 6 && s.split(/\s+/).length <= 30 && !/[|#*`\[\]]/.test(s));

export default async function harness(): Promise<void> {
  console.log("Harness benchmark (issue #21): overhead per run, a mission's parallel threads, the verifier on a large workspace");
  const note = sizeNote();
  if (note) console.log(note);
  console.log(`start: ${machineLine()}`);
  const rt = await startBenchRuntime({ tableName: "r2d-bench-harness", bucketName: "r2d-bench-harness" });
  try {
    const token = await rt.idp.sign({ email: "harness-bench@example.com", name: "Harness Bench" });
    const api = async <T>(method: string, path: string, body?: unknown, form?: FormData): Promise<T> => {
      const res = await fetch(new URL(path, rt.base), {
        method,
        headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { "content-type": "application/json" }) },
        body: form ?? (body === undefined ? undefined : JSON.stringify(body)),
      });
      if (res.status >= 300) throw new Error(`${method} ${path}: ${res.status} ${await res.text()}`);
      return (await res.json()) as T;
    };
    const me = await api<{ id: string }>("GET", "/api/auth/me");
    const ws = (await api<{ id: string }>("POST", "/api/workspaces", { name: "Harness bench", product_name: "Jupyter" })).id;
    const texts = new Map<string, string>();
    for (const file of FILES) {
      const data = await readFile(new URL(`../../shared/realdata/${file}`, import.meta.url));
      const form = new FormData();
      form.set("workspace_id", ws);
      form.set("source_type", "interview");
      form.set("title", file.split("/").at(-1)!);
      form.set("file", new Blob([data], { type: "text/markdown" }), file.split("/").at(-1)!);
      const src = await api<{ id: string }>("POST", "/api/research/upload", undefined, form);
      texts.set(src.id, data.toString("utf8"));
    }
    const deadline = performance.now() + 60_000;
    for (;;) {
      const { sources } = await api<{ sources: { processing_status: string }[] }>("GET", `/api/research/sources?workspace_id=${ws}`);
      if (sources.every((s) => s.processing_status === "completed")) break;
      if (performance.now() > deadline) throw new Error("sources were not extracted within 60 s");
      await new Promise((r) => setTimeout(r, 100));
    }
    const pool = [...texts].flatMap(([sourceId, text]) => sentences(text).map((s) => ({ sourceId, s })));
    for (const { sourceId, s } of pool.slice(0, SEED_INSIGHTS)) {
      await api("POST", "/api/insights", { workspace_id: ws, insight_type: "pain_point", title: s.slice(0, 120), description: s, severity: "medium", quotes: [{ text: s, source_id: sourceId, speaker: null }] });
    }
    console.log(`seeded: ${texts.size} sources (${[...texts.values()].reduce((n, t) => n + t.length, 0)} characters), ${SEED_INSIGHTS} insights with verbatim quotes`);

    const { Harness } = await import("../core/harness");
    const { runMission } = await import("../core/harness/mission");
    const { candidatePlans } = await import("../core/harness/plan");
    const { clausesOf } = await import("../core/harness/complexity");
    const { verify } = await import("../core/harness/verifier");
    const { runAgent } = await import("../core/agent/loop");
    const { LocalAgentModel } = await import("../core/agent/local-engine");
    const { TOOLS } = await import("../core/agent/tools");
    const { db } = await import("../core/db/service");

    const ctx = { userId: me.id, workspaceId: ws, missionId: null, sessionId: null, attachmentIds: [] as string[] };
    const local = new LocalAgentModel(TOOLS);
    const sink = { token: () => undefined, send: () => undefined };
    const prompt = (text: string) => [{ role: "user" as const, content: [{ type: "text" as const, text }] }];
    type LoopRun = Parameters<LoopRunner>[0];
    const loopWith = (model: StreamingModel, timer?: { ms: number }) => (run: LoopRun) => {
      const t0 = performance.now();
      return runAgent({ model, ctx: { ...ctx, missionId: run.missionId }, system: run.system, messages: run.messages, tools: TOOLS, tier: "mid", maxTurns: 10, signal: new AbortController().signal, emit: run.emit, onToolResult: run.onToolResult }).finally(() => {
        if (timer) timer.ms += performance.now() - t0;
      });
    };

    // 1. Overhead per run.
    const pre = new Recorder();
    const post = new Recorder();
    const total = new Recorder();
    let judged = 0;
    for (let i = 0; i < RUNS + 1; i++) {
      const timer = { ms: 0 };
      const t0 = performance.now();
      const h = await Harness.start({ userId: me.id, workspaceId: ws, prompt: "What do users struggle with?", entry: "chat", missionId: null, maxTurns: 10, sink });
      const t1 = performance.now();
      await h.run({ loop: loopWith(local, timer), messages: prompt("What do users struggle with?"), system: "You are the copilot." });
      const t2 = performance.now();
      if (i === 0) continue; // warm-up: loads the sentence encoder
      if (h.quality) judged++;
      pre.record(t1 - t0);
      post.record(t2 - t1 - timer.ms);
      total.record(t1 - t0 + (t2 - t1 - timer.ms));
    }
    const row = (name: string, s: ReturnType<Recorder["summary"]>) => [name, s.n, fmtMs(s.p50), fmtMs(s.p90), fmtMs(s.p99), fmtMs(s.max)];
    console.log(`\n1. harness overhead per run, model and tool time excluded (${judged} of ${RUNS} runs judged; target < 50 ms)`);
    printTable(["part (ms)", "n", "p50", "p90", "p99", "max"], [row("pre-flight", pre.summary()), row("post-flight + stream checks", post.summary()), row("overhead per run", total.summary())]);

    // 2. A mission of 4 parallel subtasks against the same 4 in sequence.
    const clauses = clausesOf(QUESTIONS.join(" "));
    const [parallelPlan, sequentialPlan] = candidatePlans(clauses, QUESTIONS.join(" "));
    if (parallelPlan!.subtasks.some((s) => s.depends_on.length)) throw new Error("the 4 questions should be independent subtasks");
    /** The local engine, after a fixed wait per call (a model behind a network). */
    class Delayed implements StreamingModel {
      readonly engine = "local";
      async *stream(req: StreamRequest): AsyncIterable<ModelStreamEvent> {
        await new Promise((r) => setTimeout(r, MODEL_LATENCY_MS));
        yield* local.stream(req);
      }
    }
    const missionRows: (string | number)[][] = [];
    for (const [label, model] of [["local engine", local], [`+${MODEL_LATENCY_MS} ms per model call`, new Delayed()]] as const) {
      const wall = { parallel: new Recorder(), sequential: new Recorder() };
      // A warm-up mission first (the engine's description vectors, the tools' first reads).
      for (let i = -1; i < MISSION_REPEATS; i++) {
        for (const [kind, plan] of [["parallel", parallelPlan!], ["sequential", sequentialPlan!]] as const) {
          const loop = loopWith(model);
          const t0 = performance.now();
          await runMission(randomUUID(), plan, () => undefined, ({ prompt: p, system, emit }) =>
            loop({ messages: prompt(p), system, missionId: null, emit: (e: AgentEvent) => emit(e.event, e.data as Record<string, unknown>), onToolResult: () => undefined }),
          );
          if (i >= 0) wall[kind].record(performance.now() - t0);
        }
      }
      const [p, s] = [wall.parallel.summary().p50, wall.sequential.summary().p50];
      missionRows.push([label, fmtMs(p), fmtMs(s), (s / p).toFixed(2)]);
    }
    console.log(`\n2. a mission of 4 subtasks (${QUESTIONS.map((q) => `"${q}"`).join(", ")}): wall time p50 over ${MISSION_REPEATS}`);
    printTable(["model", "4 parallel threads (ms)", "4 in sequence (ms)", "sequence / parallel"], missionRows);

    // 3. The verifier on a large workspace.
    const sources = [...texts.keys()];
    const items = Array.from({ length: VERIFIER_INSIGHTS }, (_, i) => {
      const a = pool[i % pool.length]!;
      const b = pool[(i * 7 + 3) % pool.length]!;
      const quotes = [{ text: a.s, source_id: a.sourceId }, ...(b.sourceId !== a.sourceId ? [{ text: b.s, source_id: b.sourceId }] : [])];
      const sourceIds = [...new Set(quotes.map((q) => q.source_id))];
      return { id: randomUUID(), workspace_id: ws, insight_type: "pain_point", title: a.s.slice(0, 120), description: a.s, source_ids: sourceIds, quotes, frequency: sourceIds.length, mention_count: quotes.length, severity: "medium" as const, origin: "synthesis", created_by: me.id };
    });
    const t0 = performance.now();
    for (let i = 0; i < items.length; i += 25) await db().entities.insight.put(items.slice(i, i + 25)).go();
    console.log(`\nwrote ${items.length} insights (${sources.length} sources, 1-2 quotes each) in ${fmtMs(performance.now() - t0)} ms`);
    const verifier = new Recorder();
    let last: Awaited<ReturnType<typeof verify>> | undefined;
    for (let i = 0; i < VERIFIER_REPEATS; i++) {
      const v0 = performance.now();
      last = await verify({ workspaceId: ws, text: "", insightIds: items.map((x) => x.id) });
      verifier.record(performance.now() - v0);
    }
    if (!last?.passed) throw new Error(`the verifier failed the seeded insights: ${last?.issues.slice(0, 3).join("; ")}`);
    console.log(`3. the verifier over ${items.length} insights (${last.claims} claims: every quote against its source's text, every frequency)`);
    printTable(["figure", "value"], [
      ["p50 (ms)", fmtMs(verifier.summary().p50)],
      ["max (ms)", fmtMs(verifier.summary().max)],
      ["per insight (ms)", fmtMs(verifier.summary().p50 / items.length)],
      ["claims checked", last.claims],
    ]);
  } finally {
    await rt.stop();
  }
  const warn = busyWarning();
  console.log(`end: ${machineLine()}${warn ? `\n${warn}` : ""}`);
}
