/**
 * Local speech-to-text for audio and video: ffmpeg decodes any supported container to 16 kHz mono 16-bit WAV (what
 * the acoustic model was trained on), then CMU pocketsphinx transcribes it, both from Debian packages
 * (DESIGN.md section 2). Only the embedded runtime loads this module; in AWS audio goes to Transcribe.
 *
 * Debian bookworm ships pocketsphinx 0.8+5prealpha, whose CLI is `pocketsphinx_continuous`; the US English
 * acoustic model, language model and dictionary come in `pocketsphinx-en-us` under /usr/share/pocketsphinx/model/en-us.
 * With `-time yes` it prints, per utterance, the hypothesis line and then one "word start end prob" line per
 * segment, starting with `<s>`, which gives each utterance its start time.
 */
import { logExtractionFailure } from "./log";
import { execFile } from "node:child_process";
import { constants } from "node:fs";
import { access, mkdtemp, rm, stat, writeFile } from "node:fs/promises";
import { availableParallelism, tmpdir } from "node:os";
import { delimiter, extname, join } from "node:path";
import pLimit from "p-limit";
import { ExtractionError, messageOf } from "./errors";
import { TextBuilder, formatTimestamp } from "./text";
import type { Extraction } from "./types";

/** Debian packages the local transcription needs; the CI script installs exactly these (`apt-get install -y ...`). */
export const AUDIO_APT_PACKAGES = ["ffmpeg", "pocketsphinx", "pocketsphinx-en-us"] as const;

const INSTALL_HINT = `Audio transcription needs ffmpeg and pocketsphinx: apt-get install -y ${AUDIO_APT_PACKAGES.join(" ")}`;

/** Where pocketsphinx-en-us installs its model; POCKETSPHINX_MODEL_DIR overrides it. */
const DEFAULT_MODEL_DIR = "/usr/share/pocketsphinx/model/en-us";

/** Utterances closer than this (ms) are one turn... */
const TURN_GAP_MS = 2_000;
/** ...until the turn is this long (ms), so a long monologue still gets timestamps every half minute. */
const TURN_MAX_MS = 30_000;

interface Tools {
  ffmpeg: string;
  pocketsphinx: string;
  model: { hmm: string; lm: string; dict: string };
}

async function executable(name: string, override: string | undefined): Promise<string | undefined> {
  const candidates = override ? [override] : (process.env.PATH ?? "").split(delimiter).filter(Boolean).map((d) => join(d, name));
  for (const c of candidates) {
    try {
      await access(c, constants.X_OK);
      return c;
    } catch {
      // not here; try the next PATH entry
    }
  }
  return undefined;
}

/**
 * Locate ffmpeg, pocketsphinx_continuous and the English model (FFMPEG_PATH, POCKETSPHINX_PATH and
 * POCKETSPHINX_MODEL_DIR override the defaults).
 *
 * @throws ExtractionError `engine_missing` naming the apt packages to install.
 */
export async function findSpeechTools(): Promise<Tools> {
  const [ffmpeg, pocketsphinx] = await Promise.all([
    executable("ffmpeg", process.env.FFMPEG_PATH),
    executable("pocketsphinx_continuous", process.env.POCKETSPHINX_PATH),
  ]);
  const dir = process.env.POCKETSPHINX_MODEL_DIR ?? DEFAULT_MODEL_DIR;
  const model = { hmm: join(dir, "en-us"), lm: join(dir, "en-us.lm.bin"), dict: join(dir, "cmudict-en-us.dict") };
  const modelOk = await Promise.all(Object.values(model).map((p) => access(p).then(() => true, () => false)));
  const missing = [!ffmpeg && "ffmpeg", !pocketsphinx && "pocketsphinx", modelOk.includes(false) && "the pocketsphinx English model"].filter(Boolean);
  if (missing.length || !ffmpeg || !pocketsphinx) {
    throw new ExtractionError("engine_missing", `${INSTALL_HINT} (missing: ${missing.join(", ")})`);
  }
  return { ffmpeg, pocketsphinx, model };
}

function run(cmd: string, args: string[], timeoutMs: number): Promise<{ stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    execFile(cmd, args, { timeout: timeoutMs, killSignal: "SIGKILL", maxBuffer: 256 * 1024 * 1024, encoding: "utf8" }, (err, stdout, stderr) => {
      if (err) reject(Object.assign(err, { stdout, stderr }));
      else resolve({ stdout, stderr });
    });
  });
}

/**
 * Transcribe audio or video bytes (MP3, WAV, MP4, WebM, ...) into speaker-less turns (engine "pocketsphinx"):
 * pocketsphinx cannot tell speakers apart, so units are `turn`s with a `timestamp` and no `speaker`, made of
 * utterances less than 2 s apart, at most 30 s each. extracted_text = transcript = "[HH:MM:SS.mmm] words" lines.
 * Runs at roughly half real time on one core.
 *
 * @throws ExtractionError `engine_missing` (with the apt-get line) when ffmpeg or pocketsphinx is not installed,
 *   `corrupt` when ffmpeg cannot decode the file or it has no audio track, `no_text` when no speech is
 *   recognised, `engine_failed` when pocketsphinx fails or times out.
 */
export function transcribeLocally(bytes: Buffer, filename: string): Promise<Extraction> {
  // One transcription per core: pocketsphinx is single-threaded and CPU-bound, and more at once would only stretch
  // each toward its timeout.
  return transcriptions(() => transcribe(bytes, filename));
}

const transcriptions = pLimit(Math.max(1, availableParallelism()));

async function transcribe(bytes: Buffer, filename: string): Promise<Extraction> {
  const tools = await findSpeechTools();
  const dir = await mkdtemp(join(tmpdir(), "r2d-speech-"));
  try {
    // Files, not pipes: MP4s often keep their index (moov) at the end, which ffmpeg can only reach by seeking.
    const input = join(dir, `input${extname(filename).toLowerCase().replace(/[^.\w]/g, "") || ".bin"}`);
    const wav = join(dir, "speech.wav");
    await writeFile(input, bytes);
    try {
      // highpass: speech carries almost nothing below 80 Hz, and rumble/DC there throws pocketsphinx' feature
      // normalisation off (the MP3 and WAV of the same clip recognised differently without it).
      const args = ["-nostdin", "-hide_banner", "-loglevel", "error", "-i", input, "-vn", "-af", "highpass=f=80"];
      await run(tools.ffmpeg, [...args, "-ac", "1", "-ar", "16000", "-c:a", "pcm_s16le", "-f", "wav", wav], 600_000);
    } catch (err) {
      // ffmpeg's own words go to the log, not into the reason a user reads (issue #10: no internals in answers).
      logExtractionFailure("ffmpeg could not decode the recording", { filename, stderr: lastLine((err as { stderr?: string }).stderr) || messageOf(err) }, err);
      throw new ExtractionError("corrupt", "The recording could not be decoded (it may be truncated or corrupt, or have no audio track)", { cause: err });
    }
    // 16 kHz x 16-bit mono = 32 000 bytes per second; allow 2 s of work per second of audio, plus start-up.
    const seconds = Math.max(0, ((await stat(wav)).size - 44) / 32_000);
    let stdout: string;
    try {
      ({ stdout } = await run(
        tools.pocketsphinx,
        ["-infile", wav, "-time", "yes", "-logfn", "/dev/null", "-hmm", tools.model.hmm, "-lm", tools.model.lm, "-dict", tools.model.dict],
        Math.ceil(120_000 + seconds * 2_000),
      ));
    } catch (err) {
      const tooLong = (err as { killed?: boolean }).killed === true;
      if (!tooLong) logExtractionFailure("pocketsphinx failed", { filename, stderr: lastLine((err as { stderr?: string }).stderr) || messageOf(err) }, err);
      throw new ExtractionError("engine_failed", `Speech recognition failed on this recording${tooLong ? ": it took too long" : "; try reprocessing"}`, { cause: err });
    }
    const extraction = turnsToExtraction(parsePocketsphinx(stdout));
    if (!extraction.units.length) {
      throw new ExtractionError("no_text", "No speech could be recognised in the recording (it may be silent, or not in English)");
    }
    return extraction;
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/** One recognised utterance: its words and where it starts and ends, in ms. */
export interface Utterance {
  text: string;
  start: number;
  end: number;
}

const SEGMENT = /^(\S+) (\d+(?:\.\d+)?) (\d+(?:\.\d+)?) (-?[\d.]+(?:e[-+]?\d+)?)$/i;

/** Parse `pocketsphinx_continuous -time yes` output: hypothesis lines, each followed by its timed segments. */
export function parsePocketsphinx(stdout: string): Utterance[] {
  const out: Utterance[] = [];
  let current: Utterance | undefined;
  for (const raw of stdout.split("\n")) {
    const line = raw.trim();
    const seg = SEGMENT.exec(line);
    if (seg && current) {
      const start = Math.round(Number(seg[2]) * 1000);
      const end = Math.round(Number(seg[3]) * 1000);
      if (current.start < 0) current.start = start;
      current.end = Math.max(current.end, end);
      continue;
    }
    if (seg) continue;
    current = { text: line, start: -1, end: 0 };
    if (line) out.push(current);
  }
  return out.map((u) => ({ ...u, start: Math.max(0, u.start) }));
}

function turnsToExtraction(utterances: Utterance[]): Extraction {
  const turns: Utterance[] = [];
  for (const u of utterances) {
    const last = turns[turns.length - 1];
    if (last && u.start - last.end < TURN_GAP_MS && u.end - last.start <= TURN_MAX_MS) {
      last.text += ` ${u.text}`;
      last.end = u.end;
    } else turns.push({ ...u });
  }
  const b = new TextBuilder();
  turns.forEach((t, i) => {
    const timestamp = formatTimestamp(t.start);
    b.text(`${i ? "\n" : ""}[${timestamp}] `);
    b.unit({ kind: "turn", text: t.text, timestamp });
  });
  return b.build("pocketsphinx", { transcript: true });
}

const lastLine = (s: string | undefined): string =>
  (s ?? "")
    .trim()
    .split("\n")
    .filter((l) => l.trim())
    .pop() ?? "";
