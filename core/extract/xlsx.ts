/** XLSX extraction with exceljs (not the npm `xlsx` package, which is stale on npm; DESIGN.md section 2). */
import ExcelJS from "exceljs";
import { unreadable } from "./errors";
import { extractionLimits } from "./limits";
import { tablesToExtraction, type Table } from "./table";
import type { Extraction } from "./types";
import { checkedArchive } from "./zip-limits";

/**
 * Read every worksheet of an .xlsx workbook as a survey table (first non-empty row = header; see
 * tablesToExtraction), using each cell's displayed text (formula results, formatted dates, rich text flattened).
 * Locators name the sheet when there is more than one ("Responses row 12"). Engine "xlsx".
 *
 * The archive is checked against the extraction limits first (checkedArchive), and exceljs reads the checked copy.
 *
 * @throws ExtractionError `too_large` over a limit (see checkedArchive); `corrupt` when the workbook cannot be
 *   opened (truncated, not really XLSX, encrypted), with exceljs' own error in the log, not in the reason.
 */
export async function extractXlsx(bytes: Buffer): Promise<Extraction> {
  const limits = extractionLimits();
  const archive = await checkedArchive(bytes, { label: "spreadsheet", maxXmlBytes: limits.maxXlsxXmlBytes }, limits);
  const workbook = new ExcelJS.Workbook();
  try {
    // exceljs' typings predate Node's generic Buffer; the bytes are an ordinary Node Buffer.
    await workbook.xlsx.load(archive as unknown as ExcelJS.Buffer);
  } catch (err) {
    throw unreadable("The spreadsheet could not be read (it may be truncated, corrupt or password-protected)", err, { bytes: bytes.length });
  }
  const tables: Table[] = [];
  workbook.eachSheet((sheet) => {
    const rows: string[][] = [];
    sheet.eachRow({ includeEmpty: true }, (row, rowNumber) => {
      const cells: string[] = [];
      row.eachCell({ includeEmpty: true }, (cell, col) => {
        cells[col - 1] = cellText(cell);
      });
      rows[rowNumber - 1] = Array.from(cells, (c) => c ?? "");
    });
    tables.push({ name: sheet.name, rows: Array.from(rows, (r) => r ?? []) });
  });
  return tablesToExtraction(tables, "xlsx");
}

function cellText(cell: ExcelJS.Cell): string {
  try {
    return cell.text ?? "";
  } catch {
    // cell.text throws on a few exotic value types (e.g. shared-formula errors); the raw value is the fallback.
    return cell.value === null || cell.value === undefined ? "" : String(cell.value);
  }
}
