/**
 * Survey synthesis benchmark (issue #11): synthesis wall time, time per mention and peak memory on
 *   1. the whole `realdata/jupyter` workspace (test loader, as bench/synthesis.ts), and
 *   2. a 5,000-response survey generated from the real 2015 Jupyter survey (bench/lib/survey-gen.ts), read by the
 *      production CSV extractor, as one uploaded source.
 * Vectors are precomputed first (as the Index step does at ingestion; cached in the OS temp dir like the unit
 * tests, so reruns do not re-embed), then `synthesize` is timed alone. Every quote is re-checked verbatim.
 *
 *   npm run bench -- survey
 *
 * Time per mention = synthesis wall (and CPU) time ÷ candidate mentions (stats.mentions); on a shared machine the CPU
 * figure is the robust one. Peak RSS is the process's maximum
 * resident set (one embedding model loaded); "synthesis peak +" is how much synthesis itself raised that maximum.
 */
import { LocalEmbedder } from "../core/ai/local-embedder";
import { embedUnits, synthesize, type SynthesisSource } from "../core/ai/synthesis";
import { extractCsv } from "../core/extract/csv";
import { cachedEmbedder } from "../test/unit/ai/embed-cache";
import { loadWorkspace } from "../test/unit/ai/realdata";
import { busyWarning, machineLine } from "./lib/machine";
import { fmtBytes, printTable } from "./lib/stats";
import { generateSurvey } from "./lib/survey-gen";
import { sized, sizeNote } from "./lib/size";

/** Responses in the generated survey. */
const RESPONSES = sized(5000, 10);
/** The jupyter files loaded: all of them, or at the smoke size the usability findings alone (one short Markdown file). */
const ONLY = sized<RegExp | undefined>(undefined, /^usability-research\//);

const maxRss = () => process.resourceUsage().maxRSS * 1024;

export default async function surveyBench(): Promise<void> {
  console.log(`survey synthesis benchmark — ${machineLine()}`);
  const warn = busyWarning();
  if (warn) console.log(warn);
  if (sizeNote()) console.log(`${sizeNote()} Files: jupyter/usability-research only; survey of ${RESPONSES} responses.`);
  const embedder = cachedEmbedder(new LocalEmbedder({ workers: 1 }));

  const cases: { name: string; load: () => Promise<SynthesisSource[]> }[] = [
    { name: ONLY ? "jupyter usability findings" : "jupyter workspace", load: async () => (await loadWorkspace("jupyter", ONLY)) as SynthesisSource[] },
    {
      name: `${RESPONSES.toLocaleString("en-US")}-response survey`,
      load: async () => {
        const ex = extractCsv(generateSurvey(RESPONSES));
        return [{ id: `survey-${RESPONSES}`, title: `generated-${RESPONSES}-survey.csv`, source_type: "survey", units: ex.units, extracted_text: ex.extracted_text }];
      },
    },
  ];
  const rows: (string | number)[][] = [];
  for (const c of cases) {
    const sources = await c.load();
    const withVectors = await Promise.all(
      sources.map(async (s) => ({ ...s, vectors: await embedUnits(s.units, embedder), vectors_embedder_id: embedder.id }) as SynthesisSource),
    );
    const peakBefore = maxRss();
    const c0 = process.cpuUsage();
    const t0 = performance.now();
    const out = await synthesize({ sources: withVectors, embedder });
    const wallS = (performance.now() - t0) / 1000;
    const cpu = process.cpuUsage(c0);
    const peakAfter = maxRss();
    const st = out.stats;
    const byId = new Map(sources.map((s) => [s.id, s.extracted_text]));
    const quotes = out.insights.flatMap((d) => d.quotes);
    const verbatim = quotes.filter((q) => byId.get(q.source_id)?.includes(q.text)).length;
    rows.push([
      c.name,
      sources.reduce((a, s) => a + s.units.length, 0),
      st.mentions,
      wallS.toFixed(2),
      ((cpu.user + cpu.system) / 1e6).toFixed(2),
      ((1e6 * wallS) / Math.max(1, st.mentions)).toFixed(0),
      ((cpu.user + cpu.system) / Math.max(1, st.mentions)).toFixed(0),
      out.insights.length,
      `${verbatim}/${quotes.length}`,
      fmtBytes(peakAfter),
      fmtBytes(Math.max(0, peakAfter - peakBefore)),
    ]);
    console.log(`${c.name}: timings ${JSON.stringify(st.timings_ms)}; dropped ${JSON.stringify(st.dropped)}`);
    for (const d of out.insights.slice(0, 12)) console.log(`  [${d.insight_type}/${d.severity} ${d.frequency}s ${d.mention_count}m] ${d.title}`);
  }
  printTable(["corpus", "units", "mentions", "synthesis s", "cpu s", "µs per mention", "cpu µs per mention", "insights", "quotes verbatim", "peak RSS", "synthesis peak +"], rows);
  console.log(`embedding cache: ${embedder.hits} hits, ${embedder.misses} misses`);
  const after = busyWarning();
  console.log(`end — ${machineLine()}${after ? `\n${after}` : ""}`);
  await LocalEmbedder.shutdown();
}

if (import.meta.url === `file://${process.argv[1]}`) {
  surveyBench().catch((err) => {
    console.error(err);
    process.exit(1);
  });
}
