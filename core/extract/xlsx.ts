/** XLSX extraction with exceljs (not the npm `xlsx` package, which is stale on npm; DESIGN.md section 2). */
import ExcelJS from "exceljs";
import { ExtractionError, messageOf } from "./errors";
import { tablesToExtraction, type Table } from "./table";
import type { Extraction } from "./types";

/**
 * Read every worksheet of an .xlsx workbook as a survey table (first non-empty row = header; see
 * tablesToExtraction), using each cell's displayed text (formula results, formatted dates, rich text flattened).
 * Locators name the sheet when there is more than one ("Responses row 12"). Engine "xlsx".
 *
 * @throws ExtractionError `corrupt` when the workbook cannot be opened (truncated, not really XLSX, encrypted).
 */
export async function extractXlsx(bytes: Buffer): Promise<Extraction> {
  const workbook = new ExcelJS.Workbook();
  try {
    // exceljs' typings predate Node's generic Buffer; the bytes are an ordinary Node Buffer.
    await workbook.xlsx.load(bytes as unknown as ExcelJS.Buffer);
  } catch (err) {
    throw new ExtractionError(
      "corrupt",
      `The spreadsheet could not be read (it may be truncated, corrupt or password-protected): ${messageOf(err)}`,
      { cause: err },
    );
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
