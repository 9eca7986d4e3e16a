/**
 * Resource limits of extraction (issue #10): how much a DOCX/XLSX archive may unpack to, how much text any file
 * may yield, how large a table or how many PDF text runs one file may make, and how long a unit's field values may
 * be, so that one upload (a zip bomb, a crafted file, or an honest but enormous one) cannot exhaust the process's
 * memory or hold its main thread.
 *
 * The defaults come from measurements on the parsers we run (docs/decisions.md, "Resource limits in extraction"):
 * mammoth needs about 55 MB of memory per MiB of Word XML, exceljs about 15 MB per MiB of sheet XML, and the Parse
 * function has 2,048 MB (stacks/Pipelines.ts); the embedded runtime extracts two files at once in one Node heap.
 */

const MiB = 1024 * 1024;

export interface ExtractionLimits {
  /** Most entries (files and folders) in a DOCX/XLSX archive. Real documents hold tens; a workbook with images, hundreds. */
  maxArchiveEntries: number;
  /** Most bytes all entries of a DOCX/XLSX may unpack to, images included (declared, and enforced while inflating). */
  maxInflatedBytes: number;
  /** Most bytes of XML (the parts mammoth builds a tree from) a DOCX may unpack to. */
  maxDocxXmlBytes: number;
  /** Most bytes of XML (sheets, shared strings, styles) an XLSX may unpack to. */
  maxXlsxXmlBytes: number;
  /** Highest unpacked/packed size ratio of one entry, for entries unpacking to more than {@link RATIO_FLOOR_BYTES}. */
  maxCompressionRatio: number;
  /** Most characters of extracted_text from one file, every format. */
  maxTextChars: number;
  /**
   * Most cells of the tables one CSV or XLSX file is read into (rows × columns of each table, all tables together,
   * empty rows and gap cells included): a few KB of XLSX can place one value per row in column XFD (16,384), and a
   * CSV header can name 100,000 columns, each a grid the table builder would otherwise lay out in full.
   */
  maxTableCells: number;
  /** Most text runs (positioned strings from PDF.js) read from one PDF, all pages together. */
  maxPdfTextRuns: number;
}

/** Entries smaller than this unpacked are never refused for their ratio: they cannot hurt, and tiny parts compress oddly. */
export const RATIO_FLOOR_BYTES = MiB;

export const DEFAULT_EXTRACTION_LIMITS: Readonly<ExtractionLimits> = {
  maxArchiveEntries: 10_000,
  maxInflatedBytes: 256 * MiB,
  maxDocxXmlBytes: 24 * MiB,
  maxXlsxXmlBytes: 64 * MiB,
  // Deflate tops out near 1,030:1; real OOXML parts measure 4-11:1, and a Word file of 50,000 identical empty
  // paragraphs 293:1.
  maxCompressionRatio: 500,
  maxTextChars: 32_000_000,
  // An XLSX within maxXlsxXmlBytes holds at most about 3 million cells (some 20 bytes of XML each); 10 million
  // leaves room for a CSV export of 100,000 rows by 100 columns and keeps the table builder's column arrays near 80 MB.
  maxTableCells: 10_000_000,
  // Generous for a PDF that sets every glyph as its own run (some do): 2 million runs is about 400 dense pages.
  maxPdfTextRuns: 2_000_000,
};

/**
 * Most text runs read from one PDF page. Real pages hold hundreds to a few thousand (one per glyph at worst); far
 * more is a crafted content stream, refused before any layout work.
 */
export const MAX_PDF_PAGE_TEXT_RUNS = 100_000;

/**
 * Most characters of one value in a unit's `fields` (a heading, the heading path "A > B", a survey question, a
 * grid stem or option, a thread title, a JSON path). Fields are context, and the same value is repeated on every
 * unit under it and again when the extraction is serialized: uncapped, a 100,000-character heading over 200
 * paragraphs made 60 MB of JSON from a 200 KB file. Longer values are shortened by {@link capField}.
 */
export const MAX_FIELD_CHARS = 500;

const ELISION = " … ";
const isSpace = (c: number) => c === 32 || c === 9 || c === 10 || c === 13 || c === 0xa0;

/**
 * A field value at most `max` characters long: unchanged when it fits, else its start and its end joined by " … ",
 * each cut at a word boundary when one is near. The end is kept because that is where a grid header's option
 * ("... [Option]") and a heading path's innermost heading are; without it, the columns of one long-stemmed grid
 * would all read the same. Linear in `max`, not in the value's length.
 */
export function capField(value: string, max: number = MAX_FIELD_CHARS): string {
  if (value.length <= max) return value;
  const room = Math.max(2, max - ELISION.length);
  const headChars = Math.ceil((room * 2) / 3);
  const tailChars = room - headChars;
  let head = value.slice(0, headChars);
  let tail = tailChars > 0 ? value.slice(value.length - tailChars) : "";
  // A break within the last (first) quarter is close enough to cut at; a long unbroken word is cut where it is.
  for (let i = head.length - 1; i > headChars * 0.75; i--) {
    if (isSpace(head.charCodeAt(i))) {
      head = head.slice(0, i);
      break;
    }
  }
  for (let i = 0; i < tailChars * 0.25; i++) {
    if (isSpace(tail.charCodeAt(i))) {
      tail = tail.slice(i + 1);
      break;
    }
  }
  // Never leave half of a surrogate pair at a cut.
  if (/[\uD800-\uDBFF]$/.test(head)) head = head.slice(0, -1);
  if (/^[\uDC00-\uDFFF]/.test(tail)) tail = tail.slice(1);
  return `${head.trimEnd()}${ELISION}${tail.trimStart()}`.trim();
}

/** Hard ceilings: the checked archive is re-packed as a plain ZIP (no ZIP64), so counts and sizes must fit its fields. */
const CEILING: Partial<ExtractionLimits> = { maxArchiveEntries: 65_535, maxInflatedBytes: 2048 * MiB, maxDocxXmlBytes: 2048 * MiB, maxXlsxXmlBytes: 2048 * MiB };

/** Environment variable of each limit: a positive integer overrides the default. */
export const LIMIT_SETTINGS: Readonly<Record<keyof ExtractionLimits, string>> = {
  maxArchiveEntries: "EXTRACT_MAX_ARCHIVE_ENTRIES",
  maxInflatedBytes: "EXTRACT_MAX_INFLATED_BYTES",
  maxDocxXmlBytes: "EXTRACT_MAX_DOCX_XML_BYTES",
  maxXlsxXmlBytes: "EXTRACT_MAX_XLSX_XML_BYTES",
  maxCompressionRatio: "EXTRACT_MAX_COMPRESSION_RATIO",
  maxTextChars: "EXTRACT_MAX_TEXT_CHARS",
  maxTableCells: "EXTRACT_MAX_TABLE_CELLS",
  maxPdfTextRuns: "EXTRACT_MAX_PDF_TEXT_RUNS",
};

/**
 * The limits in force: each from its environment variable ({@link LIMIT_SETTINGS}) when that is a positive integer,
 * else the default. Read on every call, like core/config.ts, so tests and the local runtime can change them.
 */
export function extractionLimits(): ExtractionLimits {
  const out = { ...DEFAULT_EXTRACTION_LIMITS };
  for (const key of Object.keys(LIMIT_SETTINGS) as (keyof ExtractionLimits)[]) {
    const value = Number(process.env[LIMIT_SETTINGS[key]] ?? NaN);
    if (Number.isInteger(value) && value > 0) out[key] = Math.min(value, CEILING[key] ?? value);
  }
  return out;
}

/** Bytes for a reason a user reads: "1,536 MB", "4.5 MB", "64 KB" (binary units, as the upload limits are). */
export function formatBytes(bytes: number): string {
  if (bytes < MiB) return `${Math.ceil(bytes / 1024).toLocaleString("en-US")} KB`;
  const mb = bytes / MiB;
  return `${mb.toLocaleString("en-US", { maximumFractionDigits: mb < 10 ? 1 : 0 })} MB`;
}
