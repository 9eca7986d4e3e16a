/** CSV extraction (papaparse): survey exports, review lists, usage data. */
import Papa from "papaparse";
import { ExtractionError } from "./errors";
import { tablesToExtraction } from "./table";
import type { Extraction } from "./types";

/**
 * Parse CSV text (delimiter auto-detected: comma, semicolon, tab, pipe) and extract it as a survey table
 * (see tablesToExtraction: a `response` unit per answer, one respondent per row, closed-question answers marked
 * `fields.closed`; engine "csv").
 *
 * @throws ExtractionError `corrupt` when a quoted field never closes: papaparse would otherwise swallow the rest
 *   of the file into one cell and answers would silently go missing.
 */
export function extractCsv(text: string): Extraction {
  const parsed = Papa.parse<string[]>(text, { skipEmptyLines: "greedy" });
  const fatal = parsed.errors.find((e) => e.code === "MissingQuotes");
  if (fatal) {
    const row = fatal.row !== undefined ? ` near data row ${fatal.row + 1}` : "";
    throw new ExtractionError(
      "corrupt",
      `The CSV could not be read: a quoted field is never closed${row}. Check that quotes inside answers are doubled ("") and export the file again`,
    );
  }
  return tablesToExtraction([{ rows: parsed.data }], "csv");
}
