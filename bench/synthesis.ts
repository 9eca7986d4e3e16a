/**
 * Local synthesis benchmark: the whole Jupyter workspace of ../shared/realdata (surveys, usability findings,
 * issues, podcast transcript, PDFs, DOCX; images skipped) through the production path:
 *
 *   1. ingestion: `embedUnits` per source with the LocalEmbedder (Universal Sentence Encoder, worker threads),
 *      as the Index step does; reports mentions per second and seconds per 1,000 mentions;
 *   2. synthesis: `synthesize` with those precomputed vectors (nothing re-embedded), timed by stage;
 *   3. grounding: every quote re-checked verbatim against its source; the grounding rate must be 100%.
 * Also compares 0 worker threads with 2 on a 600-mention sample (what the second core buys).
 *   4. 10× (issue #24 point 5): the workspace grown to 50,000 candidate mentions (`generateCorpus`: varied copies of
 *      every source's units, vectors derived from the real ones, not embedded), synthesised once in a fresh child
 *      process: wall and CPU time beside the floor (steps 1–2 alone), time by stage, peak RSS beside the input's,
 *      grounding, whether the encoder model was loaded. Targets < 60 s, < 1.5 GB, 100%.
 *
 *   npx tsx bench/synthesis.ts            cold: embeds everything (≈1–3 min on 2 idle cores)
 *   BENCH_SYNTH_CACHE=1 npx tsx bench/synthesis.ts   reuse the embedding cache of the unit tests (fast reruns)
 *   BENCH_SYNTH_ONLY=10x                  only part 4 (and the ingestion vectors it grows from)
 *   BENCH_SYNTH_PROFILE=1                 part 4's child under the CPU profiler: self time by function
 *
 * Peak RSS is the process's maximum resident set (process.resourceUsage().maxRSS), worker threads included.
 */
import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { availableParallelism, tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { uniformFloat64 } from "pure-rand/distribution/uniformFloat64";
import { xoroshiro128plus } from "pure-rand/generator/xoroshiro128plus";
import type { TextUnit } from "../core/extract/types";
import { LocalEmbedder } from "../core/ai/local-embedder";
import type { Embedder } from "../core/ai/ports";
import { collectMentions, embedUnits, synthesize, unitMentions, type SynthesisSource } from "../core/ai/synthesis";
import { interviewerSpeakers, structuredQuestions, unitSkipReason } from "../core/ai/synthesis/filters";
import { cacheFile, cachedEmbedder } from "../test/unit/ai/embed-cache";
import { loadWorkspace } from "../test/unit/ai/realdata";
import { busyWarning, machineLine } from "./lib/machine";
import { cpuProfile } from "./lib/profile";
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

  // BENCH_SYNTH_ONLY=10x: only the 10× part (with BENCH_SYNTH_CACHE=1, no embedding at all on a machine that ran it).
  const only10x = process.env.BENCH_SYNTH_ONLY === "10x";
  // What a second core buys: 600 mentions (SAMPLE), in-thread vs 2 worker threads (models loaded before timing).
  if (!only10x) {
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
  }

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

  if (!only10x) await oneTimes(sources, ingest.result, embedder);

  // 4. 10×: 50,000 mentions from the same sources and vectors, synthesised in a fresh child process.
  await tenTimes(ingest.result, embedder.dimensions, embedder.id);
  const after = busyWarning();
  console.log(`end — ${machineLine()}${after ? `\n${after}` : ""}`);
  await LocalEmbedder.shutdown();
}

/** Parts 2–3: synthesis of the real workspace with its precomputed vectors, by stage, and its grounding. */
async function oneTimes(sources: SynthesisSource[], withVectors: SynthesisSource[], embedder: Embedder): Promise<void> {
  // 2. Synthesis with precomputed vectors.
  const rssBefore = process.memoryUsage().rss;
  const run = await timed(() => synthesize({ sources: withVectors, embedder }));
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
}

// ---------------------------------------------------------------------------------------------------------------
// 4. Synthesis at 10× (issue #24 point 5): 50,000 mentions generated from the real workspace, synthesised in a
//    fresh child process so its wall time, CPU time and peak RSS are synthesis's own.
// ---------------------------------------------------------------------------------------------------------------

/** Candidate mentions (stats.mentions) in the generated corpus. */
const TEN_X_MENTIONS = sized(50_000, 300);
/** Targets of issue #24 point 5. */
const TEN_X_WALL_S = 60;
const TEN_X_RSS = 1.5e9;

/**
 * Noise added to a real mention's vector to stand for its varied copy: v' = normalise(v + σ·g), g standard normal
 * per dimension, so cos(v, v') ≈ 1/√(1 + 512·σ²) = 0.86 at σ = 0.026: the sentence encoder itself gives a mention
 * and its varied text (`varyText`, copies 1 and 2) a mean cosine of 0.86 (p10 0.74, p50 0.88, p90 0.96; measured on
 * 200 jupyter mentions, 2026-11-26). Isotropic noise is not the encoder's shift (which leans towards the opener's
 * meaning), so the copies are a stand-in for re-embedded text, said as such where the figures are printed.
 */
const VECTOR_NOISE = 0.026;

/**
 * Sentence openers for copies: copy c of a mention starts with a different one than copy c' (≤ 9 copies), so no
 * two copies share a text of 6+ words (which `boilerplateTexts` would drop as a template). Neutral on purpose: no
 * cue word of the type, severity and emphasis lexicons, no first person (interviewer and background detection
 * count it), no comma (a survey column whose answers split into repeated comma items reads as a multi-select,
 * filters.ts `structuredQuestions`), and words that titles drop (naming.ts `stripLead`: lead fillers, hedges).
 */
const OPENERS = ["Honestly ", "Overall ", "Personally ", "Generally ", "For me ", "To be honest ", "Also ", "Anyway ", "Basically "];
/** Word swaps (both ways), each applied to about half of its occurrences: copies differ in wording, not only in the opener. */
const SWAPS: [string, string][] = [
  ["difficult", "hard"], ["easy", "simple"], ["problem", "issue"], ["problems", "issues"], ["slow", "sluggish"],
  ["fast", "quick"], ["annoying", "frustrating"], ["great", "excellent"], ["good", "nice"], ["helpful", "useful"],
  ["often", "frequently"], ["maybe", "perhaps"], ["big", "large"], ["start", "begin"], ["show", "display"],
  ["bug", "defect"], ["bugs", "defects"], ["confusing", "unclear"], ["example", "sample"], ["examples", "samples"],
  ["documentation", "docs"], ["install", "set up"], ["error", "failure"], ["errors", "failures"],
];
const SWAP = new Map<string, string>(SWAPS.flatMap(([a, b]) => [[a, b], [b, a]] as [string, string][]));

/** FNV-1a, for deterministic per-mention choices. */
function hash32(s: string): number {
  let h = 2166136261;
  for (let i = 0; i < s.length; i++) h = Math.imul(h ^ s.charCodeAt(i), 16777619);
  return h >>> 0;
}

/** Copy `copy` (≥ 1) of a mention's text: an opener (when `opener`), and about half of the swappable words swapped. */
export function varyText(text: string, copy: number, key: string, opener: boolean): string {
  const h = hash32(key);
  let i = 0;
  let out = text.replace(/[A-Za-z]+/g, (w) => {
    const lower = w.toLowerCase();
    const to = SWAP.get(lower);
    if (!to || (hash32(`${key}:${copy}:${i++}`) & 1) === 0) return w;
    return w[0] === w[0].toUpperCase() ? to[0].toUpperCase() + to.slice(1) : to;
  });
  if (opener) {
    const first = /^[A-Z][a-z]/.test(out) && !/^I\b/.test(out) ? out[0].toLowerCase() + out.slice(1) : out;
    out = OPENERS[(copy - 1 + h) % OPENERS.length] + first;
  }
  return out;
}

/** A real vector moved by seeded Gaussian noise (see `VECTOR_NOISE`), renormalised, written into `out`. */
function deriveVector(v: Float32Array, rng: ReturnType<typeof xoroshiro128plus>, out: Float32Array): void {
  let s = 0;
  for (let t = 0; t < v.length; t += 2) {
    // Box–Muller: two standard normals per two uniforms.
    const u1 = Math.max(1e-12, uniformFloat64(rng));
    const u2 = uniformFloat64(rng);
    const r = Math.sqrt(-2 * Math.log(u1));
    out[t] = v[t] + VECTOR_NOISE * r * Math.cos(2 * Math.PI * u2);
    if (t + 1 < v.length) out[t + 1] = v[t + 1] + VECTOR_NOISE * r * Math.sin(2 * Math.PI * u2);
  }
  for (let t = 0; t < v.length; t++) s += out[t] * out[t];
  const n = Math.sqrt(s);
  for (let t = 0; t < v.length; t++) out[t] /= n;
}

export interface GeneratedCorpus {
  sources: SynthesisSource[];
  /** Times each source's units are there: the real ones, then varied copies (the last one partial). */
  copies: number;
  mentions: number;
  units: number;
  /** Units of copies whose varied text no longer splits into the same mentions (left out of their copy). */
  unitsLeftOut: number;
  /** Units of copies varied with word swaps only (the opener changed how the unit splits). */
  unitsSwapsOnly: number;
}

/**
 * A corpus of about `target` candidate mentions grown from real sources with precomputed vectors: each source keeps
 * its own units and gets copies of them appended (copy 1, 2, … until `target` is reached, the last one partial), as
 * a survey with more respondents, a thread with more comments, a transcript with more speakers, a report with more
 * pages. In a copy every speaker is another person ("respondent 12" → "respondent 12 ~2"; unattributed text stays
 * unattributed), every mention's text is varied (`varyText`: an opener and word swaps, the rest of the unit
 * verbatim), and its vector is derived from the real mention's (`deriveVector`), not embedded: what the Index step
 * would store, up to the encoder's own response to the variation, which the noise stands for. Units that synthesis
 * skips (interviewer turns, closed answers) are copied verbatim, so the filters decide the same way. A varied unit
 * must split into as many mentions as the original (its vectors line up); it is varied with word swaps only when
 * the opener changes that, and left out when even they do. Deterministic.
 */
export function generateCorpus(base: SynthesisSource[], target: number, dims: number, seed = 24): GeneratedCorpus {
  const rng = xoroshiro128plus(seed);
  let unitsLeftOut = 0;
  let unitsSwapsOnly = 0;
  const grown = base.map((src) => {
    if (!src.vectors) throw new Error(`source ${src.id} has no precomputed vectors`);
    const iv = interviewerSpeakers(src.units);
    const ch = structuredQuestions(src.units);
    const spans = src.units.map((u) => (unitSkipReason(u, iv, ch) ? null : unitMentions(u)));
    return { src, spans, units: [...src.units], vectors: [...src.vectors], extra: [] as string[] };
  });
  let mentions = grown.reduce((a, g) => a + g.spans.reduce((b, sp) => b + (sp?.length ?? 0), 0), 0);
  if (mentions === 0) throw new Error("the base sources have no mentions");
  let copy = 1;
  for (; mentions < target; copy++) {
    if (copy > OPENERS.length) throw new Error(`${target} mentions need more than ${OPENERS.length} copies of the sources`);
    for (const g of grown) {
      const { src } = g;
      for (let ui = 0; ui < src.units.length && mentions < target; ui++) {
        const u = src.units[ui];
        const speaker = u.speaker ? `${u.speaker} ~${copy}` : u.speaker;
        const spans = g.spans[ui];
        if (!spans?.length) {
          g.units.push({ ...u, speaker });
          g.vectors.push(src.vectors![ui]);
          continue;
        }
        let varied: TextUnit | undefined;
        for (const opener of [true, false]) {
          let text = "";
          let at = 0;
          spans.forEach((sp, j) => {
            text += u.text.slice(at, sp.start) + varyText(sp.text, copy, `${src.id}:${ui}:${j}`, opener);
            at = sp.end;
          });
          text += u.text.slice(at);
          const candidate = { ...u, speaker, text };
          if (unitMentions(candidate).length === spans.length) {
            varied = candidate;
            if (!opener) unitsSwapsOnly++;
            break;
          }
        }
        if (!varied) {
          unitsLeftOut++;
          continue;
        }
        const vec = new Float32Array(spans.length * dims);
        for (let j = 0; j < spans.length; j++) deriveVector(src.vectors![ui].subarray(j * dims, (j + 1) * dims), rng, vec.subarray(j * dims, (j + 1) * dims));
        g.units.push(varied);
        g.vectors.push(vec);
        mentions += spans.length;
      }
    }
  }
  const sources = grown.map(({ src, units, vectors }) => ({
    ...src,
    units,
    vectors,
    // Every unit verbatim in the extracted text (the extractors' invariant, which grounding relies on).
    extracted_text: [src.extracted_text, ...units.slice(src.units.length).map((u) => (u.speaker ? `${u.speaker}: ${u.text}` : u.text))].join("\n\n"),
  }));
  return { sources, copies: copy, mentions, units: sources.reduce((a, s) => a + s.units.length, 0), unitsLeftOut, unitsSwapsOnly };
}

/** What the child process reports. */
interface ChildReport {
  mentions: number;
  clustered: number;
  insights: number;
  quotes: number;
  verbatim: number;
  wallS: number;
  cpuS: number;
  timings: Record<string, number>;
  floorWallS: number;
  floorCpuS: number;
  rssLoaded: number;
  peakLoaded: number;
  peak: number;
  embedded: number;
  modelLoaded: boolean;
  titles: string[];
  profile?: [string, number][];
}

/** Write the corpus for the child: one JSON (sources without vectors, floats per unit) and one binary of all floats. */
export function writeCorpus(dir: string, sources: SynthesisSource[], embedderId: string): void {
  const lengths = sources.map((s) => s.vectors!.map((v) => v.length));
  const total = lengths.flat().reduce((a, b) => a + b, 0);
  const all = new Float32Array(total);
  let at = 0;
  for (const s of sources) for (const v of s.vectors!) (all.set(v, at), (at += v.length));
  writeFileSync(join(dir, "vectors.bin"), Buffer.from(all.buffer, all.byteOffset, all.byteLength));
  writeFileSync(join(dir, "corpus.json"), JSON.stringify({ embedderId, sources: sources.map((s, i) => ({ id: s.id, title: s.title, source_type: s.source_type, units: s.units, extracted_text: s.extracted_text, lengths: lengths[i] })) }));
}

/**
 * The child: load the corpus as a synthesis handler would hold it (vectors as views into one buffer, as decoded
 * from storage), synthesise once, measure, and print the report as the last line of stdout. The embedder is the
 * embedding cache of this benchmark over a lazily loaded in-thread model: synthesis embeds only a few texts (the
 * closed questions' "question + option"), and the model is loaded (≈ 300 MB) only when the cache misses one.
 */
async function child(dir: string): Promise<void> {
  const { embedderId, sources: raw } = JSON.parse(readFileSync(join(dir, "corpus.json"), "utf8")) as {
    embedderId: string;
    sources: (Omit<SynthesisSource, "vectors"> & { lengths: number[] })[];
  };
  const buf = readFileSync(join(dir, "vectors.bin"));
  const all = new Float32Array(buf.byteLength / 4);
  new Uint8Array(all.buffer).set(buf);
  let at = 0;
  const sources: SynthesisSource[] = raw.map(({ lengths, ...s }) => ({
    ...s,
    vectors: lengths.map((n) => all.subarray(at, (at += n))),
    vectors_embedder_id: embedderId,
  }));
  const inner = new LocalEmbedder({ workers: 0 });
  const embedder = cachedEmbedder(inner, cacheFile(inner.id).replace(/\.bin$/, "-synthesis-10x.bin"));
  const rssLoaded = process.memoryUsage().rss;
  const peakLoaded = process.resourceUsage().maxRSS * 1024;
  const profiling = process.env.BENCH_SYNTH_PROFILE === "1";
  const run = await timed(async () => (profiling ? cpuProfile(() => synthesize({ sources, embedder })) : { result: await synthesize({ sources, embedder }), profile: undefined }));
  const peak = process.resourceUsage().maxRSS * 1024;
  const out = run.result.result;
  // Floor: steps 1–2 alone (every unit segmented and filtered, every stored vector read): what any synthesis of this
  // input pays before it clusters anything. Measured after, so it does not warm the run above.
  const floor = await timed(() => collectMentions(sources, embedder));
  const byId = new Map(sources.map((s) => [s.id, s.extracted_text]));
  const quotes = out.insights.flatMap((d) => d.quotes);
  let profile: [string, number][] | undefined;
  if (run.result.profile) {
    const p = run.result.profile;
    const nodes = new Map(p.nodes.map((nd) => [nd.id, nd]));
    const self = new Map<string, number>();
    (p.samples ?? []).forEach((id, i) => {
      const f = nodes.get(id)!.callFrame;
      const key = `${f.functionName || "(anonymous)"} ${f.url.replace(/^.*\/work\/main\//, "")}:${f.lineNumber + 1}`;
      self.set(key, (self.get(key) ?? 0) + (p.timeDeltas?.[i] ?? 0) / 1000);
    });
    profile = [...self].sort((a, b) => b[1] - a[1]).slice(0, 30);
  }
  const report: ChildReport = {
    mentions: out.stats.mentions,
    clustered: out.stats.clustered,
    insights: out.insights.length,
    quotes: quotes.length,
    verbatim: quotes.filter((q) => byId.get(q.source_id)?.includes(q.text)).length,
    wallS: run.wallS,
    cpuS: run.cpuS,
    timings: out.stats.timings_ms,
    floorWallS: floor.wallS,
    floorCpuS: floor.cpuS,
    rssLoaded,
    peakLoaded,
    peak,
    embedded: embedder.misses,
    modelLoaded: embedder.misses > 0,
    titles: out.insights.map((d) => `[${d.insight_type}/${d.severity} ${d.frequency}s ${d.mention_count}m] ${d.title}`),
    profile,
  };
  await LocalEmbedder.shutdown();
  process.stdout.write(`\n${JSON.stringify(report)}\n`);
}

/** Part 4: generate, hand over to a fresh child, print its figures beside the targets and the floors. */
async function tenTimes(base: SynthesisSource[], dims: number, embedderId: string): Promise<void> {
  const gen = await timed(async () => generateCorpus(base, TEN_X_MENTIONS, dims));
  const g = gen.result;
  console.log(
    `\n10×: ${g.mentions.toLocaleString("en-US")} candidate mentions generated in ${gen.wallS.toFixed(1)} s from ${base.length} real sources, each grown to ` +
      `${g.copies} times its units (the real ones, then varied copies with other speakers; the last copy partial): ${g.units.toLocaleString("en-US")} units; ` +
      `${g.unitsSwapsOnly} units varied by word swaps only, ${g.unitsLeftOut} left out (their varied text split differently). ` +
      `Vectors of the copies derived from the real ones (noise σ = ${VECTOR_NOISE}, cos ≈ 0.86 as the encoder gives a varied text), not embedded.`,
  );
  const dir = mkdtempSync(join(tmpdir(), "r2d-synth-10x-"));
  try {
    writeCorpus(dir, g.sources, embedderId);
    const report = await new Promise<ChildReport>((resolveReport, reject) => {
      const c = spawn(process.execPath, [...process.execArgv, fileURLToPath(import.meta.url)], {
        env: { ...process.env, BENCH_SYNTH_CHILD: dir },
        stdio: ["ignore", "pipe", "inherit"],
      });
      let stdout = "";
      c.stdout.on("data", (d: Buffer) => (stdout += d.toString()));
      c.on("error", reject);
      c.on("close", (code) => {
        const last = stdout.trim().split("\n").pop() ?? "";
        if (code !== 0 || !last.startsWith("{")) return reject(new Error(`synthesis child exited ${code}: ${stdout.slice(-2000)}`));
        resolveReport(JSON.parse(last) as ChildReport);
      });
    });
    const r = report;
    const t = r.timings;
    const met = (ok: boolean) => (ok ? "met" : "NOT met");
    console.log(
      `10× synthesis (fresh child process; encoder model ${r.modelLoaded ? `loaded: ${r.embedded} texts embedded` : "not loaded: its few texts came from the embedding cache"}): ` +
        `stages mentions ${t.mentions} ms, embed ${t.embed} ms, clustering ${t.cluster} ms, naming+typing+quotes ${t.name} ms; ` +
        `${r.clustered.toLocaleString("en-US")} of ${r.mentions.toLocaleString("en-US")} mentions clustered, ${r.insights} insights`,
    );
    printTable(
      ["10× figure", "value", "target", "", "floor", "ratio to floor"],
      [
        ["wall time", `${r.wallS.toFixed(1)} s`, `< ${TEN_X_WALL_S} s`, met(r.wallS < TEN_X_WALL_S), `${r.floorWallS.toFixed(1)} s (steps 1–2 alone)`, (r.wallS / r.floorWallS).toFixed(2)],
        ["CPU time", `${r.cpuS.toFixed(1)} s`, "", "", `${r.floorCpuS.toFixed(1)} s`, (r.cpuS / r.floorCpuS).toFixed(2)],
        ["CPU µs per mention", ((1e6 * r.cpuS) / r.mentions).toFixed(0), "", "", ((1e6 * r.floorCpuS) / r.mentions).toFixed(0), ""],
        ["peak RSS", fmtBytes(r.peak), `< ${(TEN_X_RSS / 1e9).toFixed(1)} GB`, met(r.peak < TEN_X_RSS), `${fmtBytes(r.peakLoaded)} (input loaded)`, (r.peak / r.peakLoaded).toFixed(2)],
        ["grounding", `${r.verbatim}/${r.quotes}`, "100%", met(r.quotes > 0 && r.verbatim === r.quotes), "", ""],
      ],
    );
    for (const line of r.titles.slice(0, 12)) console.log(`  ${line}`);
    if (r.profile) {
      console.log("CPU profile of the 10× synthesis, self time by function (ms):");
      for (const [fn, ms] of r.profile) console.log(`  ${ms.toFixed(0).padStart(7)}  ${fn}`);
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  (process.env.BENCH_SYNTH_CHILD ? child(process.env.BENCH_SYNTH_CHILD) : synthesisBench()).catch((err) => {
    console.error(err);
    process.exit(1);
  });
}
