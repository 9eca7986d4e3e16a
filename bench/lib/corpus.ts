/**
 * A research corpus of any size generated from ../shared/realdata (issue #24 point 4), for ingestion at scale.
 *
 * Text sources (Markdown notes, transcripts in Markdown and WebVTT, survey and review CSVs, issue threads in JSON,
 * plain text) are *variants* of the real files: each takes a seeded, in-order sample of the original's segments
 * (blocks, cues, rows, issues and comments), so every variant is real human text, differs from the others (no two
 * uploads are byte-identical) and stays parseable by the same extractor as the original. Text kinds come in the
 * proportions the real folders have (one share per real file). Binary kinds (PDF, DOCX, PNG, audio) cannot be varied
 * without rewriting their formats, so a fixed few copies of the real files are added, enough that every extractor
 * runs (pdf, docx, OCR, speech); the images are mostly the clean screenshot, one the hard one.
 *
 * Deterministic: the same `seed` and `count` give the same files, in the same (shuffled, folder-like) order.
 */
import { readFileSync } from "node:fs";
import { basename, extname } from "node:path";
import Papa from "papaparse";

const REALDATA = new URL("../../../shared/realdata/", import.meta.url).pathname;

export type CorpusKind = "markdown" | "transcript-md" | "vtt" | "survey-csv" | "reviews-csv" | "tickets-json" | "text" | "pdf" | "docx" | "image" | "audio";

/** One generated source file. */
export interface CorpusFile {
  /** File name as uploaded (unique within a corpus). */
  name: string;
  kind: CorpusKind;
  /** MIME type as a browser would send it. */
  mime: string;
  /** The spec's source_type of the upload. */
  sourceType: "interview" | "support_ticket" | "survey" | "feedback" | "other";
  bytes: Buffer;
  /** The realdata file it was made from (path under realdata/). */
  from: string;
}

interface Template {
  path: string;
  kind: CorpusKind;
  mime: string;
  sourceType: CorpusFile["sourceType"];
}

/**
 * Every real text file (MANIFESTs and READMEs about the folders left out): one share each of the text sources. In an
 * order where any first few are of different kinds (the smoke size takes the first five).
 */
const TEXT_TEMPLATES: Template[] = [
  { path: "va-mobile-app/interview-notes/2023-07-retention-study-participant-10.md", kind: "markdown", mime: "text/markdown", sourceType: "interview" },
  { path: "va-mobile-app/P16-home-screen-evaluative-research-2024-04.transcript.vtt", kind: "vtt", mime: "text/vtt", sourceType: "interview" },
  { path: "jupyter/surveys/mybinder-user-survey-feb-2020.csv", kind: "survey-csv", mime: "text/csv", sourceType: "survey" },
  { path: "va-mobile-app/app-store-reviews-2024-05-partial.csv", kind: "reviews-csv", mime: "text/csv", sourceType: "feedback" },
  { path: "jupyter/support-tickets/jupyter-github-issues.json", kind: "tickets-json", mime: "application/json", sourceType: "support_ticket" },
  { path: "audio/jfk.reference-transcript.txt", kind: "text", mime: "text/plain", sourceType: "other" },
  { path: "jupyter/usability-research/2023-05-jupyterlab-accessibility-usability-results.md", kind: "markdown", mime: "text/markdown", sourceType: "other" },
  { path: "jupyter/surveys/2015-notebook-ux-survey-export.csv", kind: "survey-csv", mime: "text/csv", sourceType: "survey" },
  { path: "jupyter/transcripts/practical-ai-74-tania-allard-jupyter-notebooks.md", kind: "transcript-md", mime: "text/markdown", sourceType: "interview" },
  { path: "va-mobile-app/interview-notes/2023-07-retention-study-participant-11.md", kind: "markdown", mime: "text/markdown", sourceType: "interview" },
  { path: "jupyter/surveys/2020-jupyter-survey-text_fields.csv", kind: "survey-csv", mime: "text/csv", sourceType: "survey" },
  { path: "jupyter/surveys/2015-notebook-ux-survey-README.md", kind: "markdown", mime: "text/markdown", sourceType: "survey" },
];

/** The binary files, with how many copies a 500-source corpus holds of each (a few: they cannot be varied). */
const BINARY_TEMPLATES: (Template & { copies: number })[] = [
  { path: "jupyter/docs/czi-eoss-jupyter-accessibility-proposal.pdf", kind: "pdf", mime: "application/pdf", sourceType: "other", copies: 3 },
  { path: "jupyter/docs/jupyter-org-redesign-heuristic-eval-competitive-analysis.pdf", kind: "pdf", mime: "application/pdf", sourceType: "other", copies: 3 },
  { path: "jupyter/docs/JupyterDay-code-of-conduct.docx", kind: "docx", mime: "application/vnd.openxmlformats-officedocument.wordprocessingml.document", sourceType: "other", copies: 3 },
  { path: "jupyter/images/jupyterlab-autosave-settings.png", kind: "image", mime: "image/png", sourceType: "other", copies: 3 },
  { path: "jupyter/images/notebooks-for-all-magnified-session-screenshot.png", kind: "image", mime: "image/png", sourceType: "other", copies: 1 },
  { path: "audio/jfk.wav", kind: "audio", mime: "audio/wav", sourceType: "interview", copies: 1 },
  { path: "audio/jfk.mp3", kind: "audio", mime: "audio/mpeg", sourceType: "interview", copies: 1 },
];

/** mulberry32: a small seeded PRNG, so a corpus is the same on every run. */
function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/**
 * An in-order sample of `items`: a contiguous window (what one session, one export page covers) of a share between
 * `min` and `max` of them, at least `floor` items. The window starts anywhere, so variants cover the whole file.
 */
function window<T>(items: T[], rand: () => number, min: number, max: number, floor = 1): T[] {
  const n = Math.min(items.length, Math.max(floor, Math.round(items.length * (min + rand() * (max - min)))));
  const start = Math.floor(rand() * (items.length - n + 1));
  return items.slice(start, start + n);
}

const cache = new Map<string, Buffer>();
const real = (path: string): Buffer => {
  let bytes = cache.get(path);
  if (!bytes) cache.set(path, (bytes = readFileSync(REALDATA + path)));
  return bytes;
};

/**
 * One variant of a real text file. Shares are chosen so a variant is a source of ordinary size (a few KB to a few
 * tens of KB: one interview, one survey page, a handful of threads), not a copy of the largest exports.
 */
function variant(t: Template, random: () => number, small: boolean): string {
  // Small: the least share of every window, from the file's start (a run of seconds).
  const rand = small ? () => 0 : random;
  const text = real(t.path).toString("utf8");
  switch (t.kind) {
    case "markdown":
    case "transcript-md": {
      // Blocks separated by blank lines; the first (title) is kept so each note reads as a document.
      const blocks = text.split(/\n{2,}/);
      const share = t.kind === "transcript-md" ? [0.1, 0.3] : [0.4, 0.9];
      return [blocks[0]!, ...window(blocks.slice(1), rand, share[0]!, share[1]!, 3)].join("\n\n") + "\n";
    }
    case "vtt": {
      const cues = text.replace(/^WEBVTT[^\n]*\n+/, "").split(/\n{2,}/).filter((c) => c.trim());
      return `WEBVTT\n\n${window(cues, rand, 0.08, 0.25, 10).join("\n\n")}\n`;
    }
    case "survey-csv":
    case "reviews-csv": {
      // Papaparse both ways: answers hold quotes, commas and newlines.
      const rows = Papa.parse<string[]>(text, { skipEmptyLines: "greedy" }).data;
      const [header, ...data] = rows;
      // The 2015 export is 766 KB: a page of it; the small files: most of their rows.
      const share = text.length > 300_000 ? [0.01, 0.04] : text.length > 100_000 ? [0.05, 0.15] : [0.3, 0.8];
      return Papa.unparse([header!, ...window(data, rand, share[0]!, share[1]!, 5)]) + "\n";
    }
    case "tickets-json": {
      const doc = JSON.parse(text) as { issues: { comments: unknown[] }[] };
      const issues = window(doc.issues, rand, 0.3, 0.8, 2).map((issue) => ({ ...issue, comments: window(issue.comments, rand, 0.5, 1, 1) }));
      return JSON.stringify({ ...doc, issues }, null, 2);
    }
    case "text": {
      // The only real plain-text file is one sentence long; plain-text notes are made of the podcast transcript's
      // prose (its Markdown removed), as a researcher's pasted notes would be.
      const prose = real("jupyter/transcripts/practical-ai-74-tania-allard-jupyter-notebooks.md")
        .toString("utf8")
        .split(/\n{2,}/)
        .map((p) => p.replace(/[#*_`>[\]]/g, "").replace(/\(https?:[^)]*\)/g, "").trim())
        .filter((p) => p.length > 40);
      return [real(t.path).toString("utf8").trim(), ...window(prose, rand, 0.03, 0.1, 3)].join("\n\n") + "\n";
    }
    default:
      throw new Error(`no variant for ${t.kind}`);
  }
}

const EXT: Partial<Record<CorpusKind, string>> = { "transcript-md": ".md", markdown: ".md", vtt: ".vtt", "survey-csv": ".csv", "reviews-csv": ".csv", "tickets-json": ".json", text: ".txt" };

/**
 * Generate `count` source files.
 * @param opts.binaries include the few PDF, DOCX, image and audio copies (19 of 500, at least one of each file, part
 *   of the `count`); default true.
 * @param opts.seed PRNG seed (default 24).
 * @param opts.small every text variant at its smallest share (the smoke size).
 * @returns the files in upload order (shuffled, as a folder of mixed files).
 */
export function generateCorpus(count: number, opts: { binaries?: boolean; seed?: number; small?: boolean } = {}): CorpusFile[] {
  const rand = prng(opts.seed ?? 24);
  const out: CorpusFile[] = [];
  if (opts.binaries ?? true) {
    for (const t of BINARY_TEMPLATES) {
      // The copies of a 500-source corpus, in proportion below it (at least one of each file).
      const copies = Math.max(1, Math.round((t.copies * count) / 500));
      for (let i = 0; i < copies && out.length < count; i++) {
        const ext = extname(t.path);
        out.push({ name: `${basename(t.path, ext)}-${i + 1}${ext}`, kind: t.kind, mime: t.mime, sourceType: t.sourceType, bytes: real(t.path), from: t.path });
      }
    }
  }
  // Text sources: round-robin over the real text files, so each kind keeps the share its real files have.
  for (let i = 0; out.length < count; i++) {
    const t = TEXT_TEMPLATES[i % TEXT_TEMPLATES.length]!;
    const base = basename(t.path).replace(/\.(transcript\.vtt|md|vtt|csv|json|txt)$/, "");
    out.push({
      name: `${base}-v${Math.floor(i / TEXT_TEMPLATES.length) + 1}${EXT[t.kind]}`,
      kind: t.kind,
      mime: t.mime,
      sourceType: t.sourceType,
      bytes: Buffer.from(variant(t, rand, opts.small ?? false), "utf8"),
      from: t.path,
    });
  }
  // Fisher-Yates with the same PRNG.
  for (let i = out.length - 1; i > 0; i--) {
    const j = Math.floor(rand() * (i + 1));
    [out[i], out[j]] = [out[j]!, out[i]!];
  }
  return out;
}
