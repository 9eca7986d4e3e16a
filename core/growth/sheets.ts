/**
 * Where `POST /api/admin/plg/sync-sheets` writes the waitlist (spec 02: "syncs waitlist data to a spreadsheet
 * service"). One port, two targets: the Google Sheets API in deployed stages (`@googleapis/sheets`, a service account),
 * a CSV file under `.data/` on the local stage with the rows the sheet gets (header first; formula-like cells marked
 * as text, see `CsvSheet`).
 */
import { randomUUID } from "node:crypto";
import { mkdir, rename, writeFile } from "node:fs/promises";
import { dirname } from "node:path";
import Papa from "papaparse";
import { auth as googleAuth, sheets, type sheets_v4 } from "@googleapis/sheets";
import { Config } from "../config";
import { AppError } from "../error";

/** A spreadsheet the waitlist is written to: the whole table replaces what was there. */
export interface SheetTarget {
  /** Replace the sheet's content with `rows` (the header is `rows[0]`). */
  replaceRows(rows: string[][]): Promise<void>;
}

/**
 * The local stand-in: the rows as one RFC 4180 CSV file, written to a temporary name and renamed. A cell a
 * spreadsheet would run as a formula (starting with =, +, -, @, tab or carriage return: OWASP's CSV injection list) is
 * written with a leading `'`, which spreadsheets read as "text": anyone may join the waitlist, so a name or a source
 * is someone else's text. (The Sheets API target writes RAW values, which are never formulas.)
 */
export class CsvSheet implements SheetTarget {
  constructor(readonly path: string) {}

  async replaceRows(rows: string[][]): Promise<void> {
    await mkdir(dirname(this.path), { recursive: true });
    // A name of its own per write: two syncs at once each rename their own file (the last one wins), never one
    // another's half-written or already-renamed one.
    const partial = `${this.path}.${randomUUID()}.tmp`;
    await writeFile(partial, `${Papa.unparse(rows, { newline: "\r\n", escapeFormulae: true })}\r\n`, "utf8");
    await rename(partial, this.path);
  }
}

/** The scope the service account asks for: read and write the spreadsheets shared with it, nothing else in Drive. */
export const SHEETS_SCOPE = "https://www.googleapis.com/auth/spreadsheets";

/** The two fields of a Google service-account key (JSON, as the Cloud console downloads it) the sync uses. */
export interface ServiceAccountKey {
  client_email: string;
  private_key: string;
}

/**
 * The service-account key of GOOGLE_SHEETS_CREDENTIALS.
 * @throws AppError SERVICE_UNAVAILABLE (503) naming the setting when it is not such a key (the text is never echoed)
 */
export function serviceAccountKey(json: string): ServiceAccountKey {
  let parsed: unknown;
  try {
    parsed = JSON.parse(json);
  } catch {
    parsed = undefined;
  }
  const key = parsed as Partial<ServiceAccountKey> | undefined;
  if (!key || typeof key.client_email !== "string" || !key.client_email.includes("@") || typeof key.private_key !== "string" || !key.private_key.includes("PRIVATE KEY")) {
    throw new AppError("SERVICE_UNAVAILABLE", "GOOGLE_SHEETS_CREDENTIALS is not a Google service-account key (the JSON key file, with client_email and private_key)", {
      settings: ["GOOGLE_SHEETS_CREDENTIALS"],
    });
  }
  return { client_email: key.client_email, private_key: key.private_key };
}

interface GaxiosLikeError {
  status?: number;
  message?: string;
  response?: { status?: number; headers?: Headers; data?: unknown };
}

/**
 * A Google failure as the sync's answer: a limit is 429 RATE_LIMITED with Google's wait; anything else 503 saying what
 * Google said and, for a refusal, what to do (share the spreadsheet with the service account). Nothing of the key.
 */
function sheetsError(err: unknown, key: ServiceAccountKey, spreadsheetId: string): unknown {
  if (err instanceof AppError) return err;
  const e = err as GaxiosLikeError;
  const status = e?.response?.status ?? e?.status;
  if (typeof status !== "number") return err;
  const data = e.response?.data as { error?: string | { message?: string }; error_description?: string } | undefined;
  // The token endpoint answers {error, error_description}; the Sheets API {error: {code, message, status}}.
  const said = typeof data?.error === "string" ? `${data.error}${data.error_description ? `: ${data.error_description}` : ""}` : (data?.error?.message ?? `HTTP ${status}`);
  if (status === 429) {
    const after = Number(e.response?.headers?.get?.("retry-after"));
    const wait = Number.isFinite(after) && after > 0 ? Math.ceil(after) : 60;
    return new AppError("RATE_LIMITED", `Google Sheets is rate limiting the sync; retry after ${wait} s`, { retry_after_seconds: wait });
  }
  if (typeof data?.error === "string") {
    return new AppError("SERVICE_UNAVAILABLE", `Google refused the service account of GOOGLE_SHEETS_CREDENTIALS (${said})`, { settings: ["GOOGLE_SHEETS_CREDENTIALS"] });
  }
  if (status === 403) {
    return new AppError("SERVICE_UNAVAILABLE", `Google Sheets refused the sync (${said}): share the spreadsheet with ${key.client_email} as an editor`, { settings: ["GOOGLE_SHEETS_ID"] });
  }
  if (status === 404) {
    return new AppError("SERVICE_UNAVAILABLE", `Google Sheets has no spreadsheet ${spreadsheetId} (GOOGLE_SHEETS_ID) that ${key.client_email} can see (${said})`, { settings: ["GOOGLE_SHEETS_ID"] });
  }
  return new AppError("SERVICE_UNAVAILABLE", `Google Sheets did not take the sync (${said})`);
}

/** A sheet name as an A1 range: quoted, its quotes doubled. */
const a1Sheet = (title: string) => `'${title.replace(/'/g, "''")}'`;

/**
 * The waitlist's spreadsheet in Google Sheets: its first sheet (by position) holds the rows. A service account signs
 * in with its key (google-auth-library's JWT grant); the spreadsheet must be shared with the account's e-mail.
 * Replacing is two writes: the sheet's values are cleared, then the rows written from A1 as RAW strings (never parsed,
 * so a name like "=HYPERLINK(...)" stays text, not a formula). A failure between them leaves the sheet empty until the
 * next sync, which writes it whole again.
 */
export class GoogleSheet implements SheetTarget {
  constructor(
    readonly spreadsheetId: string,
    private readonly key: ServiceAccountKey,
  ) {}

  /** A Sheets v4 client signed in as the service account; one quick retry of a 5xx, never of a 429. */
  private client(): sheets_v4.Sheets {
    const jwt = new googleAuth.JWT({ email: this.key.client_email, key: this.key.private_key, scopes: [SHEETS_SCOPE] });
    return sheets({ version: "v4", auth: jwt, retryConfig: { retry: 1, noResponseRetries: 1, retryDelay: 200, statusCodesToRetry: [[500, 599]] } });
  }

  async replaceRows(rows: string[][]): Promise<void> {
    const api = this.client();
    try {
      const { data } = await api.spreadsheets.get({ spreadsheetId: this.spreadsheetId, fields: "sheets.properties(sheetId,title,index)" });
      const first = (data.sheets ?? []).map((s) => s.properties).filter((p): p is sheets_v4.Schema$SheetProperties => !!p?.title).sort((a, b) => (a.index ?? 0) - (b.index ?? 0))[0];
      if (!first?.title) throw new AppError("SERVICE_UNAVAILABLE", `The spreadsheet ${this.spreadsheetId} (GOOGLE_SHEETS_ID) has no sheet to write to`, { settings: ["GOOGLE_SHEETS_ID"] });
      const sheet = a1Sheet(first.title);
      await api.spreadsheets.values.clear({ spreadsheetId: this.spreadsheetId, range: sheet, requestBody: {} });
      const values: sheets_v4.Schema$ValueRange = { range: `${sheet}!A1`, majorDimension: "ROWS", values: rows };
      await api.spreadsheets.values.update({ spreadsheetId: this.spreadsheetId, range: `${sheet}!A1`, valueInputOption: "RAW", requestBody: values });
    } catch (err) {
      throw sheetsError(err, this.key, this.spreadsheetId);
    }
  }
}

/** The settings the Google Sheets target needs in a deployed stage. */
export const SHEETS_SETTINGS = ["GOOGLE_SHEETS_ID", "GOOGLE_SHEETS_CREDENTIALS"] as const;

/** Unset, or `none` (a deployed stage binds the secret, so an operator who does not sync sets it to `none`). */
const unset = (value: string | undefined): boolean => !value || value.trim().toLowerCase() === "none";

/**
 * The sheet to write: the CSV file on the local stage (Config.waitlistCsvPath), the Google spreadsheet elsewhere.
 * @throws AppError SERVICE_UNAVAILABLE (503) in a deployed stage: naming GOOGLE_SHEETS_ID and GOOGLE_SHEETS_CREDENTIALS
 *   when either is unset (or `none`), or GOOGLE_SHEETS_CREDENTIALS when it is not a service-account key
 */
export function sheetTarget(): SheetTarget {
  if (Config.stage() === "local") return new CsvSheet(Config.waitlistCsvPath());
  const id = Config.googleSheetsId();
  const credentials = Config.googleSheetsCredentials();
  const missing = SHEETS_SETTINGS.filter((name) => unset(name === "GOOGLE_SHEETS_ID" ? id : credentials));
  if (missing.length) {
    throw new AppError("SERVICE_UNAVAILABLE", `Spreadsheet sync is not configured: set ${missing.join(" and ")}`, { settings: missing });
  }
  return new GoogleSheet(id!, serviceAccountKey(credentials!));
}
