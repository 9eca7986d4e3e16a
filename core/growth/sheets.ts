/**
 * Where `POST /api/admin/plg/sync-sheets` writes the waitlist (spec 02: "syncs waitlist data to a spreadsheet
 * service"). One port, two targets: the Google Sheets API in deployed stages, a CSV file under `.data/` on the local
 * stage with exactly the rows the sheet gets (header first).
 */
import { mkdir, rename, writeFile } from "node:fs/promises";
import { dirname } from "node:path";
import Papa from "papaparse";
import { Config } from "../config";
import { AppError } from "../error";

/** A spreadsheet the waitlist is written to: the whole table replaces what was there. */
export interface SheetTarget {
  /** Replace the sheet's content with `rows` (the header is `rows[0]`). */
  replaceRows(rows: string[][]): Promise<void>;
}

/** The local stand-in: the rows as one RFC 4180 CSV file, written to a temporary name and renamed. */
export class CsvSheet implements SheetTarget {
  constructor(readonly path: string) {}

  async replaceRows(rows: string[][]): Promise<void> {
    await mkdir(dirname(this.path), { recursive: true });
    await writeFile(`${this.path}.tmp`, `${Papa.unparse(rows, { newline: "\r\n" })}\r\n`, "utf8");
    await rename(`${this.path}.tmp`, this.path);
  }
}

/** The settings the Google Sheets target needs in a deployed stage. */
export const SHEETS_SETTINGS = ["GOOGLE_SHEETS_ID", "GOOGLE_SHEETS_CREDENTIALS"] as const;

/**
 * The sheet to write: the CSV file on the local stage (Config.waitlistCsvPath), the Google spreadsheet elsewhere.
 * @throws AppError SERVICE_UNAVAILABLE (503) in a deployed stage: naming GOOGLE_SHEETS_ID and GOOGLE_SHEETS_CREDENTIALS
 *   when either is unset; and, while this build has no Google Sheets client (`@googleapis/sheets` is not a dependency
 *   yet), saying so even when both are set — never a silent no-op.
 */
export function sheetTarget(): SheetTarget {
  if (Config.stage() === "local") return new CsvSheet(Config.waitlistCsvPath());
  const missing = SHEETS_SETTINGS.filter((name) => !(name === "GOOGLE_SHEETS_ID" ? Config.googleSheetsId() : Config.googleSheetsCredentials()));
  if (missing.length) {
    throw new AppError("SERVICE_UNAVAILABLE", `Spreadsheet sync is not configured: set ${missing.join(" and ")}`, { settings: missing });
  }
  throw new AppError("SERVICE_UNAVAILABLE", "Spreadsheet sync needs the Google Sheets client (@googleapis/sheets), which this build does not include", {
    settings: [...SHEETS_SETTINGS],
  });
}
