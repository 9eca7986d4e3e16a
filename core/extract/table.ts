/**
 * Tables (CSV files, XLSX sheets) as survey exports: one `response` unit per answer cell, with the column header as
 * `fields.question` and the respondent as `speaker`, so every response (row) is its own voice in synthesis.
 * Free-text answers are units as they are. Answers to closed questions (single choice, multi-select, rating and
 * ranking columns; core/extract/survey-columns.ts) are units too, marked `fields.closed` with their kind (and
 * `fields.stem`/`fields.option` for one-column-per-option grids): synthesis computes counts, percentages and means
 * from them instead of reading them as text (issue #11). Columns that are neither (ids, timestamps, other numbers,
 * picks under metadata headers such as "Status") are left out. A table with neither free text nor a closed question
 * (usage data) gets one `row` unit per row instead, so its content is still quotable.
 */
import { ExtractionError } from "./errors";
import { capField, extractionLimits, MAX_FIELD_CHARS } from "./limits";
import { TextBuilder, isBlankAnswer } from "./text";
import { classifyClosedColumns, type ClosedColumn } from "./survey-columns";
import type { Extraction } from "./types";

/** The `too_large` failure of a CSV or workbook whose tables hold more than `maxCells` cells (rows × columns). */
export const tableTooLarge = (maxCells: number): ExtractionError =>
  new ExtractionError(
    "too_large",
    `The table is refused: its rows and columns make more than ${maxCells.toLocaleString("en-US")} cells, the most we read from one file; split the file into smaller ones`,
  );

export interface Table {
  /** Sheet name for workbooks; appears in locators ("Sheet1 row 4"). */
  name?: string;
  /** Rows of cell text, header row first. Ragged rows are fine, and so are holes (read as empty cells). */
  rows: string[][];
}

type ColumnRole = "id" | "answer" | "meta" | "closed";

/** Numbers, money, percentages, versions, dates and times ("2024-05-31T20:57:40Z", "2020/01/29 3:02:25 pm CET"). */
const NUMERIC_OR_DATE = /^[-+]?[\d.,:/\s%$€£-]+(T[\d:.]+)?(\s?[aApP]\.?[mM]\.?)?(\s?(Z|[A-Z]{2,5}|[+-]\d{2}:?\d{2}))?$/;

/** Up to this many distinct picks covering nearly every cell is a choice column, not free text. */
const CHOICE_VOCABULARY = 30;

/**
 * Survey-aware extraction of one or more tables (spec 01 Research source: extracted_text).
 *
 * extracted_text groups answers by question: "Question: <header>" then one line per answer, "- [<respondent>] <answer>",
 * so each answer appears verbatim and the file reads like a survey report; closed questions read the same way
 * ("- [respondent 3] Daily"). Units: `response` with `speaker` (the id column's value, else "respondent <n>" by
 * data row, "respondent <n> (<sheet>)" in a workbook of several sheets: each response is one respondent),
 * `fields.question`, `fields.closed` (+ `stem`, `option`) for closed questions, `locator` "row <spreadsheet row>".
 * Field values are capped at MAX_FIELD_CHARS (limits.ts, {@link capField}); the full header stays in extracted_text.
 *
 * @throws ExtractionError `too_large` when the header's columns × the data rows of all tables exceed
 *   `maxTableCells` (checked before the columns are laid out), or the text exceeds `maxTextChars`.
 */
export function tablesToExtraction(tables: Table[], engine: string): Extraction {
  const { maxTableCells } = extractionLimits();
  let cells = 0;
  const b = new TextBuilder();
  let firstSection = true;
  const separate = () => {
    if (!firstSection) b.text("\n\n");
    firstSection = false;
  };

  for (const table of tables) {
    const headerIndex = table.rows.findIndex((r) => r.some((c) => c.trim()));
    if (headerIndex < 0) continue;
    const header = Array.from(table.rows[headerIndex], (h, i) => (h ?? "").replace(/\s+/g, " ").trim() || `Column ${i + 1}`);
    const body = table.rows.slice(headerIndex + 1).map((r, i) => ({ cells: r, sheetRow: headerIndex + i + 2, n: i + 1 }));
    const data = body.filter((r) => r.cells.some((c) => c && c.trim()));
    if (!data.length) continue;
    // Every column below is a full-height array: a 100,000-column header over 1,000 short rows would be 100 million.
    cells += header.length * data.length;
    if (cells > maxTableCells) throw tableTooLarge(maxTableCells);

    const columns = header.map((_, col) => data.map((r) => r.cells[col] ?? ""));
    const closed = classifyClosedColumns(header, columns);
    const roles = header.map((h, col) => (closed[col] ? "closed" : columnRole(h, columns[col])));
    const idCol = roles.indexOf("id");
    const sheetTag = table.name && tables.length > 1 ? ` (${table.name})` : "";
    const where = (row: number) => (table.name && tables.length > 1 ? `${table.name} row ${row}` : `row ${row}`);
    const speakerOf = (r: (typeof data)[number]) => {
      const id = idCol >= 0 ? (r.cells[idCol] ?? "").trim() : "";
      return id ? capField(id) : `respondent ${r.n}${sheetTag}`;
    };

    if (tables.length > 1 && table.name) {
      separate();
      b.text(`Sheet: ${table.name}`);
    }

    const answerCols = roles.flatMap((role, col) => (role === "answer" || role === "closed" ? [col] : []));
    if (answerCols.length) {
      const questions = questionFields(header);
      for (const col of answerCols) {
        const fields = closedFields(questions[col], closed[col]);
        const answers = data.filter((r) => !isBlankAnswer(r.cells[col] ?? ""));
        if (!answers.length) continue;
        separate();
        b.text(`Question: ${header[col]}\n`);
        for (const r of answers) {
          const speaker = speakerOf(r);
          b.text(`\n- [${speaker}] `);
          b.unit({ kind: "response", text: normalizeCell(r.cells[col]), speaker, fields, locator: where(r.sheetRow) });
        }
      }
      continue;
    }

    // No free text anywhere: keep every row, "header: value" pairs, so numbers and picks are still in the text.
    separate();
    b.text(header.join(" | "));
    for (const r of data) {
      const text = header
        .map((h, col) => [h, normalizeCell(r.cells[col] ?? "")] as const)
        .filter(([, v]) => v)
        .map(([h, v]) => `${h}: ${v}`)
        .join("; ");
      b.text("\n");
      b.unit({ kind: "row", text, speaker: idCol >= 0 ? speakerOf(r) : undefined, locator: where(r.sheetRow) });
    }
  }
  return b.build(engine);
}

/** `fields` of a unit answering this column: the question, plus the closed kind and grid parts (capped) when closed. */
function closedFields(question: string, c: ClosedColumn | null): Record<string, string> {
  if (!c) return { question };
  return {
    question,
    closed: c.kind,
    ...(c.stem ? { stem: capField(c.stem) } : {}),
    ...(c.option ? { option: capField(c.option) } : {}),
    ...(c.separator ? { separator: c.separator } : {}),
  };
}

/**
 * Each column's `fields.question`: its header, capped by {@link capField}. Synthesis groups answers by question
 * (core/ai/synthesis/survey.ts), so two different long headers that cap to the same text get their column number
 * appended instead of merging.
 */
function questionFields(header: string[]): string[] {
  const capped = header.map((h) => capField(h));
  const sources = new Map<string, Set<string>>();
  header.forEach((h, col) => {
    if (capped[col] !== h) sources.set(capped[col], (sources.get(capped[col]) ?? new Set()).add(h));
  });
  return capped.map((q, col) => {
    if ((sources.get(q)?.size ?? 0) < 2) return q;
    const suffix = ` (column ${col + 1})`;
    return capField(header[col], MAX_FIELD_CHARS - suffix.length) + suffix;
  });
}

/** Cell text as it will be quoted: trimmed, line ends normalised (a multi-line answer stays multi-line). */
const normalizeCell = (v: string | undefined): string => (v ?? "").replace(/\r\n?/g, "\n").trim();

/**
 * Classify a column from its header and values:
 * - `id`: an id-like header ("Respondent ID", "id", "uuid") whose values are unique;
 * - `meta`: mostly numbers, dates or times, or a choice column (a few distinct picks, possibly ";"-joined
 *   multiple choice, cover at least 90% of the cells);
 * - `answer`: everything else with text in it.
 */
function columnRole(header: string, values: string[]): ColumnRole {
  const filled = values.map((v) => v.trim()).filter((v) => !isBlankAnswer(v));
  if (!filled.length) return "meta";
  if (/^((respondent|response|participant|user|session|submission|record|row)[\s_-]?)?(id|uuid|number|no\.?)$/i.test(header)) {
    if (new Set(filled).size === filled.length) return "id";
  }
  const numericOrDate = filled.filter((v) => NUMERIC_OR_DATE.test(v)).length;
  if (numericOrDate >= filled.length * 0.9) return "meta";

  // Choice columns: count how much of the column the most frequent picks cover.
  const picks = new Map<string, number>();
  let total = 0;
  for (const v of filled) {
    // Multiple choice comes ";"- or ","-joined ("comfortable;intuitive", "Biometrics, Login").
    for (const p of v.split(/[;,]/).map((x) => x.trim().toLowerCase()).filter(Boolean)) {
      picks.set(p, (picks.get(p) ?? 0) + 1);
      total++;
    }
  }
  const top = [...picks.values()].sort((a, b) => b - a).slice(0, CHOICE_VOCABULARY);
  const covered = top.reduce((a, n) => a + n, 0);
  // A handful of answers can look like a small vocabulary by chance; only call it choice when picks repeat, and
  // when they are labels, not sentences (repeated sentences are still someone's words).
  const words = [...picks.keys()].map((k) => k.split(/\s+/).length).sort((a, b) => a - b);
  if (words[Math.floor(words.length / 2)] > 6) return "answer";
  if (covered >= total * 0.9 && total >= 2 * Math.min(picks.size, CHOICE_VOCABULARY)) return "meta";
  return "answer";
}
