/**
 * Text extraction for research sources (spec 01 Research source: extracted_text, transcript; Research source
 * processing: pending -> completed | failed). In-process parsers run in both runtimes; OCR and speech go through
 * engine ports whose local implementations (tesseract.js, pocketsphinx) are imported lazily, so a Lambda bundle that
 * passes Textract/Transcribe-backed engines (or never sees images and audio) does not load them.
 */
import { AppError } from "../error";
import { extractCsv } from "./csv";
import { extractDocx } from "./docx";
import { ExtractionError, isThrottling, unreadable } from "./errors";
import { extractJson } from "./json";
import { extractionLimits } from "./limits";
import { extractMarkdown, extractPlainText } from "./markdown";
import { extractPdf, shutdownPdfWorkers } from "./pdf";
import { extractSubtitles } from "./subtitles";
import { decodeText, textTooLong } from "./text";
import type { Extraction } from "./types";
import type { FileKind } from "./validate";
import { extractXlsx } from "./xlsx";

export { ExtractionError, THROTTLING_ERRORS, isThrottling, type ExtractionFailure } from "./errors";
export { DEFAULT_EXTRACTION_LIMITS, LIMIT_SETTINGS, extractionLimits, type ExtractionLimits } from "./limits";
export { inspectUpload, MAX_UPLOAD_BYTES, SNIFF_BYTES, type FileKind, type UploadHead, type UploadVerdict } from "./validate";
export { AUDIO_APT_PACKAGES } from "./speech";
export type { Extraction, TextUnit, UnitKind } from "./types";

/** OCR port: image bytes (PNG, JPEG, TIFF) -> extraction. Local: tesseract.js; AWS: Textract (textract.ts). */
export interface OcrEngine {
  recognize(image: Buffer, contentType: string): Promise<Extraction>;
}

/** Speech port: audio/video bytes -> transcript extraction. Local: ffmpeg + pocketsphinx; AWS: Transcribe (transcribe.ts). */
export interface SpeechEngine {
  transcribe(media: Buffer, filename: string, contentType: string): Promise<Extraction>;
}

export interface ExtractEngines {
  ocr: OcrEngine;
  speech: SpeechEngine;
}

export interface ExtractInput {
  /** The whole file. */
  bytes: Buffer;
  /** From inspectUpload. */
  kind: FileKind;
  /** Canonical MIME type from inspectUpload (e.g. "image/tiff", "video/mp4"). */
  contentType: string;
  /** Original file name; used for the media container hint and messages. */
  filename: string;
}

let ocrModule: Promise<typeof import("./ocr")> | undefined;

/** The local engines: tesseract.js OCR (one shared worker) and ffmpeg + pocketsphinx, each imported on first use. */
export const localEngines: ExtractEngines = {
  ocr: {
    recognize: async (image, contentType) => (await (ocrModule ??= import("./ocr"))).ocrImage(image, contentType),
  },
  speech: {
    transcribe: async (media, filename) => (await import("./speech")).transcribeLocally(media, filename),
  },
};

/**
 * Extract the text of one research source.
 *
 * By kind: pdf -> unpdf (`paragraph` units, locator "page N", `pages`); docx -> mammoth; markdown / text ->
 * paragraphs with `fields.heading`, or `turn`s with speakers for transcripts; csv / xlsx -> one `response` per
 * free-text answer (`fields.question`, `speaker` = respondent); json -> `comment`s for issue threads, else string
 * leaves; vtt / srt -> `turn`s with speaker and timestamp; image -> engines.ocr; audio / video -> engines.speech.
 *
 * Invariant: every `unit.text` occurs verbatim in `extracted_text` (checked in TextBuilder.build).
 *
 * Resource limits (limits.ts, read from the environment on each call): DOCX/XLSX archives are checked before they
 * are parsed (zip-limits.ts), and extracted_text is capped at `maxTextChars` while it is built (TextBuilder) and
 * here again for any engine that builds it otherwise.
 *
 * @param engines OCR and speech implementations; missing ones default to {@link localEngines}.
 * @throws ExtractionError with a reason a user can act on (corrupt/truncated file, password, no text, engine
 *   missing, `too_large` over a limit). Unexpected parser failures become "The <format> could not be read (it may
 *   be truncated or corrupt)"; the parser's own error goes to the log, never into the reason.
 */
export async function extract(input: ExtractInput, engines: Partial<ExtractEngines> = {}): Promise<Extraction> {
  const { bytes, kind, contentType, filename } = input;
  const e = { ...localEngines, ...engines };
  let extraction: Extraction;
  try {
    switch (kind) {
      case "pdf":
        extraction = await extractPdf(bytes);
        break;
      case "docx":
        extraction = await extractDocx(bytes);
        break;
      case "xlsx":
        extraction = await extractXlsx(bytes);
        break;
      case "csv":
        extraction = extractCsv(decodeText(bytes));
        break;
      case "json":
        extraction = extractJson(decodeText(bytes));
        break;
      case "markdown":
        extraction = extractMarkdown(decodeText(bytes));
        break;
      case "text":
        extraction = extractPlainText(decodeText(bytes));
        break;
      case "vtt":
      case "srt":
        extraction = extractSubtitles(decodeText(bytes), kind);
        break;
      case "image":
        extraction = await e.ocr.recognize(bytes, contentType);
        break;
      case "audio":
      case "video":
        extraction = await e.speech.transcribe(bytes, filename, contentType);
        break;
      default:
        throw new AppError("UNSUPPORTED_MEDIA_TYPE", `No extractor for file kind ${String(kind)}`);
    }
  } catch (err) {
    if (err instanceof AppError) throw err;
    // AWS throttling must reach the state machine unchanged so its Retry policy applies.
    if (isThrottling(err)) throw err;
    throw unreadable(`The ${LABELS[kind] ?? "file"} could not be read (it may be truncated or corrupt)`, err, { kind, bytes: bytes.length });
  }
  const { maxTextChars } = extractionLimits();
  if (extraction.extracted_text.length > maxTextChars) throw textTooLong(maxTextChars);
  if (!extraction.extracted_text.trim()) {
    throw new ExtractionError("no_text", `The ${LABELS[kind] ?? "file"} contains no text`);
  }
  return extraction;
}

/** Stop engines that hold resources (the OCR and PDF worker threads). Safe to call when none was started. */
export async function shutdownEngines(): Promise<void> {
  if (ocrModule) await (await ocrModule).shutdownOcr();
  await shutdownPdfWorkers();
}

const LABELS: Partial<Record<FileKind, string>> = {
  pdf: "PDF",
  docx: "Word document",
  xlsx: "spreadsheet",
  csv: "CSV file",
  json: "JSON file",
  markdown: "Markdown file",
  text: "text file",
  vtt: "WebVTT file",
  srt: "SRT file",
  image: "image",
  audio: "recording",
  video: "video",
};
