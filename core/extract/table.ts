/**
 * Tables (CSV files, XLSX sheets) as survey exports: one `response` unit per free-text answer cell, with the
 * column header as `fields.question` and the respondent as `speaker`. Columns that are not answers in someone's
 * own words (ids, timestamps, numbers, ratings, single/multiple-choice picks) are left out of the units, since
 * they would only add noise to synthesis. A table with no free-text column at all (usage data) gets one `row`
 * unit per row instead, so its content is still quotable.
 */
import { TextBuilder, isBlankAnswer } from "./text";
import type { Extraction } from "./types";

export interface Table {
  /** Sheet name for workbooks; appears in locators ("Sheet1 row 4"). */
  name?: string;
  /** Rows of cell text, header row first. Ragged rows are fine. */
  rows: string[][];
}

type ColumnRole = "id" | "answer" | "meta";

/** Numbers, money, percentages, versions, dates and times ("2024-05-31T20:57:40Z", "2020/01/29 3:02:25 pm CET"). */
const NUMERIC_OR_DATE = /^[-+]?[\d.,:/\s%$€£-]+(T[\d:.]+)?(\s?[aApP]\.?[mM]\.?)?(\s?(Z|[A-Z]{2,5}|[+-]\d{2}:?\d{2}))?$/;

/** Up to this many distinct picks covering nearly every cell is a choice column, not free text. */
const CHOICE_VOCABULARY = 30;

/**
 * Survey-aware extraction of one or more tables (spec 01 Research source: extracted_text).
 *
 * extracted_text groups answers by question: "Question: <header>" then one line per answer, "- [<respondent>] <answer>",
 * so each answer appears verbatim and the file reads like a survey report. Units: `response` with `speaker` (the id
 * column's value, else "respondent <n>" by data row), `fields.question`, `locator` "row <spreadsheet row>".
 */
export function tablesToExtraction(tables: Table[], engine: string): Extraction {
  const b = new TextBuilder();
  let firstSection = true;
  const separate = () => {
    if (!firstSection) b.text("\n\n");
    firstSection = false;
  };

  for (const table of tables) {
    const headerIndex = table.rows.findIndex((r) => r.some((c) => c.trim()));
    if (headerIndex < 0) continue;
    const header = table.rows[headerIndex].map((h, i) => h.replace(/\s+/g, " ").trim() || `Column ${i + 1}`);
    const body = table.rows.slice(headerIndex + 1).map((r, i) => ({ cells: r, sheetRow: headerIndex + i + 2, n: i + 1 }));
    const data = body.filter((r) => r.cells.some((c) => c && c.trim()));
    if (!data.length) continue;

    const roles = header.map((h, col) => columnRole(h, data.map((r) => r.cells[col] ?? "")));
    const idCol = roles.indexOf("id");
    const where = (row: number) => (table.name && tables.length > 1 ? `${table.name} row ${row}` : `row ${row}`);
    const speakerOf = (r: (typeof data)[number]) => {
      const id = idCol >= 0 ? (r.cells[idCol] ?? "").trim() : "";
      return id || `respondent ${r.n}`;
    };

    if (tables.length > 1 && table.name) {
      separate();
      b.text(`Sheet: ${table.name}`);
    }

    const answerCols = roles.flatMap((role, col) => (role === "answer" ? [col] : []));
    if (answerCols.length) {
      for (const col of answerCols) {
        const answers = data.filter((r) => !isBlankAnswer(r.cells[col] ?? ""));
        if (!answers.length) continue;
        separate();
        b.text(`Question: ${header[col]}\n`);
        for (const r of answers) {
          const speaker = speakerOf(r);
          b.text(`\n- [${speaker}] `);
          b.unit({ kind: "response", text: normalizeCell(r.cells[col]), speaker, fields: { question: header[col] }, locator: where(r.sheetRow) });
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
  // A handful of answers can look like a small vocabulary by chance; only call it choice when picks repeat.
  if (covered >= total * 0.9 && total >= 2 * Math.min(picks.size, CHOICE_VOCABULARY)) return "meta";
  return "answer";
}
