/**
 * Local OCR with tesseract.js and the English model from @tesseract.js-data/eng, fully offline (DESIGN.md section 2).
 * Only the embedded runtime loads this module (lazily, from index.ts); in AWS images go to Textract.
 *
 * One worker is created on first use and reused: starting one costs about a second (WASM core + 10 MB model).
 * tesseract.js throws from its message handler when a job fails and no `errorHandler` is set, which would take the
 * whole process down on one bad image; the handler below turns that into a rejected job instead. A worker that
 * dies or hangs is thrown away and the next job starts a fresh one.
 */
import { logExtractionFailure } from "./log";
import { dirname, join } from "node:path";
import { createRequire } from "node:module";
import { createWorker, OEM, type Worker } from "tesseract.js";
import { ExtractionError, messageOf, unreadable } from "./errors";
import { TextBuilder } from "./text";
import type { Extraction } from "./types";

/** Lines tesseract itself scores below this (0-100) are dropped: on noisy captures they are mostly garbage glyphs. */
export const MIN_LINE_CONFIDENCE = 45;
/** Longest a single image may take before the worker is considered stuck, in ms. */
export const OCR_TIMEOUT_MS = 120_000;

const require = createRequire(import.meta.url);
// The LSTM-only "best_int" model: what tesseract.js itself fetches for OEM.LSTM_ONLY, here read from node_modules.
const LANG_PATH = join(dirname(require.resolve("@tesseract.js-data/eng/package.json")), "4.0.0_best_int");

interface Live {
  worker: Worker;
  /** Rejects when the worker thread errors or exits underneath us. */
  died: Promise<never>;
  /** The worker thread: referenced only while a job runs, so an idle OCR worker never keeps the process alive. */
  thread?: { ref(): void; unref(): void };
}

let live: Promise<Live> | undefined;

async function start(): Promise<Live> {
  const worker = await createWorker("eng", OEM.LSTM_ONLY, {
    langPath: LANG_PATH,
    gzip: true,
    cacheMethod: "none",
    // Called for every failed job; the job's own promise rejects too, so there is nothing left to do here.
    errorHandler: () => undefined,
  });
  // The underlying worker_threads Worker: an 'error' event without a listener would crash the process.
  const thread = (worker as unknown as { worker?: NodeJS.EventEmitter & { ref(): void; unref(): void } }).worker;
  thread?.unref();
  const died = new Promise<never>((_, reject) => {
    thread?.once("error", (err: unknown) => reject(new Error(`OCR worker crashed: ${messageOf(err)}`)));
    thread?.once("exit", (code: number) => reject(new Error(`OCR worker exited (code ${code})`)));
  });
  died.catch(() => undefined);
  return { worker, died, thread };
}

async function discard(current: Promise<Live>): Promise<void> {
  if (live === current) live = undefined;
  const l = await current.catch(() => undefined);
  await l?.worker.terminate().catch(() => undefined);
}

/** Terminate the shared worker, if one was started (tests, process shutdown). */
export async function shutdownOcr(): Promise<void> {
  if (live) await discard(live);
}

/**
 * OCR one image (PNG, JPEG or TIFF bytes) into an Extraction (engine "tesseract"): one `paragraph` unit per
 * tesseract paragraph (its lines joined with "\n", `fields.confidence` 0-100), paragraphs separated by a blank line.
 * TIFF is converted to PNG first with sharp, because the WASM build of Leptonica inside tesseract.js cannot decode
 * every TIFF compression (Deflate-compressed TIFFs fail); every page of a multi-page TIFF is read, with locator
 * "page N" and `pages` set.
 *
 * @throws ExtractionError `corrupt` when the image cannot be decoded, `no_text` when nothing legible is found,
 *   `engine_failed` when the worker crashes or exceeds OCR_TIMEOUT_MS.
 */
export async function ocrImage(bytes: Buffer, contentType: string): Promise<Extraction> {
  const images = contentType === "image/tiff" ? await tiffToPngPages(bytes) : [bytes];
  const b = new TextBuilder();
  let first = true;
  for (const [i, image] of images.entries()) {
    const page = await recognize(image);
    const locator = images.length > 1 ? `page ${i + 1}` : undefined;
    for (const block of page.blocks ?? []) {
      for (const para of block.paragraphs) {
        const lines = para.lines
          .filter((l) => l.confidence >= MIN_LINE_CONFIDENCE)
          .map((l) => l.text.replace(/\s+/g, " ").trim())
          .filter((t) => /[\p{L}\p{N}]{2}/u.test(t));
        if (!lines.length) continue;
        if (!first) b.text("\n\n");
        first = false;
        b.unit({ kind: "paragraph", text: lines.join("\n"), fields: { confidence: String(Math.round(para.confidence)) }, locator });
      }
    }
  }
  const extraction = b.build("tesseract", images.length > 1 ? { pages: images.length } : {});
  if (!extraction.units.length) throw new ExtractionError("no_text", "No legible text was found in the image");
  return extraction;
}

async function recognize(image: Buffer) {
  const current = (live ??= start());
  try {
    const { worker, died, thread } = await current;
    thread?.ref();
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`OCR took longer than ${OCR_TIMEOUT_MS / 1000} s`)), OCR_TIMEOUT_MS);
    });
    try {
      const result = await Promise.race([worker.recognize(image, {}, { text: true, blocks: true }), died, timeout]);
      return result.data;
    } finally {
      clearTimeout(timer);
      thread?.unref();
    }
  } catch (err) {
    const msg = messageOf(err);
    // A bad image is the image's fault; anything else (crash, hang, failed start) is the engine's, and the worker
    // may be unusable afterwards, so it is replaced.
    logExtractionFailure("tesseract failed on an image", { engine_message: msg }, err);
    if (/attempting to read image|pix not read|Unknown format/i.test(msg)) {
      throw new ExtractionError("corrupt", "The image could not be read (it may be truncated or corrupt)", { cause: err });
    }
    await discard(current);
    throw new ExtractionError("engine_failed", "Text recognition failed on this image; try reprocessing", { cause: err });
  }
}

async function tiffToPngPages(bytes: Buffer): Promise<Buffer[]> {
  // sharp (libvips) is loaded only here: it is a native module nothing else needs.
  const { default: sharp } = await import("sharp");
  try {
    const { pages = 1 } = await sharp(bytes).metadata();
    const out: Buffer[] = [];
    for (let page = 0; page < pages; page++) out.push(await sharp(bytes, { page }).png().toBuffer());
    return out;
  } catch (err) {
    throw unreadable("The TIFF image could not be read (it may be truncated or corrupt)", err);
  }
}
