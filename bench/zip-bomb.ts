/**
 * Zip-bomb benchmark (issue #10 point 2): peak RSS of a process while 4 zip-bomb DOCX extractions run in parallel
 * through `extract()` of core/extract, the entry point the extraction state machine's Parse step calls.
 *
 * Each bomb is the audit's file: a DOCX of about 1.5 MB whose word/document.xml inflates to 1.5 GiB. Two variants,
 * each in a fresh process: the headers declare the real size ("honest"), or 1 MiB ("understated", a bomb that passes
 * any check of declared sizes alone). The extractions run in a child process (the same Node and loader flags), so
 * a run that takes the process down is reported as such instead of ending the benchmark: the child prints its
 * resident set whenever it reaches a new peak, and the parent reports the last peak seen, how the child ended, and
 * each extraction's outcome.
 */
import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { busyWarning, machineLine } from "./lib/machine";
import { printTable } from "./lib/stats";
import { sized, sizeNote } from "./lib/size";

/** Extractions in parallel (the child reads the same BENCH_SIZE from the environment it inherits). */
const PARALLEL = sized(4, 2);
const MiB = 1024 * 1024;
const VARIANTS = { honest: "headers declare the real size", understated: "headers declare 1 MiB" } as const;
type Variant = keyof typeof VARIANTS;
const mib = (bytes: number) => `${(bytes / MiB).toFixed(0)} MiB`;

interface Outcome {
  ok: boolean;
  ms: number;
  reason?: string;
  message: string;
}

/** The child: build the bombs, extract them in parallel, report RSS peaks and outcomes as JSON lines on stdout. */
async function child(): Promise<void> {
  const { zipBombDocx } = await import("../test/unit/extract/zips");
  const { extract } = await import("../core/extract/index");
  const say = (line: object) => process.stdout.write(`${JSON.stringify(line)}\n`);
  const bomb = process.env.ZIP_BOMB_VARIANT === "understated" ? zipBombDocx(undefined, MiB) : zipBombDocx();
  (globalThis as { gc?: () => void }).gc?.();
  const startRss = process.memoryUsage().rss;
  say({ type: "start", rss: startRss, bombBytes: bomb.length });

  let peak = startRss;
  const sample = () => {
    // maxRSS (KiB) is the kernel's own peak, so a spike between two samples is not missed.
    const rss = Math.max(process.memoryUsage().rss, process.resourceUsage().maxRSS * 1024);
    if (rss > peak + 16 * MiB) {
      peak = rss;
      say({ type: "rss", rss });
    }
  };
  const timer = setInterval(sample, 20);
  const started = performance.now();
  const outcomes = await Promise.all(
    Array.from({ length: PARALLEL }, async (): Promise<Outcome> => {
      const t0 = performance.now();
      try {
        const x = await extract({ bytes: bomb, kind: "docx", contentType: "application/vnd.openxmlformats-officedocument.wordprocessingml.document", filename: "bomb.docx" });
        return { ok: true, ms: performance.now() - t0, message: `extracted ${x.extracted_text.length} characters` };
      } catch (err) {
        const e = err as { reason?: string; message?: string };
        return { ok: false, ms: performance.now() - t0, reason: e.reason, message: String(e.message ?? err) };
      }
    }),
  );
  clearInterval(timer);
  sample();
  say({ type: "done", wallMs: performance.now() - started, peak: Math.max(peak, process.resourceUsage().maxRSS * 1024), outcomes });
}

export default async function zipBomb(): Promise<void> {
  console.log(`zip-bomb benchmark — ${machineLine()}`);
  const warn = busyWarning();
  if (warn) console.log(warn);
  if (sizeNote()) console.log(sizeNote());
  const rows: (string | number)[][] = [];
  for (const variant of Object.keys(VARIANTS) as Variant[]) rows.push(await runVariant(variant));
  console.log(`\nSummary (${PARALLEL} zip-bomb DOCX extractions in parallel per variant, each in a fresh process):`);
  printTable(["variant", "RSS before start", "peak RSS", "wall s", "outcome"], rows);
  console.log(`\nend: ${machineLine()}`);
}

/** One variant in a fresh child process; prints its figures and returns its summary row. */
async function runVariant(variant: Variant): Promise<(string | number)[]> {
  const proc = spawn(process.execPath, ["--expose-gc", ...process.execArgv, fileURLToPath(import.meta.url)], {
    env: { ...process.env, ZIP_BOMB_CHILD: "1", ZIP_BOMB_VARIANT: variant, LOG_LEVEL: "SILENT", POWERTOOLS_LOG_LEVEL: "SILENT" },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let start: { rss: number; bombBytes: number } | undefined;
  let peak = 0;
  let done: { wallMs: number; peak: number; outcomes: Outcome[] } | undefined;
  let stderr = "";
  let pending = "";
  proc.stdout.setEncoding("utf8").on("data", (chunk: string) => {
    pending += chunk;
    let nl: number;
    while ((nl = pending.indexOf("\n")) >= 0) {
      const line = pending.slice(0, nl);
      pending = pending.slice(nl + 1);
      if (!line.startsWith("{")) continue;
      const msg = JSON.parse(line) as { type: string; rss?: number; bombBytes?: number } & Partial<NonNullable<typeof done>>;
      if (msg.type === "start") start = { rss: msg.rss!, bombBytes: msg.bombBytes! };
      if (msg.type === "rss") peak = Math.max(peak, msg.rss!);
      if (msg.type === "done") done = msg as NonNullable<typeof done>;
    }
  });
  proc.stderr.setEncoding("utf8").on("data", (chunk: string) => {
    stderr = (stderr + chunk).slice(-4000);
  });
  const exit = await new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => proc.on("exit", (code, signal) => resolve({ code, signal })));

  if (!start) throw new Error(`the child ended before starting (code ${exit.code}, signal ${exit.signal}): ${stderr}`);
  console.log(`\n${PARALLEL} zip-bomb DOCX extractions in parallel, ${variant} (${VARIANTS[variant]}; each ${(start.bombBytes / 1e6).toFixed(2)} MB, inflating to 1.5 GiB):`);
  console.log(`  RSS before start: ${mib(start.rss)}`);
  if (!done) {
    console.log(`  outcome: the process died (exit code ${exit.code}, signal ${exit.signal}) after reaching ${mib(peak)} RSS`);
    console.log(`  last stderr: ${stderr.trim().split("\n").slice(-5).join("\n    ")}`);
    return [variant, mib(start.rss), mib(peak), "-", `process died (code ${exit.code}, signal ${exit.signal})`];
  }
  console.log(`  peak RSS: ${mib(Math.max(peak, done.peak))} (+${mib(Math.max(peak, done.peak) - start.rss)}); wall ${(done.wallMs / 1000).toFixed(2)} s`);
  for (const [i, o] of done.outcomes.entries()) {
    console.log(`  #${i + 1}: ${o.ok ? "extracted" : `failed (${o.reason ?? "no reason"})`} in ${(o.ms / 1000).toFixed(2)} s: ${o.message.slice(0, 200)}`);
  }
  const outcomes = new Map<string, number>();
  for (const o of done.outcomes) {
    const key = o.ok ? "extracted" : `refused: ${o.reason ?? "no reason"}`;
    outcomes.set(key, (outcomes.get(key) ?? 0) + 1);
  }
  const outcome = [...outcomes].map(([k, n]) => `${n} ${k}`).join(", ");
  const peakRss = Math.max(peak, done.peak);
  return [variant, mib(start.rss), mib(peakRss), (done.wallMs / 1000).toFixed(2), outcome];
}

if (process.env.ZIP_BOMB_CHILD === "1") {
  child().then(
    () => process.exit(0),
    (err: unknown) => {
      console.error(err);
      process.exit(1);
    },
  );
}
