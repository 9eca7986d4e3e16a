/**
 * Ingestion flow on the real data (../shared/realdata): every file of every folder goes through
 * `POST /api/research/upload` (multipart, as a browser sends it) into one workspace per folder, the S3 event starts
 * the local Step Functions runner on the real extraction definition, and each source reaches a terminal state.
 *
 * This is the one test file that runs the slow engines (tesseract OCR on the two PNGs, pocketsphinx on the WAV and
 * MP3): each real file is ingested once, in `beforeAll`, and every assertion below reads that shared result.
 * Covers: spec 01 Research source / Research source processing / `POST /api/research/upload` /
 * `GET /api/research/sources[/{id}]` for PDF, DOCX, CSV, Markdown, JSON, WebVTT, PNG, WAV and MP3.
 */
import { readdir, readFile } from "node:fs/promises";
import { join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { shutdownEngines } from "../../core/extract";
import { findSpeechTools } from "../../core/extract/speech";
import { call, newWorkspace } from "../support/api";
import { multipart, waitFor } from "../support/multipart";

// Audio is optional at runtime: without ffmpeg and pocketsphinx (the runtime's own detection) the recordings are not
// uploaded and the audio test is skipped, with the install line as the note; .ci/run installs them, so CI runs it.
const speechMissing = await findSpeechTools().then(() => undefined, (err: Error) => err.message);
if (speechMissing) console.warn(`Audio tests skipped. ${speechMissing}`);
const isRecording = (path: string) => /\.(wav|mp3)$/.test(path);

const REALDATA = fileURLToPath(new URL("../../../shared/realdata/", import.meta.url));

/** What a browser declares for each extension. */
const BROWSER_TYPES: Record<string, string> = {
  pdf: "application/pdf",
  docx: "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
  csv: "text/csv",
  md: "text/markdown",
  json: "application/json",
  vtt: "text/vtt",
  png: "image/png",
  wav: "audio/wav",
  mp3: "audio/mpeg",
  txt: "text/plain",
};

/** source_type by where the file sits in its folder. */
function sourceTypeOf(path: string): string {
  if (/surveys\//.test(path)) return "survey";
  if (/support-tickets\//.test(path)) return "support_ticket";
  if (/reviews/.test(path)) return "feedback";
  if (/transcript|interview|usability|\.vtt$|\.wav$|\.mp3$/.test(path)) return "interview";
  return "other";
}

interface Ingested {
  path: string;
  id: string;
  source: any;
  seconds: number;
}

async function filesOf(folder: string): Promise<string[]> {
  const entries = await readdir(join(REALDATA, folder), { recursive: true, withFileTypes: true });
  return entries
    .filter((e) => e.isFile())
    .map((e) => relative(REALDATA, join(e.parentPath, e.name)))
    .sort();
}

/**
 * Upload order. The local runner runs two executions at a time, first come first served: the quick text formats
 * go first (a second or two in all), then the slow ones longest first, so the two lanes finish close together.
 */
const weight = (path: string) => (/\.(mp3|wav)$/.test(path) ? 1 : /magnified/.test(path) ? 2 : /\.png$/.test(path) ? 3 : /\.pdf$/.test(path) ? 4 : 0);

const results = new Map<string, Ingested>();
const workspaces = new Map<string, { token: string; id: string; files: string[] }>();
let wallSeconds = 0;

/** The ingested source of a realdata file, by its path under realdata/. */
const ingested = (path: string): Ingested => {
  const r = results.get(path);
  if (!r) throw new Error(`${path} was not ingested`);
  return r;
};

/** Distinct lower-case words of three letters or more. */
const words = (text: string) => new Set((text.toLowerCase().match(/[a-z']{3,}/g) ?? []).map((w) => w.replace(/'/g, "")));

beforeAll(async () => {
  const started = Date.now();
  const folders = ["audio", "jupyter", "va-mobile-app"];
  for (const folder of folders) {
    const { owner, workspace } = await newWorkspace(`realdata ${folder}`);
    workspaces.set(folder, { token: owner.token, id: workspace.id, files: await filesOf(folder) });
  }
  const uploads = [...workspaces.values()]
    .flatMap((ws) => ws.files.map((path) => ({ ws, path })))
    .filter(({ path }) => !(speechMissing && isRecording(path)))
    .sort((a, b) => weight(a.path) - weight(b.path));
  for (const { ws, path } of uploads) {
    const ext = path.split(".").pop()!.toLowerCase();
    const data = await readFile(join(REALDATA, path));
    const form = await multipart(
      { workspace_id: ws.id, source_type: sourceTypeOf(path), title: path },
      { name: path.split("/").pop()!, type: BROWSER_TYPES[ext] ?? "application/octet-stream", data },
    );
    const res = await call("POST", "/api/research/upload", { token: ws.token, raw: form });
    if (res.status !== 201) throw new Error(`upload of ${path} answered ${res.status}: ${res.text}`);
    results.set(path, { path, id: res.body.id, source: res.body, seconds: 0 });
  }
  await Promise.all(
    uploads.map(async ({ ws, path }) => {
      const r = results.get(path)!;
      r.source = await waitFor(async () => {
        const res = await call("GET", `/api/research/sources/${r.id}`, { token: ws.token });
        return res.body.processing_status !== "pending" ? res.body : undefined;
      }, 240_000, 200);
      r.seconds = (Date.parse(r.source.processed_at) - Date.parse(r.source.created_at)) / 1000;
    }),
  );
  wallSeconds = (Date.now() - started) / 1000;
  for (const r of [...results.values()].sort((a, b) => a.path.localeCompare(b.path))) {
    const s = r.source;
    console.log(
      `[ingest] ${s.file_type.padEnd(24).slice(0, 24)} ${s.processing_status.padEnd(9)} ${String(s.char_count ?? 0).padStart(7)} chars ${r.seconds.toFixed(1).padStart(6)} s  ${r.path}` +
        (s.processing_error ? `  (${s.processing_error})` : ""),
    );
  }
  console.log(`[ingest] ${results.size} sources in ${wallSeconds.toFixed(1)} s wall time`);
}, 300_000);

// The OCR worker thread would otherwise keep this test process alive.
afterAll(() => shutdownEngines());

describe("ingesting the real data through POST /api/research/upload", () => {
  it("the whole jupyter folder reaches a terminal state, listed in its workspace", async () => {
    const ws = workspaces.get("jupyter")!;
    expect(ws.files.length).toBeGreaterThanOrEqual(13);
    for (const path of ws.files) expect(["completed", "failed"]).toContain(ingested(path).source.processing_status);
    const list = await call("GET", "/api/research/sources", { token: ws.token, query: { workspace_id: ws.id } });
    expect(list.status).toBe(200);
    expect(list.body.total).toBe(ws.files.length);
    expect(list.body.sources.every((s: any) => s.processing_status !== "pending")).toBe(true);
    // Everything but the hard OCR capture extracts text.
    const failed = ws.files.filter((p) => ingested(p).source.processing_status === "failed");
    expect(failed.filter((p) => !/magnified/.test(p))).toEqual([]);
  });

  it("every source of every folder ends completed (bar the hard OCR case), with figures and processed_at", () => {
    for (const r of results.values()) {
      if (/magnified/.test(r.path)) continue;
      expect(r.source.processing_status, `${r.path}: ${r.source.processing_error}`).toBe("completed");
      expect(r.source.processing_error).toBeNull();
      expect(r.source.char_count).toBe(r.source.extracted_text.length);
      expect(r.source.unit_count).toBeGreaterThan(0);
      expect(r.source.processed_at).toBeTruthy();
      expect(r.source.file_url).toMatch(new RegExp(`^workspaces/${r.source.workspace_id}/sources/${r.id}/original/`));
    }
  });

  it("PDF: both reports, with their page counts and text", () => {
    const proposal = ingested("jupyter/docs/czi-eoss-jupyter-accessibility-proposal.pdf").source;
    expect(proposal.file_type).toBe("application/pdf");
    expect(proposal.pages).toBe(42);
    expect(proposal.extracted_text).toContain("Inclusive and Accessible Scientific Computing in the Jupyter Ecosystem");
    expect(proposal.char_count).toBeGreaterThan(40_000);
    const report = ingested("jupyter/docs/jupyter-org-redesign-heuristic-eval-competitive-analysis.pdf").source;
    expect(report.pages).toBe(15);
    expect(report.extracted_text).toContain("Heuristic Evaluation & Competitive Analysis");
    expect(report.transcript).toBeNull();
  });

  it("DOCX: the code of conduct's text", () => {
    const doc = ingested("jupyter/docs/JupyterDay-code-of-conduct.docx").source;
    expect(doc.file_type).toBe(BROWSER_TYPES.docx);
    expect(doc.extracted_text).toContain("JupyterDay Code of Conduct");
    expect(doc.extracted_text).toContain("Project Jupyter is an engaged and respectful community");
    expect(doc.char_count).toBeGreaterThan(3000);
  });

  it("CSV: the three surveys and the app-store reviews, one mention per free-text answer", () => {
    const ux2015 = ingested("jupyter/surveys/2015-notebook-ux-survey-export.csv").source;
    expect(ux2015.extracted_text).toContain("What, if anything, hinders you from making Jupyter Notebook an even more regular part of your workflow?");
    expect(ux2015.unit_count).toBeGreaterThan(5000);
    const y2020 = ingested("jupyter/surveys/2020-jupyter-survey-text_fields.csv").source;
    expect(y2020.extracted_text).toContain("What languages do you use in Jupyter?");
    expect(y2020.unit_count).toBeGreaterThan(1000);
    const binder = ingested("jupyter/surveys/mybinder-user-survey-feb-2020.csv").source;
    expect(binder.extracted_text).toContain("If you could change one thing about Binder, what would it be?");
    expect(binder.unit_count).toBeGreaterThan(100);
    const reviews = ingested("va-mobile-app/app-store-reviews-2024-05-partial.csv").source;
    expect(reviews.extracted_text).toContain("facial recognition");
    // 70 reviews and their 70 star ratings (answers to a closed question, counted rather than quoted: issue #11).
    expect(reviews.unit_count).toBe(70 + 70);
    for (const s of [ux2015, y2020, binder, reviews]) expect(s.file_type).toBe("text/csv");
  });

  it("Markdown: podcast transcript (with a transcript), usability results, survey README, interview notes", () => {
    const podcast = ingested("jupyter/transcripts/practical-ai-74-tania-allard-jupyter-notebooks.md").source;
    expect(podcast.file_type).toBe("text/markdown");
    expect(podcast.extracted_text).toContain("Daniel Whitenack: Alright, welcome to another episode of Practical AI.");
    expect(podcast.transcript).toContain("Tania Allard");
    const usability = ingested("jupyter/usability-research/2023-05-jupyterlab-accessibility-usability-results.md").source;
    expect(usability.extracted_text).toContain("Results: JupyterLab Accessibility Overview");
    expect(usability.extracted_text).not.toMatch(/^#/m);
    const readme = ingested("jupyter/surveys/2015-notebook-ux-survey-README.md").source;
    expect(readme.extracted_text).toContain("Jupyter Notebook UX Survey");
    for (const n of [10, 11]) {
      const notes = ingested(`va-mobile-app/interview-notes/2023-07-retention-study-participant-${n}.md`).source;
      expect(notes.extracted_text).toContain("VA Mobile App User Retention");
      expect(notes.extracted_text).not.toContain("**");
    }
  });

  it("JSON: the GitHub issue threads, one mention per comment", () => {
    const issues = ingested("jupyter/support-tickets/jupyter-github-issues.json").source;
    expect(issues.file_type).toBe("application/json");
    expect(issues.extracted_text).toContain("jupyterlab/jupyterlab#443");
    expect(issues.unit_count).toBe(41);
  });

  it("WebVTT: the 64-minute interview becomes a timed, speaker-labelled transcript to its last cue", () => {
    const vtt = ingested("va-mobile-app/P16-home-screen-evaluative-research-2024-04.transcript.vtt").source;
    expect(vtt.file_type).toBe("text/vtt");
    expect(vtt.transcript).toContain("[00:00:03.629] Perigean: Okay once more for the recording");
    expect(vtt.transcript).toContain("P16: Yes, it is.");
    expect(vtt.transcript).toMatch(/\[01:03:\d\d\.\d{3}\] Perigean: /);
    expect(vtt.transcript).toContain("You can use that your same.");
    expect(vtt.extracted_text).not.toContain("-->");
  });

  it("PNG: OCR of the clean screenshot finds the settings it shows", () => {
    const png = ingested("jupyter/images/jupyterlab-autosave-settings.png").source;
    expect(png.file_type).toBe("image/png");
    expect(png.extracted_text).toContain("Document Manager");
    expect(png.extracted_text).toMatch(/Autosave/);
  });

  it("PNG: the hard magnified capture crashes nothing and ends completed with text or failed with a reason", () => {
    const hard = ingested("jupyter/images/notebooks-for-all-magnified-session-screenshot.png").source;
    if (hard.processing_status === "completed") {
      expect(hard.extracted_text.trim().length).toBeGreaterThan(0);
    } else {
      expect(hard.processing_status).toBe("failed");
      expect(hard.processing_error).toMatch(/\w{4,}/);
      expect(hard.extracted_text).toBeNull();
    }
  });

  it("WAV and MP3: the JFK clip's transcript shares words with the reference transcript", async (ctx) => {
    ctx.skip(speechMissing !== undefined, speechMissing);
    const reference = words(await readFile(join(REALDATA, "audio/jfk.reference-transcript.txt"), "utf8"));
    for (const path of ["audio/jfk.wav", "audio/jfk.mp3"]) {
      const audio = ingested(path).source;
      expect(audio.file_type).toBe(path.endsWith(".wav") ? "audio/wav" : "audio/mpeg");
      expect(audio.transcript).toMatch(/^\[00:00:\d\d\.\d{3}\] /);
      const shared = [...words(audio.transcript)].filter((w) => reference.has(w));
      expect(shared.length, `${path}: ${audio.transcript}`).toBeGreaterThanOrEqual(4);
    }
    expect(words(ingested("audio/jfk.wav").source.transcript).has("country")).toBe(true);
  });

  it("the reference transcript itself is ingested as plain text", () => {
    const txt = ingested("audio/jfk.reference-transcript.txt").source;
    expect(txt.file_type).toBe("text/plain");
    expect(txt.extracted_text).toContain("ask not what your country can do for you");
  });
});
