/** XLSX extraction with exceljs (not the npm `xlsx` package, which is stale on npm; DESIGN.md section 2). */
import ExcelJS from "exceljs";
import { unreadable } from "./errors";
import { extractionLimits } from "./limits";
import { tablesToExtraction, tableTooLarge, type Table } from "./table";
import type { Extraction } from "./types";
import { checkedArchive } from "./zip-limits";

/**
 * Read every worksheet of an .xlsx workbook as a survey table (first non-empty row = header; see
 * tablesToExtraction), using each cell's displayed text (formula results, formatted dates, rich text flattened).
 * Locators name the sheet when there is more than one ("Responses row 12"). Engine "xlsx".
 *
 * The archive is checked against the extraction limits first (checkedArchive), and exceljs reads the checked copy.
 * Only cells that exist are read and stored, and each sheet's rows × columns are counted against `maxTableCells`.
 *
 * @throws ExtractionError `too_large` over a limit (see checkedArchive) or with more table cells than
 *   `maxTableCells`; `corrupt` when the workbook cannot be opened (truncated, not really XLSX, encrypted), with
 *   exceljs' own error in the log, not in the reason.
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
  // Only cells that exist are visited and stored: includeEmpty made exceljs create a Cell for every column up to a
  // row's last one (16,384 for XFD) and a Row for every gap, about 4 MB per row of a 7 KB workbook. Rows keep their
  // cells at their column index with holes between (tablesToExtraction reads a hole as an empty cell). exceljs still
  // steps through every column index up to a row's last cell (under 1 µs each), so each row's width and each row
  // slot count against maxTableCells: that bounds the main-thread time too, and tablesToExtraction bounds its grid.
  let cells = 0;
  const count = (n: number) => {
    cells += n;
    if (cells > limits.maxTableCells) throw tableTooLarge(limits.maxTableCells);
  };
  const tables: Table[] = [];
  workbook.eachSheet((sheet) => {
    const rows: string[][] = [];
    sheet.eachRow((row, rowNumber) => {
      count(row.cellCount);
      const out: string[] = [];
      row.eachCell((cell, col) => {
        out[col - 1] = cellText(cell);
      });
      // The row's width is its last cell that exists, value or not, as includeEmpty read it: a header's trailing
      // empty cells still name their columns ("Column 4"). Setting the length allocates nothing for the holes.
      out.length = row.cellCount;
      rows[rowNumber - 1] = out;
    });
    count(rows.length);
    tables.push({ name: sheet.name, rows: Array.from(rows, (r) => r ?? NO_CELLS) });
  });
  return tablesToExtraction(tables, "xlsx");
}

/** The row of a gap between rows with values (rows are only read, never changed). */
const NO_CELLS: string[] = [];

function cellText(cell: ExcelJS.Cell): string {
  try {
    return cell.text ?? "";
  } catch {
    // cell.text throws on a few exotic value types (e.g. shared-formula errors); the raw value is the fallback.
    return cell.value === null || cell.value === undefined ? "" : String(cell.value);
  }
}
