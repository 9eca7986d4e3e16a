/** PDF text extraction with unpdf (PDF.js built for serverless), in both runtimes. */
import { availableParallelism } from "node:os";
import { extractTextItems, getDocumentProxy, type StructuredTextItem } from "unpdf";
import { Config } from "../config";
import { blocksToExtraction, type Block } from "./blocks";
import { ExtractionError, unreadable } from "./errors";
import { extractionLimits, MAX_PDF_PAGE_TEXT_RUNS } from "./limits";
import { textTooLong } from "./text";
import type { Extraction } from "./types";

interface Line {
  text: string;
  /** Baseline y in PDF space (grows upwards). */
  y: number;
  fontSize: number;
}

/**
 * Extract a PDF's text layer (engine "unpdf"): `paragraph` units with locator "page N", `pages` = page count.
 *
 * PDF.js gives positioned text runs, not paragraphs; lines are rebuilt from end-of-line markers and grouped into
 * paragraphs where the vertical gap exceeds ~1.5 lines, the font size changes, or the text jumps upward (next
 * column). Lines set noticeably larger than the body text (>= 1.3x the median size) and short become heading context.
 * Lines are joined with a space; a word hyphenated across a line break is joined without one.
 *
 * Text runs are counted before any layout work (too many on a page or in all, or more characters than
 * `maxTextChars`: `too_large`), and the layout is linear in them, so a small crafted PDF cannot hold the thread.
 *
 * @throws ExtractionError `encrypted` for password-protected files, `corrupt` for unreadable ones ("The PDF could
 *   not be read (it may be truncated or corrupt)"; PDF.js' own error goes to the log), `no_text` when there is no
 *   text layer (a scan), `too_large` over a text-run limit (limits.ts).
 */
export async function extractPdf(bytes: Buffer): Promise<Extraction> {
  const { pages, items } = await readTextItems(bytes);
  return textItemsToExtraction(pages, items);
}

/**
 * The layout half of {@link extractPdf}: PDF.js text items per page -> lines -> paragraphs and headings -> the
 * extraction. Runs on the calling (main) thread, so its work is bounded and linear in the text runs.
 * @throws ExtractionError `too_large` over a text-run limit, `no_text` when no page has text
 */
export function textItemsToExtraction(pages: number, items: StructuredTextItem[][]): Extraction {
  checkTextRuns(items);
  const pageLines = items.map(toLines);
  const bodySize = bodyFontSize(pageLines.flat()) || 10;

  const blocks: Block[] = [];
  pageLines.forEach((lines, i) => {
    const locator = `page ${i + 1}`;
    for (const para of paragraphs(lines)) {
      const text = joinLines(para.map((l) => l.text));
      // Page furniture: bare page numbers ("7", "7 / 53", "Page 7 of 53") are not content.
      if (!/[\p{L}\p{N}]/u.test(text) || /^(page\s+)?\d+(\s*(\/|of)\s*\d+)?$/i.test(text)) continue;
      // A loop, not Math.max(...): a paragraph of 100,000+ lines would overflow the call stack as arguments.
      const size = para.reduce((m, l) => Math.max(m, l.fontSize), 0);
      if (size >= bodySize * 1.3 && text.length <= 120 && para.length <= 3) blocks.push({ type: "heading", depth: 1, text });
      else blocks.push({ type: "paragraph", text, locator });
    }
  });
  const extraction = blocksToExtraction(blocks, "unpdf", { pages });
  if (!extraction.extracted_text.trim()) {
    throw new ExtractionError(
      "no_text",
      "The PDF has no text layer (it looks like a scan). Upload the pages as PNG, JPEG or TIFF images so they can be OCR'd, or export the PDF with text",
    );
  }
  return extraction;
}

/**
 * PDF.js text items per page. On the embedded runtime they are read in a worker thread (`PDF_WORKERS`, default
 * min(2, cores)): PDF.js parses on the thread that calls it, and a 40-page PDF would otherwise hold the gateway's
 * event loop for 150+ ms, and a folder of PDFs would use one core. In a Lambda (one execution per environment, and
 * deployed stages send PDFs to Textract anyway) they are read in-thread.
 * @throws ExtractionError `encrypted` or `corrupt`
 */
async function readTextItems(bytes: Buffer): Promise<{ pages: number; items: StructuredTextItem[][] }> {
  const pool = await workerPool();
  if (pool) {
    // A copy: the worker gets its own bytes and the caller keeps its buffer.
    const result = (await pool.run(new Uint8Array(bytes))) as
      | { pages: number; items: StructuredTextItem[][] }
      | { error: { name: string; message: string } };
    if ("error" in result) throw pdfError(Object.assign(new Error(result.error.message), { name: result.error.name }));
    return result;
  }
  let pdf;
  try {
    // A copy: PDF.js may take ownership of (detach) the buffer it is given, and the caller still holds these bytes.
    pdf = await getDocumentProxy(new Uint8Array(bytes), { verbosity: 0 });
  } catch (err) {
    throw pdfError(err);
  }
  try {
    const { items } = await extractTextItems(pdf);
    return { pages: pdf.numPages, items };
  } catch (err) {
    throw pdfError(err);
  } finally {
    await pdf.destroy().catch(() => undefined);
  }
}

type Pool = import("piscina").Piscina;
let pool: Promise<Pool | null> | undefined;

/** Worker threads for PDF.js: `PDF_WORKERS` (0 = in-thread), else 0 in a Lambda and min(2, cores) elsewhere. */
export function pdfWorkerCount(): number {
  return Config.pdfWorkers() ?? (process.env.AWS_LAMBDA_FUNCTION_NAME ? 0 : Math.min(2, availableParallelism()));
}

function workerPool(): Promise<Pool | null> {
  pool ??= (async () => {
    const size = pdfWorkerCount();
    if (size === 0) return null;
    const { Piscina } = await import("piscina");
    // Threads start on the first PDF and stop after 30 s idle; idle threads do not keep the process alive.
    return new Piscina({ filename: new URL("./pdf-worker.mjs", import.meta.url).href, minThreads: 0, maxThreads: size, idleTimeout: 30_000 });
  })();
  return pool;
}

/** Stop the PDF worker threads, if any were started (tests, process shutdown). */
export async function shutdownPdfWorkers(): Promise<void> {
  const current = pool;
  pool = undefined;
  const p = await current;
  await p?.destroy();
}

function pdfError(err: unknown): ExtractionError {
  const name = err instanceof Error ? err.name : "";
  if (name === "PasswordException") {
    return new ExtractionError("encrypted", "The PDF is password-protected; upload a copy without a password", { cause: err });
  }
  return unreadable("The PDF could not be read (it may be truncated or corrupt)", err);
}

/**
 * Refuse a PDF whose text runs would make layout work unbounded: more than {@link MAX_PDF_PAGE_TEXT_RUNS} on a page,
 * more than `maxPdfTextRuns` in all, or more characters than `maxTextChars` (the extracted text could not be kept
 * anyway). A 2 KB compressed content stream can repeat one short string a million times.
 * @throws ExtractionError `too_large`
 */
function checkTextRuns(items: StructuredTextItem[][]): void {
  const { maxPdfTextRuns, maxTextChars } = extractionLimits();
  let runs = 0;
  let chars = 0;
  items.forEach((page, i) => {
    if (page.length > MAX_PDF_PAGE_TEXT_RUNS) {
      throw new ExtractionError(
        "too_large",
        `The PDF is refused: page ${i + 1} holds ${page.length.toLocaleString("en-US")} pieces of text, more than the limit of ${MAX_PDF_PAGE_TEXT_RUNS.toLocaleString("en-US")} per page`,
      );
    }
    runs += page.length;
    if (runs > maxPdfTextRuns) {
      throw new ExtractionError("too_large", `The PDF is refused: it holds more than ${maxPdfTextRuns.toLocaleString("en-US")} pieces of text, the limit`);
    }
    for (const item of page) chars += item.str ? item.str.length : 0;
    if (chars > maxTextChars) throw textTooLong(maxTextChars);
  });
}

/** Text runs -> lines, using PDF.js' end-of-line flags. Linear in the runs' total length. */
function toLines(items: StructuredTextItem[]): Line[] {
  const lines: Line[] = [];
  // Parts joined once per line, and a flag for "has non-blank text yet": re-trimming the growing line for every
  // run was quadratic (15.9 s of main thread for 50,000 runs on one line).
  let parts: string[] = [];
  let started = false;
  let y = 0;
  let fontSize = 0;
  const flush = () => {
    const t = started ? parts.join("").replace(/\s+/g, " ").trim() : "";
    if (t) lines.push({ text: t, y, fontSize });
    parts = [];
    started = false;
    fontSize = 0;
  };
  for (const item of items) {
    if (item.str) {
      if (!started && /\S/.test(item.str)) {
        started = true;
        y = item.y;
      }
      parts.push(item.str);
      fontSize = Math.max(fontSize, item.fontSize);
    }
    if (item.hasEOL) flush();
  }
  flush();
  return lines;
}

function paragraphs(lines: Line[]): Line[][] {
  // Line spacing varies by document (single, 1.5, double); a paragraph break is a gap clearly above this page's usual one.
  const gaps = lines
    .slice(1)
    .map((l, i) => lines[i].y - l.y)
    .filter((g, i) => g > 0 && g < 3 * (lines[i].fontSize || 10))
    .sort((a, b) => a - b);
  const usual = gaps.length >= 3 ? gaps[Math.floor(gaps.length / 2)] : undefined;
  const out: Line[][] = [];
  let current: Line[] = [];
  for (const line of lines) {
    const prev = current[current.length - 1];
    if (prev) {
      const gap = prev.y - line.y;
      const size = Math.max(prev.fontSize, line.fontSize) || 10;
      const sizeChange = Math.abs(prev.fontSize - line.fontSize) > 0.15 * size;
      const limit = usual !== undefined ? Math.max(usual * 1.35, size * 1.1) : size * 1.6;
      // A bullet glyph opens a new list item even when the spacing does not show it.
      const bullet = /^[●•▪◦■]\s/.test(line.text);
      if (gap > limit || gap < -0.5 * size || sizeChange || bullet) {
        out.push(current);
        current = [];
      }
    }
    current.push(line);
  }
  if (current.length) out.push(current);
  return out;
}

function joinLines(lines: string[]): string {
  // Parts joined once, and the hyphen test on the previous line's last characters: an end-anchored regex over the
  // growing paragraph (and slicing a concatenated string, which flattens it) was quadratic in its length.
  const parts: string[] = [];
  let prev = "";
  for (const line of lines) {
    if (!prev) parts.push(line);
    else if (/\p{L}-$/u.test(prev.slice(-3)) && /^\p{Ll}/u.test(line)) parts.push(line);
    else parts.push(" ", line);
    prev = line;
  }
  return parts.join("");
}

/** The font size most of the text is set in: the character-weighted median of line sizes. */
function bodyFontSize(lines: Line[]): number {
  const sorted = [...lines].sort((a, b) => a.fontSize - b.fontSize);
  const total = sorted.reduce((n, l) => n + l.text.length, 0);
  let seen = 0;
  for (const l of sorted) {
    seen += l.text.length;
    if (seen >= total / 2) return l.fontSize;
  }
  return 0;
}
