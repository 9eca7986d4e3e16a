/**
 * Skill archives (core/skill/portable.ts): a written archive reads back to the same skill; archives as people make
 * them (the folder zipped, or its contents; macOS metadata) are read; unsafe or oversized ones are refused with a 422
 * before anything large is inflated.
 */
import { describe, expect, it } from "vitest";
import JSZip from "jszip";
import { AppError } from "../../../core/error";
import { readSkillFolder, renderSkillFolder, type SkillContent } from "../../../core/skill/format";
import { ARCHIVE_LIMITS, readUpload, writeArchive } from "../../../core/skill/portable";
import { officialSkill } from "../../../core/skill/library";

const skill: SkillContent = { ...officialSkill("research-plan")!, extra_metadata: { author: "ops" }, license: "CC-BY-4.0" };

async function zipOf(files: Record<string, string | Buffer>, compression: "DEFLATE" | "STORE" = "DEFLATE"): Promise<Buffer> {
  const zip = new JSZip();
  for (const [path, data] of Object.entries(files)) zip.file(path, data);
  return zip.generateAsync({ type: "nodebuffer", compression });
}

async function refused(p: Promise<unknown>): Promise<string> {
  const err = await p.then(() => undefined, (e: unknown) => e);
  expect(err).toBeInstanceOf(AppError);
  expect((err as AppError).code).toBe("VALIDATION_ERROR");
  return (err as AppError).message;
}

describe("skill archives", () => {
  it("an exported archive is the folder, and reads back to the same skill", async () => {
    const bytes = await writeArchive(skill, new Date("2024-05-01T00:00:00Z"));
    const names = Object.keys((await JSZip.loadAsync(bytes)).files).filter((n) => !n.endsWith("/")).sort();
    expect(names).toEqual([`${skill.slug}/SKILL.md`, `${skill.slug}/assets/sample-output.md`, `${skill.slug}/assets/template.md`]);
    const upload = await readUpload(bytes, "x.zip");
    expect(upload.folder).toBe(skill.slug);
    const { id: _id, ...content } = skill as SkillContent & { id?: string };
    expect(readSkillFolder(upload.files, ["file"], upload.folder).content).toEqual(content);
    // The same skill and date zip to the same bytes.
    expect((await writeArchive(skill, new Date("2024-05-01T00:00:00Z"))).equals(bytes)).toBe(true);
  });

  it("reads the folder's contents zipped without the folder, ignoring macOS metadata, and lists files it does not read", async () => {
    const files = renderSkillFolder(skill);
    const bytes = await zipOf({ ...files, "__MACOSX/._SKILL.md": "junk", ".DS_Store": "junk", "scripts/run.py": "print(1)", "assets/logo.png": Buffer.from([0x89, 0x50]) });
    const upload = await readUpload(bytes, "skill.zip");
    expect(upload.folder).toBeUndefined();
    expect(Object.keys(upload.files).sort()).toEqual(["SKILL.md", "assets/sample-output.md", "assets/template.md"]);
    expect(upload.others).toEqual(["assets/logo.png", "scripts/run.py"]);
  });

  it("takes a lone SKILL.md as the folder's one file", async () => {
    const upload = await readUpload(Buffer.from(renderSkillFolder(skill)["SKILL.md"]!), "SKILL.md");
    expect(Object.keys(upload.files)).toEqual(["SKILL.md"]);
  });

  it("refuses an archive without SKILL.md, with two top folders, or named .zip but not one", async () => {
    expect(await refused(readUpload(await zipOf({ "README.md": "x" }), "a.zip"))).toMatch(/no SKILL.md/);
    expect(await refused(readUpload(await zipOf({ "a/SKILL.md": "x", "b/SKILL.md": "y" }), "a.zip"))).toMatch(/no SKILL.md/);
    expect(await refused(readUpload(Buffer.from("not a zip"), "a.zip"))).toMatch(/not a zip/);
    expect(await refused(readUpload(Buffer.from([0x50, 0x4b, 0x03, 0x04, 1, 2, 3]), "a.zip"))).toMatch(/not a readable zip/);
  });

  it("refuses paths that climb out of the folder", async () => {
    // Rename an entry in both headers to a name of the same length that climbs out: ../x.md.
    const zip = await zipOf({ "SKILL.md": "x", abcdefg: "y" });
    const patched = Buffer.from(zip.toString("latin1").split("abcdefg").join("../x.md"), "latin1");
    expect(await refused(readUpload(patched, "a.zip"))).toMatch(/cannot be read: .*\.\./);
  });

  it("refuses too many files, and a file over the size it may have, before inflating it", async () => {
    const many = Object.fromEntries(Array.from({ length: ARCHIVE_LIMITS.entries + 1 }, (_, i) => [`references/r${i}.md`, "x"]));
    expect(await refused(readUpload(await zipOf({ "SKILL.md": "x", ...many }), "a.zip"))).toMatch(/at most 200/);
    const big = await zipOf({ "SKILL.md": "x".repeat(ARCHIVE_LIMITS.fileBytes + 1) });
    expect(big.length).toBeLessThan(10_000);
    expect(await refused(readUpload(big, "a.zip"))).toMatch(/SKILL.md unpacks to/);
  });

  it("refuses an entry that inflates past the size it declares (a zip bomb's lie)", async () => {
    const honest = await zipOf({ "SKILL.md": "a".repeat(4000) });
    // Declare 100 bytes unpacked in both headers: yauzl stops the stream at byte 101.
    const buf = Buffer.from(honest);
    const local = buf.indexOf(Buffer.from([0x50, 0x4b, 0x03, 0x04]));
    const central = buf.indexOf(Buffer.from([0x50, 0x4b, 0x01, 0x02]));
    buf.writeUInt32LE(100, local + 22);
    buf.writeUInt32LE(100, central + 24);
    expect(await refused(readUpload(buf, "a.zip"))).toMatch(/cannot be unpacked/);
  });

  it("refuses a file that is not UTF-8", async () => {
    expect(await refused(readUpload(await zipOf({ "SKILL.md": Buffer.from([0xff, 0xfe, 0x00, 0xd8]) }), "a.zip"))).toMatch(/not UTF-8/);
  });
});
