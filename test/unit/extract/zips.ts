/**
 * Hand-built ZIP archives for the zip-bomb tests and bench/zip-bomb.ts: a minimal ZIP writer that can store a
 * pre-deflated entry and declare any size for it, and deflate streams of gigabytes built in milliseconds.
 *
 * The big streams rely on Z_FULL_FLUSH: a raw deflate segment flushed that way ends byte-aligned and refers to
 * nothing before it, so N copies of one segment followed by a finishing segment form a valid deflate stream whose
 * inflated size is N times the segment's. That is how a 1.5 MB DOCX inflates to 1.5 GiB, as in the audit (issue #10).
 */
import { constants, crc32, deflateRawSync } from "node:zlib";
import ExcelJS from "exceljs";
import yauzl from "yauzl";

/** A raw deflate stream (ZIP method 8) with the size and CRC-32 of what it inflates to. */
export interface Deflated {
  deflated: Buffer;
  /** Inflated size, bytes. */
  size: number;
  crc: number;
}

/** Deflate `content` in one piece. */
export function deflated(content: Buffer | string): Deflated {
  const bytes = Buffer.from(content);
  return { deflated: deflateRawSync(bytes, { level: 9 }), size: bytes.length, crc: crc32(bytes) };
}

/**
 * A deflate stream that inflates to `head`, then `body` repeated `times` times, then `tail`, built from one deflated
 * copy of each (see the module comment): a 1 MiB body of spaces repeated 1,536 times is 1.6 MB deflated, 1.5 GiB inflated.
 */
export function repeated(head: string, body: Buffer, times: number, tail: string): Deflated {
  const flush = { level: 9, finishFlush: constants.Z_FULL_FLUSH };
  const segment = deflateRawSync(body, flush);
  let crc = crc32(head);
  for (let i = 0; i < times; i++) crc = crc32(body, crc);
  crc = crc32(tail, crc);
  return {
    deflated: Buffer.concat([deflateRawSync(head, flush), ...Array.from({ length: times }, () => segment), deflateRawSync(tail, { level: 9 })]),
    size: Buffer.byteLength(head) + body.length * times + Buffer.byteLength(tail),
    crc,
  };
}

export interface ZipEntry {
  name: string;
  content: Deflated | Buffer | string;
  /** The uncompressed size written in the headers, when it should lie; the real one otherwise. */
  declaredSize?: number;
}

/** A ZIP archive of the entries, all deflated (method 8), no ZIP64 (each size and the count must fit 32/16 bits). */
export function zip(entries: ZipEntry[]): Buffer {
  const parts: Buffer[] = [];
  const central: Buffer[] = [];
  let offset = 0;
  for (const entry of entries) {
    const d = typeof entry.content === "string" || Buffer.isBuffer(entry.content) ? deflated(entry.content) : entry.content;
    const name = Buffer.from(entry.name, "utf8");
    const size = entry.declaredSize ?? d.size;
    const local = Buffer.alloc(30);
    local.writeUInt32LE(0x04034b50, 0);
    local.writeUInt16LE(20, 4); // version needed: 2.0 (deflate)
    local.writeUInt16LE(0x0800, 6); // UTF-8 names
    local.writeUInt16LE(8, 8); // deflate
    local.writeUInt16LE(0, 10); // time
    local.writeUInt16LE(0x21, 12); // date: 1980-01-01
    local.writeUInt32LE(d.crc, 14);
    local.writeUInt32LE(d.deflated.length, 18);
    local.writeUInt32LE(size, 22);
    local.writeUInt16LE(name.length, 26);
    local.writeUInt16LE(0, 28);
    const header = Buffer.alloc(46);
    header.writeUInt32LE(0x02014b50, 0);
    header.writeUInt16LE(20, 4); // made by: 2.0, MS-DOS
    header.writeUInt16LE(20, 6);
    header.writeUInt16LE(0x0800, 8);
    header.writeUInt16LE(8, 10);
    header.writeUInt16LE(0, 12);
    header.writeUInt16LE(0x21, 14);
    header.writeUInt32LE(d.crc, 16);
    header.writeUInt32LE(d.deflated.length, 20);
    header.writeUInt32LE(size, 24);
    header.writeUInt16LE(name.length, 28);
    header.writeUInt32LE(offset, 42);
    central.push(header, name);
    parts.push(local, name, d.deflated);
    offset += local.length + name.length + d.deflated.length;
  }
  const directory = Buffer.concat(central);
  const end = Buffer.alloc(22);
  end.writeUInt32LE(0x06054b50, 0);
  end.writeUInt16LE(entries.length, 8);
  end.writeUInt16LE(entries.length, 10);
  end.writeUInt32LE(directory.length, 12);
  end.writeUInt32LE(offset, 16);
  return Buffer.concat([...parts, directory, end]);
}

const CONTENT_TYPES =
  '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>' +
  '<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">' +
  '<Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/>' +
  '<Default Extension="xml" ContentType="application/xml"/>' +
  '<Override PartName="/word/document.xml" ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"/>' +
  "</Types>";
const RELS =
  '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>' +
  '<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">' +
  '<Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument" Target="word/document.xml"/>' +
  "</Relationships>";
const DOCUMENT_HEAD = '<?xml version="1.0" encoding="UTF-8" standalone="yes"?><w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"><w:body>';
const DOCUMENT_TAIL = "</w:body></w:document>";

/** A Word paragraph of plain text. */
export const paragraph = (text: string): string => `<w:p><w:r><w:t xml:space="preserve">${text}</w:t></w:r></w:p>`;

/** A minimal DOCX whose word/document.xml is `document` (a deflated stream, or the paragraphs' XML). */
export function docx(document: Deflated | string, declaredSize?: number): Buffer {
  const body = typeof document === "string" ? `${DOCUMENT_HEAD}${document}${DOCUMENT_TAIL}` : document;
  return zip([
    { name: "[Content_Types].xml", content: CONTENT_TYPES },
    { name: "_rels/.rels", content: RELS },
    { name: "word/document.xml", content: body, declaredSize },
  ]);
}

export const MiB = 1024 * 1024;
export const GiB = 1024 * MiB;

/**
 * The audit's zip bomb: a DOCX of about 1.5 MB whose word/document.xml inflates to `inflatedBytes` (default 1.5 GiB):
 * two ordinary paragraphs with whitespace between them, which any XML parser must read through. `declaredSize` makes
 * the headers lie about the inflated size (a bomb that passes a check of declared sizes alone).
 */
export function zipBombDocx(inflatedBytes = 1.5 * GiB, declaredSize?: number): Buffer {
  const head = DOCUMENT_HEAD + paragraph("Interview notes, session 4");
  const tail = paragraph("End of notes") + DOCUMENT_TAIL;
  return docx(repeated(head, Buffer.alloc(MiB, " "), Math.round(inflatedBytes / MiB), tail), declaredSize);
}

/** Every entry of a ZIP archive, inflated (test-side reader, yauzl). */
export async function unzip(bytes: Buffer): Promise<{ name: string; data: Buffer }[]> {
  const zipfile = await yauzl.fromBufferPromise(bytes, { lazyEntries: true });
  const out: { name: string; data: Buffer }[] = [];
  for await (const entry of zipfile.eachEntry()) {
    const chunks: Buffer[] = [];
    for await (const chunk of await zipfile.openReadStreamPromise(entry)) chunks.push(chunk as Buffer);
    out.push({ name: entry.fileName, data: Buffer.concat(chunks) });
  }
  return out;
}

/** A small real survey workbook written by exceljs: a respondent column and one free-text question. */
export async function surveyXlsx(): Promise<Buffer> {
  const wb = new ExcelJS.Workbook();
  const sheet = wb.addWorksheet("Responses");
  sheet.addRow(["Respondent", "What was hardest about exporting your notebook?"]);
  sheet.addRow(["r1", "Finding where the PDF export lives in the menus"]);
  sheet.addRow(["r2", "The exported PDF cut off my wide tables"]);
  sheet.addRow(["r3", "LaTeX was not installed and the error did not say so"]);
  return Buffer.from(await wb.xlsx.writeBuffer());
}

/** `xlsx` with `extra` more entries of `bytesEach` zero bytes each (xl/media/padN.bin), as a many-entries bomb. */
export async function xlsxWithExtraEntries(xlsx: Buffer, extra: number, bytesEach = 1): Promise<Buffer> {
  const entries: ZipEntry[] = (await unzip(xlsx)).map((e) => ({ name: e.name, content: e.data }));
  const pad = deflated(Buffer.alloc(bytesEach));
  for (let i = 0; i < extra; i++) entries.push({ name: `xl/media/pad${i}.bin`, content: pad });
  return zip(entries);
}
