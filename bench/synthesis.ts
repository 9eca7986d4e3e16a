/**
 * Local synthesis benchmark: the whole Jupyter workspace of ../shared/realdata (surveys, usability findings,
 * issues, podcast transcript, PDFs, DOCX; images skipped) through the production path:
 *
 *   1. ingestion: `embedUnits` per source with the LocalEmbedder (Universal Sentence Encoder, worker threads),
 *      as the Index step does; reports mentions per second and seconds per 1,000 mentions;
 *   2. synthesis: `synthesize` with those precomputed vectors (nothing re-embedded), timed by stage;
 *   3. grounding: every quote re-checked verbatim against its source; the grounding rate must be 100%.
 * Also compares 0 worker threads with 2 on a 600-mention sample (what the second core buys).
 *
 *   npx tsx bench/synthesis.ts            cold: embeds everything (≈1–3 min on 2 idle cores)
 *   BENCH_SYNTH_CACHE=1 npx tsx bench/synthesis.ts   reuse the embedding cache of the unit tests (fast reruns)
 *
 * Peak RSS is the process's maximum resident set (process.resourceUsage().maxRSS), worker threads included.
 */
import { availableParallelism } from "node:os";
import { LocalEmbedder } from "../core/ai/local-embedder";
import type { Embedder } from "../core/ai/ports";
import { embedUnits, synthesize, unitMentions, type SynthesisSource } from "../core/ai/synthesis";
import { cachedEmbedder } from "../test/unit/ai/embed-cache";
import { loadWorkspace } from "../test/unit/ai/realdata";
import { busyWarning, machineLine } from "./lib/machine";
import { fmtBytes, printTable } from "./lib/stats";
import { sized, sizeNote } from "./lib/size";

/** The jupyter files loaded: all of them, or at the smoke size the usability findings alone (one short Markdown file). */
const ONLY = sized<RegExp | undefined>(undefined, /^usability-research\//);
/** Mentions in the calling-thread vs worker-threads comparison, and texts embedded first to warm every worker. */
const SAMPLE = sized(600, 24);
const WARM_TEXTS = sized(256, 8);

const cpuSeconds = (u: NodeJS.CpuUsage) => (u.user + u.system) / 1e6;

async function timed<T>(fn: () => Promise<T>): Promise<{ result: T; wallS: number; cpuS: number }> {
  const c0 = process.cpuUsage();
  const t0 = performance.now();
  const result = await fn();
  return { result, wallS: (performance.now() - t0) / 1000, cpuS: cpuSeconds(process.cpuUsage(c0)) };
}

export default async function synthesisBench(): Promise<void> {
  console.log(`synthesis benchmark — ${machineLine()}`);
  const warn = busyWarning();
  if (warn) console.log(warn);
  if (sizeNote()) console.log(`${sizeNote()} Files: jupyter/usability-research only.`);
  const useCache = process.env.BENCH_SYNTH_CACHE === "1";

  const load = await timed(() => loadWorkspace("jupyter", ONLY));
  const sources = load.result;
  console.log(`loaded ${sources.length} sources, ${sources.reduce((a, s) => a + s.units.length, 0)} units in ${load.wallS.toFixed(1)} s`);

  // What a second core buys: 600 mentions (SAMPLE), in-thread vs 2 worker threads (models loaded before timing).
  const sample = sources
    .flatMap((s) => s.units.flatMap((u) => unitMentions(u).map((m) => m.text)))
    .filter((_, i) => i % 11 === 0)
    .slice(0, SAMPLE);
  const rows: (string | number)[][] = [];
  for (const workers of [0, Math.min(2, availableParallelism())]) {
    const e = new LocalEmbedder({ workers });
    await e.embed(Array.from({ length: WARM_TEXTS }, (_, i) => `warm up every worker ${i}`)); // several batches: all workers warm
    const r = await timed(() => e.embed(sample));
    rows.push([workers === 0 ? "calling thread" : `${workers} worker threads`, sample.length, r.wallS.toFixed(1), (sample.length / r.wallS).toFixed(0), ((1000 * r.wallS) / sample.length).toFixed(1), r.cpuS.toFixed(1)]);
  }
  printTable(["embedder", "mentions", "wall s", "mentions/s", "s per 1k", "cpu s"], rows);

  // 1. Ingestion: per-source mention vectors.
  const inner = new LocalEmbedder({ workers: Math.min(2, availableParallelism()) }); // the pool warmed above
  const embedder: Embedder = useCache ? cachedEmbedder(inner) : inner;
  const ingest = await timed(async () =>
    Promise.all(sources.map(async (s) => ({ ...s, vectors: await embedUnits(s.units, embedder), vectors_embedder_id: embedder.id }) as SynthesisSource)),
  );
  const mentionsEmbedded = ingest.result.reduce((a, s) => a + s.vectors!.reduce((b, v) => b + v.length / embedder.dimensions, 0), 0);
  console.log(
    `ingestion${useCache ? " (embedding cache on: figures are not cold)" : ""}: ${mentionsEmbedded} mentions embedded in ${ingest.wallS.toFixed(1)} s wall, ` +
      `${ingest.cpuS.toFixed(1)} s CPU — ${((1000 * ingest.wallS) / mentionsEmbedded).toFixed(1)} s per 1,000 mentions`,
  );

  // 2. Synthesis with precomputed vectors.
  const rssBefore = process.memoryUsage().rss;
  const run = await timed(() => synthesize({ sources: ingest.result, embedder }));
  const out = run.result;
  const st = out.stats;
  console.log(
    `synthesis: ${run.wallS.toFixed(1)} s wall, ${run.cpuS.toFixed(1)} s CPU; mentions ${st.timings_ms.mentions} ms, ` +
      `embed ${st.timings_ms.embed} ms (${st.vectors_computed} computed, ${st.vectors_reused} reused), clustering ${st.timings_ms.cluster} ms, ` +
      `naming+typing+quotes ${st.timings_ms.name} ms`,
  );
  console.log(
    `mentions ${st.mentions} (dropped: ${st.dropped.interviewer_units} interviewer units, ${st.dropped.structured_answer_units} choice/name-list answers, ` +
      `${st.dropped.boilerplate} boilerplate, ${st.dropped.duplicate} duplicates); clustered ${st.clustered}, noise ${st.noise}; ` +
      `clusters ${st.clusters_initial} → ${st.clusters_final} (+${st.clusters_unnamed} unnamed, dropped)`,
  );

  // 3. Grounding, checked independently of the engine.
  const byId = new Map(sources.map((s) => [s.id, s.extracted_text]));
  const quotes = out.insights.flatMap((d) => d.quotes);
  const verbatim = quotes.filter((q) => byId.get(q.source_id)?.includes(q.text)).length;
  console.log(
    `grounding: ${verbatim}/${quotes.length} quotes verbatim (${((100 * verbatim) / Math.max(1, quotes.length)).toFixed(1)}%); ` +
      `engine proposed ${st.quotes_proposed}, kept ${st.quotes_grounded}`,
  );
  const peak = process.resourceUsage().maxRSS * 1024;
  console.log(`memory: peak RSS ${fmtBytes(peak)} (before synthesis ${fmtBytes(rssBefore)}, after ${fmtBytes(process.memoryUsage().rss)})`);

  printTable(
    ["#", "type", "severity", "sources", "mentions", "title"],
    out.insights.map((d, i) => [i + 1, d.insight_type, d.severity, d.frequency, d.mention_count, d.title]),
  );
  console.log(out.summary);
  const after = busyWarning();
  console.log(`end — ${machineLine()}${after ? `\n${after}` : ""}`);
  await LocalEmbedder.shutdown();
}

if (import.meta.url === `file://${process.argv[1]}`) {
  synthesisBench().catch((err) => {
    console.error(err);
    process.exit(1);
  });
}
