/**
 * Entropy scanner benchmark (issue #21): the time of one `scanWorkspace` over a workspace of 1,000 active insights
 * (and 100 sources) on DynamoDB Local with the local embedder, as the scheduled scanner and the on-demand endpoint run
 * it. Insight texts are real (survey answers and app-store review sentences from ../shared/realdata); 2 % of them get
 * a negated twin ("… is not …", "… can not …"), so the rules have real candidates to decide. Reported:
 *
 * - a warm scan (vectors stored on the insights, as synthesis stores them), p50 / max over a few runs, and its parts:
 *   the contradiction detector alone (candidate pairs by cosine, then the rules) and the stale-source detector alone;
 * - a cold scan: the same workspace with no stored vectors, so the scan embeds every insight first;
 * - how many of the planted negated twins the scan reports, and how many other pairs it flags.
 */
import { randomUUID } from "node:crypto";
import { readFile } from "node:fs/promises";
import Papa from "papaparse";
import { startBenchRuntime } from "./lib/runtime";
import { fmtMs, printTable, Recorder } from "./lib/stats";
import { busyWarning, machineLine } from "./lib/machine";
import { sized, sizeNote } from "./lib/size";

const N = sized(1_000, 20);
const SOURCES = sized(100, 4);
const RUNS = sized(5, 2);
const REALDATA = new URL("../../shared/realdata/", import.meta.url).pathname;

async function realTexts(): Promise<string[]> {
  const texts = new Set<string>();
  for (const file of ["jupyter/surveys/2020-jupyter-survey-text_fields.csv", "jupyter/surveys/2015-notebook-ux-survey-export.csv", "va-mobile-app/app-store-reviews-2024-05-partial.csv"]) {
    const rows = Papa.parse<string[]>(await readFile(REALDATA + file, "utf8")).data;
    for (const row of rows) for (const cell of row) if (cell && cell.length > 40 && cell.length < 300) texts.add(cell.trim().replace(/\s+/g, " "));
  }
  return [...texts];
}

/** A negated twin of a sentence ("X is Y" → "X is not Y", "I can X" → "I can not X"), or undefined without a verb to negate. */
const negate = (text: string): string | undefined => {
  const m = /\b(is|are|was|were|can|do|does|did|will|would|should)\b/i.exec(text);
  return m ? `${text.slice(0, m.index + m[0].length)} not${text.slice(m.index + m[0].length)}` : undefined;
};

export default async function observability(): Promise<void> {
  console.log(`observability benchmark — ${machineLine()}`);
  const warn = busyWarning();
  if (warn) console.log(warn);
  if (sizeNote()) console.log(sizeNote());
  const rt = await startBenchRuntime();
  try {
    const { db } = await import("../core/db/service");
    const { embedder } = await import("../core/ai/select");
    const { encodeVector, decodeVector } = await import("../core/ai/vectors");
    const { scanWorkspace, EntropySettings } = await import("../core/entropy");
    const { findContradictions } = await import("../core/entropy/contradictions");
    const { findStaleSources } = await import("../core/entropy/stale");

    const base = await realTexts();
    const texts: string[] = [];
    /** Index pairs [original, its negated twin]: the contradictions the scan should find. */
    const twins: [number, number][] = [];
    for (let i = 0; texts.length < N; i++) {
      const t = base[i % base.length]!;
      texts.push(t);
      const twin = i % 50 === 0 ? negate(t) : undefined;
      if (twin && texts.length < N) {
        twins.push([texts.length - 1, texts.length]);
        texts.push(twin);
      }
    }
    const emb = await embedder();
    let t0 = performance.now();
    const unique = [...new Set(texts.map((t) => `${t.slice(0, 120)}. ${t}`))];
    const vectors = new Map((await emb.embed(unique)).map((v, i) => [unique[i]!, encodeVector(v)]));
    console.log(`embedded ${unique.length} distinct insight texts in ${fmtMs(performance.now() - t0)}`);

    const now = Date.now();
    const workspaceId = randomUUID();
    const sources = Array.from({ length: SOURCES }, (_, i) => ({
      id: randomUUID(), workspace_id: workspaceId, source_type: "survey" as const, title: `Source ${i}`, file_name: `s${i}.csv`, file_key: `workspaces/${workspaceId}/sources/${i}`,
      file_type: "text/csv", file_kind: "csv", file_size_bytes: 1000, upload_method: "multipart" as const, processing_status: "completed" as const, created_by: "bench",
      // A third of the research is older than the stale threshold.
      created_at: new Date(now - (i % 3 === 0 ? 200 : 20) * 86_400_000).toISOString(),
    }));
    const severities = ["low", "medium", "high", "critical"] as const;
    const items = texts.map((text, i) => ({
      id: randomUUID(), workspace_id: workspaceId, insight_type: "pain_point", title: text.slice(0, 120), description: text,
      source_ids: [sources[i % SOURCES]!.id], quotes: [], severity: severities[i % 4]!, is_archived: false, origin: "synthesis",
      vector: vectors.get(`${text.slice(0, 120)}. ${text}`)!, embedder_id: emb.id,
    }));
    t0 = performance.now();
    await db().entities.researchSource.put(sources).go();
    for (let i = 0; i < items.length; i += 500) await db().entities.insight.put(items.slice(i, i + 500)).go();
    console.log(`stored ${N} insights and ${SOURCES} sources in ${fmtMs(performance.now() - t0)}`);

    await scanWorkspace(workspaceId, { trigger: "scheduled" }); // warm-up: wink's model, the JIT
    const scans = new Recorder();
    let last = await scanWorkspace(workspaceId, { trigger: "scheduled" });
    scans.record(last.scan.duration_ms);
    for (let r = 1; r < RUNS; r++) {
      last = await scanWorkspace(workspaceId, { trigger: "scheduled" });
      scans.record(last.scan.duration_ms);
    }
    const detect = new Recorder();
    const stale = new Recorder();
    const scanned = items.map((i) => ({ id: i.id, title: i.title, description: i.description, severity: i.severity, vector: decodeVector(i.vector) }));
    for (let r = 0; r < RUNS; r++) {
      let t = performance.now();
      findContradictions(scanned, { minSimilarity: EntropySettings.contradictionMinSimilarity() });
      detect.record(performance.now() - t);
      t = performance.now();
      findStaleSources(sources, items, new Date(), EntropySettings.staleSourceDays());
      stale.record(performance.now() - t);
    }

    // Cold: the same insights without stored vectors, in a workspace of their own.
    const coldWs = randomUUID();
    const coldItems = items.map(({ vector: _v, embedder_id: _e, ...rest }) => ({ ...rest, id: randomUUID(), workspace_id: coldWs }));
    for (let i = 0; i < coldItems.length; i += 500) await db().entities.insight.put(coldItems.slice(i, i + 500)).go();
    const cold = await scanWorkspace(coldWs, { trigger: "scheduled" });

    const s = scans.summary();
    const d = detect.summary();
    const st = stale.summary();
    printTable(
      ["operation", "n", "p50", "max"],
      [
        [`scanWorkspace, ${N} insights with stored vectors`, s.n, fmtMs(s.p50), fmtMs(s.max)],
        [`  contradiction detector alone (${N} insights)`, d.n, fmtMs(d.p50), fmtMs(d.max)],
        [`  stale-source detector alone (${SOURCES} sources)`, st.n, fmtMs(st.p50), fmtMs(st.max)],
        [`scanWorkspace, ${N} insights embedded during the scan`, 1, fmtMs(cold.scan.duration_ms), fmtMs(cold.scan.duration_ms)],
      ],
    );
    const byType = last.scan.by_type.map((t) => `${t.issue_type}/${t.severity} ${t.count}`).join(", ") || "none";
    console.log(`issues found: ${last.scan.issue_count} (${byType}); with vectors from ${last.scan.embedder_id ?? "no embedder"}`);
    const pairs = new Set(last.issues.filter((i) => i.issue_type === "contradictory_insights").map((i) => [...i.insight_ids].sort().join()));
    const planted = twins.filter(([a, b]) => pairs.has([items[a]!.id, items[b]!.id].sort().join())).length;
    console.log(`planted negated twins found: ${planted} of ${twins.length}; other pairs flagged: ${pairs.size - planted}`);
  } finally {
    await rt.stop();
  }
}
