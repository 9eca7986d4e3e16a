/**
 * Ingestion at 10x (issue #24 point 4), on the embedded runtime in this process:
 *
 * 1. Floor: every file of the corpus through the extractors called directly (inspectUpload + extract, the functions
 *    the Validate and Parse steps run), one after another, in this process: sources/s, MB/s, CPU.
 * 2. The corpus (bench/lib/corpus.ts: 500 sources generated from ../shared/realdata, every extractor) uploaded to one
 *    workspace through `POST /api/research/upload`, six at a time as a browser uploads a folder, and watched as a
 *    client watches it (the list of `GET /api/research/sources` every 2 s): sources/s and MB/s to all settled, time
 *    to all indexed for synthesis, peak RSS of the process (worker threads included), CPU, and every DynamoDB call
 *    the process made, by command, with its consumed capacity (ReturnConsumedCapacity TOTAL set by a client
 *    middleware); Scan must be 0.
 *    The recovery sweeper runs every 30 s meanwhile, as `npm start` runs it.
 * 3. The recovery sweeper at this size: its DynamoDB calls, consumed capacity and CPU per run, then per minute (AWS
 *    runs it once a minute, the embedded runtime twice): once over the backlog (every unsettled source due: the most
 *    one run can cost), and on the settled workspace (the steady state, repeated).
 *
 * Embedding floor: the same sources' mentions embedded directly by the same embedder, on a sample (every 25th
 * source), extrapolated per mention.
 *
 * A trial workspace holds 25 sources: the user buys Power (500) through the simulated paid upgrade first.
 * INGEST_PROFILE=1 runs part 2 under the V8 sampling profiler and prints self time by package (bench/lib/profile.ts)
 * and the heaviest first-party functions; INGEST_SOURCES=<n> uploads n sources instead of 500.
 * Smoke size: 5 small text files, no binaries.
 */
import { AsyncLocalStorage } from "node:async_hooks";
import { startBenchRuntime } from "./lib/runtime";
import { fmtBytes, fmtMs, printTable } from "./lib/stats";
import { busyWarning, machineLine } from "./lib/machine";
import { simulatePaidUpgrade } from "./lib/billing";
import { generateCorpus, type CorpusFile } from "./lib/corpus";
import { cpuProfile, selfTimeByCategory } from "./lib/profile";
import { isSmoke, sized, sizeNote } from "./lib/size";

/** Sources uploaded: 500 (a Power workspace's limit), 5 at the smoke size; INGEST_SOURCES=<n> for a shorter profiled run. */
const COUNT = Number(process.env.INGEST_SOURCES) > 0 ? Math.min(500, Number(process.env.INGEST_SOURCES)) : sized(500, 5);
const UPLOAD_CONCURRENCY = 6;
const WATCH_MS = sized(2000, 250);
const SWEEP_EVERY_MS = 30_000;
const STEADY_SWEEPS = sized(10, 2);
const EMBED_SAMPLE_EVERY = sized(25, 5);
/** Targets (ours; the issue asks for the figures): */
const TARGET = { settledOverFloor: 1.5, peakRssMiB: 1024, scans: 0 };
/** How long the benchmark waits for everything to settle and be indexed before it gives up. */
const TIMEOUT_MS = sized(90 * 60_000, 5 * 60_000);

type Tag = "ingestion" | "watcher" | "sweeper";
const tag = new AsyncLocalStorage<Tag>();

interface CallStats {
  calls: Map<string, number>;
  rcu: number;
  wcu: number;
}
const emptyStats = (): CallStats => ({ calls: new Map(), rcu: 0, wcu: 0 });
const total = (s: CallStats) => [...s.calls.values()].reduce((a, b) => a + b, 0);
const callList = (s: CallStats) => [...s.calls.entries()].sort((a, b) => b[1] - a[1]).map(([k, v]) => `${k} ${v}`).join(", ") || "none";

const CAPACITY_COMMANDS = new Set(["GetItem", "PutItem", "UpdateItem", "DeleteItem", "Query", "Scan", "BatchGetItem", "BatchWriteItem", "TransactWriteItems", "TransactGetItems"]);
const READS = new Set(["GetItem", "Query", "Scan", "BatchGetItem", "TransactGetItems"]);

const mib = (bytes: number) => bytes / (1024 * 1024);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const cpuMs = (u: NodeJS.CpuUsage) => (u.user + u.system) / 1000;

export default async function ingestionScale(): Promise<void> {
  console.log(`ingestion-scale benchmark — ${machineLine()}`);
  const warn = busyWarning();
  if (warn) console.log(warn);
  if (sizeNote()) console.log(sizeNote());
  const files = sized(generateCorpus(COUNT), generateCorpus(COUNT, { binaries: false, small: true }));
  const corpusBytes = files.reduce((n, f) => n + f.bytes.length, 0);
  const kinds = [...new Set(files.map((f) => f.kind))];
  console.log(`corpus: ${files.length} sources, ${fmtBytes(corpusBytes)}, generated from ../shared/realdata (bench/lib/corpus.ts): ` + kinds.map((k) => `${k} ${files.filter((f) => f.kind === k).length}`).join(", "));

  // --- 1. Floor: the extractors called directly on the same files.
  const { extract, inspectUpload, SNIFF_BYTES, shutdownEngines } = await import("../core/extract");
  const floorByKind = new Map<string, number>();
  const floorCpu0 = process.cpuUsage();
  const floorT0 = performance.now();
  const extractions: { file: CorpusFile; units: import("../core/extract").TextUnit[] }[] = [];
  for (const f of files) {
    const t = performance.now();
    try {
      const verdict = await inspectUpload({ head: f.bytes.subarray(0, SNIFF_BYTES), declaredType: f.mime, filename: f.name, size: f.bytes.length });
      const e = await extract({ bytes: f.bytes, kind: verdict.kind, contentType: verdict.contentType, filename: f.name });
      extractions.push({ file: f, units: e.units });
    } catch (err) {
      console.log(`floor: ${f.name} not extracted: ${(err as Error).message}`);
    }
    floorByKind.set(f.kind, (floorByKind.get(f.kind) ?? 0) + performance.now() - t);
  }
  const floorMs = performance.now() - floorT0;
  const floorCpu = cpuMs(process.cpuUsage(floorCpu0));

  // Embedding floor, on a sample.
  const { embedder } = await import("../core/ai/select");
  const { embedUnits, unitMentions } = await import("../core/ai/synthesis");
  const engine = await embedder();
  /** Mentions embedUnits embeds for these units (closed survey answers have none). */
  const mentionsOf = (units: import("../core/extract").TextUnit[]) => units.reduce((n, u) => n + (u.fields?.closed ? 0 : unitMentions(u).length), 0);
  const sample = extractions.filter((_, i) => i % EMBED_SAMPLE_EVERY === 0);
  await embedUnits(sample[0]?.units.slice(0, 8) ?? [], engine); // load the model before timing
  let sampleMentions = 0;
  const embedT0 = performance.now();
  for (const { units } of sample) {
    await embedUnits(units, engine);
    sampleMentions += mentionsOf(units);
  }
  const embedMs = performance.now() - embedT0;
  const allMentions = extractions.reduce((n, { units }) => n + mentionsOf(units), 0);
  const embedFloorMs = sampleMentions ? (embedMs / sampleMentions) * allMentions : 0;
  await shutdownEngines();

  // --- 2. The pipeline.
  const rt = await startBenchRuntime({ tableName: "r2d-bench-ingest-scale" });
  const { dynamoClient } = await import("../core/db/client");
  const stats: Record<Tag, CallStats> = { ingestion: emptyStats(), watcher: emptyStats(), sweeper: emptyStats() };
  let capacityReported = false;
  dynamoClient().middlewareStack.add(
    (next, context) => async (args) => {
      const name = String(context.commandName ?? "?").replace(/Command$/, "");
      const s = stats[tag.getStore() ?? "ingestion"];
      s.calls.set(name, (s.calls.get(name) ?? 0) + 1);
      const input = args.input as { ReturnConsumedCapacity?: string };
      if (CAPACITY_COMMANDS.has(name)) input.ReturnConsumedCapacity ??= "TOTAL";
      const result = await next(args);
      const out = result.output as { ConsumedCapacity?: { CapacityUnits?: number } | { CapacityUnits?: number }[] };
      const units = [out.ConsumedCapacity ?? []].flat().reduce((n, c) => n + (c.CapacityUnits ?? 0), 0);
      if (out.ConsumedCapacity) capacityReported = true;
      if (READS.has(name)) s.rcu += units;
      else s.wcu += units;
      return result;
    },
    { step: "initialize", name: "benchIngestScaleCalls" },
  );
  const sweeps: { at: number; ms: number; due: number; calls: number; rcu: number; wcu: number; cpu: number }[] = [];
  const { handler: sweeperHandler } = await import("../functions/events/source-sweeper");
  const { sweepSources } = await import("../core/pipeline/recovery");
  /** One sweep, its DynamoDB calls and capacity told apart from the rest by the async context. */
  const sweepOnce = async (run: () => Promise<{ due: number }>) => {
    const before = { ...stats.sweeper, calls: total(stats.sweeper) };
    const c0 = process.cpuUsage();
    const t0 = performance.now();
    const { due } = await tag.run("sweeper", run);
    return {
      ms: performance.now() - t0,
      cpu: cpuMs(process.cpuUsage(c0)),
      due,
      calls: total(stats.sweeper) - before.calls,
      rcu: stats.sweeper.rcu - before.rcu,
      wcu: stats.sweeper.wcu - before.wcu,
    };
  };

  try {
    const token = await rt.idp.sign({ email: "bench-ingest-scale@example.com" });
    const auth = { authorization: `Bearer ${token}` };
    const json = async (method: string, path: string, body?: unknown) => {
      const res = await fetch(new URL(path, rt.base), { method, headers: { ...auth, ...(body ? { "content-type": "application/json" } : {}) }, body: body ? JSON.stringify(body) : undefined });
      if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${await res.text()}`);
      return res.json() as Promise<any>;
    };
    const ws = await json("POST", "/api/workspaces", { name: "bench ingestion at scale" });
    const me = (await json("GET", "/api/auth/me")) as { id: string };
    const Research = await import("../core/research");
    const upgraded = await simulatePaidUpgrade(rt, { token, workspaceId: ws.id, plan: "power" });
    console.log(`plan: ${upgraded.plan} (${upgraded.status}) through the simulated paid upgrade (a signed Stripe webhook event): 500 sources per workspace`);
    for (const s of Object.values(stats)) Object.assign(s, emptyStats()); // count from the first upload on

    const upload = async (f: CorpusFile) => {
      const form = new FormData();
      form.append("workspace_id", ws.id);
      form.append("source_type", f.sourceType);
      form.append("title", f.name);
      form.append("file", new Blob([new Uint8Array(f.bytes)], { type: f.mime }), f.name);
      const res = await fetch(new URL("/api/research/upload", rt.base), { method: "POST", headers: auth, body: form });
      if (!res.ok) throw new Error(`upload ${f.name}: ${res.status} ${await res.text()}`);
      return ((await res.json()) as { id: string }).id;
    };

    let peakRss = 0;
    const sampler = setInterval(() => (peakRss = Math.max(peakRss, process.memoryUsage().rss)), 100);
    const rssBefore = process.memoryUsage().rss;
    const profiling = process.env.INGEST_PROFILE === "1";
    let backlog: Awaited<ReturnType<typeof sweepOnce>> | undefined;

    const ingest = async () => {
      const t0 = Date.now();
      const c0 = process.cpuUsage();
      // The sweeper as `npm start` schedules it: the same handler AWS runs, every 30 s.
      let sweeping = Promise.resolve();
      const schedule = setInterval(() => {
        // A failed sweep is reported and the schedule goes on, as local/schedule.ts does for `npm start`.
        sweeping = sweeping
          .then(async () => void sweeps.push({ at: Date.now() - t0, ...(await sweepOnce(() => sweeperHandler())) }))
          .catch((err: unknown) => console.log(`sweeper run failed: ${(err as Error).message}`));
      }, SWEEP_EVERY_MS);
      const ids = new Map<string, CorpusFile>();
      const queue = [...files];
      await Promise.all(
        Array.from({ length: UPLOAD_CONCURRENCY }, async () => {
          for (let f = queue.shift(); f; f = queue.shift()) ids.set(await upload(f), f);
        }),
      );
      const uploadedMs = Date.now() - t0;
      // The backlog: every source still unsettled looked at by one sweep as if its grace had passed (the most one
      // run can touch: the sparse index's page of 200). Harmless: running executions only get a later due time.
      const { Config } = await import("../core/config");
      backlog = await sweepOnce(() => sweepSources({ now: Date.now() + Config.sourceSweepGraceSeconds() * 1000 + 1000, workspaceId: ws.id }));

      // Watch the folder: settled (completed or failed) and indexed, read off each source's own timestamps.
      type Listed = { id: string; processing_status: string; processed_at?: string; indexed: boolean; processing_error?: string };
      let listed: Listed[] = [];
      let settledMs = 0;
      for (;;) {
        if (Date.now() - t0 > TIMEOUT_MS) throw new Error(`not all settled and indexed after ${TIMEOUT_MS / 60000} min`);
        await sleep(WATCH_MS);
        // The core call `GET /api/research/sources` runs (membership check + the workspace partition's Query), called
        // here so its DynamoDB calls are told apart from the pipeline's (a request's run in the gateway's context).
        listed = (await tag.run("watcher", () => Research.list(me.id, { workspace_id: ws.id, limit: 500, offset: 0 } as never))).sources as Listed[];
        const mine = listed.filter((s) => ids.has(s.id));
        if (!settledMs && mine.length === ids.size && mine.every((s) => s.processing_status !== "pending")) {
          settledMs = Math.max(...mine.map((s) => Date.parse(s.processed_at!) - t0));
        }
        if (settledMs && mine.every((s) => s.processing_status !== "completed" || s.indexed)) break;
      }
      const indexedMs = Date.now() - t0;
      clearInterval(schedule);
      await sweeping;
      const { drainLocalWorkflows } = await import("../local/pipeline");
      await drainLocalWorkflows();
      return { ids, listed, uploadedMs, settledMs, indexedMs, cpu: cpuMs(process.cpuUsage(c0)) };
    };

    let result: Awaited<ReturnType<typeof ingest>>;
    let profile: import("node:inspector").Profiler.Profile | undefined;
    if (profiling) ({ result, profile } = await cpuProfile(ingest, 200));
    else result = await ingest();
    clearInterval(sampler);
    peakRss = Math.max(peakRss, process.memoryUsage().rss);
    const { ids, listed, uploadedMs, settledMs, indexedMs } = result;

    // Per kind.
    const byKind = new Map<string, { n: number; bytes: number; completed: number; failed: number; reasons: Set<string> }>();
    for (const s of listed) {
      const f = ids.get(s.id);
      if (!f) continue;
      const k = byKind.get(f.kind) ?? { n: 0, bytes: 0, completed: 0, failed: 0, reasons: new Set() };
      byKind.set(f.kind, k);
      k.n++;
      k.bytes += f.bytes.length;
      if (s.processing_status === "completed") k.completed++;
      else {
        k.failed++;
        k.reasons.add(String(s.processing_error).slice(0, 80));
      }
    }
    console.log("");
    printTable(
      ["kind", "sources", "size", "floor: extract() direct", "completed", "failed"],
      [...byKind.entries()].map(([kind, k]) => [kind, k.n, fmtBytes(k.bytes), `${fmtMs(floorByKind.get(kind) ?? 0)} ms`, k.completed, k.failed ? `${k.failed} (${[...k.reasons].join("; ")})` : 0]),
    );
    const rate = (n: number, ms: number) => (n / (ms / 1000)).toFixed(1);
    const mbs = (bytes: number, ms: number) => (mib(bytes) / (ms / 1000)).toFixed(2);
    const settledRatio = settledMs / floorMs;
    console.log("");
    printTable(
      ["figure", "pipeline", "floor (same process)", "ratio", "target", "met"],
      [
        ["uploads (6 at a time) done", `${fmtMs(uploadedMs)} ms`, "-", "-", "-", "-"],
        ["upload to all settled", `${(settledMs / 1000).toFixed(1)} s`, `${(floorMs / 1000).toFixed(1)} s extract() one by one`, `${settledRatio.toFixed(2)}x`, `<= ${TARGET.settledOverFloor}x`, settledRatio <= TARGET.settledOverFloor ? "yes" : "NO"],
        ["throughput to settled, sources/s", rate(files.length, settledMs), rate(files.length, floorMs), (floorMs / settledMs).toFixed(2), "-", "-"],
        ["throughput to settled, MB/s", mbs(corpusBytes, settledMs), mbs(corpusBytes, floorMs), (floorMs / settledMs).toFixed(2), "-", "-"],
        ["upload to all indexed for synthesis", `${(indexedMs / 1000).toFixed(1)} s`, `${((floorMs + embedFloorMs) / 1000).toFixed(1)} s extract + embed ${allMentions} mentions (est.)`, `${(indexedMs / (floorMs + embedFloorMs)).toFixed(2)}x`, "-", "-"],
        ["CPU of the process (upload to indexed)", `${(result.cpu / 1000).toFixed(1)} s`, `${(floorCpu / 1000).toFixed(1)} s extract (main thread)`, "-", "-", "-"],
        ["peak RSS", `${mib(peakRss).toFixed(0)} MiB (maxRSS ${mib(process.resourceUsage().maxRSS * 1024).toFixed(0)})`, `${mib(rssBefore).toFixed(0)} MiB before the uploads`, "-", `< ${TARGET.peakRssMiB} MiB`, mib(peakRss) < TARGET.peakRssMiB ? "yes" : "NO"],
        ["DynamoDB Scan calls (whole run)", stats.ingestion.calls.get("Scan") ?? 0, "0", "-", "= 0", (stats.ingestion.calls.get("Scan") ?? 0) + (stats.watcher.calls.get("Scan") ?? 0) + (stats.sweeper.calls.get("Scan") ?? 0) === 0 ? "yes" : "NO"],
      ],
    );
    console.log(`embedding floor: ${sample.length} sources' ${sampleMentions} mentions embedded directly (${engine.id}) in ${fmtMs(embedMs)} ms, ${(embedMs / Math.max(1, sampleMentions)).toFixed(2)} ms a mention`);
    const perSource = (n: number) => (n / files.length).toFixed(2);
    console.log(`DynamoDB, ingestion (uploads, steps, indexing): ${total(stats.ingestion)} calls, ${perSource(total(stats.ingestion))} per source (${callList(stats.ingestion)}); ` +
      `${stats.ingestion.rcu.toFixed(1)} RCU + ${stats.ingestion.wcu.toFixed(1)} WCU, ${perSource(stats.ingestion.rcu)} + ${perSource(stats.ingestion.wcu)} per source` +
      (capacityReported ? "" : " (DynamoDB Local reported no consumed capacity)"));
    console.log(`  floor per source: 3 writes (the counted create transaction, Complete, indexed) and the reads that guard them`);
    console.log(`DynamoDB, the watching client (a list every ${WATCH_MS / 1000} s): ${total(stats.watcher)} calls (${callList(stats.watcher)}), ${stats.watcher.rcu.toFixed(1)} RCU`);

    // --- 3. The sweeper at this size.
    console.log("");
    const steady: Awaited<ReturnType<typeof sweepOnce>>[] = [];
    for (let i = 0; i < STEADY_SWEEPS; i++) steady.push(await sweepOnce(() => sweeperHandler()));
    const avg = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / Math.max(1, xs.length);
    const row = (label: string, runs: { due: number; calls: number; rcu: number; wcu: number; cpu: number; ms: number }[], cpuNote = "") => {
      const calls = avg(runs.map((r) => r.calls));
      const rcu = avg(runs.map((r) => r.rcu));
      const wcu = avg(runs.map((r) => r.wcu));
      const cpu = avg(runs.map((r) => r.cpu));
      return [label, runs.length, avg(runs.map((r) => r.due)).toFixed(0), calls.toFixed(1), rcu.toFixed(1), wcu.toFixed(1), `${fmtMs(cpu)}${cpuNote}`, `${fmtMs(avg(runs.map((r) => r.ms)))}`, `${calls.toFixed(0)} / ${(2 * calls).toFixed(0)}`, `${rcu.toFixed(1)}+${wcu.toFixed(1)} / ${(2 * rcu).toFixed(1)}+${(2 * wcu).toFixed(1)}`];
    };
    printTable(
      ["recovery sweeper at " + files.length + " sources", "runs", "due", "calls/run", "RCU/run", "WCU/run", "CPU ms/run", "wall ms/run", "calls/min AWS / local", "RCU+WCU/min AWS / local"],
      [
        row("during ingestion (every 30 s)", sweeps.length ? sweeps : [], " (shared)"),
        row("backlog: all unsettled due", backlog ? [backlog] : [], " (shared)"),
        row("settled workspace (steady state)", steady),
      ],
    );
    console.log(`sweeper calls, all runs: ${callList(stats.sweeper)}; floor: one Query of the sparse due index (gsi3), 0 items once settled`);
    console.log(`(shared): CPU measured while the pipeline ran in the same process, an upper bound; the steady-state CPU is the sweep's own.`);
    if (profile) {
      console.log("");
      const byCat = [...selfTimeByCategory(profile).entries()].sort((a, b) => b[1] - a[1]).slice(0, 16);
      const all = [...selfTimeByCategory(profile).values()].reduce((a, b) => a + b, 0);
      printTable(["self time by package (INGEST_PROFILE=1)", "ms", "share"], byCat.map(([k, ms]) => [k, fmtMs(ms), `${((ms / all) * 100).toFixed(1)}%`]));
      console.log("");
      printTable(["first-party function, inclusive time", "ms", "share"], inclusiveAppTime(profile).slice(0, 20).map(([k, ms]) => [k, fmtMs(ms), `${((ms / all) * 100).toFixed(1)}%`]));
    }
    console.log("");
    console.log(`end — ${machineLine()}`);
    if (!isSmoke() && busyWarning()) console.log(busyWarning());
  } finally {
    const { shutdownEngines: stopEngines } = await import("../core/extract");
    await stopEngines().catch(() => undefined);
    await rt.stop();
  }
}

/** The repository root as a file URL, to tell first-party frames of a profile. */
const REPO = new URL("../", import.meta.url).href;

/**
 * Inclusive time (ms) of each first-party function (core/, functions/, local/) of a profile: a sample counts for every
 * distinct first-party frame on its stack, so the library work a function causes is charged to it. Heaviest first.
 */
function inclusiveAppTime(profile: import("node:inspector").Profiler.Profile): [string, number][] {
  const parent = new Map<number, number>();
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const nameOf = (id: number): string | undefined => {
    const { url, functionName, lineNumber } = byId.get(id)!.callFrame;
    const path = url.startsWith(REPO) ? url.slice(REPO.length) : "";
    return /^(core|functions|local)\//.test(path) ? `${functionName || "(anonymous)"} ${path}:${lineNumber + 1}` : undefined;
  };
  const out = new Map<string, number>();
  const samples = profile.samples ?? [];
  const deltas = profile.timeDeltas ?? [];
  for (let i = 0; i < samples.length; i++) {
    const seen = new Set<string>();
    for (let id: number | undefined = samples[i]; id !== undefined; id = parent.get(id)) {
      const name = nameOf(id);
      if (name) seen.add(name);
    }
    for (const name of seen) out.set(name, (out.get(name) ?? 0) + (deltas[i] ?? 0) / 1000);
  }
  return [...out.entries()].sort((a, b) => b[1] - a[1]);
}
