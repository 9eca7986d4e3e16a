/**
 * Upload validation (spec 01 Endpoints, "Supported upload content"; Limits: 100 MB per file): the declared MIME type
 * and the file's leading bytes must agree, executables and scripts are refused whatever they are called, and only
 * the supported formats get through. The same check runs on the multipart upload and on the S3 object-created
 * event of a presigned upload (DESIGN.md section 5), so it only needs the first bytes, never the whole file.
 */
import { fileTypeFromBuffer } from "file-type";
import { AppError } from "../error";
import { decodeAnyText } from "./text";

/** What the extractor dispatches on. One kind per parser; image/audio/video cover several containers. */
export type FileKind =
  | "pdf"
  | "docx"
  | "xlsx"
  | "csv"
  | "json"
  | "text"
  | "markdown"
  | "vtt"
  | "srt"
  | "image"
  | "audio"
  | "video";

/** Upload size limit in bytes (spec 01 Limits: 100 MB per file). */
export const MAX_UPLOAD_BYTES = 104_857_600;

/** How many leading bytes {@link inspectUpload} wants: file-type's sample size. Less is fine for smaller files. */
export const SNIFF_BYTES = 4100;

export const MIME = {
  pdf: "application/pdf",
  docx: "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
  xlsx: "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
  csv: "text/csv",
  json: "application/json",
  text: "text/plain",
  markdown: "text/markdown",
  vtt: "text/vtt",
  srt: "application/x-subrip",
  png: "image/png",
  jpeg: "image/jpeg",
  tiff: "image/tiff",
  mp3: "audio/mpeg",
  wav: "audio/wav",
} as const;

/** The container/format a file really is, as far as we care. `zip` is an OOXML file file-type could not place from the head. */
type Family = "pdf" | "docx" | "xlsx" | "zip" | "png" | "jpeg" | "tiff" | "mp3" | "wav" | "mp4" | "webm" | "text";
type TextKind = "text" | "markdown" | "csv" | "json" | "vtt" | "srt";

/** A declared MIME type we understand: its family, and for text the sub-format it announces. */
interface Declared {
  family: Family;
  textKind?: TextKind;
}

// Null-prototype maps: a name or type such as "constructor" or "__proto__" must find nothing, not Object's own members.
const DECLARED: Record<string, Declared> = Object.create(null);
const declare = (family: Family, types: string[], textKind?: TextKind) => {
  for (const t of types) DECLARED[t] = { family, textKind };
};
declare("pdf", ["application/pdf", "application/x-pdf", "application/acrobat"]);
declare("docx", [MIME.docx]);
declare("xlsx", [MIME.xlsx]);
declare("png", ["image/png", "image/x-png"]);
declare("jpeg", ["image/jpeg", "image/jpg", "image/pjpeg"]);
declare("tiff", ["image/tiff", "image/tif", "image/x-tiff"]);
declare("mp3", ["audio/mpeg", "audio/mp3", "audio/mpeg3", "audio/x-mpeg", "audio/x-mpeg-3", "audio/x-mp3"]);
declare("wav", ["audio/wav", "audio/x-wav", "audio/wave", "audio/vnd.wave", "audio/x-pn-wav"]);
declare("mp4", ["video/mp4", "audio/mp4", "audio/x-m4a", "audio/m4a", "video/x-m4v", "application/mp4"]);
declare("webm", ["video/webm", "audio/webm"]);
declare("text", ["text/plain"]);
declare("text", ["text/markdown", "text/x-markdown", "text/md"], "markdown");
// Browsers on Windows declare .csv as application/vnd.ms-excel; real legacy .xls content is caught by the sniff.
declare("text", ["text/csv", "application/csv", "text/x-csv", "text/comma-separated-values", "application/vnd.ms-excel"], "csv");
declare("text", ["application/json", "text/json", "application/x-json"], "json");
declare("text", ["text/vtt"], "vtt");
declare("text", ["application/x-subrip", "text/srt", "application/srt", "text/x-srt"], "srt");

/** Declared types that say nothing about the content: resolve from the bytes and the file name instead. */
const GENERIC = new Set(["", "application/octet-stream", "binary/octet-stream", "application/unknown", "application/x-unknown", "application/binary"]);

const EXTENSIONS: Record<string, Declared> = Object.assign(Object.create(null), {
  pdf: { family: "pdf" },
  docx: { family: "docx" },
  xlsx: { family: "xlsx" },
  png: { family: "png" },
  jpg: { family: "jpeg" },
  jpeg: { family: "jpeg" },
  tif: { family: "tiff" },
  tiff: { family: "tiff" },
  mp3: { family: "mp3" },
  wav: { family: "wav" },
  mp4: { family: "mp4" },
  m4a: { family: "mp4" },
  m4v: { family: "mp4" },
  webm: { family: "webm" },
  weba: { family: "webm" },
  txt: { family: "text", textKind: "text" },
  text: { family: "text", textKind: "text" },
  md: { family: "text", textKind: "markdown" },
  markdown: { family: "text", textKind: "markdown" },
  csv: { family: "text", textKind: "csv" },
  json: { family: "text", textKind: "json" },
  vtt: { family: "text", textKind: "vtt" },
  srt: { family: "text", textKind: "srt" },
});

/** Text-looking formats we do not parse; without this a .html upload would become a plain-text source full of tags. */
const UNSUPPORTED_TEXT_EXTENSIONS = new Set(["html", "htm", "xhtml", "xml", "svg", "rtf", "eml", "ics", "yaml", "yml"]);

/** Executables, libraries, installers and scripts (spec: ".exe, .sh, .py, .js, .bat and similar"). */
const BLOCKED_EXTENSIONS = new Set(
  (
    "exe dll sys drv ocx cpl scr com pif msi msp msc mst appx appxbundle msix gadget hta inf reg lnk " +
    "sh bash zsh ksh csh tcsh fish command run bin elf so dylib app apk ipa deb rpm dmg pkg " +
    "py pyw pyc pyo pyz js mjs cjs jsx ts tsx vbs vbe jse wsf wsh ws ps1 psm1 psd1 ps1xml bat cmd " +
    "jar class war ear php php3 php4 php5 phtml phar rb pl pm cgi lua tcl applescript scpt wasm"
  ).split(" "),
);

const BLOCKED_DECLARED = new Set([
  "application/x-msdownload",
  "application/x-msdos-program",
  "application/x-dosexec",
  "application/x-winexe",
  "application/vnd.microsoft.portable-executable",
  "application/x-ms-dos-executable",
  "application/x-executable",
  "application/x-elf",
  "application/x-sharedlib",
  "application/x-mach-binary",
  "application/x-mach-o-binary",
  "application/x-mach-o-executable",
  "application/x-msi",
  "application/x-ms-installer",
  "application/x-ms-shortcut",
  "application/java-archive",
  "application/x-java-archive",
  "application/java-vm",
  "application/x-java-class",
  "application/vnd.android.package-archive",
  "application/x-apple-diskimage",
  "application/x-deb",
  "application/vnd.debian.binary-package",
  "application/x-rpm",
  "application/wasm",
  "application/x-sh",
  "application/x-shellscript",
  "application/x-csh",
  "text/x-sh",
  "text/x-shellscript",
  "text/x-csh",
  "application/javascript",
  "application/x-javascript",
  "application/ecmascript",
  "text/javascript",
  "text/ecmascript",
  "text/jscript",
  "application/typescript",
  "text/typescript",
  "text/x-python",
  "text/x-python3",
  "application/x-python",
  "application/x-python-code",
  "text/x-perl",
  "application/x-perl",
  "text/x-php",
  "application/x-php",
  "application/x-httpd-php",
  "text/x-ruby",
  "application/x-ruby",
  "application/x-bat",
  "application/bat",
  "application/x-msdos-batch",
  "text/x-bat",
  "application/x-powershell",
  "text/x-powershell",
  "text/vbscript",
  "application/x-vbscript",
  "text/x-lua",
  "application/x-tcl",
  "application/hta",
]);

/** file-type answers that are executables or installers. */
const BLOCKED_SNIFFED = new Set([
  "application/x-msdownload",
  "application/x-elf",
  "application/x-mach-binary",
  "application/java-archive",
  "application/java-vm",
  "application/vnd.android.package-archive",
  "application/x-apple-diskimage",
  "application/x-deb",
  "application/x-rpm",
  "application/wasm",
  "application/x-msi",
  "application/x.ms.shortcut",
]);

/** Human names for messages: "a PDF document (application/pdf)". */
const FAMILY_NAMES: Record<Family, string> = {
  pdf: "PDF",
  docx: "Word document",
  xlsx: "Excel workbook",
  zip: "ZIP archive",
  png: "PNG image",
  jpeg: "JPEG image",
  tiff: "TIFF image",
  mp3: "MP3 audio",
  wav: "WAV audio",
  mp4: "MP4 media",
  webm: "WebM media",
  text: "plain text",
};

export interface UploadHead {
  /** The first bytes of the file: at least {@link SNIFF_BYTES} (4100) unless the file is smaller; the whole file is fine. */
  head: Buffer;
  /** The MIME type the client declared (multipart part Content-Type, or the presigned POST's Content-Type). Parameters are ignored. */
  declaredType: string;
  /** The client's file name; only its last extension is used. */
  filename: string;
  /** The full file size in bytes. */
  size: number;
}

export interface UploadVerdict {
  /** Canonical MIME type to store as the source's file_type, e.g. "text/markdown" for a .md declared text/plain. */
  contentType: string;
  /** Which parser the extractor runs. */
  kind: FileKind;
}

/**
 * Decide whether an upload is acceptable, and what it is (spec 01 "Supported upload content", Limits, Errors).
 *
 * Checks, in order:
 * 1. `size` 0 -> `EMPTY_FILE` (400); `size` > 104857600 bytes (100 MB) -> `PAYLOAD_TOO_LARGE` (413).
 * 2. Executables and scripts, by leading bytes (PE "MZ", ELF, Mach-O incl. universal, shebang "#!", "<?php",
 *    "@echo off"), by extension (.exe .sh .py .js .bat and similar) or by declared type (application/x-sh, text/x-python, ...)
 *    -> `BLOCKED_FILE_TYPE` (400), whatever the other two say.
 * 3. The declared type (and, when it is generic such as application/octet-stream, the extension) must agree with
 *    the sniffed content: file-type for binary formats, a UTF-8 text sniff for text; JSON must start with { or [,
 *    WebVTT with "WEBVTT", SRT with a numbered cue -> otherwise `FILE_TYPE_MISMATCH` (400) naming both types.
 * 4. Anything outside PDF, DOCX, XLSX, CSV, JSON, text, Markdown, WebVTT, SRT, PNG, JPEG, TIFF, MP3, WAV, MP4, WebM
 *    -> `UNSUPPORTED_MEDIA_TYPE` (415).
 *
 * @returns the canonical content type and the extractor kind.
 * @throws AppError with one of the codes above.
 */
export async function inspectUpload(upload: UploadHead): Promise<UploadVerdict> {
  const { head, filename, size } = upload;
  if (size <= 0) throw new AppError("EMPTY_FILE", "The uploaded file is empty");
  if (size > MAX_UPLOAD_BYTES) {
    throw new AppError(
      "PAYLOAD_TOO_LARGE",
      `The file is ${formatBytes(size)}; the limit is 100 MB per file`,
      { limit_bytes: MAX_UPLOAD_BYTES, size_bytes: size },
    );
  }

  const declared = normalizeMime(upload.declaredType);
  const ext = extensionOf(filename);
  const truncated = head.length < size;

  // Blocking comes before every other content check: a renamed executable must never read as a mere mismatch.
  const blockedBy = blockedReason(head, declared, ext);
  if (blockedBy) throw blocked(blockedBy);
  const ft = await fileTypeFromBuffer(head).catch(() => undefined);
  if (ft && BLOCKED_SNIFFED.has(ft.mime)) throw blocked(`its content is an executable or installer (${ft.mime})`);

  const sniffed = sniff(head, ft, truncated);
  const unsupportedContent = () =>
    unsupported(sniffed.mime === "application/x-cfb" ? "legacy Office files (.doc, .xls); save them as .docx or .xlsx" : sniffed.mime);

  // What the client claims: the declared type, or the extension when the declared type says nothing.
  let claim: Declared | undefined;
  let claimLabel: string;
  if (GENERIC.has(declared)) {
    claim = EXTENSIONS[ext];
    claimLabel = `a .${ext} file name`;
    if (!claim && sniffed.family === "text" && UNSUPPORTED_TEXT_EXTENSIONS.has(ext)) throw unsupported(`.${ext} files`);
  } else {
    claim = DECLARED[declared];
    claimLabel = declared;
    if (!claim) {
      // A declared type we do not support. If the content is something we would have taken (a PNG declared as
      // image/gif, text declared as image/gif), the client mislabelled it; text declared as text/html is just unsupported.
      if (sniffed.family && !(sniffed.family === "text" && isTextualMime(declared))) throw mismatch(declared, describe(sniffed));
      throw sniffed.family ? unsupported(declared) : unsupportedContent();
    }
  }

  if (!sniffed.family) {
    // The content is something we do not support (GIF, ZIP, legacy .doc). A claimed supported type contradicts it,
    // except a legacy .xls sent as application/vnd.ms-excel, which is honest and merely unsupported.
    if (claim && !(declared === "application/vnd.ms-excel" && sniffed.mime === "application/x-cfb")) {
      throw mismatch(claimLabel, describe(sniffed));
    }
    throw unsupportedContent();
  }

  if (claim && !compatible(claim.family, sniffed.family)) throw mismatch(claimLabel, describe(sniffed));

  if (sniffed.family === "text") return resolveText(head, claim, claimLabel, ext);
  // A bare zip only gets here when the claim is docx or xlsx (see compatible); without a claim it is unsupported.
  const family = sniffed.family === "zip" ? claim?.family : sniffed.family;
  if (!family || family === "zip" || family === "text") throw unsupported("application/zip");
  return resolveBinary(family, declared, sniffed.mime, ext);
}

/** What the bytes are: a supported family, or the sniffed MIME type of something unsupported. */
interface Sniffed {
  family?: Family;
  mime: string;
}

const FILE_TYPE_FAMILIES: Record<string, Family> = {
  "application/pdf": "pdf",
  [MIME.docx]: "docx",
  [MIME.xlsx]: "xlsx",
  "application/zip": "zip",
  "image/png": "png",
  "image/jpeg": "jpeg",
  "image/tiff": "tiff",
  "audio/mpeg": "mp3",
  "audio/wav": "wav",
  "audio/vnd.wave": "wav",
  "audio/x-wav": "wav",
  "video/mp4": "mp4",
  "audio/mp4": "mp4",
  "audio/x-m4a": "mp4",
  "video/x-m4v": "mp4",
  "video/webm": "webm",
  "audio/webm": "webm",
  "text/vtt": "text",
};

function sniff(head: Buffer, ft: { mime: string } | undefined, truncated: boolean): Sniffed {
  // Before file-type: a UTF-16 LE byte-order mark (FF FE) also matches an MPEG audio frame header.
  if (looksUtf16(head)) return { family: "text", mime: "text/plain" };
  if (ft) return { family: FILE_TYPE_FAMILIES[ft.mime], mime: ft.mime };
  // file-type reads a TIFF's first IFD, which can sit past the head; the byte-order mark plus magic 42 is enough.
  if (head.length >= 4) {
    const m = head.subarray(0, 4).toString("latin1");
    if (m === "II*\0" || m === "MM\0*") return { family: "tiff", mime: "image/tiff" };
  }
  if (isUtf8Text(head, truncated)) return { family: "text", mime: "text/plain" };
  // Text in a legacy 8-bit encoding (Excel's plain "CSV" on Windows is Windows-1252): decoded as such by the parsers.
  if (!head.includes(0) && printableShare(head) > 0.95) return { family: "text", mime: "text/plain" };
  return { mime: "application/octet-stream" };
}


/** A UTF-16 byte-order mark followed by text (Excel's "Unicode Text" export). */
function looksUtf16(head: Buffer): boolean {
  const le = head[0] === 0xff && head[1] === 0xfe;
  const be = head[0] === 0xfe && head[1] === 0xff;
  if (!le && !be) return false;
  const sample = head.subarray(2, 2 + Math.min(512, (head.length - 2) & ~1));
  if (!sample.length) return false;
  const text = new TextDecoder(le ? "utf-16le" : "utf-16be").decode(sample);
  let ok = 0;
  for (const ch of text) if (ch >= " " || ch === "\t" || ch === "\n" || ch === "\r") ok++;
  return ok / text.length > 0.95;
}

/** Share of bytes that are printable ASCII, whitespace or high (>= 0x80) bytes of some 8-bit encoding. */
function printableShare(bytes: Buffer): number {
  if (!bytes.length) return 0;
  let ok = 0;
  for (const b of bytes) if (b >= 0x20 || b === 0x09 || b === 0x0a || b === 0x0d) ok++;
  return ok / bytes.length;
}

function compatible(claimed: Family, sniffed: Family): boolean {
  if (claimed === sniffed) return true;
  // file-type can only tell DOCX from XLSX when the telling entry is within the head; a bare zip is not a contradiction.
  if (sniffed === "zip") return claimed === "docx" || claimed === "xlsx";
  return false;
}

function resolveBinary(family: Exclude<Family, "text" | "zip">, declared: string, sniffedMime: string, ext: string): UploadVerdict {
  switch (family) {
    case "pdf":
      return { kind: "pdf", contentType: MIME.pdf };
    case "docx":
      return { kind: "docx", contentType: MIME.docx };
    case "xlsx":
      return { kind: "xlsx", contentType: MIME.xlsx };
    case "png":
    case "jpeg":
    case "tiff":
      return { kind: "image", contentType: MIME[family] };
    case "mp3":
    case "wav":
      return { kind: "audio", contentType: MIME[family] };
    case "mp4":
    case "webm": {
      // The container holds audio or video alike: the declared type decides, then the extension, then the sniff.
      const audio = declared.startsWith("audio/")
        ? true
        : declared.startsWith("video/")
          ? false
          : ext === "m4a" || ext === "weba"
            ? true
            : ext === "mp4" || ext === "m4v" || ext === "webm"
              ? false
              : sniffedMime.startsWith("audio/");
      return audio ? { kind: "audio", contentType: `audio/${family}` } : { kind: "video", contentType: `video/${family}` };
    }
  }
}

function resolveText(head: Buffer, claim: Declared | undefined, claimLabel: string, ext: string): UploadVerdict {
  // A head cut mid-character decodes with a replacement at the end, which the checks below do not look at.
  const text = decodeAnyText(head);
  const start = text.trimStart();
  const looksVtt = /^WEBVTT(?:[ \t\r\n]|$)/.test(text);
  const looksSrt = /^\d+[ \t]*\r?\n[^\r\n]*-->/.test(start);
  const looksJson = start.startsWith("{") || start.startsWith("[");

  // Explicit sub-format from the declared type, else from the extension (text/plain + .md is Markdown).
  let kind: TextKind = claim?.textKind ?? EXTENSIONS[ext]?.textKind ?? "text";
  // A WebVTT file sent as text/plain is still a transcript; its header is unambiguous.
  if (kind === "text" && looksVtt) kind = "vtt";

  // Name what announced the sub-format: the declared type, or the extension under a plain/generic declared type.
  const announcedBy = claim?.textKind ? claimLabel : `a .${ext} file name`;
  const expect = (ok: boolean, what: string) => {
    if (!ok) throw mismatch(announcedBy, `${what} (text/plain)`);
  };
  if (kind === "json") expect(looksJson, "text that is not JSON");
  if (kind === "vtt") expect(looksVtt, 'text without the "WEBVTT" header');
  if (kind === "srt") expect(looksSrt, "text that is not SubRip subtitles");
  return { kind, contentType: MIME[kind] };
}

function blockedReason(head: Buffer, declared: string, ext: string): string | undefined {
  if (BLOCKED_EXTENSIONS.has(ext)) return `.${ext} files are executables or scripts`;
  if (BLOCKED_DECLARED.has(declared) || /\/(x-)?(shell)?script\b|\/x-script\./.test(declared)) {
    return `its declared type ${declared} is an executable or script`;
  }
  const magic = executableMagic(head);
  if (magic) return `its content is ${magic}`;
  return undefined;
}

/** Executable or script signatures in the leading bytes, or undefined. */
function executableMagic(head: Buffer): string | undefined {
  const b = head;
  const u32be = b.length >= 4 ? b.readUInt32BE(0) : 0;
  if (b[0] === 0x7f && b[1] === 0x45 && b[2] === 0x4c && b[3] === 0x46) return "an ELF executable";
  // Mach-O thin (32/64-bit, either byte order) and universal ("fat") binaries. 0xCAFEBABE is also a Java class file.
  if ([0xfeedface, 0xfeedfacf, 0xcefaedfe, 0xcffaedfe].includes(u32be)) return "a Mach-O executable";
  if (u32be === 0xcafebabe || u32be === 0xcafebabf) return "a Mach-O universal binary or Java class file";
  // "MZ" alone could start a text file ("MZ Ltd notes"); a real DOS/PE header is followed by binary bytes.
  if (b[0] === 0x4d && b[1] === 0x5a && !isUtf8Text(b, true)) return "a Windows/DOS executable";
  const text = b.subarray(0, 64).toString("latin1").replace(/^\xEF\xBB\xBF/, "");
  if (text.startsWith("#!")) return "a script (it starts with #!)";
  if (/^<\?php/i.test(text)) return "a PHP script";
  if (/^@echo\s+off/i.test(text)) return "a Windows batch script";
  return undefined;
}

/**
 * True when the bytes are UTF-8 text: valid encoding and no NUL bytes (UTF-16 and binary formats have plenty).
 * When the sample is a prefix of a longer file, a multi-byte character cut at the end is forgiven.
 */
function isUtf8Text(bytes: Buffer, truncated: boolean): boolean {
  if (bytes.includes(0)) return false;
  let end = bytes.length;
  if (truncated) {
    // Step back over at most 3 continuation bytes to the start of a possibly incomplete final character.
    let i = end - 1;
    while (i >= 0 && end - i <= 3 && (bytes[i] & 0xc0) === 0x80) i--;
    if (i >= 0 && bytes[i] >= 0xc0) end = i;
  }
  try {
    new TextDecoder("utf-8", { fatal: true }).decode(bytes.subarray(0, end));
    return true;
  } catch {
    return false;
  }
}

function describe(s: Sniffed): string {
  if (s.family) return `${FAMILY_NAMES[s.family]} (${s.family === "text" ? "text/plain" : s.mime})`;
  return s.mime === "application/octet-stream" ? "unrecognised binary data" : s.mime;
}

const normalizeMime = (t: string): string => {
  const mime = (t ?? "").split(";")[0].trim().toLowerCase();
  // Structured-syntax suffix (RFC 6839): application/ld+json is JSON as far as parsing goes.
  return mime.endsWith("+json") ? "application/json" : mime;
};

/** Text formats we do not parse; content that is text under such a label is unsupported, not mislabelled. */
const isTextualMime = (mime: string): boolean =>
  mime.startsWith("text/") || mime.endsWith("+xml") || ["application/xml", "application/rtf", "application/yaml", "application/x-yaml", "message/rfc822"].includes(mime);

const extensionOf = (name: string): string => {
  const base = (name ?? "").split(/[\\/]/).pop() ?? "";
  const dot = base.lastIndexOf(".");
  return dot > 0 ? base.slice(dot + 1).toLowerCase() : "";
};

const formatBytes = (n: number): string => `${(n / 1_048_576).toFixed(1)} MB`;

const blocked = (why: string) =>
  new AppError("BLOCKED_FILE_TYPE", `Executable and script files are not accepted: ${why}`);

const mismatch = (claimed: string, actual: string) =>
  new AppError("FILE_TYPE_MISMATCH", `The file was declared as ${claimed} but its content is ${actual}`, {
    declared_type: claimed,
    detected_type: actual,
  });

const unsupported = (what: string) =>
  new AppError(
    "UNSUPPORTED_MEDIA_TYPE",
    `Unsupported file type: ${what}. Supported: PDF, DOCX, text, Markdown, JSON, CSV, XLSX, WebVTT/SRT transcripts, MP3, MP4, WAV, WebM, PNG, JPEG, TIFF`,
  );

/** What a presigned upload declares before its bytes exist. */
export interface DeclaredUpload {
  declaredType: string;
  filename: string;
  size: number;
}

/**
 * The checks that need no bytes, for `POST /api/research/upload-url` before the file exists (DESIGN.md section 5):
 * size, blocked names and types, and a supported declared type (or, for a generic type, extension). The byte
 * checks of {@link inspectUpload} run when the object's S3 event arrives.
 * @returns the expected kind and canonical content type (the presigned policy pins this content type).
 * @throws AppError EMPTY_FILE, PAYLOAD_TOO_LARGE, BLOCKED_FILE_TYPE, UNSUPPORTED_MEDIA_TYPE.
 */
export function inspectDeclared(upload: DeclaredUpload): UploadVerdict {
  const { filename, size } = upload;
  if (size <= 0) throw new AppError("EMPTY_FILE", "The uploaded file is empty");
  if (size > MAX_UPLOAD_BYTES) {
    throw new AppError("PAYLOAD_TOO_LARGE", `The file is ${formatBytes(size)}; the limit is 100 MB per file`, {
      limit_bytes: MAX_UPLOAD_BYTES,
      size_bytes: size,
    });
  }
  const declared = normalizeMime(upload.declaredType);
  const ext = extensionOf(filename);
  const blockedBy = blockedReason(Buffer.alloc(0), declared, ext);
  if (blockedBy) throw blocked(blockedBy);
  const claim = GENERIC.has(declared) ? EXTENSIONS[ext] : DECLARED[declared];
  if (!claim) throw unsupported(GENERIC.has(declared) ? `.${ext || "extensionless"} files` : declared);
  if (claim.family === "text") {
    const kind: TextKind = claim.textKind ?? EXTENSIONS[ext]?.textKind ?? "text";
    return { kind, contentType: MIME[kind] };
  }
  if (claim.family === "zip") throw unsupported("application/zip");
  return resolveBinary(claim.family, declared, "", ext);
}
