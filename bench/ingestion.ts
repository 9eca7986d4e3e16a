/**
 * Ingestion benchmark (issue 3), in one run on the embedded runtime:
 * 1. PDF pages per second through the whole pipeline (upload -> S3 event -> state machine -> completed) versus
 *    unpdf called directly on the same files (the floor): one file at a time, and batches of 8 and 24; target:
 *    pipeline >= 0.8 of the floor, judged on the batch of 24 (steady-state throughput).
 * 2. OCR seconds per image (tesseract.js, the engine the pipeline runs), on the realdata screenshots.
 * 3. Wall time from upload to every source settled for the whole `jupyter` folder.
 *
 * The benchmark uploads more files than a trial workspace holds (25 sources), so its user first upgrades to the Power
 * plan (500 sources per workspace) through the simulated paid upgrade (bench/lib/billing.ts), as a customer would.
 * At the smoke size: the smallest PDF twice (one warm-up), a batch of one, OCR of the clean screenshot, and two small
 * files of the folder for part 3.
 */
import { readdir, readFile } from "node:fs/promises";
import { basename, extname, join } from "node:path";
import { extractText, getDocumentProxy } from "unpdf";
import { startBenchRuntime } from "./lib/runtime";
import { fmtMs, printTable } from "./lib/stats";
import { busyWarning, machineLine } from "./lib/machine";
import { simulatePaidUpgrade } from "./lib/billing";
import { isSmoke, sized, sizeNote } from "./lib/size";

const REALDATA = new URL("../../shared/realdata/", import.meta.url).pathname;
const MIME: Record<string, string> = {
  ".pdf": "application/pdf", ".docx": "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
  ".csv": "text/csv", ".json": "application/json", ".md": "text/markdown", ".vtt": "text/vtt", ".png": "image/png",
  ".wav": "audio/wav", ".mp3": "audio/mpeg",
};

/** Rounds per PDF in part 1 (the first warms both paths and is not recorded). */
const PDF_ROUNDS = sized(3, 2);
/** Copies of each PDF per batch in the throughput part: batches of 8 and 24 from the 2 PDFs; 1 at the smoke size. */
const BATCH_COPIES = sized([4, 12], [1]);
/** Which of the jupyter files each part uses at the smoke size (all of them at the full size). */
const SMOKE_PDF = /jupyter-org-redesign-heuristic-eval/;
const SMOKE_IMAGE = /jupyterlab-autosave-settings/;
const SMOKE_FOLDER = /JupyterDay-code-of-conduct\.docx$|jupyter-github-issues\.json$/;
const pick = (files: string[], smoke: RegExp) => (isSmoke() ? files.filter((f) => smoke.test(f)) : files);

async function filesUnder(dir: string): Promise<string[]> {
  const out: string[] = [];
  for (const e of await readdir(dir, { withFileTypes: true })) {
    const full = join(dir, e.name);
    if (e.isDirectory()) out.push(...(await filesUnder(full)));
    else if (MIME[extname(e.name)] && e.name !== "MANIFEST.md") out.push(full);
  }
  return out.sort();
}

export default async function ingestion(): Promise<void> {
  console.log(`ingestion benchmark — ${machineLine()}`);
  const warn = busyWarning();
  if (warn) console.log(warn);
  if (sizeNote()) console.log(sizeNote());
  // Parts 1 and 2 measure extraction alone: the Index step (embedding mentions for synthesis) is off. Part 3 runs
  // the pipeline as `npm start` does, with it on.
  process.env.MENTION_INDEXING = "off";
  const rt = await startBenchRuntime();
  try {
    const token = await rt.idp.sign({ email: "bench@example.com" });
    const auth = { authorization: `Bearer ${token}` };
    const json = async (method: string, path: string, body?: unknown) => {
      const res = await fetch(new URL(path, rt.base), { method, headers: { ...auth, ...(body ? { "content-type": "application/json" } : {}) }, body: body ? JSON.stringify(body) : undefined });
      if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${await res.text()}`);
      return res.json() as Promise<any>;
    };
    const ws = await json("POST", "/api/workspaces", { name: "bench ingestion" });
    // The benchmark uploads more files than a trial allows: upgrade to the Power plan (500 sources per workspace).
    const upgraded = await simulatePaidUpgrade(rt, { token, workspaceId: ws.id, plan: "power" });
    console.log(`plan: ${upgraded.plan} (${upgraded.status}) through the simulated paid upgrade (a signed Stripe webhook event)`);
    const upload = async (path: string) => {
      const data = await readFile(path);
      const form = new FormData();
      form.append("workspace_id", ws.id);
      form.append("source_type", "other");
      form.append("title", basename(path));
      form.append("file", new Blob([new Uint8Array(data)], { type: MIME[extname(path)] }), basename(path));
      const res = await fetch(new URL("/api/research/upload", rt.base), { method: "POST", headers: auth, body: form });
      if (!res.ok) throw new Error(`upload ${path}: ${res.status} ${await res.text()}`);
      return (await res.json()) as { id: string };
    };
    /**
     * Wait until every source in `ids` has settled, watching them as a client watches a folder: one list request
     * every 250 ms. When each settled is read off the source itself (`processed_at`, stamped by the write that
     * settles it), so the figure does not depend on the polling interval, and polling sparsely keeps the watcher's
     * own load off the 2 cores the pipeline runs on. Returns each source as listed, with the ms from `since`
     * (a `Date.now()`) to its `processed_at`.
     */
    const settleAll = async (ids: string[], since: number) => {
      const wanted = new Set(ids);
      const out = new Map<string, { source: any; at: number }>();
      while (out.size < ids.length) {
        await new Promise((r) => setTimeout(r, 250));
        const { sources } = await json("GET", `/api/research/sources?workspace_id=${ws.id}&limit=500`);
        for (const source of sources as { id: string; processing_status: string; processed_at: string }[]) {
          if (wanted.has(source.id) && source.processing_status !== "pending" && !out.has(source.id)) {
            out.set(source.id, { source, at: Date.parse(source.processed_at) - since });
          }
        }
      }
      return out;
    };
    /** Upload-to-settled ms of a batch: from `since` to the last `processed_at`. */
    const lastSettled = (settled: Map<string, { at: number }>) => Math.max(...[...settled.values()].map((s) => s.at));

    // 1. PDFs: pipeline vs unpdf directly, each file 3 times (PDF_ROUNDS), interleaved.
    const pdfs = pick((await filesUnder(join(REALDATA, "jupyter"))).filter((f) => f.endsWith(".pdf")), SMOKE_PDF);
    const rows: (string | number)[][] = [];
    let pipePages = 0, pipeMs = 0, floorPages = 0, floorMs = 0;
    for (const pdf of pdfs) {
      const bytes = await readFile(pdf);
      for (let i = 0; i < PDF_ROUNDS; i++) {
        const t0 = performance.now();
        const doc = await getDocumentProxy(new Uint8Array(bytes));
        const { totalPages } = await extractText(doc, { mergePages: false });
        const direct = performance.now() - t0;
        const t1 = Date.now();
        const { id } = await upload(pdf);
        const settled = await settleAll([id], t1);
        const { source } = settled.get(id)!;
        const piped = lastSettled(settled);
        if (source.processing_status !== "completed") throw new Error(`${pdf} ended ${source.processing_status}: ${source.processing_error}`);
        if (i === 0) continue; // first round warms both paths
        floorPages += totalPages; floorMs += direct; pipePages += source.pages; pipeMs += piped;
        rows.push([basename(pdf), totalPages, fmtMs(direct), fmtMs(piped)]);
      }
    }
    printTable(["PDF", "pages", "unpdf direct", "pipeline (upload->completed)"], rows);
    const floorRate = floorPages / (floorMs / 1000);
    const pipeRate = pipePages / (pipeMs / 1000);
    console.log(`PDF pages/s one file at a time (latency-bound): pipeline ${pipeRate.toFixed(1)}, unpdf direct ${floorRate.toFixed(1)}, ratio ${(pipeRate / floorRate).toFixed(2)}`);

    // Throughput: a batch of PDFs uploaded together, as a team uploads a research folder, and watched the way a
    // client watches a folder (settleAll). The pipeline runs executions concurrently, PDF.js in worker threads
    // (PDF_WORKERS, default 2 here). Floor as the target defines it: unpdf on the same files, one after another,
    // on this (warm) thread. Also shown: unpdf on the same number of worker threads, the like-for-like floor. Each
    // path runs the batch once untimed first, so every thread's PDF.js is compiled, as the floor thread's is by
    // part 1 (a cold PDF.js thread parses at about half speed). Two sizes: 8 files (filling and draining the
    // pipeline weigh in) and 24 (closer to steady state).
    const { pdfWorkerCount } = await import("../core/extract/pdf");
    const threads = Math.max(1, pdfWorkerCount());
    const { Piscina } = await import("piscina");
    const pipeline = async (batch: string[]) => {
      const since = Date.now();
      const uploaded = await Promise.all(batch.map((pdf) => upload(pdf)));
      const done = await settleAll(uploaded.map((u) => u.id), since);
      if ([...done.values()].some(({ source }) => source.processing_status !== "completed")) throw new Error("a PDF of the batch failed");
      return lastSettled(done);
    };
    for (const copies of BATCH_COPIES) {
      const steady = copies === 12; // the batch the target is judged on (bench/README.md)
      const batch = pdfs.flatMap((p) => Array.from({ length: copies }, () => p));
      const batchBytes = await Promise.all(batch.map((p) => readFile(p)));
      let batchPages = 0;
      let t = performance.now();
      for (const bytes of batchBytes) {
        const { totalPages } = await extractText(await getDocumentProxy(new Uint8Array(bytes)), { mergePages: false });
        batchPages += totalPages;
      }
      const floorBatch = batchPages / ((performance.now() - t) / 1000);
      const pool = new Piscina({ filename: new URL("../core/extract/pdf-worker.mjs", import.meta.url).href, minThreads: threads, maxThreads: threads });
      await Promise.all(batchBytes.map((b) => pool.run(new Uint8Array(b)))); // warm-up
      t = performance.now();
      await Promise.all(batchBytes.map((b) => pool.run(new Uint8Array(b))));
      const floorThreads = batchPages / ((performance.now() - t) / 1000);
      await pool.destroy();
      await pipeline(batch); // warm-up
      const pipeBatch = batchPages / ((await pipeline(batch)) / 1000);
      console.log(
        `PDF pages/s for a batch of ${batch.length} (throughput): pipeline ${pipeBatch.toFixed(1)}, unpdf direct ${floorBatch.toFixed(1)}, ` +
          `ratio ${(pipeBatch / floorBatch).toFixed(2)}${steady ? " (target >= 0.80)" : ""}; unpdf on ${threads} threads ${floorThreads.toFixed(1)}, ratio ${(pipeBatch / floorThreads).toFixed(2)}`,
      );
    }
    console.log("");

    // 2. OCR seconds per image, through the engine the pipeline uses.
    const { ocrImage } = await import("../core/extract/ocr");
    const { shutdownEngines } = await import("../core/extract");
    const images = pick((await filesUnder(join(REALDATA, "jupyter"))).filter((f) => f.endsWith(".png")), SMOKE_IMAGE);
    const ocrRows: (string | number)[][] = [];
    for (const image of images) {
      const bytes = await readFile(image);
      await ocrImage(bytes, "image/png").catch(() => undefined); // warm the worker
      const t0 = performance.now();
      const result = await ocrImage(bytes, "image/png").then((r) => `${r.extracted_text.length} chars`, (e: Error) => `failed: ${e.message.slice(0, 60)}`);
      ocrRows.push([basename(image), `${((performance.now() - t0) / 1000).toFixed(2)} s`, result]);
    }
    await shutdownEngines();
    printTable(["image", "OCR time", "result"], ocrRows);

    // 3. The whole jupyter folder, uploaded at once, as `npm start` runs it: each source's mentions are embedded
    // (the Index step) after it completes, in the background, while later files are still being extracted. Timed:
    // upload to every source settled (completed or failed), then to every completed source indexed for synthesis.
    delete process.env.MENTION_INDEXING;
    const all = pick(await filesUnder(join(REALDATA, "jupyter")), SMOKE_FOLDER);
    const t0 = Date.now();
    const ids = await Promise.all(all.map(async (f) => ({ f, id: (await upload(f)).id })));
    const done = await settleAll(ids.map(({ id }) => id), t0);
    const settled = ids.map(({ f, id }) => ({ f, s: done.get(id)!.source, at: done.get(id)!.at }));
    const wall = lastSettled(done);
    printTable(
      ["jupyter source", "status", "chars", "settled after"],
      settled.map(({ f, s, at }) => [basename(f), s.processing_status, s.char_count ?? "-", fmtMs(at)]),
    );
    const completed = new Set(settled.filter(({ s }) => s.processing_status === "completed").map(({ s }) => s.id as string));
    for (;;) {
      const { sources } = await json("GET", `/api/research/sources?workspace_id=${ws.id}&limit=500`);
      if ((sources as { id: string; indexed: boolean }[]).every((s) => !completed.has(s.id) || s.indexed)) break;
      await new Promise((r) => setTimeout(r, 250));
    }
    const indexedAfter = Date.now() - t0;
    console.log(
      `jupyter folder: ${all.length} files, upload to all settled ${(wall / 1000).toFixed(1)} s ` +
        `(mentions embedded in the background); all ${completed.size} completed sources indexed for synthesis after ${(indexedAfter / 1000).toFixed(1)} s`,
    );
    const { drainLocalWorkflows } = await import("../local/pipeline");
    await drainLocalWorkflows();
  } finally {
    await rt.stop();
  }
}
