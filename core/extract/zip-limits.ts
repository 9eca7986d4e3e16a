/**
 * Zip-bomb defence for the ZIP-based formats (DOCX, XLSX; issue #10). mammoth and exceljs open archives with JSZip,
 * which inflates a whole entry into memory and checks its size only afterwards: a 1.5 MB DOCX that inflates to
 * 1.5 GiB took the process from 457 MB to 2.2 GB before failing. So before either parser sees a file, this module
 * reads the archive's central directory with yauzl and refuses it on its declared figures, then inflates every entry
 * as a stream, stopping the moment one exceeds its declared size, and hands the parser a re-packed copy whose entries
 * are stored uncompressed: the parser reads exactly the bytes measured here and inflates nothing itself, so no
 * difference between two ZIP readers' views of a crafted archive can smuggle a bomb past the check.
 */
import yauzl from "yauzl";
import { ExtractionError, unreadable } from "./errors";
import { extractionLimits, formatBytes, RATIO_FLOOR_BYTES, type ExtractionLimits } from "./limits";
import { logExtractionFailure } from "./log";

/** What the archive is, for messages and its XML limit. */
export interface ArchiveKind {
  /** How a user calls it in a reason: "Word document", "spreadsheet". */
  label: string;
  /** Most bytes its XML parts may unpack to (the parts a parser builds a tree from). */
  maxXmlBytes: number;
}

/** Parts the OOXML parsers parse as markup: memory grows with these, not with images. */
const isXml = (name: string): boolean => /\.(xml|rels|vml)$/i.test(name);

const STORED = 0;
const DEFLATED = 8;
const UTF8_NAMES = 0x0800;
const LOCAL_HEADER = 30;
const CENTRAL_HEADER = 46;
const END_OF_DIRECTORY = 22;

/**
 * Check a DOCX/XLSX archive against the extraction limits and return it re-packed with every entry stored.
 *
 * Refuses, in this order: more entries than `maxArchiveEntries` (before reading any); declared sizes over
 * `maxInflatedBytes` in all or `kind.maxXmlBytes` for the XML parts; an entry over {@link RATIO_FLOOR_BYTES}
 * unpacking at more than `maxCompressionRatio` times its packed size; then, while inflating, an entry producing more
 * bytes than it declares (inflation stops at that chunk, so memory never exceeds the declared total).
 *
 * @param bytes the uploaded file, at most MAX_UPLOAD_BYTES.
 * @returns a ZIP archive of the same entries (names, flags and dates kept), uncompressed, at most the declared
 *   total plus headers.
 * @throws ExtractionError `too_large` for a limit (the reason names the figure and the limit; the log gets the part),
 *   `corrupt` when the archive cannot be read (not a ZIP, truncated, damaged data, encrypted entries, an unsupported
 *   compression method, an entry shorter than it declares), with no ZIP library text in the reason.
 */
export async function checkedArchive(bytes: Buffer, kind: ArchiveKind, limits: ExtractionLimits = extractionLimits()): Promise<Buffer> {
  const cannotRead = (cause: unknown, details: Record<string, unknown> = {}) =>
    unreadable(`The ${kind.label} could not be read (it may be truncated, corrupt or password-protected)`, cause, { ...details, bytes: bytes.length });
  const refuse = (why: string, details: Record<string, unknown>) => {
    logExtractionFailure(`${kind.label} refused: ${why}`, { ...details, bytes: bytes.length, limits });
    return new ExtractionError("too_large", `The ${kind.label} is refused: ${why}`);
  };

  let zipfile: yauzl.ZipFile;
  try {
    // Names stay raw bytes (decodeStrings: false): they are copied, not interpreted. Sizes are enforced below.
    zipfile = await yauzl.fromBufferPromise(bytes, { lazyEntries: true, decodeStrings: false, validateEntrySizes: false });
  } catch (err) {
    throw cannotRead(err);
  }
  try {
    const count = zipfile.entryCount;
    if (count > limits.maxArchiveEntries) {
      throw refuse(`its archive holds ${count.toLocaleString("en-US")} files, more than the limit of ${limits.maxArchiveEntries.toLocaleString("en-US")}`, { count });
    }

    // 1. The central directory alone: nothing is inflated yet.
    const entries: yauzl.Entry[] = [];
    let total = 0;
    let xml = 0;
    let worst: { name: string; ratio: number } | undefined;
    try {
      for await (const entry of zipfile.eachEntry()) {
        if (entry.isEncrypted() || (entry.compressionMethod !== STORED && entry.compressionMethod !== DEFLATED)) {
          throw cannotRead(new Error(`entry flags ${entry.generalPurposeBitFlag}, method ${entry.compressionMethod}`), { part: nameOf(entry) });
        }
        entries.push(entry);
        total += entry.uncompressedSize;
        if (isXml(nameOf(entry))) xml += entry.uncompressedSize;
        const ratio = entry.uncompressedSize / Math.max(1, entry.compressedSize);
        if (entry.uncompressedSize > RATIO_FLOOR_BYTES && ratio > (worst?.ratio ?? 0)) worst = { name: nameOf(entry), ratio };
      }
    } catch (err) {
      if (err instanceof ExtractionError) throw err;
      throw cannotRead(err);
    }
    if (total > limits.maxInflatedBytes) {
      throw refuse(`it unpacks to ${formatBytes(total)}, more than the limit of ${formatBytes(limits.maxInflatedBytes)}`, { total, xml, worst });
    }
    if (xml > kind.maxXmlBytes) {
      throw refuse(`its document content (XML) unpacks to ${formatBytes(xml)}, more than the limit of ${formatBytes(kind.maxXmlBytes)}`, { total, xml, worst });
    }
    if (worst && worst.ratio > limits.maxCompressionRatio) {
      const times = Math.round(worst.ratio).toLocaleString("en-US");
      throw refuse(`part of it unpacks to ${times} times its packed size, more than the limit of ${limits.maxCompressionRatio.toLocaleString("en-US")} times, as zip bombs do`, { total, xml, worst });
    }

    // 2. Inflate each entry into its place in the re-packed archive, holding the stream to its declared size.
    const sizeOf = (e: yauzl.Entry) => e.fileNameRaw.length;
    const dataBytes = entries.reduce((n, e) => n + LOCAL_HEADER + sizeOf(e) + e.uncompressedSize, 0);
    const out = Buffer.alloc(dataBytes + entries.reduce((n, e) => n + CENTRAL_HEADER + sizeOf(e), 0) + END_OF_DIRECTORY);
    let at = 0;
    let directoryAt = dataBytes;
    for (const entry of entries) {
      const headerAt = at;
      at = writeHeader(out, at, entry, null);
      let written = 0;
      try {
        for await (const chunk of (await zipfile.openReadStreamPromise(entry)) as AsyncIterable<Buffer>) {
          // Leaving the loop destroys the stream: inflation stops at the first chunk past the declared size.
          if (written + chunk.length > entry.uncompressedSize) {
            throw refuse("its contents unpack to more than the sizes it declares, as zip bombs do", { part: nameOf(entry), declared: entry.uncompressedSize, atLeast: written + chunk.length });
          }
          chunk.copy(out, at + written);
          written += chunk.length;
        }
      } catch (err) {
        if (err instanceof ExtractionError) throw err;
        throw cannotRead(err, { part: nameOf(entry) });
      }
      if (written !== entry.uncompressedSize) {
        throw cannotRead(new Error(`entry unpacked to ${written} bytes, declares ${entry.uncompressedSize}`), { part: nameOf(entry) });
      }
      at += written;
      directoryAt = writeHeader(out, directoryAt, entry, headerAt);
    }
    out.writeUInt32LE(0x06054b50, directoryAt);
    out.writeUInt16LE(entries.length, directoryAt + 8);
    out.writeUInt16LE(entries.length, directoryAt + 10);
    out.writeUInt32LE(directoryAt - dataBytes, directoryAt + 12);
    out.writeUInt32LE(dataBytes, directoryAt + 16);
    return out;
  } finally {
    zipfile.close();
  }
}

/** The entry's name for logs (raw bytes, since names are not decoded). */
const nameOf = (entry: yauzl.Entry): string => entry.fileNameRaw.toString("utf8");

/**
 * Write the entry's local header (`localHeaderAt` null) or central directory record (pointing at `localHeaderAt`)
 * for a stored copy at `at`; returns the offset after it. The CRC is the declared one: JSZip, as mammoth and exceljs
 * open archives, does not verify it, so re-packing changes nothing a parser sees.
 */
function writeHeader(out: Buffer, at: number, entry: yauzl.Entry, localHeaderAt: number | null): number {
  const name = entry.fileNameRaw;
  const central = localHeaderAt !== null;
  let o = at;
  out.writeUInt32LE(central ? 0x02014b50 : 0x04034b50, o);
  o += 4;
  if (central) {
    out.writeUInt16LE(entry.versionMadeBy, o);
    o += 2;
  }
  out.writeUInt16LE(10, o); // version needed: 1.0, stored
  out.writeUInt16LE(entry.generalPurposeBitFlag & UTF8_NAMES, o + 2);
  out.writeUInt16LE(STORED, o + 4);
  out.writeUInt16LE(entry.lastModFileTime, o + 6);
  out.writeUInt16LE(entry.lastModFileDate, o + 8);
  out.writeUInt32LE(entry.crc32, o + 10);
  out.writeUInt32LE(entry.uncompressedSize, o + 14);
  out.writeUInt32LE(entry.uncompressedSize, o + 18);
  out.writeUInt16LE(name.length, o + 22);
  out.writeUInt16LE(0, o + 24); // no extra field
  o += 26;
  if (central) {
    out.writeUInt16LE(0, o); // comment length
    out.writeUInt16LE(0, o + 2); // disk
    out.writeUInt16LE(entry.internalFileAttributes, o + 4);
    out.writeUInt32LE(entry.externalFileAttributes >>> 0, o + 6);
    out.writeUInt32LE(localHeaderAt, o + 10);
    o += 14;
  }
  name.copy(out, o);
  return o + name.length;
}
