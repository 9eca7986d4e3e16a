/**
 * Delivery benchmark: revision diff statistics on two 5,000-line revisions, and the local delivery engines
 * (recommendation generation, drafting of all six document types, block extraction, block actions) on the
 * realistic VA insight set (test/fixtures/bedrock-delivery/va-insights.json: 24 insights with verbatim quotes from
 * shared/realdata/va-mobile-app) and on a 40-insight set (the 24 plus 16 reworded near-duplicates).
 *
 *   npm run bench -- delivery      (or: npx tsx bench/delivery.ts)
 *
 * CPU only, in this process, no I/O inside timed sections. Each figure is the latency distribution of repeated calls
 * after a warm-up; on a busy machine (load above the CPU count) read the min column. Targets: diff p99 < 100 ms per 5,000-line pair; generate p99 < 200 ms; draft p99 < 200 ms.
 */
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { diffStats } from "../core/document/diff";
import { draftDocument } from "../core/document/engine/local";
import { challengeBlock, expandBlock, simulateBlock } from "../core/document/engine/actions";
import { DocumentType } from "../core/document/engine/types";
import { extractBlocks } from "../core/document/markdown";
import { generateRecommendations } from "../core/recommendation/engine/local";
import type { InsightInput } from "../core/recommendation/engine/types";
import { Recorder, fmtMs, printTable, type Summary } from "./lib/stats";
import { busyWarning, machineLine } from "./lib/machine";
import { sized, sizeNote } from "./lib/size";

const ITER = sized(40, 2);
const WARMUP = sized(5, 1);
/** Lines of each revision in the diff figures (the targets are per 5,000-line pair). */
const LINES = sized(5000, 500);
const LINES_LABEL = LINES.toLocaleString("en-US");
const LOOP_DEADLINE_MS = 60_000;

function time(fn: () => unknown, iter = ITER): Summary {
  for (let i = 0; i < WARMUP; i++) fn();
  const r = new Recorder();
  const deadline = performance.now() + LOOP_DEADLINE_MS;
  for (let i = 0; i < iter && performance.now() < deadline; i++) {
    const t = performance.now();
    fn();
    r.record(performance.now() - t);
  }
  return r.summary();
}

const row = (name: string, s: Summary, target?: number): (string | number)[] => [
  name,
  s.n,
  fmtMs(s.min),
  fmtMs(s.p50),
  fmtMs(s.p90),
  fmtMs(s.p99),
  fmtMs(s.max),
  target === undefined ? "" : s.p99 < target ? `< ${target} ok` : `> ${target} MISSED`,
];

function loadInsights(): InsightInput[] {
  const path = fileURLToPath(new URL("../test/fixtures/bedrock-delivery/va-insights.json", import.meta.url));
  return JSON.parse(readFileSync(path, "utf8")) as InsightInput[];
}

/** 16 reworded near-duplicates of the first insights, as a second synthesis run might produce. */
function forty(base: InsightInput[]): InsightInput[] {
  const extra = base.slice(0, 16).map((i, k) => ({
    ...i,
    id: `${i.id.slice(0, -4)}${String(9000 + k)}`,
    title: `${i.title} (again in follow-up research)`,
    description: `Follow-up: ${i.description}`,
    severity: (["low", "medium", "high", "critical"] as const)[k % 4],
    frequency: 1 + (k % 3),
    quotes: i.quotes.slice(0, 1),
  }));
  return [...base, ...extra];
}

/** A realistic 5,000-line Markdown revision: drafted PRD sections repeated with numbered variations. */
function bigDoc(seedContent: string, lines = LINES): string[] {
  const src = seedContent.split("\n");
  const out: string[] = [];
  for (let i = 0; out.length < lines; i++) {
    const l = src[i % src.length];
    out.push(l.trim() === "" || /^\s*\|?-+/.test(l) ? l : `${l} (${Math.floor(i / src.length)})`);
  }
  return out;
}

function mutate(lines: string[], every: number, tag: string): string {
  return lines.map((l, i) => (i % every === 0 && l.trim() ? `${l} — ${tag} ${i}` : l)).join("\n") + "\n";
}

export default async function delivery(): Promise<void> {
  console.log(`delivery benchmark — ${machineLine()}`);
  const warn = busyWarning();
  if (warn) console.log(warn);
  if (sizeNote()) console.log(sizeNote());

  const insights = loadInsights();
  const insights40 = forty(insights);
  const rec = generateRecommendations({ insights }).recommendations[0];
  const prd = draftDocument({ document_type: "prd", recommendation: rec, insights });

  // Diff: two 5,000-line revisions (LINES).
  const base = bigDoc(prd.content);
  const baseText = base.join("\n") + "\n";
  const small = mutate(base, 100, "edited");
  const heavy = mutate(base, 3, "rewritten");
  const rewrite = base.map((l, i) => `${l.split(" ").reverse().join(" ")} ${i}`).join("\n") + "\n";
  const half = Math.floor(base.length / 2);
  const moved = [...base.slice(half), ...base.slice(0, half)].join("\n") + "\n";
  const diffRows = [
    row(`diff ${LINES_LABEL} lines: 1% lines edited`, time(() => diffStats(baseText, small)), 100),
    row(`diff ${LINES_LABEL} lines: 33% lines edited`, time(() => diffStats(baseText, heavy)), 100),
    row(`diff ${LINES_LABEL} lines: full rewrite`, time(() => diffStats(baseText, rewrite)), 100),
    row(`diff ${LINES_LABEL} lines: halves swapped`, time(() => diffStats(baseText, moved), sized(10, 2)), 1000),
  ];
  for (const [name, t] of [["1% edited", small], ["33% edited", heavy], ["full rewrite", rewrite], ["halves swapped", moved]] as const) {
    const st = diffStats(baseText, t);
    console.log(`diff stats, ${name}: additions ${st.additions}, deletions ${st.deletions}, changes ${st.changes}`);
  }

  // Engines.
  const engineRows = [
    row(`generate: ${insights.length} insights`, time(() => generateRecommendations({ insights })), 200),
    row(`generate: ${insights40.length} insights`, time(() => generateRecommendations({ insights: insights40 })), 200),
    row(`generate: ${insights40.length} insights + focus areas`, time(() => generateRecommendations({ insights: insights40, focus_areas: ["sign-in", "prescriptions"] })), 200),
  ];
  for (const type of DocumentType.options) {
    engineRows.push(row(`draft ${type} (${insights.length} insights)`, time(() => draftDocument({ document_type: type, recommendation: rec, insights })), 200));
  }
  engineRows.push(row(`draft prd, no recommendation (${insights40.length} insights)`, time(() => draftDocument({ document_type: "prd", insights: insights40 })), 200));
  const blocks = extractBlocks(prd.content);
  engineRows.push(row(`extractBlocks: drafted PRD (${prd.content.split("\n").length} lines)`, time(() => extractBlocks(prd.content)), 50));
  engineRows.push(row(`extractBlocks: ${LINES_LABEL}-line document`, time(() => extractBlocks(baseText), sized(10, 2)), 1000));
  const ctx = blocks.map((b) => ({ ...b }));
  engineRows.push(row(`expand: all ${blocks.length} PRD blocks`, time(() => ctx.forEach((b) => expandBlock(b, ctx, insights))), 200));
  engineRows.push(row(`challenge: all ${blocks.length} PRD blocks`, time(() => ctx.forEach((b) => challengeBlock(b, ctx, insights))), 200));
  engineRows.push(row(`simulate: all ${blocks.length} PRD blocks`, time(() => ctx.forEach((b) => simulateBlock(b, ctx, insights))), 200));

  const headers = ["operation", "n", "min ms", "p50 ms", "p90 ms", "p99 ms", "max ms", "target p99 ms"];
  console.log("\nRevision diff (core/document/diff.ts)");
  printTable(headers, diffRows);
  console.log("\nLocal engines (core/recommendation/engine/local.ts, core/document/engine/local.ts, actions.ts, markdown.ts)");
  printTable(headers, engineRows);
  const missed = [...diffRows, ...engineRows].filter((r) => String(r[7]).includes("MISSED"));
  console.log(missed.length ? `\n${missed.length} target(s) missed.` : "\nAll targets met.");
  const warnEnd = busyWarning();
  console.log(`end: ${machineLine()}${warnEnd ? `\n${warnEnd}` : ""}`);
}

if (import.meta.url === `file://${process.argv[1]}`) {
  delivery().catch((e) => {
    console.error(e);
    process.exit(1);
  });
}
