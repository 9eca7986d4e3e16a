/**
 * Test-only loader: turns a folder of /work/shared/realdata into synthesis sources (TextUnit[] + extracted_text),
 * independent of the production extractors in core/extract (written in parallel). It keeps the same invariant
 * the extractors promise: every unit.text occurs verbatim in extracted_text.
 *
 * Formats: CSV (papaparse; one `response` unit per non-empty cell, fields.question = header), Markdown (the
 * production extractor, core/extract/markdown.ts: its units carry their heading, which tells a report's method
 * sections from its findings), WebVTT (consecutive cues of one
 * speaker joined into a `turn`), the GitHub issues JSON (`comment` per comment, fields.title), PDF (unpdf, one
 * `page` unit per page) and DOCX (mammoth, paragraphs). Images are skipped (OCR is the extractors' job).
 */
import { readdir, readFile } from "node:fs/promises";
import { basename, extname, join, relative } from "node:path";
import Papa from "papaparse";
import type { TextUnit } from "../../../core/extract/types";
import { extractMarkdown } from "../../../core/extract/markdown";

export const REALDATA = "/work/shared/realdata";

export interface LoadedSource {
  id: string;
  title: string;
  source_type: string;
  units: TextUnit[];
  extracted_text: string;
}

/** Builds extracted_text by appending pieces, and units whose text is appended verbatim. */
class Builder {
  private parts: string[] = [];
  units: TextUnit[] = [];
  raw(s: string) {
    this.parts.push(s);
  }
  unit(u: TextUnit, prefix = "", suffix = "\n") {
    this.parts.push(prefix, u.text, suffix);
    this.units.push(u);
  }
  text() {
    return this.parts.join("");
  }
}

function csvSource(text: string): { units: TextUnit[]; extracted_text: string } {
  const parsed = Papa.parse<string[]>(text, { skipEmptyLines: true });
  const [header, ...rows] = parsed.data;
  const idCol = header.findIndex((h) => /respondent id/i.test(h));
  const b = new Builder();
  rows.forEach((row, r) => {
    const speaker = idCol >= 0 && row[idCol] ? `respondent ${row[idCol]}` : `row ${r + 2}`;
    b.raw(`--- ${speaker}\n`);
    row.forEach((cell, c) => {
      if (c === idCol) return;
      const value = (cell ?? "").trim();
      if (!value) return;
      const question = (header[c] ?? `column ${c + 1}`).trim();
      b.unit({ kind: "response", text: value, speaker, fields: { question }, locator: `row ${r + 2}` }, `${question}: `);
    });
  });
  return { units: b.units, extracted_text: b.text() };
}

function vttSource(text: string): { units: TextUnit[]; extracted_text: string } {
  const cues: { start: string; speaker?: string; text: string }[] = [];
  for (const block of text.split(/\n\s*\n/)) {
    const lines = block.split("\n").map((l) => l.trim()).filter(Boolean);
    const timeIdx = lines.findIndex((l) => l.includes("-->"));
    if (timeIdx < 0) continue;
    const start = lines[timeIdx].split("-->")[0].trim();
    const body = lines.slice(timeIdx + 1).join(" ");
    const m = /^([^:]{1,40}):\s*(.*)$/.exec(body);
    cues.push(m ? { start, speaker: m[1].trim(), text: m[2].trim() } : { start, text: body });
  }
  // One transcript line per speaker turn: consecutive cues of one speaker joined with a space.
  const b = new Builder();
  let cur: { start: string; speaker?: string; parts: string[] } | undefined;
  const flush = () => {
    if (!cur) return;
    const t = cur.parts.filter(Boolean).join(" ");
    if (t) b.unit({ kind: "turn", text: t, speaker: cur.speaker, timestamp: cur.start }, cur.speaker ? `${cur.speaker}: ` : "");
  };
  for (const c of cues) {
    if (cur && cur.speaker === c.speaker) cur.parts.push(c.text);
    else {
      flush();
      cur = { start: c.start, speaker: c.speaker, parts: [c.text] };
    }
  }
  flush();
  return { units: b.units, extracted_text: b.text() };
}

function issuesSource(text: string): { units: TextUnit[]; extracted_text: string } {
  const data = JSON.parse(text) as {
    issues: { url: string; title: string; number: number; comments: { author: string; body: string }[] }[];
  };
  const b = new Builder();
  for (const issue of data.issues) {
    b.raw(`# ${issue.title}\n${issue.url}\n\n`);
    issue.comments.forEach((c, i) => {
      b.unit(
        { kind: "comment", text: c.body, speaker: c.author, fields: { title: issue.title }, locator: `issue #${issue.number} comment ${i + 1}` },
        `${c.author}: `,
        "\n\n",
      );
    });
  }
  return { units: b.units, extracted_text: b.text() };
}

async function pdfSource(buf: Buffer): Promise<{ units: TextUnit[]; extracted_text: string }> {
  const { extractText, getDocumentProxy } = await import("unpdf");
  const pdf = await getDocumentProxy(new Uint8Array(buf));
  const { text } = await extractText(pdf, { mergePages: false });
  const b = new Builder();
  text.forEach((page, i) => {
    const t = page.trim();
    if (t) b.unit({ kind: "page", text: t, locator: `page ${i + 1}` }, "", "\n\n");
  });
  return { units: b.units, extracted_text: b.text() };
}

async function docxSource(buf: Buffer): Promise<{ units: TextUnit[]; extracted_text: string }> {
  const mammoth = await import("mammoth");
  const { value } = await mammoth.extractRawText({ buffer: buf });
  const units: TextUnit[] = value
    .split(/\n\s*\n/)
    .map((p) => p.trim())
    .filter(Boolean)
    .map((p) => ({ kind: "paragraph" as const, text: p }));
  return { units, extracted_text: value };
}

function sourceType(rel: string): string {
  if (/survey|reviews/i.test(rel)) return "survey";
  if (/support-tickets|issues/i.test(rel)) return "support_ticket";
  if (/transcript|interview/i.test(rel)) return "interview";
  if (/usability/i.test(rel)) return "interview";
  return "other";
}

async function walk(dir: string): Promise<string[]> {
  const out: string[] = [];
  for (const e of (await readdir(dir, { withFileTypes: true })).sort((a, b) => a.name.localeCompare(b.name))) {
    const p = join(dir, e.name);
    if (e.isDirectory()) out.push(...(await walk(p)));
    else out.push(p);
  }
  return out;
}

/**
 * Load every supported file of a realdata folder (e.g. "jupyter", "va-mobile-app") as a source.
 * MANIFEST/README files and images are skipped; `only` keeps files whose relative path matches.
 */
export async function loadWorkspace(folder: string, only?: RegExp): Promise<LoadedSource[]> {
  const root = join(REALDATA, folder);
  const files = await walk(root);
  const sources: LoadedSource[] = [];
  for (const file of files) {
    const rel = relative(root, file);
    if (/MANIFEST|README/i.test(basename(file))) continue;
    if (only && !only.test(rel)) continue;
    const ext = extname(file).toLowerCase();
    let loaded: { units: TextUnit[]; extracted_text: string } | undefined;
    if (ext === ".csv") loaded = csvSource(await readFile(file, "utf8"));
    else if (ext === ".md") loaded = extractMarkdown(await readFile(file, "utf8"));
    else if (ext === ".vtt") loaded = vttSource(await readFile(file, "utf8"));
    else if (ext === ".json") loaded = issuesSource(await readFile(file, "utf8"));
    else if (ext === ".pdf") loaded = await pdfSource(await readFile(file));
    else if (ext === ".docx") loaded = await docxSource(await readFile(file));
    if (!loaded) continue;
    sources.push({ id: `src-${folder}-${rel.replace(/[^a-z0-9]+/gi, "-")}`, title: basename(file), source_type: sourceType(rel), ...loaded });
  }
  return sources;
}
