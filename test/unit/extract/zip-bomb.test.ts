/**
 * Resource limits of extraction (issue #10 point 2) and failure reasons free of library internals (point 9):
 * - DOCX/XLSX archives are checked from their central directory before any parser sees them (entry count, total
 *   inflated size, inflated XML size, per-entry inflation ratio), and the declared sizes are enforced while inflating;
 * - every format's extracted text is capped while it is built;
 * - through the real upload path, the audit's zip bomb ends `failed` with the clear reason, and the process survives
 *   several at once.
 * The bomb tests come first: they read the process's peak RSS, which earlier work in this file would have raised.
 */
import { randomBytes } from "node:crypto";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { extract, ExtractionError } from "../../../core/extract/index";
import type { Extraction } from "../../../core/extract/types";
import type { FileKind } from "../../../core/extract/validate";
import { newWorkspace, call } from "../../support/api";
import { uploadResearch, waitFor } from "../../support/multipart";
import { real } from "./helpers";
import { deflated, docx, MiB, paragraph, repeated, surveyXlsx, unzip, xlsxWithExtraEntries, zip, zipBombDocx } from "./zips";

const DOCX = "application/vnd.openxmlformats-officedocument.wordprocessingml.document";
const XLSX = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet";
const TYPES: Partial<Record<FileKind, string>> = { docx: DOCX, xlsx: XLSX, text: "text/plain", markdown: "text/markdown", csv: "text/csv", json: "application/json", vtt: "text/vtt" };

const run = (bytes: Buffer, kind: FileKind): Promise<Extraction> => extract({ bytes, kind, contentType: TYPES[kind] ?? "application/octet-stream", filename: `file.${kind}` });

/** The ExtractionError an extraction fails with, how long it took, and how much the process's peak RSS grew. */
async function failure(p: () => Promise<unknown>): Promise<{ err: ExtractionError; ms: number; peakGrowth: number }> {
  const peak0 = process.resourceUsage().maxRSS * 1024;
  const t0 = performance.now();
  try {
    await p();
  } catch (err) {
    expect(err).toBeInstanceOf(ExtractionError);
    return { err: err as ExtractionError, ms: performance.now() - t0, peakGrowth: process.resourceUsage().maxRSS * 1024 - peak0 };
  }
  throw new Error("expected the extraction to fail");
}

/** Text of a parser, zlib or V8 error that must never reach a user-visible reason. */
const INTERNALS = /0x1fffffe8|Cannot create a string|jszip|Corrupted zip|End of data|invalid (block|distance|stored|code|literal)|signature|central directory|too many bytes|unexpected EOF|\bat \S+:\d+|Error:/i;

/** A whitespace-filled word/document.xml of `bytes` (inflation ratio about 1,000). */
const whitespaceDocx = (bytes: number) =>
  docx(repeated('<?xml version="1.0"?><w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"><w:body>' + paragraph("Notes"), Buffer.alloc(MiB, " "), Math.round(bytes / MiB), "</w:body></w:document>"));

describe("DOCX and XLSX archives are checked before they are read", () => {
  it("refuses the audit's 1.5 MB DOCX that inflates to 1.5 GiB from its central directory, without inflating it", async () => {
    const bomb = zipBombDocx();
    expect(bomb.length).toBeLessThan(2 * MiB);
    const { err, ms, peakGrowth } = await failure(() => run(bomb, "docx"));
    expect(err.reason).toBe("too_large");
    expect(err.code).toBe("VALIDATION_ERROR");
    expect(err.message).toBe("The Word document is refused: it unpacks to 1,536 MB, more than the limit of 256 MB");
    expect(ms).toBeLessThan(2_000);
    expect(peakGrowth).toBeLessThan(128 * MiB);
  });

  it("refuses a bomb whose headers understate its size, stopping at the declared size while inflating", async () => {
    const liar = zipBombDocx(undefined, MiB); // declares 1 MiB, inflates to 1.5 GiB
    const { err, ms, peakGrowth } = await failure(() => run(liar, "docx"));
    expect(err.reason).toBe("too_large");
    expect(err.message).toBe("The Word document is refused: its contents unpack to more than the sizes it declares, as zip bombs do");
    expect(ms).toBeLessThan(2_000);
    expect(peakGrowth).toBeLessThan(128 * MiB);
  });

  it("four bombs at once are all refused, quickly, and the process's memory stays flat", async () => {
    const bomb = zipBombDocx();
    const { peakGrowth, ms, err } = await failure(() => Promise.all([bomb, bomb, bomb, bomb].map((b) => run(b, "docx"))));
    expect(err.reason).toBe("too_large");
    const all = await Promise.allSettled([bomb, bomb, bomb, bomb].map((b) => run(b, "docx")));
    expect(all.map((r) => r.status === "rejected" && (r.reason as ExtractionError).reason)).toEqual(["too_large", "too_large", "too_large", "too_large"]);
    expect(ms).toBeLessThan(3_000);
    expect(peakGrowth).toBeLessThan(128 * MiB);
  });

  it("refuses an entry inflating beyond the ratio limit even when every size is within its limit", async () => {
    const { err } = await failure(() => run(whitespaceDocx(8 * MiB), "docx"));
    expect(err.reason).toBe("too_large");
    expect(err.message).toMatch(/^The Word document is refused: part of it unpacks to (9\d\d|1,0\d\d) times its packed size, more than the limit of 500 times, as zip bombs do$/);
  });

  it("refuses a DOCX whose XML alone is over the Word limit, though the archive is under the total", async () => {
    const { err } = await failure(() => run(whitespaceDocx(30 * MiB), "docx"));
    expect(err.reason).toBe("too_large");
    expect(err.message).toBe("The Word document is refused: its document content (XML) unpacks to 30 MB, more than the limit of 24 MB");
  });

  it("refuses an XLSX with more entries than the limit, before reading any", async () => {
    const bomb = await xlsxWithExtraEntries(await surveyXlsx(), 10_001);
    const entries = (await unzip(bomb)).length;
    const { err, ms } = await failure(() => run(bomb, "xlsx"));
    expect(err.reason).toBe("too_large");
    expect(err.message).toBe(`The spreadsheet is refused: its archive holds ${entries.toLocaleString("en-US")} files, more than the limit of 10,000`);
    expect(ms).toBeLessThan(2_000);
  });

  it("still reads real files: the realdata DOCX, an exceljs survey, and a DOCX carrying 20 MB of images", async () => {
    const x = await run(real("jupyter/docs/JupyterDay-code-of-conduct.docx"), "docx");
    expect(x.extracted_text).toContain("Code of Conduct");
    const survey = await run(await surveyXlsx(), "xlsx");
    expect(survey.units.map((u) => u.text)).toContain("The exported PDF cut off my wide tables");
    // Incompressible media count toward the total but not toward the XML limit or the ratio.
    const withImages = zip([
      ...(await unzip(docx(paragraph("Screenshots from the usability sessions follow.")))).map((e) => ({ name: e.name, content: e.data })),
      { name: "word/media/image1.png", content: randomBytes(20 * MiB) },
    ]);
    expect((await run(withImages, "docx")).extracted_text).toBe("Screenshots from the usability sessions follow.");
  });

  describe("settings", () => {
    const saved = { ...process.env };
    afterEach(() => {
      for (const k of Object.keys(process.env)) if (k.startsWith("EXTRACT_MAX_")) delete process.env[k];
      Object.assign(process.env, saved);
    });

    it("EXTRACT_MAX_ARCHIVE_ENTRIES and EXTRACT_MAX_INFLATED_BYTES are read on each extraction", async () => {
      const realDocx = real("jupyter/docs/JupyterDay-code-of-conduct.docx");
      process.env.EXTRACT_MAX_ARCHIVE_ENTRIES = "5";
      expect((await failure(() => run(realDocx, "docx"))).err.message).toMatch(/^The Word document is refused: its archive holds \d+ files, more than the limit of 5$/);
      delete process.env.EXTRACT_MAX_ARCHIVE_ENTRIES;
      process.env.EXTRACT_MAX_INFLATED_BYTES = String(64 * 1024);
      expect((await failure(() => run(realDocx, "docx"))).err.message).toMatch(/^The Word document is refused: it unpacks to \d+ KB, more than the limit of 64 KB$/);
    });
  });
});

describe("tables are read from the cells that exist, within EXTRACT_MAX_TABLE_CELLS", () => {
  afterEach(() => {
    delete process.env.EXTRACT_MAX_TABLE_CELLS;
  });

  /** A workbook: a header in A1, then `rows` rows each with an answer in A and a value in the last column, XFD. */
  function farColumnXlsx(rows: number): Buffer {
    const text = (ref: string, t: string) => `<c r="${ref}" t="inlineStr"><is><t>${t}</t></is></c>`;
    const body = Array.from({ length: rows }, (_, i) => `<row r="${i + 2}">${text(`A${i + 2}`, `Finding the export button took participant ${i + 2} a while`)}<c r="XFD${i + 2}"><v>${i}</v></c></row>`);
    const ns = "http://schemas.openxmlformats.org";
    return zip([
      {
        name: "[Content_Types].xml",
        content: `<?xml version="1.0"?><Types xmlns="${ns}/package/2006/content-types"><Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/><Default Extension="xml" ContentType="application/xml"/><Override PartName="/xl/workbook.xml" ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.sheet.main+xml"/><Override PartName="/xl/worksheets/sheet1.xml" ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.worksheet+xml"/></Types>`,
      },
      { name: "_rels/.rels", content: `<?xml version="1.0"?><Relationships xmlns="${ns}/package/2006/relationships"><Relationship Id="rId1" Type="${ns}/officeDocument/2006/relationships/officeDocument" Target="xl/workbook.xml"/></Relationships>` },
      {
        name: "xl/workbook.xml",
        content: `<?xml version="1.0"?><workbook xmlns="${ns}/spreadsheetml/2006/main" xmlns:r="${ns}/officeDocument/2006/relationships"><sheets><sheet name="Responses" sheetId="1" r:id="rId1"/></sheets></workbook>`,
      },
      { name: "xl/_rels/workbook.xml.rels", content: `<?xml version="1.0"?><Relationships xmlns="${ns}/package/2006/relationships"><Relationship Id="rId1" Type="${ns}/officeDocument/2006/relationships/worksheet" Target="worksheets/sheet1.xml"/></Relationships>` },
      { name: "xl/worksheets/sheet1.xml", content: `<?xml version="1.0"?><worksheet xmlns="${ns}/spreadsheetml/2006/main"><sheetData><row r="1">${text("A1", "What was hardest?")}</row>${body.join("")}</sheetData></worksheet>` },
    ]);
  }

  it("a small workbook with a value in column XFD on every row is read, and the process's memory stays flat", async () => {
    // Reading every column up to XFD made exceljs create 16,384 cells per row: about 4 MB of heap each.
    const bytes = farColumnXlsx(150);
    expect(bytes.length).toBeLessThan(8 * 1024);
    const peak0 = process.resourceUsage().maxRSS * 1024;
    const x = await run(bytes, "xlsx");
    const peakGrowth = process.resourceUsage().maxRSS * 1024 - peak0;
    expect(x.units).toHaveLength(150);
    expect(x.units[0]).toEqual({ kind: "response", text: "Finding the export button took participant 2 a while", speaker: "respondent 1", fields: { question: "What was hardest?" }, locator: "row 2" });
    expect(peakGrowth).toBeLessThan(64 * MiB);
  });

  it("refuses an XLSX and a CSV whose rows × columns exceed the limit, and still reads a survey under it", async () => {
    process.env.EXTRACT_MAX_TABLE_CELLS = "100000";
    const message = "The table is refused: its rows and columns make more than 100,000 cells, the most we read from one file; split the file into smaller ones";
    // 10 rows reaching column XFD: 163,840 cells, though only 20 exist.
    const { err: xlsxErr } = await failure(async () => run(farColumnXlsx(10), "xlsx"));
    expect([xlsxErr.reason, xlsxErr.message]).toEqual(["too_large", message]);
    // A 2,000-column header over 100 one-cell rows: the table builder would lay out 200,000 cells.
    const csv = `${Array.from({ length: 2000 }, (_, i) => `q${i}`).join(",")}\n${Array.from({ length: 100 }, (_, i) => `answer number ${i}`).join("\n")}`;
    const { err: csvErr } = await failure(() => run(Buffer.from(csv), "csv"));
    expect([csvErr.reason, csvErr.message]).toEqual(["too_large", message]);
    expect((await run(await surveyXlsx(), "xlsx")).units.map((u) => u.text)).toContain("The exported PDF cut off my wide tables");
  });
});

describe("the extracted text is capped while it is built, for every format", () => {
  beforeEach(() => {
    process.env.EXTRACT_MAX_TEXT_CHARS = "5000";
  });
  afterEach(() => {
    delete process.env.EXTRACT_MAX_TEXT_CHARS;
  });

  const sentence = (i: number) => `Participant ${i} said the export dialog hides the CSV option behind a menu they never open.`;
  const clock = (s: number) => `00:${String(Math.floor(s / 60)).padStart(2, "0")}:${String(s % 60).padStart(2, "0")}`;
  const many = (n: number) => Array.from({ length: n }, (_, i) => sentence(i));
  const cases: { kind: FileKind; bytes: () => Promise<Buffer> | Buffer }[] = [
    { kind: "text", bytes: () => Buffer.from(many(80).join("\n\n")) },
    { kind: "markdown", bytes: () => Buffer.from(`# Notes\n\n${many(80).join("\n\n")}`) },
    { kind: "csv", bytes: () => Buffer.from(`id,What was hardest?\n${many(80).map((s, i) => `r${i},"${s}"`).join("\n")}`) },
    { kind: "json", bytes: () => Buffer.from(JSON.stringify({ answers: many(80).map((s) => ({ comment: s })) })) },
    { kind: "vtt", bytes: () => Buffer.from(`WEBVTT\n\n${many(80).map((s, i) => `${clock(i)}.000 --> ${clock(i)}.900\nP${i % 3}: ${s}`).join("\n\n")}\n`) },
    { kind: "docx", bytes: () => docx(many(80).map(paragraph).join("")) },
  ];

  it.each(cases)("$kind over EXTRACT_MAX_TEXT_CHARS fails too_large, naming the cap", async ({ kind, bytes }) => {
    const { err } = await failure(async () => run(await bytes(), kind));
    expect(err.reason).toBe("too_large");
    expect(err.message).toBe("The extracted text is longer than 5,000 characters, the most we keep from one file; split the file into smaller ones");
  });

  it("text just under the cap extracts", async () => {
    const x = await run(Buffer.from(many(50).join("\n\n")), "text");
    expect(x.extracted_text.length).toBeLessThanOrEqual(5000);
    expect(x.extracted_text.length).toBeGreaterThan(4500);
  });

  it("the default cap, 32,000,000 characters, stops a 33 MB text file", async () => {
    delete process.env.EXTRACT_MAX_TEXT_CHARS;
    const big = Buffer.from(`${sentence(1).repeat(10)}\n\n`.repeat(Math.ceil(33_000_000 / (sentence(1).length * 10 + 2))));
    const { err } = await failure(() => run(big, "text"));
    expect(err.reason).toBe("too_large");
    expect(err.message).toBe("The extracted text is longer than 32,000,000 characters, the most we keep from one file; split the file into smaller ones");
  });
});

describe("failure reasons say what is wrong without the parser's internals", () => {
  const realDocx = real("jupyter/docs/JupyterDay-code-of-conduct.docx");

  it("a truncated DOCX, a DOCX with damaged compressed data, a truncated XLSX", async () => {
    const damaged = docx(deflated(`<w:document>${paragraph("x".repeat(5000))}</w:document>`));
    // Flip bytes in the middle of word/document.xml's deflate stream (the last entry, before the central directory).
    damaged.fill(0xff, damaged.length - 400, damaged.length - 300);
    const xlsx = await surveyXlsx();
    const outcomes = [
      await failure(() => run(realDocx.subarray(0, 6000), "docx")),
      await failure(() => run(damaged, "docx")),
      await failure(() => run(xlsx.subarray(0, xlsx.length - 200), "xlsx")),
    ].map(({ err }) => ({ reason: err.reason, message: err.message }));
    expect(outcomes).toEqual([
      { reason: "corrupt", message: "The Word document could not be read (it may be truncated, corrupt or password-protected)" },
      { reason: "corrupt", message: "The Word document could not be read (it may be truncated, corrupt or password-protected)" },
      { reason: "corrupt", message: "The spreadsheet could not be read (it may be truncated, corrupt or password-protected)" },
    ]);
  });

  it("a truncated PDF, invalid JSON", async () => {
    const pdf = real("jupyter/docs/jupyter-org-redesign-heuristic-eval-competitive-analysis.pdf");
    const { err: pdfErr } = await failure(() => extract({ bytes: pdf.subarray(0, 2000), kind: "pdf", contentType: "application/pdf", filename: "r.pdf" }));
    expect(pdfErr.message).toBe("The PDF could not be read (it may be truncated or corrupt)");
    const { err: jsonErr } = await failure(() => run(Buffer.from('{"tickets": [\n  {"title": "Kernel dies",}\n]}'), "json"));
    expect(jsonErr.message).toBe("The JSON file could not be parsed: it is not valid JSON near line 2, column 27");
    for (const err of [pdfErr, jsonErr]) expect(err.message).not.toMatch(INTERNALS);
  });
});

describe("through POST /api/research/upload and the extraction state machine", () => {
  it("zip bombs uploaded together end failed with the clear reason, and a real DOCX beside them completes", async () => {
    const { owner, workspace } = await newWorkspace();
    const bomb = { name: "quarterly-notes.docx", data: zipBombDocx() };
    const uploads = await Promise.all([
      uploadResearch(owner.token, workspace.id, bomb, DOCX),
      uploadResearch(owner.token, workspace.id, { ...bomb, name: "quarterly-notes-2.docx" }, DOCX),
      uploadResearch(owner.token, workspace.id, { ...bomb, name: "quarterly-notes-3.docx" }, DOCX),
      uploadResearch(owner.token, workspace.id, { name: "coc.docx", data: real("jupyter/docs/JupyterDay-code-of-conduct.docx") }, DOCX),
    ]);
    for (const u of uploads) expect(u.status, u.text).toBe(201);
    const settled = await Promise.all(
      uploads.map((u) =>
        waitFor(async () => {
          const res = await call("GET", `/api/research/sources/${u.body.id}`, { token: owner.token });
          return res.body.processing_status !== "pending" ? res.body : undefined;
        }, 60_000),
      ),
    );
    for (const source of settled.slice(0, 3)) {
      expect(source.processing_status).toBe("failed");
      expect(source.processing_error).toBe("The Word document is refused: it unpacks to 1,536 MB, more than the limit of 256 MB");
      expect(source.processing_error).not.toMatch(INTERNALS);
    }
    expect(settled[3].processing_status, settled[3].processing_error).toBe("completed");
  }, 90_000);
});
