/**
 * Local transcription (ffmpeg + pocketsphinx from Debian packages) on the real JFK clip. Needs
 * `apt-get install -y ffmpeg pocketsphinx pocketsphinx-en-us` (AUDIO_APT_PACKAGES); without them the tests that run
 * them are skipped, and the run says so with that instruction (audio is optional at runtime; .ci/run installs them).
 */
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it, type TestContext } from "vitest";
import { AUDIO_APT_PACKAGES, extract, ExtractionError, inspectUpload } from "../../../core/extract/index";
import { findSpeechTools, parsePocketsphinx } from "../../../core/extract/speech";
import { expectVerbatim, real, REALDATA, wordOverlap } from "./helpers";

const reference = real("audio/jfk.reference-transcript.txt").toString("utf8");
// The runtime's own detection, so a skip here means an audio upload would fail the same way.
const speechMissing = await findSpeechTools().then(() => undefined, (err: Error) => err.message);
if (speechMissing) console.warn(`Audio tests skipped. ${speechMissing}`);
/** First line of each test that runs ffmpeg or pocketsphinx: skip it, with the install line as the note. */
const needsSpeechTools = (ctx: TestContext) => ctx.skip(speechMissing !== undefined, speechMissing);
const scratch = mkdtempSync(join(tmpdir(), "r2d-speech-test-"));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

async function transcribe(bytes: Buffer, filename: string, declaredType: string) {
  const verdict = await inspectUpload({ head: bytes.subarray(0, 4100), declaredType, filename, size: bytes.length });
  const started = performance.now();
  const x = await extract({ bytes, ...verdict, filename });
  console.info(`pocketsphinx: ${filename} in ${((performance.now() - started) / 1000).toFixed(2)} s: "${x.extracted_text}"`);
  return { verdict, x };
}

describe("speech (ffmpeg + pocketsphinx)", () => {
  // pocketsphinx with its stock US English model is far from perfect on a 1961 recording; half of the reference's
  // distinct words is a level it reaches with margin (about 0.7 measured) and that noise or a broken pipeline does not.
  const MIN_OVERLAP = 0.5;

  it("transcribes the WAV clip into a timestamped turn close to the reference", async (ctx) => {
    needsSpeechTools(ctx);
    const { verdict, x } = await transcribe(real("audio/jfk.wav"), "jfk.wav", "audio/wav");
    expect(verdict.kind).toBe("audio");
    expect(x.engine).toBe("pocketsphinx");
    expect(x.transcript).toBe(x.extracted_text);
    expect(x.units.length).toBeGreaterThan(0);
    expect(x.units.every((u) => u.kind === "turn" && /^\d{2}:\d{2}:\d{2}\.\d{3}$/.test(u.timestamp ?? ""))).toBe(true);
    expect(wordOverlap(reference, x.extracted_text)).toBeGreaterThanOrEqual(MIN_OVERLAP);
    expectVerbatim(x);
  });

  it("transcribes the MP3 of the same clip", async (ctx) => {
    needsSpeechTools(ctx);
    const { verdict, x } = await transcribe(real("audio/jfk.mp3"), "jfk.mp3", "audio/mpeg");
    expect(verdict.contentType).toBe("audio/mpeg");
    expect(wordOverlap(reference, x.extracted_text)).toBeGreaterThanOrEqual(MIN_OVERLAP);
    expectVerbatim(x);
  });

  it("transcribes the audio track of an MP4 video", async (ctx) => {
    needsSpeechTools(ctx);
    // Seconds 3-8 of the real clip ("ask not what your country can do for you") muxed under a small black video
    // track (H.264 + AAC), as a recorded session would be; 5 s keeps the test cheap.
    const mp4 = join(scratch, "session.mp4");
    execFileSync("ffmpeg", ["-nostdin", "-loglevel", "error", "-y", "-f", "lavfi", "-i", "color=c=black:s=64x64:r=5", "-ss", "3", "-t", "5", "-i", join(REALDATA, "audio/jfk.wav"), "-shortest", "-c:v", "libx264", "-c:a", "aac", mp4]);
    const { verdict, x } = await transcribe(readFileSync(mp4), "session.mp4", "video/mp4");
    expect(verdict).toEqual({ kind: "video", contentType: "video/mp4" });
    expect(wordOverlap("ask not what your country can do for you", x.extracted_text)).toBeGreaterThanOrEqual(MIN_OVERLAP);
    expectVerbatim(x);
  });

  it("fails a file ffmpeg cannot decode with a clear reason", async (ctx) => {
    needsSpeechTools(ctx);
    const err = await extract({ bytes: real("jupyter/docs/jupyter-org-redesign-heuristic-eval-competitive-analysis.pdf"), kind: "audio", contentType: "audio/mpeg", filename: "x.mp3" }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ExtractionError);
    expect((err as ExtractionError).reason).toBe("corrupt");
    expect((err as ExtractionError).message).toMatch(/^The recording could not be decoded/);
  });

  it("fails silence with no_text", async (ctx) => {
    needsSpeechTools(ctx);
    const wav = join(scratch, "silence.wav");
    execFileSync("ffmpeg", ["-nostdin", "-loglevel", "error", "-y", "-f", "lavfi", "-i", "anullsrc=r=16000:cl=mono", "-t", "2", wav]);
    const err = await extract({ bytes: readFileSync(wav), kind: "audio", contentType: "audio/wav", filename: "silence.wav" }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ExtractionError);
    expect((err as ExtractionError).reason).toBe("no_text");
  });

  it("tells the user what to install when the tools are missing", async () => {
    const saved = process.env.FFMPEG_PATH;
    process.env.FFMPEG_PATH = join(scratch, "no-such-ffmpeg");
    try {
      const err = await extract({ bytes: real("audio/jfk.wav"), kind: "audio", contentType: "audio/wav", filename: "jfk.wav" }).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(ExtractionError);
      expect(err).toMatchObject({ reason: "engine_missing", code: "SERVICE_UNAVAILABLE" });
      expect((err as Error).message).toContain("Audio transcription needs ffmpeg and pocketsphinx: apt-get install -y ffmpeg pocketsphinx pocketsphinx-en-us");
      expect((err as Error).message).toContain("missing: ffmpeg");
    } finally {
      if (saved === undefined) delete process.env.FFMPEG_PATH;
      else process.env.FFMPEG_PATH = saved;
    }
    expect(AUDIO_APT_PACKAGES).toEqual(["ffmpeg", "pocketsphinx", "pocketsphinx-en-us"]);
  });
});

describe("parsePocketsphinx", () => {
  it("reads hypothesis lines and their timed segments (recorded `pocketsphinx_continuous -time yes` output)", () => {
    const stdout = [
      "and then our my arm arrow",
      "<s> 0.000 0.040 0.998900",
      "and 0.050 0.160 0.032758",
      "arrow 1.760 2.300 0.000685",
      "</s> 2.310 2.440 1.000000",
      "and not",
      "<s> 3.170 3.280 1.000300",
      "<sil> 3.740 3.980 0.828680",
      "not 3.990 4.300 0.817730",
      "</s> 4.310 4.760 1.000000",
      "",
    ].join("\n");
    expect(parsePocketsphinx(stdout)).toEqual([
      { text: "and then our my arm arrow", start: 0, end: 2440 },
      { text: "and not", start: 3170, end: 4760 },
    ]);
  });
});
