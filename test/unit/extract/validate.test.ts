import { extract } from "../../../core/extract";
import { describe, expect, it } from "vitest";
import { AppError } from "../../../core/error";
import { inspectUpload, MAX_UPLOAD_BYTES, SNIFF_BYTES } from "../../../core/extract/validate";
import { real } from "./helpers";
import { closeSync, openSync, readSync } from "node:fs";

/** Inspect a whole buffer the way the upload path does: the head, the declared type, the name and the size. */
const inspect = (bytes: Buffer, declaredType: string, filename: string, size = bytes.length) =>
  inspectUpload({ head: bytes.subarray(0, SNIFF_BYTES), declaredType, filename, size });

/** The AppError code an inspection fails with (and its message), or "OK". */
async function outcome(p: Promise<unknown>): Promise<{ code: string; message: string }> {
  try {
    await p;
    return { code: "OK", message: "" };
  } catch (err) {
    if (!(err instanceof AppError)) throw err;
    return { code: err.code, message: err.message };
  }
}

const pdf = real("jupyter/docs/jupyter-org-redesign-heuristic-eval-competitive-analysis.pdf");
const docx = real("jupyter/docs/JupyterDay-code-of-conduct.docx");
const png = real("jupyter/images/jupyterlab-autosave-settings.png");
const wav = real("audio/jfk.wav");
const mp3 = real("audio/jfk.mp3");
const md = real("jupyter/usability-research/2023-05-jupyterlab-accessibility-usability-results.md");
const csv = real("va-mobile-app/app-store-reviews-2024-05-partial.csv");
const json = real("jupyter/support-tickets/jupyter-github-issues.json");
const vtt = real("va-mobile-app/P16-home-screen-evaluative-research-2024-04.transcript.vtt");

// A DOS/PE header: "MZ", zeros, e_lfanew at 0x3c pointing at "PE\0\0".
const peExe = (() => {
  const b = Buffer.alloc(512);
  b.write("MZ", 0, "latin1");
  b.writeUInt32LE(0x80, 0x3c);
  b.write("PE\0\0", 0x80, "latin1");
  return b;
})();

describe("inspectUpload: accepted uploads", () => {
  const files: Record<string, Buffer> = { pdf, docx, png, wav, mp3, md, csv, json, vtt };
  it.each([
    ["pdf", "application/pdf", "report.pdf", "pdf", "application/pdf"],
    ["pdf", "application/octet-stream", "report.pdf", "pdf", "application/pdf"],
    ["docx", "application/vnd.openxmlformats-officedocument.wordprocessingml.document", "coc.docx", "docx", "application/vnd.openxmlformats-officedocument.wordprocessingml.document"],
    ["docx", "application/octet-stream", "coc.docx", "docx", "application/vnd.openxmlformats-officedocument.wordprocessingml.document"],
    ["png", "image/png", "shot.png", "image", "image/png"],
    ["wav", "audio/x-wav", "jfk.wav", "audio", "audio/wav"],
    ["wav", "audio/wave", "jfk.wav", "audio", "audio/wav"],
    ["mp3", "audio/mpeg", "jfk.mp3", "audio", "audio/mpeg"],
    ["mp3", "audio/mp3", "jfk.mp3", "audio", "audio/mpeg"],
    ["md", "text/markdown", "results.md", "markdown", "text/markdown"],
    ["md", "text/plain", "results.md", "markdown", "text/markdown"],
    ["md", "text/plain; charset=utf-8", "results.txt", "text", "text/plain"],
    ["csv", "text/csv", "reviews.csv", "csv", "text/csv"],
    ["csv", "application/vnd.ms-excel", "reviews.csv", "csv", "text/csv"],
    ["csv", "text/plain", "reviews.csv", "csv", "text/csv"],
    ["json", "application/json", "issues.json", "json", "application/json"],
    ["json", "application/octet-stream", "issues.json", "json", "application/json"],
    ["vtt", "text/vtt", "p16.vtt", "vtt", "text/vtt"],
    ["vtt", "text/plain", "p16.vtt", "vtt", "text/vtt"],
    ["vtt", "text/plain", "p16.txt", "vtt", "text/vtt"],
  ])("real %s declared %s named %s -> %s, %s", async (file, declared, name, kind, contentType) => {
    await expect(inspect(files[file], declared, name)).resolves.toEqual({ kind, contentType });
  });

  it("accepts SRT subtitles declared as application/x-subrip", async () => {
    const srt = Buffer.from("1\n00:00:01,000 --> 00:00:02,000\nHello there\n\n2\n00:00:03,000 --> 00:00:04,000\nBye\n");
    await expect(inspect(srt, "application/x-subrip", "call.srt")).resolves.toEqual({ kind: "srt", contentType: "application/x-subrip" });
  });

  it("accepts a text head that ends in the middle of a multi-byte character", async () => {
    // "é" is two bytes; cut after the first, as a 4100-byte head of a longer file can.
    const text = Buffer.from(`${"a".repeat(10)}é more`, "utf8");
    const head = text.subarray(0, 11);
    await expect(inspectUpload({ head, declaredType: "text/plain", filename: "notes.txt", size: text.length })).resolves.toMatchObject({ kind: "text" });
    // The same cut in a complete file is invalid UTF-8: it is read as 8-bit (Windows-1252) text instead.
    await expect(inspectUpload({ head, declaredType: "text/plain", filename: "notes.txt", size: head.length })).resolves.toMatchObject({ kind: "text" });
  });

  it("tells audio from video in an MP4 or WebM container by the declared type", async () => {
    // An ISO BMFF header (ftyp isom) and an EBML/WebM header, as file-type sees them.
    const mp4 = Buffer.concat([Buffer.from([0, 0, 0, 0x20]), Buffer.from("ftypisom\0\0\x02\0isomiso2avc1mp41", "latin1"), Buffer.alloc(64)]);
    await expect(inspect(mp4, "video/mp4", "session.mp4")).resolves.toEqual({ kind: "video", contentType: "video/mp4" });
    await expect(inspect(mp4, "audio/mp4", "session.m4a")).resolves.toEqual({ kind: "audio", contentType: "audio/mp4" });
    await expect(inspect(mp4, "application/octet-stream", "session.m4a")).resolves.toEqual({ kind: "audio", contentType: "audio/mp4" });
  });
});

describe("inspectUpload: refused uploads", () => {
  it("refuses an empty file with EMPTY_FILE", async () => {
    expect(await outcome(inspect(Buffer.alloc(0), "text/plain", "empty.txt"))).toMatchObject({ code: "EMPTY_FILE" });
  });

  it("refuses more than 100 MB with PAYLOAD_TOO_LARGE, and takes exactly 100 MB", async () => {
    expect(await outcome(inspect(pdf, "application/pdf", "big.pdf", MAX_UPLOAD_BYTES + 1))).toMatchObject({ code: "PAYLOAD_TOO_LARGE" });
    expect(await outcome(inspect(pdf, "application/pdf", "big.pdf", MAX_UPLOAD_BYTES))).toMatchObject({ code: "OK" });
    expect(MAX_UPLOAD_BYTES).toBe(104_857_600);
  });

  it("blocks a Windows executable renamed .pdf, whatever it is declared as", async () => {
    expect(await outcome(inspect(peExe, "application/pdf", "invoice.pdf"))).toMatchObject({ code: "BLOCKED_FILE_TYPE" });
    expect(await outcome(inspect(peExe, "application/octet-stream", "notes.txt"))).toMatchObject({ code: "BLOCKED_FILE_TYPE" });
  });

  it("blocks an ELF binary (this machine's node) named like a CSV", async () => {
    const elf = Buffer.alloc(SNIFF_BYTES);
    const fd = openSync(process.execPath, "r");
    readSync(fd, elf, 0, SNIFF_BYTES, 0);
    closeSync(fd);
    expect(await outcome(inspectUpload({ head: elf, declaredType: "text/csv", filename: "survey.csv", size: 50_000_000 }))).toMatchObject({ code: "BLOCKED_FILE_TYPE" });
  });

  it("blocks Mach-O thin and universal binaries", async () => {
    const thin = Buffer.concat([Buffer.from([0xcf, 0xfa, 0xed, 0xfe, 0x07, 0, 0, 0x01]), Buffer.alloc(100)]);
    const fat = Buffer.concat([Buffer.from([0xca, 0xfe, 0xba, 0xbe, 0, 0, 0, 0x02]), Buffer.alloc(100)]);
    expect(await outcome(inspect(thin, "application/octet-stream", "tool.png"))).toMatchObject({ code: "BLOCKED_FILE_TYPE" });
    expect(await outcome(inspect(fat, "image/png", "tool.png"))).toMatchObject({ code: "BLOCKED_FILE_TYPE" });
  });

  it("blocks shell scripts by shebang and by extension", async () => {
    const sh = Buffer.from("#!/bin/sh\necho 'hello'\n");
    expect(await outcome(inspect(sh, "text/plain", "notes.txt"))).toMatchObject({ code: "BLOCKED_FILE_TYPE" });
    expect(await outcome(inspect(Buffer.from("echo hello\n"), "text/plain", "install.sh"))).toMatchObject({ code: "BLOCKED_FILE_TYPE" });
    expect(await outcome(inspect(Buffer.from("echo hello\n"), "application/x-sh", "install.txt"))).toMatchObject({ code: "BLOCKED_FILE_TYPE" });
  });

  it("blocks a Python script named .txt, by shebang or by its declared type", async () => {
    const withShebang = Buffer.from("#!/usr/bin/env python3\nimport os\nprint(os.listdir('.'))\n");
    expect(await outcome(inspect(withShebang, "text/plain", "analysis.txt"))).toMatchObject({ code: "BLOCKED_FILE_TYPE" });
    const plain = Buffer.from("import os\nprint(os.listdir('.'))\n");
    expect(await outcome(inspect(plain, "text/x-python", "analysis.txt"))).toMatchObject({ code: "BLOCKED_FILE_TYPE" });
  });

  it.each(["run.exe", "lib.dll", "app.js", "app.mjs", "setup.bat", "setup.cmd", "profile.ps1", "macro.vbs", "tool.jar", "setup.msi", "index.php", "task.rb", "task.pl", "report.pdf.exe"])(
    "blocks the extension of %s",
    async (name) => {
      expect(await outcome(inspect(Buffer.from("just words\n"), "text/plain", name))).toMatchObject({ code: "BLOCKED_FILE_TYPE" });
    },
  );

  it.each(["application/javascript", "text/javascript", "application/x-msdownload", "text/x-python", "application/x-sh", "text/x-shellscript"])(
    "blocks the declared type %s",
    async (declared) => {
      expect(await outcome(inspect(Buffer.from("just words\n"), declared, "notes.txt"))).toMatchObject({ code: "BLOCKED_FILE_TYPE" });
    },
  );

  it("refuses a PDF declared as image/png with FILE_TYPE_MISMATCH naming both types", async () => {
    const r = await outcome(inspect(pdf, "image/png", "scan.png"));
    expect(r.code).toBe("FILE_TYPE_MISMATCH");
    expect(r.message).toContain("image/png");
    expect(r.message).toContain("application/pdf");
  });

  it("refuses content that contradicts the file name when the declared type is generic", async () => {
    const r = await outcome(inspect(png, "application/octet-stream", "report.pdf"));
    expect(r.code).toBe("FILE_TYPE_MISMATCH");
    expect(r.message).toContain(".pdf");
    expect(r.message).toContain("image/png");
  });

  it("refuses a Word file declared as a workbook, and text declared as PDF", async () => {
    expect((await outcome(inspect(docx, "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet", "a.xlsx"))).code).toBe("FILE_TYPE_MISMATCH");
    const r = await outcome(inspect(md, "application/pdf", "results.pdf"));
    expect(r.code).toBe("FILE_TYPE_MISMATCH");
    expect(r.message).toContain("text/plain");
  });

  it("checks the text sub-formats: JSON must start with { or [, WebVTT with its header", async () => {
    expect((await outcome(inspect(csv, "application/json", "reviews.json"))).code).toBe("FILE_TYPE_MISMATCH");
    expect((await outcome(inspect(md, "text/vtt", "notes.vtt"))).code).toBe("FILE_TYPE_MISMATCH");
    expect((await outcome(inspect(md, "application/x-subrip", "notes.srt"))).code).toBe("FILE_TYPE_MISMATCH");
  });

  it("accepts survey exports in Excel's other encodings (UTF-16, Windows-1252) and extracts them as text", async () => {
    const utf16 = Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from("date,review\n2024-05-31,Great app that works", "utf16le")]);
    expect(await inspect(utf16, "text/csv", "reviews.csv")).toEqual({ kind: "csv", contentType: "text/csv" });
    // "There’s" in Windows-1252: the apostrophe is the single byte 0x92, invalid in UTF-8.
    const cp1252 = Buffer.from("date,review\n2024-05-31,There\x92s no point of facial recognition\n", "latin1");
    expect(await inspect(cp1252, "text/csv", "reviews.csv")).toEqual({ kind: "csv", contentType: "text/csv" });
    const fromCp1252 = await extract({ bytes: cp1252, kind: "csv", contentType: "text/csv", filename: "reviews.csv" });
    expect(fromCp1252.extracted_text).toContain("There\u2019s no point of facial recognition");
    const fromUtf16 = await extract({ bytes: utf16, kind: "csv", contentType: "text/csv", filename: "reviews.csv" });
    expect(fromUtf16.extracted_text).toContain("Great app that works");
    // Binary that merely looks like text at the start is still not text.
    expect((await outcome(inspect(Buffer.from([0x01, 0x02, 0x03, 0x9a, 0x00, 0x10]), "text/csv", "reviews.csv"))).code).toBe("FILE_TYPE_MISMATCH");
  });

  it("refuses formats outside the supported set with UNSUPPORTED_MEDIA_TYPE", async () => {
    const gif = Buffer.concat([Buffer.from("GIF89a", "latin1"), Buffer.from([1, 0, 1, 0, 0x80, 0, 0]), Buffer.alloc(32)]);
    expect((await outcome(inspect(gif, "image/gif", "anim.gif"))).code).toBe("UNSUPPORTED_MEDIA_TYPE");
    expect((await outcome(inspect(gif, "application/octet-stream", "anim.gif"))).code).toBe("UNSUPPORTED_MEDIA_TYPE");
    expect((await outcome(inspect(Buffer.from("<html><body>hi</body></html>"), "text/html", "page.html"))).code).toBe("UNSUPPORTED_MEDIA_TYPE");
    expect((await outcome(inspect(Buffer.from("<html><body>hi</body></html>"), "application/octet-stream", "page.html"))).code).toBe("UNSUPPORTED_MEDIA_TYPE");
    // A GIF claiming to be a PNG is a lie about the type, not merely an unsupported format.
    expect((await outcome(inspect(gif, "image/png", "anim.png"))).code).toBe("FILE_TYPE_MISMATCH");
  });

  it("refuses a legacy .xls honestly declared, pointing at .xlsx", async () => {
    // Compound File Binary header (OLE2), which is what .doc/.xls are.
    const cfb = Buffer.concat([Buffer.from([0xd0, 0xcf, 0x11, 0xe0, 0xa1, 0xb1, 0x1a, 0xe1]), Buffer.alloc(600)]);
    const r = await outcome(inspect(cfb, "application/vnd.ms-excel", "old.xls"));
    expect(r.code).toBe("UNSUPPORTED_MEDIA_TYPE");
    expect(r.message).toContain(".xlsx");
  });
});
