/**
 * In-process extractors on the real research files in /work/shared/realdata: expected content per format, the
 * verbatim-unit invariant on every file, and clear failures for damaged files.
 */
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join, relative } from "node:path";
import { deflateSync } from "node:zlib";
import ExcelJS from "exceljs";
import Papa from "papaparse";
import { parseSync, stringifySync } from "subtitle";
import type { StructuredTextItem } from "unpdf";
import { afterEach, describe, expect, it } from "vitest";
import { extract, ExtractionError, inspectUpload } from "../../../core/extract/index";
import { capField, MAX_FIELD_CHARS } from "../../../core/extract/limits";
import { pdfWorkerCount, shutdownPdfWorkers, textItemsToExtraction } from "../../../core/extract/pdf";
import type { Extraction } from "../../../core/extract/types";
import type { FileKind } from "../../../core/extract/validate";
import { expectVerbatim, kinds, real, REALDATA } from "./helpers";
import { docx, paragraph } from "./zips";

const run = (bytes: Buffer, kind: FileKind, contentType: string, filename = `file.${kind}`): Promise<Extraction> =>
  extract({ bytes, kind, contentType, filename });

/** The ExtractionError an extraction fails with. */
async function failure(p: Promise<unknown>): Promise<ExtractionError> {
  try {
    await p;
  } catch (err) {
    expect(err).toBeInstanceOf(ExtractionError);
    return err as ExtractionError;
  }
  throw new Error("expected the extraction to fail");
}

describe("PDF (unpdf)", () => {
  it("extracts the 15-page research report with page locators and joined paragraphs", async () => {
    const x = await run(real("jupyter/docs/jupyter-org-redesign-heuristic-eval-competitive-analysis.pdf"), "pdf", "application/pdf");
    expect(x.engine).toBe("unpdf");
    expect(x.pages).toBe(15);
    expect(x.extracted_text).toContain("Heuristic Evaluation & Competitive Analysis");
    const purpose = x.units.find((u) => u.text.startsWith("The website should guide and inform individuals"));
    // The sentence spans three lines in the PDF; it must come out as one paragraph on page 3 under its heading.
    expect(purpose).toMatchObject({
      kind: "paragraph",
      locator: "page 3",
      text: "The website should guide and inform individuals, organizations, contributors and sponsors about Project Jupyter’s core values, technology, and community.",
      fields: { heading: "Purpose of Jupyter.org" },
    });
    expectVerbatim(x);
  });

  it("extracts the 42-page grant proposal and reports its speed", async () => {
    const bytes = real("jupyter/docs/czi-eoss-jupyter-accessibility-proposal.pdf");
    const started = performance.now();
    const x = await run(bytes, "pdf", "application/pdf");
    const seconds = (performance.now() - started) / 1000;
    console.info(`unpdf: ${x.pages} pages in ${seconds.toFixed(2)} s = ${((x.pages ?? 0) / seconds).toFixed(1)} pages/s`);
    expect(x.pages).toBe(42);
    expect(x.extracted_text).toContain("Inclusive and Accessible Scientific Computing in the Jupyter Ecosystem");
    // Double-spaced body text: line spacing alone must not split a paragraph.
    expect(x.units.some((u) => u.text.includes("who will act as the main person responsible for the application and as its point of contact"))).toBe(true);
    // Page numbers ("7 / 53") are furniture, not content.
    expect(x.units.some((u) => /^\d+ \/ \d+$/.test(u.text))).toBe(false);
    expectVerbatim(x);
  });

  it("fails a truncated PDF with a reason a user can act on", async () => {
    const bytes = real("jupyter/docs/jupyter-org-redesign-heuristic-eval-competitive-analysis.pdf");
    const err = await failure(run(bytes.subarray(0, Math.floor(bytes.length / 2)), "pdf", "application/pdf"));
    expect(err.reason).toBe("corrupt");
    expect(err.code).toBe("VALIDATION_ERROR");
    // PDF.js' own words go to the log, not into the reason (issue #10 point 9).
    expect(err.message).toBe("The PDF could not be read (it may be truncated or corrupt)");
  });

  it("reads the same in a worker thread as on the calling thread, failures included", async () => {
    const bytes = real("jupyter/docs/jupyter-org-redesign-heuristic-eval-competitive-analysis.pdf");
    const saved = process.env.PDF_WORKERS;
    const inMode = async (workers: string) => {
      await shutdownPdfWorkers(); // the pool reads PDF_WORKERS when it starts
      process.env.PDF_WORKERS = workers;
      expect(pdfWorkerCount()).toBe(Number(workers));
      const ok = await run(bytes, "pdf", "application/pdf");
      const bad = await failure(run(bytes.subarray(0, 2000), "pdf", "application/pdf"));
      return { ok, bad: { reason: bad.reason, message: bad.message } };
    };
    try {
      const inThread = await inMode("0");
      const inWorker = await inMode("1");
      expect(inWorker.ok).toEqual(inThread.ok);
      expect(inWorker.ok.pages).toBe(15);
      expect(inWorker.bad).toEqual(inThread.bad);
      expect(inWorker.bad.reason).toBe("corrupt");
    } finally {
      await shutdownPdfWorkers();
      if (saved === undefined) delete process.env.PDF_WORKERS;
      else process.env.PDF_WORKERS = saved;
    }
  });

  describe("crafted text runs (a few KB of content stream repeating one string)", () => {
    afterEach(() => {
      delete process.env.EXTRACT_MAX_PDF_TEXT_RUNS;
    });

    /** `n` PDF.js text items of "Hello there world " on one page: one line, or one line each, 0.01 pt apart. */
    const runs = (n: number, eol: boolean): StructuredTextItem[] =>
      Array.from({ length: n }, (_, i) => ({
        str: "Hello there world ",
        x: 72,
        y: eol ? 720 - i * 0.01 : 720,
        width: 90,
        height: 12,
        fontSize: 12,
        fontFamily: "Helvetica",
        dir: "ltr",
        hasEOL: eol,
      }));

    it("lays out 60,000 runs on one line and 60,000 one-run lines in one paragraph without hanging", () => {
      // The layout runs on the main thread after PDF.js (a worker on the embedded runtime) hands the items over.
      // Re-trimming the growing line per run and re-testing the growing paragraph per line were quadratic: minutes
      // for these two pages. Linear, they take well under a second; the bound only says "does not hang".
      const started = performance.now();
      const x = textItemsToExtraction(2, [runs(60_000, false), runs(60_000, true)]);
      expect(performance.now() - started).toBeLessThan(10_000);
      expect(x.units.map((u) => [u.locator, u.text.length])).toEqual([
        ["page 1", 60_000 * 18 - 1],
        ["page 2", 60_000 * 18 - 1],
      ]);
      expectVerbatim(x);
    });

    it("refuses a page of more than 100,000 runs, and a file over EXTRACT_MAX_PDF_TEXT_RUNS, before any layout", async () => {
      expect(() => textItemsToExtraction(1, [runs(100_001, false)])).toThrow(
        "The PDF is refused: page 1 holds 100,001 pieces of text, more than the limit of 100,000 per page",
      );
      // A real file through PDF.js: 1 KB whose content stream shows one string 1,500 times.
      const bytes = minimalPdf(`BT /F1 12 Tf 72 720 Td ${"(Hello there world) Tj T* ".repeat(1500)}ET`);
      expect(bytes.length).toBeLessThan(2048);
      expect((await run(bytes, "pdf", "application/pdf")).extracted_text.length).toBe(1500 * 17);
      process.env.EXTRACT_MAX_PDF_TEXT_RUNS = "1000";
      const err = await failure(run(bytes, "pdf", "application/pdf"));
      expect(err.reason).toBe("too_large");
      expect(err.message).toBe("The PDF is refused: it holds more than 1,000 pieces of text, the limit");
    });
  });
});

/** A one-page PDF (Helvetica as /F1) whose page content is `content`, deflated, with a correct xref table. */
function minimalPdf(content: string): Buffer {
  const stream = deflateSync(Buffer.from(content));
  const objects = [
    Buffer.from("<< /Type /Catalog /Pages 2 0 R >>"),
    Buffer.from("<< /Type /Pages /Kids [3 0 R] /Count 1 >>"),
    Buffer.from("<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 5 0 R >> >> /Contents 4 0 R >>"),
    Buffer.concat([Buffer.from(`<< /Length ${stream.length} /Filter /FlateDecode >>\nstream\n`), stream, Buffer.from("\nendstream")]),
    Buffer.from("<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>"),
  ];
  const parts = [Buffer.from("%PDF-1.4\n")];
  const offsets: number[] = [];
  let length = parts[0].length;
  objects.forEach((body, i) => {
    offsets.push(length);
    const obj = Buffer.concat([Buffer.from(`${i + 1} 0 obj\n`), body, Buffer.from("\nendobj\n")]);
    parts.push(obj);
    length += obj.length;
  });
  const xref = offsets.map((o) => `${String(o).padStart(10, "0")} 00000 n \n`).join("");
  parts.push(Buffer.from(`xref\n0 ${objects.length + 1}\n0000000000 65535 f \n${xref}trailer\n<< /Size ${objects.length + 1} /Root 1 0 R >>\nstartxref\n${length}\n%%EOF\n`));
  return Buffer.concat(parts);
}

describe("DOCX (mammoth)", () => {
  it("extracts the code of conduct as paragraphs and list items", async () => {
    const x = await run(real("jupyter/docs/JupyterDay-code-of-conduct.docx"), "docx", "application/vnd.openxmlformats-officedocument.wordprocessingml.document");
    expect(x.engine).toBe("docx");
    expect(x.units[0]).toMatchObject({ kind: "paragraph", text: "JupyterDay Code of Conduct" });
    expect(x.units.map((u) => u.text)).toContain("Sexual images in public spaces");
    // List items carry a bullet in the text, so the layout still reads as a list.
    expect(x.extracted_text).toContain("- Sexual images in public spaces");
    expect(x.units.length).toBeGreaterThan(20);
    expectVerbatim(x);
  });

  it("fails a truncated DOCX clearly", async () => {
    const bytes = real("jupyter/docs/JupyterDay-code-of-conduct.docx");
    const err = await failure(run(bytes.subarray(0, 6000), "docx", "application/vnd.openxmlformats-officedocument.wordprocessingml.document"));
    expect(err.reason).toBe("corrupt");
    expect(err.message).toMatch(/^The Word document could not be read/);
  });
});

describe("CSV survey exports (papaparse)", () => {
  it("app-store reviews: one response per review, the star rating a closed question; date, version, OS and tags are not answers", async () => {
    const x = await run(real("va-mobile-app/app-store-reviews-2024-05-partial.csv"), "csv", "text/csv");
    expect(kinds(x)).toEqual({ response: 70 + 70 });
    expect(x.units.find((u) => u.fields?.question === "review")).toEqual({
      kind: "response",
      text: "There’s no point of facial recognition if I have to log in through Defense Server every time.",
      speaker: "respondent 1",
      fields: { question: "review" },
      locator: "row 2",
    });
    expect(x.units.find((u) => u.fields?.question === "rating")).toEqual({
      kind: "response",
      text: "2",
      speaker: "respondent 1",
      fields: { question: "rating", closed: "rating" },
      locator: "row 2",
    });
    expect(new Set(x.units.map((u) => u.fields?.question))).toEqual(new Set(["review", "rating"]));
    expectVerbatim(x);
  });

  it("2020 Jupyter survey: the Respondent ID column is the speaker", async () => {
    const x = await run(real("jupyter/surveys/2020-jupyter-survey-text_fields.csv"), "csv", "text/csv");
    expect(x.units).toContainEqual({
      kind: "response",
      text: "QlikSense and Python Panel",
      speaker: "12390574951",
      fields: { question: "What tools do you use to create dashboards? (other)" },
      locator: "row 2",
    });
    expect(x.units.every((u) => u.kind === "response" && /^\d+$/.test(u.speaker ?? ""))).toBe(true);
    expect(x.units.some((u) => u.fields?.question === "Respondent ID")).toBe(false);
    expect(x.units.some((u) => u.fields?.closed)).toBe(false);
    expectVerbatim(x);
  });

  it("2015 UX survey: free text as it is, choice questions marked closed, blank and N/A-like answers skipped", async () => {
    const x = await run(real("jupyter/surveys/2015-notebook-ux-survey-export.csv"), "csv", "text/csv");
    const questions = new Set(x.units.map((u) => u.fields?.question));
    expect(questions).toContain("What, if anything, hinders you from making Jupyter Notebook an even more regular part of your workflow?");
    // Timestamps and the export's status column are context, not questions.
    for (const q of ["Time Started", "Date Submitted", "Status"]) expect(questions.has(q), q).toBe(false);
    const closed = new Map(x.units.filter((u) => u.fields?.closed).map((u) => [u.fields!.question, u.fields!.closed]));
    expect(Object.fromEntries(closed)).toEqual({
      "How often do you use Jupyter Notebook?": "single",
      "Roughly how long have you been using Jupyter Notebook?": "single",
      "How do you run the Jupyter Notebook?": "single",
      "Select all the words that best describe Jupyter Notebook.": "multi",
      "How many years have you been in this role?": "single",
      "How many people typically see and/or interact with the results of your work in Jupyter Notebook? (Consider people who view your notebooks on nbviewer, colleagues who rerun your notebooks, developers who star your notebook repos on GitHub, audiences who see your notebooks as slideshows, etc.)": "single",
    });
    expect(x.units.find((u) => u.fields?.closed === "multi")!.fields!.separator).toBe(";");
    // Every response has its own respondent: the 1,091 answers to the first question come from 1,091 speakers.
    const often = x.units.filter((u) => u.fields?.question === "How often do you use Jupyter Notebook?");
    expect(new Set(often.map((u) => u.speaker)).size).toBe(often.length);
    expect(often.length).toBe(1091);
    expect(x.units.some((u) => /^(n\/?a|na|-|\.)$/i.test(u.text))).toBe(false);
    expect(x.units.filter((u) => !u.fields?.closed).length).toBeGreaterThan(5000);
    expect(x.units.find((u) => u.speaker === "respondent 6" && !u.fields?.closed)).toMatchObject({ text: "lazyness", locator: "row 7" });
    expectVerbatim(x);
  });

  it("mybinder survey: the yes/no and use-case picks are closed questions; 'Na' is skipped", async () => {
    const x = await run(real("jupyter/surveys/mybinder-user-survey-feb-2020.csv"), "csv", "text/csv");
    const free = x.units.filter((u) => !u.fields?.closed);
    expect(new Set(free.map((u) => u.fields?.question))).toEqual(new Set(["If you could change one thing about Binder, what would it be?"]));
    expect(new Set(x.units.filter((u) => u.fields?.closed === "single").map((u) => u.fields?.question))).toEqual(
      new Set(["Would you recommend mybinder.org to a friend?", "What do you (mainly) use mybinder.org for?"]),
    );
    expect(free[0]).toMatchObject({ text: "Reliability.", speaker: "respondent 1" });
    expect(x.units.some((u) => u.text === "Na")).toBe(false);
    expectVerbatim(x);
  });

  it("our survey fixture: single choice, multi-select, rating, a ranking grid and '[option]: n' ranking cells", async () => {
    const x = await run(readFileSync(new URL("../../fixtures/surveys/product-survey.csv", import.meta.url)), "csv", "text/csv");
    const fieldsOf = (q: string) => x.units.find((u) => u.fields?.question === q)?.fields;
    expect(fieldsOf("How often do you use the product?")).toEqual({ question: "How often do you use the product?", closed: "single" });
    expect(fieldsOf("Which features do you use? (select all that apply)")).toMatchObject({ closed: "multi", separator: ";" });
    expect(fieldsOf("How satisfied are you with the product overall? (1 = very dissatisfied, 5 = very satisfied)")).toMatchObject({ closed: "rating" });
    expect(fieldsOf("Rank these challenges from biggest (1) to smallest (4) [Pricing]")).toEqual({
      question: "Rank these challenges from biggest (1) to smallest (4) [Pricing]",
      closed: "rank",
      stem: "Rank these challenges from biggest (1) to smallest (4)",
      option: "Pricing",
    });
    expect(fieldsOf("Order these improvements by importance")).toMatchObject({ closed: "rank" });
    // Free text stays free text even when answers repeat (labels are short; these are sentences).
    expect(fieldsOf("What is the biggest problem you face with the product?")).toEqual({ question: "What is the biggest problem you face with the product?" });
    expect(x.units.find((u) => u.speaker === "R101" && u.fields?.question === "How often do you use the product?")!.text).toBe("Daily");
    expectVerbatim(x);
  });

  it("usage data without free text or questions keeps one row unit per row", async () => {
    // "plan" picks and small "seats" numbers under metadata headers are not survey questions.
    const csv = ["date,plan,seats,sessions", ...Array.from({ length: 12 }, (_, i) => `2024-05-${10 + i},${i % 3 ? "Pro" : "Free"},${(i % 4) + 1},${10 + i * 7}`)].join("\n");
    const x = await run(Buffer.from(csv), "csv", "text/csv");
    expect(kinds(x)).toEqual({ row: 12 });
    expect(x.units[0].text).toBe("date: 2024-05-10; plan: Free; seats: 1; sessions: 10");
    expectVerbatim(x);
  });

  it("fails a CSV whose quoted field never closes", async () => {
    const text = real("va-mobile-app/app-store-reviews-2024-05-partial.csv").toString("utf8");
    const broken = Buffer.from(`${text}2024-05-01T00:00:00Z,2.28.0,iOS,1,,"This review never ends\n`);
    const err = await failure(run(broken, "csv", "text/csv"));
    expect(err.reason).toBe("corrupt");
    expect(err.message).toMatch(/quoted field is never closed/);
  });
});

describe("XLSX (exceljs)", () => {
  it("reads every sheet of a workbook as survey tables, sheet names in the locators", async () => {
    // A workbook made from two real CSV exports, one per sheet.
    const wb = new ExcelJS.Workbook();
    for (const [name, file] of [
      ["Reviews", "va-mobile-app/app-store-reviews-2024-05-partial.csv"],
      ["Binder", "jupyter/surveys/mybinder-user-survey-feb-2020.csv"],
    ] as const) {
      const sheet = wb.addWorksheet(name);
      for (const row of Papa.parse<string[]>(real(file).toString("utf8"), { skipEmptyLines: "greedy" }).data) sheet.addRow(row);
    }
    const bytes = Buffer.from(await wb.xlsx.writeBuffer());
    const verdict = await inspectUpload({ head: bytes.subarray(0, 4100), declaredType: "application/octet-stream", filename: "survey.xlsx", size: bytes.length });
    expect(verdict.kind).toBe("xlsx");

    const x = await run(bytes, "xlsx", verdict.contentType);
    expect(x.engine).toBe("xlsx");
    expect(x.units).toContainEqual({
      kind: "response",
      text: "There’s no point of facial recognition if I have to log in through Defense Server every time.",
      speaker: "respondent 1 (Reviews)",
      fields: { question: "review" },
      locator: "Reviews row 2",
    });
    // Respondents of different sheets are different people.
    expect(x.units).toContainEqual(expect.objectContaining({ text: "Reliability.", speaker: "respondent 1 (Binder)", locator: "Binder row 2" }));
    expect(kinds(x)).toEqual({ response: 70 + 70 + 238 + 337 + 333 });
    expectVerbatim(x);
  });

  it("marks the closed questions of a one-sheet survey workbook as the CSV reader does", async () => {
    const csv = readFileSync(new URL("../../fixtures/surveys/product-survey.csv", import.meta.url), "utf8");
    const wb = new ExcelJS.Workbook();
    const sheet = wb.addWorksheet("Responses");
    for (const row of Papa.parse<string[]>(csv, { skipEmptyLines: "greedy" }).data) sheet.addRow(row);
    const x = await run(Buffer.from(await wb.xlsx.writeBuffer()), "xlsx", "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet");
    const fromCsv = await run(Buffer.from(csv), "csv", "text/csv");
    const closed = (e: Extraction) => e.units.filter((u) => u.fields?.closed).map((u) => [u.speaker, u.fields, u.text]);
    expect(closed(x).length).toBeGreaterThan(200);
    expect(closed(x)).toEqual(closed(fromCsv));
    expectVerbatim(x);
  });

  it("fails a damaged workbook clearly", async () => {
    const err = await failure(run(real("jupyter/docs/JupyterDay-code-of-conduct.docx").subarray(0, 3000), "xlsx", "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"));
    expect(err.message).toMatch(/^The spreadsheet could not be read/);
  });
});

describe("Markdown and text", () => {
  it("usability findings: paragraphs keep their heading context, Markdown syntax is gone", async () => {
    const x = await run(real("jupyter/usability-research/2023-05-jupyterlab-accessibility-usability-results.md"), "markdown", "text/markdown");
    expect(x.engine).toBe("markdown");
    expect(x.transcript).toBeUndefined();
    const limitation = x.units.find((u) => u.text.startsWith("None of the participants used a screen reader."));
    expect(limitation?.fields).toEqual({ heading: "Limitations", section: "Results: JupyterLab Accessibility Overview > Limitations" });
    // Links keep their words, not their targets; emphasis markers are dropped.
    expect(x.extracted_text).toContain("with this test script on a modified version of NumPy Tutorials’ Saving and sharing your NumPy arrays notebook.");
    expect(x.extracted_text).not.toContain("**");
    expect(x.extracted_text).not.toContain("](");
    expectVerbatim(x);
  });

  it("podcast transcript: '**Name:**' paragraphs become turns; follow-on paragraphs keep the speaker and inline timestamps", async () => {
    const x = await run(real("jupyter/transcripts/practical-ai-74-tania-allard-jupyter-notebooks.md"), "markdown", "text/markdown");
    expect(x.transcript).toBe(x.extracted_text);
    expect(new Set(x.units.map((u) => u.speaker))).toEqual(new Set(["Daniel Whitenack", "Chris Benson", "Tania Allard"]));
    expect(x.units[0]).toMatchObject({ kind: "turn", speaker: "Daniel Whitenack" });
    expect(x.units[0].text).toMatch(/^Alright, welcome to another episode of Practical AI\./);
    // "\[04:06\] After that I transitioned..." continues Tania's answer.
    expect(x.units.find((u) => u.text.startsWith("After that I transitioned into research software engineering"))).toMatchObject({
      kind: "turn",
      speaker: "Tania Allard",
      timestamp: "00:04:06.000",
    });
    expect(x.extracted_text).toContain("Tania Allard: Hi! It's a pleasure joining you guys.");
    expectVerbatim(x);
  });

  it("interview notes: question-and-answer bullets stay whole", async () => {
    const x = await run(real("va-mobile-app/interview-notes/2023-07-retention-study-participant-10.md"), "markdown", "text/markdown");
    expect(x.units.map((u) => u.text)).toContain("How long have you been out of the military? Since 2006 – 17 years.");
    expectVerbatim(x);
  });

  it("plain text: paragraphs; a one-turn-per-line transcript becomes speaker turns", async () => {
    const ref = await run(real("audio/jfk.reference-transcript.txt"), "text", "text/plain");
    expect(ref.units).toEqual([{ kind: "paragraph", text: "And so my fellow Americans, ask not what your country can do for you, ask what you can do for your country." }]);

    // The first minutes of the real Zoom transcript as a "Name: words" text file.
    const cues = parseSync(real("va-mobile-app/P16-home-screen-evaluative-research-2024-04.transcript.vtt").toString("utf8")).flatMap((n) => (n.type === "cue" ? [n.data.text] : []));
    const x = await run(Buffer.from(cues.slice(0, 40).join("\n")), "text", "text/plain");
    expect(x.transcript).toBeDefined();
    expect(x.units[1]).toEqual({ kind: "turn", text: "Yes, it is.", speaker: "P16" });
    expect(new Set(x.units.map((u) => u.speaker))).toEqual(new Set(["Perigean", "P16"]));
    expectVerbatim(x);
  });
});

describe("JSON", () => {
  it("GitHub issue threads: one comment unit per comment with author and thread title", async () => {
    const x = await run(real("jupyter/support-tickets/jupyter-github-issues.json"), "json", "application/json");
    expect(kinds(x)).toEqual({ comment: 41 });
    const plea = x.units.find((u) => u.speaker === "zeluspudding");
    expect(plea?.fields).toMatchObject({ title: 'Feature idea: "Environment Variables" block', url: "https://github.com/jupyterlab/jupyterlab/issues/443" });
    expect(plea?.locator).toBe("#443 comment 2");
    // Comment bodies are Markdown: rendered to words, bold markers and link targets gone.
    expect(plea?.text).toContain("I'd love to use Jupyter for the ability to make my research more shareable");
    expect(plea?.text).toContain("75 upvotes on this feature request");
    expect(x.extracted_text).toContain("Variable Inspector");
    expectVerbatim(x);
  });

  it("generic JSON: prose string leaves become paragraphs located by JSON path", async () => {
    const answers = Papa.parse<string[]>(real("jupyter/surveys/mybinder-user-survey-feb-2020.csv").toString("utf8"), { skipEmptyLines: true }).data.slice(1, 6);
    const doc = { survey: "mybinder", answers: answers.map(([when, recommend, change]) => ({ when, recommend, change })) };
    const x = await run(Buffer.from(JSON.stringify(doc)), "json", "application/json");
    expect(x.units).toContainEqual({ kind: "paragraph", text: "save = open PR on github", locator: "$.answers[1].change", fields: { path: "$.answers[1].change" } });
    // Short tokens ("Yes", "mybinder") stay in the text but are not quotable units.
    expect(x.units.some((u) => u.text === "Yes")).toBe(false);
    expect(x.extracted_text).toContain("$.answers[0].recommend: Yes");
    expectVerbatim(x);
  });

  it("fails invalid JSON with where it stops being JSON, in our words", async () => {
    const err = await failure(run(real("jupyter/support-tickets/jupyter-github-issues.json").subarray(0, 500), "json", "application/json"));
    expect(err.reason).toBe("corrupt");
    expect(err.message).toMatch(/^The JSON file could not be parsed: it is not valid JSON (near line \d+, column \d+|\(it may be truncated\))$/);
  });
});

describe("Subtitles", () => {
  it("WebVTT Zoom transcript: consecutive cues of a speaker merge into turns with timestamps", async () => {
    const x = await run(real("va-mobile-app/P16-home-screen-evaluative-research-2024-04.transcript.vtt"), "vtt", "text/vtt");
    expect(x.engine).toBe("vtt");
    expect(x.transcript).toBe(x.extracted_text);
    expect(x.units[0]).toEqual({
      kind: "turn",
      text: "Okay once more for the recording armstead. Is it? Okay? If we record today's session.",
      speaker: "Perigean",
      timestamp: "00:00:03.629",
    });
    expect(x.units[1]).toMatchObject({ speaker: "P16", text: "Yes, it is.", timestamp: "00:00:09.540" });
    expect(x.extracted_text.split("\n")[1]).toBe("[00:00:09.540] P16: Yes, it is.");
    expect(new Set(x.units.map((u) => u.speaker))).toEqual(new Set(["Perigean", "P16"]));
    // 923 cues, fewer turns: merging happened, and no two neighbouring turns share a speaker.
    expect(x.units.length).toBeLessThan(923);
    expect(x.units.every((u, i) => i === 0 || u.speaker !== x.units[i - 1].speaker)).toBe(true);
    expect(x.extracted_text).toContain("more descriptive than active");
    expectVerbatim(x);
  });

  it("SRT: the same transcript converted to SubRip extracts the same turns", async () => {
    const nodes = parseSync(real("va-mobile-app/P16-home-screen-evaluative-research-2024-04.transcript.vtt").toString("utf8")).filter((n) => n.type === "cue");
    const srt = stringifySync(nodes.slice(0, 60), { format: "SRT" });
    expect(srt).toContain("00:00:03,629 --> 00:00:09,169");
    const x = await run(Buffer.from(srt), "srt", "application/x-subrip");
    expect(x.engine).toBe("srt");
    expect(x.units[0]).toMatchObject({ speaker: "Perigean", timestamp: "00:00:03.629" });
    expect(x.units[1]).toMatchObject({ speaker: "P16", text: "Yes, it is." });
    expectVerbatim(x);
  });

  it("WebVTT voice spans name the speaker even when they speak once", async () => {
    const vtt = "WEBVTT\n\n00:00:01.000 --> 00:00:02.500\n<v Ann>The claim status should say <b>why</b> it is pending.</v>\n\n00:00:03.000 --> 00:00:04.000\n<v Bob>Agreed &amp; noted.</v>\n";
    const x = await run(Buffer.from(vtt), "vtt", "text/vtt");
    expect(x.units).toEqual([
      { kind: "turn", text: "The claim status should say why it is pending.", speaker: "Ann", timestamp: "00:00:01.000" },
      { kind: "turn", text: "Agreed & noted.", speaker: "Bob", timestamp: "00:00:03.000" },
    ]);
  });

  it("decodes character references as HTML does: one out of range or named like an Object member neither fails the file nor injects code", async () => {
    const vtt = "WEBVTT\n\n00:00:01.000 --> 00:00:02.000\nBad &#x110000; and &#99999999; refs\n\n00:00:03.000 --> 00:00:04.000\nNot &constructor; or &__proto__; &eacute;t&eacute; &#233;&nbsp;ok&lrm;\n";
    const x = await run(Buffer.from(vtt), "vtt", "text/vtt");
    expect(x.units.map((u) => u.text)).toEqual(["Bad \ufffd and \ufffd refs", "Not &constructor; or &__proto__; \u00e9t\u00e9 \u00e9 ok"]);
  });
});

describe("unit fields are capped at MAX_FIELD_CHARS, so a long heading or question is not copied onto every unit", () => {
  // Before: a 200 KB Markdown file made 60 MB of JSON; a 5 MB CSV header over 200 answers, about 1 GB.
  const long = (c: string) => `${c.repeat(20_000)} ${c.repeat(10_000)}`;
  const words = Array.from({ length: 200 }, (_, i) => `word${i}`);
  const cases: { name: string; kind: FileKind; type: string; bytes: () => Buffer; full: string }[] = [
    { name: "Markdown headings", kind: "markdown", type: "text/markdown", bytes: () => Buffer.from(`# ${long("a")}\n\n## ${long("b")}\n\n${words.join("\n\n")}`), full: long("b") },
    {
      name: "DOCX headings",
      kind: "docx",
      type: "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
      bytes: () => docx(`<w:p><w:pPr><w:pStyle w:val="Heading1"/></w:pPr><w:r><w:t xml:space="preserve">${long("a")}</w:t></w:r></w:p>${words.map(paragraph).join("")}`),
      full: long("a"),
    },
    { name: "CSV question", kind: "csv", type: "text/csv", bytes: () => Buffer.from(`id,"${long("q")}"\n${words.map((w, i) => `r${i},"the answer is ${w}"`).join("\n")}`), full: long("q") },
    {
      name: "JSON thread title",
      kind: "json",
      type: "application/json",
      bytes: () => Buffer.from(JSON.stringify([{ title: long("t"), body: "Opening words", comments: words.map((w) => ({ author: "ann", body: `I agree, ${w}` })) }])),
      full: long("t"),
    },
    { name: "JSON path", kind: "json", type: "application/json", bytes: () => Buffer.from(JSON.stringify({ [long("k")]: words.map((w) => `a comment about ${w}`) })), full: long("k") },
    {
      name: "WebVTT speaker",
      kind: "vtt",
      type: "text/vtt",
      bytes: () => Buffer.from(`WEBVTT\n\n${words.map((w, i) => `00:00:${String(i % 60).padStart(2, "0")}.000 --> 00:00:${String(i % 60).padStart(2, "0")}.500\n<v ${i % 2 ? "Ann" : long("s")}>said ${w}`).join("\n\n")}\n`),
      // The transcript lines carry the capped speaker too; the words are whole.
      full: "said word199",
    },
  ];

  it.each(cases)("$name", async ({ kind, type, bytes, full }) => {
    const x = await run(bytes(), kind, type);
    expect(x.units.length).toBeGreaterThanOrEqual(200);
    const values = x.units.flatMap((u) => [...Object.values(u.fields ?? {}), u.speaker ?? "", u.locator ?? ""]);
    expect(Math.max(...values.map((v) => v.length))).toBeLessThanOrEqual(MAX_FIELD_CHARS);
    // The context is still there, shortened: its start and its end.
    expect(values.some((v) => v.length > 400 && v.includes(" … "))).toBe(true);
    // The per-unit overhead is bounded; the long text itself is still in extracted_text (once).
    expect(JSON.stringify(x.units).length).toBeLessThan(200 * (MAX_FIELD_CHARS * 2 + 300));
    expect(x.extracted_text).toContain(full);
    expectVerbatim(x);
  });

  it("capField keeps start and end at word boundaries; long grid headers keep their options, other long twins their column", async () => {
    expect(capField("short")).toBe("short");
    const capped = capField(`${"lorem ipsum ".repeat(100)}[Option A]`);
    expect(capped.length).toBeLessThanOrEqual(MAX_FIELD_CHARS);
    expect(capped).toMatch(/^lorem ipsum .* … .*\[Option A\]$/);
    expect(capped).not.toMatch(/ (lore|ipsu|lorem ipsu) … /);
    expect(capField("😀".repeat(400))).not.toMatch(/[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/);
    // A rating grid under a 1,000-character stem: the options stay apart. Two free-text columns whose headers differ
    // only in the middle get their column number instead of merging into one question.
    const stem = `How much do you agree with each statement ${"about the way the export dialog and the settings page work ".repeat(17)}`;
    const twin = (middle: string) => `Tell us ${"more and more ".repeat(40)}${middle}${" and then some".repeat(40)}`;
    const header = ["id", `${stem}[Speed]`, `${stem}[Clarity]`, twin("about export"), twin("about import")];
    const rows = Array.from({ length: 12 }, (_, i) => [`r${i}`, String((i % 5) + 1), String(((i + 2) % 5) + 1), `Export note number ${i} is long enough`, `Import note ${i} says more`]);
    const csv = Papa.unparse([header, ...rows]);
    const x = await run(Buffer.from(csv), "csv", "text/csv");
    const questions = [...new Set(x.units.map((u) => u.fields?.question))];
    expect(questions).toHaveLength(4);
    for (const q of questions) expect(q!.length).toBeLessThanOrEqual(MAX_FIELD_CHARS);
    expect(questions.filter((q) => q!.endsWith("[Speed]") || q!.endsWith("[Clarity]"))).toHaveLength(2);
    expect(questions.filter((q) => / \(column [45]\)$/.test(q!))).toHaveLength(2);
    const grid = x.units.filter((u) => u.fields?.closed);
    expect(new Set(grid.map((u) => u.fields?.option))).toEqual(new Set(["Speed", "Clarity"]));
    expect(new Set(grid.map((u) => u.fields?.stem)).size).toBe(1);
  });
});

describe("every real document-type file", () => {
  const files = (function walk(dir: string): string[] {
    return readdirSync(dir).flatMap((name) => {
      const path = join(dir, name);
      return statSync(path).isDirectory() ? walk(path) : [path];
    });
  })(REALDATA).filter((p) => !/\.(png|wav|mp3)$/.test(p));

  it.each(files.map((p) => relative(REALDATA, p)))("%s passes validation, extracts text, and keeps units verbatim", async (path) => {
    const bytes = real(path);
    const verdict = await inspectUpload({ head: bytes.subarray(0, 4100), declaredType: "application/octet-stream", filename: path, size: bytes.length });
    const x = await run(bytes, verdict.kind, verdict.contentType, path);
    expect(x.extracted_text.length).toBeGreaterThan(50);
    expect(x.units.length).toBeGreaterThan(0);
    expectVerbatim(x);
  });
});

describe("long runs of whitespace inside a text", () => {
  // Each format's text went through /\s+$/ (and Markdown's paragraphs through /[ \t]*\n[ \t]*/g): quadratic in a
  // whitespace run's length, about 8 minutes for a megabyte of spaces, with the embedded runtime's main thread stuck.
  const run1m = " ".repeat(1_000_000);
  it.each<[FileKind, string, string]>([
    ["text", "text/plain", `Hello${run1m}world\n`],
    ["markdown", "text/markdown", `# Notes\n\nHello${run1m}world\nand  \n  more${run1m}\n`],
  ])("a %s upload holding a megabyte of spaces is extracted whole", async (kind, contentType, text) => {
    const out = await run(Buffer.from(text), kind, contentType);
    expect(out.extracted_text.startsWith(kind === "text" ? "Hello" : "Notes")).toBe(true);
    expect(out.extracted_text).toContain(`Hello${run1m}world`);
    expect(out.extracted_text.endsWith("world") || out.extracted_text.endsWith("more")).toBe(true);
  });
});

describe("softBreaks (Markdown soft line breaks as spaces)", () => {
  it("gives what /[ \\t]*\\n[ \\t]*/g gave, on breaks with and without spaces and tabs around them", async () => {
    const { softBreaks } = await import("../../../core/extract/markdown");
    for (const v of ["plain", "a\nb", "a \t\n \tb", "\n", " \n ", "a\n\nb", "a  \n\n  b\t", "\tlead\ntrail\t", "x \u00a0\ny", "a\r\nb"]) {
      expect(softBreaks(v), JSON.stringify(v)).toBe(v.replace(/[ \t]*\n[ \t]*/g, " "));
    }
  });
});
