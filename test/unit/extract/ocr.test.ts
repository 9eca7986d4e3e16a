/**
 * Local OCR (tesseract.js, offline English model) on the real screenshots. One worker serves the whole file, as in
 * the embedded runtime; afterAll shuts it down.
 */
import sharp from "sharp";
import { afterAll, describe, expect, it } from "vitest";
import { extract, ExtractionError, inspectUpload, shutdownEngines } from "../../../core/extract/index";
import type { Extraction } from "../../../core/extract/types";
import { expectVerbatim, real } from "./helpers";

afterAll(async () => {
  await shutdownEngines();
});

const ocr = async (bytes: Buffer, contentType: string, label: string) => {
  const started = performance.now();
  try {
    return await extract({ bytes, kind: "image", contentType, filename: label });
  } finally {
    console.info(`tesseract: ${label} in ${((performance.now() - started) / 1000).toFixed(2)} s`);
  }
};

const autosave = real("jupyter/images/jupyterlab-autosave-settings.png");

describe("OCR (tesseract.js)", () => {
  it("reads the clean JupyterLab settings screenshot", async () => {
    const x = await ocr(autosave, "image/png", "autosave-settings.png (first image: includes worker start)");
    expect(x.engine).toBe("tesseract");
    expect(x.units.every((u) => u.kind === "paragraph")).toBe(true);
    for (const phrase of ["Document Manager", "Autosave Documents", "Whether to autosave documents", "Length of save interval in seconds"]) {
      expect(x.extracted_text).toContain(phrase);
    }
    expectVerbatim(x);
  });

  it("survives the hard magnified-session screenshot: text or a clear no-text failure, never a crash", async () => {
    const result: Extraction | Error = await ocr(real("jupyter/images/notebooks-for-all-magnified-session-screenshot.png"), "image/png", "magnified-session-screenshot.png").catch(
      (err: Error) => err,
    );
    if (result instanceof Error) {
      expect(result).toBeInstanceOf(ExtractionError);
      expect((result as ExtractionError).reason).toBe("no_text");
    } else {
      expectVerbatim(result);
      // Garbled lines below the confidence floor are dropped; what is left must at least contain words.
      expect(result.extracted_text).toMatch(/[A-Za-z]{4}/);
    }
  });

  it("converts a Deflate-compressed TIFF (which tesseract's own decoder rejects) and reads it", async () => {
    const tiff = await sharp(autosave).tiff({ compression: "deflate" }).toBuffer();
    const verdict = await inspectUpload({ head: tiff.subarray(0, 4100), declaredType: "image/tiff", filename: "settings.tiff", size: tiff.length });
    expect(verdict).toEqual({ kind: "image", contentType: "image/tiff" });
    const x = await ocr(tiff, verdict.contentType, "settings.tiff");
    expect(x.extracted_text).toContain("Autosave Documents");
    expectVerbatim(x);
  });

  it("reads every page of a multi-page TIFF, with page locators", async () => {
    const page = await sharp(autosave).extract({ left: 0, top: 0, width: 1308, height: 268 }).png().toBuffer();
    const twoPages = await sharp([page, page], { join: { animated: true } }).tiff({ compression: "lzw" }).toBuffer();
    expect((await sharp(twoPages).metadata()).pages).toBe(2);
    const x = await ocr(twoPages, "image/tiff", "two-pages.tiff");
    expect(x.pages).toBe(2);
    expect(new Set(x.units.map((u) => u.locator))).toEqual(new Set(["page 1", "page 2"]));
    expectVerbatim(x);
  });

  it("reads a JPEG", async () => {
    const jpeg = await sharp(autosave).jpeg({ quality: 90 }).toBuffer();
    const x = await ocr(jpeg, "image/jpeg", "settings.jpg");
    expect(x.extracted_text).toContain("Document Manager");
  });

  it("fails an unreadable image with a clear reason, and the shared worker keeps working", async () => {
    const broken = Buffer.concat([autosave.subarray(0, 16), Buffer.alloc(2000, 0x41)]);
    const err = await ocr(broken, "image/png", "broken.png").catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ExtractionError);
    expect((err as ExtractionError).reason).toBe("corrupt");
    expect((err as ExtractionError).message).toMatch(/^The image could not be read/);
    const again = await ocr(autosave, "image/png", "autosave-settings.png (after a failure)");
    expect(again.extracted_text).toContain("Autosave Documents");
  });
});
