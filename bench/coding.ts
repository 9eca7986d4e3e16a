/**
 * Coding benchmark (issue #11): the local synthesis engine against our own coding of held-out real research
 * (test/fixtures/coding, method in its README.md): recall and precision per coded set, with the matching rule of
 * test/fixtures/coding/coding.ts. The same measurement as test/flows/coding-recall.test.ts, without the API, the
 * database or the extraction pipeline's queue: each file goes through the production extractor (`extract`), its
 * units are embedded as the Index step does (`embedUnits`), and `synthesize` runs on each workspace's sources. It is
 * the quick loop for engine work: a few seconds once the embedding cache is warm.
 *
 *   npm run bench -- coding                          cold: embeds ≈ 1,000 mentions (≈ 10–20 s on 2 cores)
 *   BENCH_SYNTH_CACHE=1 npm run bench -- coding      reuse the unit tests' embedding cache (fast reruns)
 *   CODING_VERBOSE=1 ...                             also print every insight and the themes it matched
 *
 * The flows test holds the baseline floors; this prints the figures only.
 */
import { readFile } from "node:fs/promises";
import { basename } from "node:path";
import { LocalEmbedder } from "../core/ai/local-embedder";
import type { Embedder } from "../core/ai/ports";
import { embedUnits, synthesize, type SynthesisSource } from "../core/ai/synthesis";
import { extract, inspectUpload, shutdownEngines } from "../core/extract";
import { describeMatches, loadCodingSets, matchTheme, pct, REALDATA_URL, scoreSet, type CodingSet } from "../test/fixtures/coding/coding";
import { cachedEmbedder } from "../test/unit/ai/embed-cache";
import { busyWarning, machineLine } from "./lib/machine";
import { printTable } from "./lib/stats";
import { isSmoke, sizeNote } from "./lib/size";

/** The smoke size runs only the smallest coded set (two short interview notes, about a hundred mentions). */
const SMOKE_SETS = ["va-interview-notes"];

async function sourceOf(path: string, contentType: string, sourceType: string, embedder: Embedder): Promise<SynthesisSource> {
  const bytes = await readFile(new URL(path, REALDATA_URL));
  const name = basename(path);
  const verdict = await inspectUpload({ head: bytes, declaredType: contentType, filename: name, size: bytes.length });
  const extraction = await extract({ bytes, kind: verdict.kind, contentType: verdict.contentType, filename: name });
  return {
    id: path, // the realdata path doubles as the source id, so quotes name their file
    title: name,
    source_type: sourceType,
    units: extraction.units,
    extracted_text: extraction.extracted_text,
    vectors: await embedUnits(extraction.units, embedder),
    vectors_embedder_id: embedder.id,
  };
}

export default async function codingBench(): Promise<void> {
  console.log(`coding benchmark — ${machineLine()}`);
  const warn = busyWarning();
  if (warn) console.log(warn);
  if (sizeNote()) console.log(`${sizeNote()} Sets: ${SMOKE_SETS.join(", ")}.`);
  const inner = new LocalEmbedder();
  const embedder: Embedder = process.env.BENCH_SYNTH_CACHE === "1" ? cachedEmbedder(inner) : inner;
  const sets = loadCodingSets({ benchOnly: true }).filter((s) => !isSmoke() || SMOKE_SETS.includes(s.set));
  const rows: (string | number)[][] = [];
  try {
    for (const workspace of [...new Set(sets.map((s) => s.workspace))]) {
      const own: CodingSet[] = sets.filter((s) => s.workspace === workspace);
      const t0 = performance.now();
      const sources = [];
      for (const f of own.flatMap((s) => s.files)) sources.push(await sourceOf(f.path, f.content_type, f.source_type, embedder));
      const t1 = performance.now();
      const out = await synthesize({ sources, embedder });
      const t2 = performance.now();
      const idsOf = (s: CodingSet) => new Set(s.files.map((f) => f.path));
      const anyTheme = out.insights.filter((i) => own.some((s) => s.themes.some((t) => matchTheme(i, t, idsOf(s))))).length;
      console.log(
        `\n${workspace}: ${out.insights.length} insights, ${anyTheme} matching a coded theme ` +
          `(extract + embed ${((t1 - t0) / 1000).toFixed(1)} s, synthesis ${((t2 - t1) / 1000).toFixed(1)} s)`,
      );
      for (const s of own) {
        const sc = scoreSet(s, out.insights, idsOf(s));
        rows.push([s.set, `${sc.matchedThemes.length}/${sc.themes}`, pct(sc.recall), `${sc.matchingInsights}/${sc.insights}`, pct(sc.precision)]);
        console.log(`  ${s.set} missed: ${sc.missedThemes.join(", ") || "none"}`);
        if (process.env.CODING_VERBOSE === "1") console.log(describeMatches(s, out.insights, idsOf(s)).join("\n"));
      }
    }
    console.log("");
    printTable(["set", "themes matched", "recall", "insights matching", "precision"], rows);
  } finally {
    await LocalEmbedder.shutdown();
    await shutdownEngines();
  }
}
