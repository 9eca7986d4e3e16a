/**
 * Resource limits of extraction (issue #10): how much a DOCX/XLSX archive may unpack to and how much text any file
 * may yield, so that one upload (a zip bomb, or an honest but enormous file) cannot exhaust the process's memory.
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
};

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
