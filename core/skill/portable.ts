/**
 * Portable skills (issue #22 point 3): a skill travels as an Agent Skills folder, zipped. Export writes the folder
 * with JSZip; import reads an uploaded zip with yauzl, which gives the central directory before anything is inflated,
 * so an archive is refused on its declared figures (entries, sizes) and only the files this service uses (SKILL.md and
 * Markdown assets) are ever inflated, each held to its declared size (a zip bomb inflates nothing). A lone SKILL.md
 * (no zip) is accepted too.
 */
import JSZip from "jszip";
import yauzl from "yauzl";
import { AppError, Errors } from "../error";
import { renderSkillFolder, type SkillContent } from "./format";

/** Bounds of an imported archive. */
export const ARCHIVE_LIMITS = {
  /** Files in the archive (directories and macOS metadata not counted). */
  entries: 200,
  /** Declared unpacked size of all files. */
  totalBytes: 16 * 1024 * 1024,
  /** Unpacked size of one file this service reads (SKILL.md, an asset), and of a SKILL.md uploaded on its own. */
  fileBytes: 256 * 1024,
} as const;

const ZIP_MAGIC = Buffer.from([0x50, 0x4b, 0x03, 0x04]);
const EMPTY_ZIP_MAGIC = Buffer.from([0x50, 0x4b, 0x05, 0x06]);

/** True when the bytes open like a zip archive. */
export const isZip = (bytes: Buffer): boolean => bytes.subarray(0, 4).equals(ZIP_MAGIC) || bytes.subarray(0, 4).equals(EMPTY_ZIP_MAGIC);

const refuse = (msg: string, type = "archive_invalid") => Errors.validation([{ loc: ["body", "file"], msg, type }], msg);

/** Strict UTF-8: a file that is not text is refused, not decoded into replacement characters. */
function utf8(bytes: Buffer, path: string): string {
  try {
    return new TextDecoder("utf-8", { fatal: true }).decode(bytes).replace(/^\uFEFF/, "");
  } catch {
    throw refuse(`${path} is not UTF-8 text`, "encoding_invalid");
  }
}

/** Entries that carry no content of the folder: directories and the metadata macOS adds when it zips a folder. */
const isNoise = (name: string) => name.endsWith("/") || name.startsWith("__MACOSX/") || /(^|\/)\.DS_Store$/.test(name);

/**
 * The text files of an uploaded skill: from a zip of the folder (the folder itself at the top, or its contents), or
 * a lone SKILL.md.
 * @returns the files this service reads, by path inside the skill folder; the paths of every other file (listed, not
 *   read); the folder's name when the archive held one
 * @throws AppError VALIDATION_ERROR (422): not a readable zip, over {@link ARCHIVE_LIMITS} (a lone SKILL.md too is held
 *   to `fileBytes`), unsafe paths, no SKILL.md, a file that is not UTF-8
 */
export async function readUpload(bytes: Buffer, filename: string): Promise<{ files: Record<string, string>; others: string[]; folder?: string }> {
  if (!isZip(bytes)) {
    if (/\.zip$/i.test(filename)) throw refuse(`${filename} is not a zip archive`);
    // The same bound as SKILL.md inside a zip: the request may be 1 MB, and the parser must not read past what any
    // skill can hold (a skill is stored as one DynamoDB item).
    if (bytes.length > ARCHIVE_LIMITS.fileBytes) throw refuse(`${filename || "SKILL.md"} is ${bytes.length} bytes; at most ${ARCHIVE_LIMITS.fileBytes} are read`, "archive_too_large");
    return { files: { "SKILL.md": utf8(bytes, filename || "SKILL.md") }, others: [] };
  }
  let zip: yauzl.ZipFile;
  try {
    zip = await yauzl.fromBufferPromise(bytes, { lazyEntries: true, validateEntrySizes: true, strictFileNames: true });
  } catch {
    throw refuse("The file is not a readable zip archive");
  }
  try {
    if (zip.entryCount > ARCHIVE_LIMITS.entries * 2) throw refuse(`The archive holds ${zip.entryCount} entries; a skill folder may hold at most ${ARCHIVE_LIMITS.entries} files`, "archive_too_large");
    const entries: yauzl.Entry[] = [];
    let total = 0;
    try {
      for await (const entry of zip.eachEntry()) {
        if (isNoise(entry.fileName)) continue;
        if (entry.isEncrypted()) throw refuse(`${entry.fileName} is encrypted`);
        entries.push(entry);
        total += entry.uncompressedSize;
      }
    } catch (err) {
      if (err instanceof AppError) throw err;
      // strictFileNames: absolute paths, "..", backslashes and the like are yauzl errors here.
      throw refuse(`The archive cannot be read: ${(err as Error).message.split("\n")[0]}`);
    }
    if (entries.length > ARCHIVE_LIMITS.entries) throw refuse(`The archive holds ${entries.length} files; a skill folder may hold at most ${ARCHIVE_LIMITS.entries}`, "archive_too_large");
    if (total > ARCHIVE_LIMITS.totalBytes) throw refuse(`The archive unpacks to ${total} bytes; a skill folder may unpack to at most ${ARCHIVE_LIMITS.totalBytes}`, "archive_too_large");

    // The folder: SKILL.md at the top, or one top-level folder holding it.
    const names = entries.map((e) => e.fileName);
    let prefix = "";
    if (!names.includes("SKILL.md")) {
      const tops = new Set(names.map((n) => n.split("/")[0]!));
      const [top] = tops;
      if (tops.size === 1 && names.includes(`${top}/SKILL.md`)) prefix = `${top}/`;
      else throw refuse("The archive has no SKILL.md at its top or inside a single top-level folder", "skill_md_missing");
    }
    const files: Record<string, string> = {};
    const others: string[] = [];
    for (const entry of entries) {
      if (!entry.fileName.startsWith(prefix)) {
        others.push(entry.fileName);
        continue;
      }
      const path = entry.fileName.slice(prefix.length);
      const wanted = path === "SKILL.md" || (/^assets\/[^/]+\.(md|markdown|txt)$/i.test(path));
      if (!wanted) {
        others.push(path);
        continue;
      }
      if (entry.uncompressedSize > ARCHIVE_LIMITS.fileBytes) throw refuse(`${path} unpacks to ${entry.uncompressedSize} bytes; at most ${ARCHIVE_LIMITS.fileBytes} are read`, "archive_too_large");
      const chunks: Buffer[] = [];
      try {
        // validateEntrySizes: the stream errors as soon as an entry inflates past its declared size.
        for await (const chunk of (await zip.openReadStreamPromise(entry)) as AsyncIterable<Buffer>) chunks.push(chunk);
      } catch {
        throw refuse(`${path} cannot be unpacked (the archive is damaged or its sizes are wrong)`);
      }
      files[path] = utf8(Buffer.concat(chunks), path);
    }
    return { files, others: others.sort(), folder: prefix ? prefix.slice(0, -1) : undefined };
  } finally {
    zip.close();
  }
}

/**
 * A skill as a zip of its Agent Skills folder: `<slug>/SKILL.md`, `<slug>/assets/sample-output.md`,
 * `<slug>/assets/template.md` (format.ts `renderSkillFolder`).
 * @param modified the files' modification time (the skill's last change), so one version always zips the same way
 */
export async function writeArchive(content: SkillContent, modified: Date): Promise<Buffer> {
  const zip = new JSZip();
  for (const [path, text] of Object.entries(renderSkillFolder(content))) {
    zip.file(`${content.slug}/${path}`, text, { date: modified, createFolders: false });
  }
  return zip.generateAsync({ type: "nodebuffer", compression: "DEFLATE", platform: "UNIX" });
}
