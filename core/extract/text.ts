/**
 * Shared building blocks of every extractor: an extracted_text builder that keeps the verbatim-unit invariant by
 * construction, text decoding, recording timestamps, and speaker-label detection for transcripts.
 */
import { AppError } from "../error";
import { ExtractionError } from "./errors";
import { capField, extractionLimits } from "./limits";
import type { Extraction, TextUnit } from "./types";

/** The `too_large` failure of a text over `maxChars` characters (extracted_text of any format). */
export const textTooLong = (maxChars: number): ExtractionError =>
  new ExtractionError(
    "too_large",
    `The extracted text is longer than ${maxChars.toLocaleString("en-US")} characters, the most we keep from one file; split the file into smaller ones`,
  );

/**
 * Accumulates extracted_text and its units. A unit's text is appended to the text at the moment it is recorded, so
 * every `unit.text` occurs verbatim in `extracted_text` (types.ts invariant); {@link build} re-checks it anyway at the
 * recorded offsets, in linear time, because synthesis grounding depends on it.
 *
 * Every extractor builds its text here, so this is where the text cap holds: an append that would take the text past
 * `maxChars` throws, before one huge CSV, JSON or transcript becomes a gigantic string.
 */
export class TextBuilder {
  private chunks: string[] = [];
  private length = 0;
  private readonly units: { unit: TextUnit; offset: number }[] = [];

  /** @param maxChars most characters of text; default: the `maxTextChars` extraction limit in force (limits.ts). */
  constructor(private readonly maxChars: number = extractionLimits().maxTextChars) {}

  /**
   * Append text that belongs to extracted_text but is no unit (headings, labels, separators).
   * @throws ExtractionError `too_large` when the text would exceed `maxChars` characters.
   */
  text(s: string): this {
    if (s) {
      if (this.length + s.length > this.maxChars) throw textTooLong(this.maxChars);
      this.chunks.push(s);
      this.length += s.length;
    }
    return this;
  }

  /**
   * Append a unit's text and record the unit. Units whose text is blank are dropped: they carry nothing to quote.
   * @throws ExtractionError `too_large` when the text would exceed `maxChars` characters.
   */
  unit(unit: TextUnit): this {
    if (!unit.text || !unit.text.trim()) return this;
    this.units.push({ unit: compact(unit), offset: this.length });
    return this.text(unit.text);
  }

  get unitCount(): number {
    return this.units.length;
  }

  /** The extraction. `transcript: true` copies extracted_text into the transcript field (speaker-labelled sources). */
  build(engine: string, extra: { transcript?: boolean; pages?: number } = {}): Extraction {
    // trimEnd, not /\s+$/: the regex is quadratic on a long whitespace run inside the text (it retries the run from
    // each of its characters), minutes for an upload of spaces; trimEnd removes the same characters in linear time.
    const extracted_text = this.chunks.join("").trimEnd();
    for (const { unit, offset } of this.units) {
      if (!extracted_text.startsWith(unit.text, offset)) {
        throw new AppError("INVARIANT_VIOLATION", `Extraction unit is not verbatim in the extracted text (engine ${engine})`);
      }
    }
    const out: Extraction = { extracted_text, units: this.units.map((u) => u.unit), engine };
    if (extra.transcript) out.transcript = extracted_text;
    if (extra.pages !== undefined) out.pages = extra.pages;
    return out;
  }
}

/**
 * Drop undefined and empty optional fields, so stored units stay small and comparable; field values over
 * MAX_FIELD_CHARS are capped (extractors cap them where they are made, once; this holds the bound for every engine).
 */
function compact(unit: TextUnit): TextUnit {
  const out: TextUnit = { kind: unit.kind, text: unit.text };
  if (unit.speaker) out.speaker = unit.speaker;
  if (unit.timestamp) out.timestamp = unit.timestamp;
  if (unit.fields) {
    const fields = Object.fromEntries(
      Object.entries(unit.fields)
        .filter(([, v]) => v !== undefined && v !== "")
        .map(([k, v]) => [k, capField(v)]),
    );
    if (Object.keys(fields).length) out.fields = fields;
  }
  if (unit.locator) out.locator = unit.locator;
  return out;
}

/**
 * Decode bytes as UTF-8 text: strips a BOM, replaces invalid sequences (validation already refused non-UTF-8
 * uploads, but reprocessing an old object must not throw), drops NULs and normalises line ends to "\n".
 */
export function decodeText(bytes: Uint8Array): string {
  return decodeAnyText(bytes).replace(/\r\n?/g, "\n").replace(/\u0000/g, "");
}

/**
 * Decode text in the encodings research exports come in: UTF-16 (by its byte-order mark; Excel's "Unicode Text"),
 * UTF-8, else Windows-1252 (Excel's plain "CSV" on Windows, where a curly apostrophe is the byte 0x92). A leading
 * byte-order mark is dropped.
 */
export function decodeAnyText(bytes: Uint8Array): string {
  let text: string;
  if (bytes[0] === 0xff && bytes[1] === 0xfe) text = new TextDecoder("utf-16le").decode(bytes.subarray(2));
  else if (bytes[0] === 0xfe && bytes[1] === 0xff) text = new TextDecoder("utf-16be").decode(bytes.subarray(2));
  else {
    try {
      text = new TextDecoder("utf-8", { fatal: true }).decode(bytes);
    } catch {
      text = new TextDecoder("windows-1252").decode(bytes);
    }
  }
  return text.replace(/^\uFEFF/, "");
}

/** Milliseconds -> "HH:MM:SS.mmm", the TextUnit.timestamp format. */
export function formatTimestamp(ms: number): string {
  const total = Math.max(0, Math.round(ms));
  const h = Math.floor(total / 3_600_000);
  const m = Math.floor((total % 3_600_000) / 60_000);
  const s = Math.floor((total % 60_000) / 1000);
  const frac = total % 1000;
  const pad = (n: number, w = 2) => String(n).padStart(w, "0");
  return `${pad(h)}:${pad(m)}:${pad(s)}.${pad(frac, 3)}`;
}

/** "04:06", "1:02:03", "00:01:02.500", "00:01:02,500" -> milliseconds; undefined if it is no clock time. */
export function parseClock(clock: string): number | undefined {
  const m = /^(?:(\d{1,2}):)?(\d{1,2}):(\d{2})(?:[.,](\d{1,3}))?$/.exec(clock.trim());
  if (!m) return undefined;
  const [, h = "0", min, s, frac = "0"] = m;
  if (Number(s) >= 60 || (m[1] !== undefined && Number(min) >= 60)) return undefined;
  return ((Number(h) * 60 + Number(min)) * 60 + Number(s)) * 1000 + Number(frac.padEnd(3, "0"));
}

/** A line or paragraph of a transcript: who speaks, when (if the text says), and the words. */
export interface SpeakerLine {
  speaker?: string;
  timestamp?: string;
  /** The spoken words: a suffix of the input text, so it stays verbatim. */
  text: string;
}

// Labels that end in a colon but are not people: document furniture in notes and findings.
const NOT_SPEAKERS = new Set(
  (
    "note notes summary example examples tip warning important update edit date time location subject title goal goals " +
    "method methods team result results source sources status tags tag link links step task tasks context background " +
    "question questions answer answers finding findings recommendation recommendations observation observations quote " +
    "ps tldr tl;dr todo action actions next steps outcome outcomes overview purpose objective objectives agenda"
  ).split(" "),
);

const TIMESTAMP_PREFIX = /^\[?\(?((?:\d{1,2}:)?\d{1,2}:\d{2}(?:[.,]\d{1,3})?)\)?\]?\s+/;
// One to four words, the first capitalised or a participant code ("P16"), no sentence punctuation, then ": ".
const SPEAKER_PREFIX = /^((?:\p{Lu}|P\d)[\p{L}\p{N}'’._-]*(?: [\p{L}\p{N}][\p{L}\p{N}'’._-]*){0,3})\s?:\s+(?=\S)/u;

/** Split "[04:06] Name: words" / "Name: words" / "[04:06] words" into its parts; plain text comes back as { text }. */
export function splitSpeakerLine(line: string): SpeakerLine {
  let rest = line;
  let timestamp: string | undefined;
  const t = TIMESTAMP_PREFIX.exec(rest);
  if (t) {
    const ms = parseClock(t[1]);
    if (ms !== undefined) {
      timestamp = formatTimestamp(ms);
      rest = rest.slice(t[0].length);
    }
  }
  const s = SPEAKER_PREFIX.exec(rest);
  if (s && !s[1].endsWith(".") && !NOT_SPEAKERS.has(s[1].toLowerCase())) {
    return { speaker: s[1], timestamp, text: rest.slice(s[0].length) };
  }
  return { timestamp, text: rest };
}

/**
 * Read a sequence of paragraphs or lines as a transcript if it is one: at least 3 of them, and at least a quarter,
 * open with a speaker label that recurs (a one-off "Browsers: Chrome" is a field, not a speaker). Returns the split
 * lines, or undefined for ordinary prose.
 */
export function detectTranscript(texts: string[]): SpeakerLine[] | undefined {
  const lines = texts.map(splitSpeakerLine);
  const counts = new Map<string, number>();
  for (const l of lines) if (l.speaker) counts.set(l.speaker, (counts.get(l.speaker) ?? 0) + 1);
  const recurring = (l: SpeakerLine) => l.speaker !== undefined && (counts.get(l.speaker) ?? 0) >= 2;
  const labelled = lines.filter(recurring).length;
  if (labelled < 3 || labelled < texts.length / 4) return undefined;
  // A label seen once in a transcript is more likely a field ("Location: ...") than a speaker: keep it as words.
  return lines.map((l, i) => (l.speaker && !recurring(l) ? splitTimestampOnly(texts[i]) : l));
}

function splitTimestampOnly(text: string): SpeakerLine {
  const t = TIMESTAMP_PREFIX.exec(text);
  const ms = t ? parseClock(t[1]) : undefined;
  return t && ms !== undefined ? { timestamp: formatTimestamp(ms), text: text.slice(t[0].length) } : { text };
}

/** Cells and answers that say nothing: "", "N/A", "-", ".", "none", "null", "nan". */
export function isBlankAnswer(value: string): boolean {
  const v = value.trim().toLowerCase();
  if (!v) return true;
  if (!/[\p{L}\p{N}]/u.test(v)) return true;
  return /^(n\/?a|n\.a\.|na|nan|null|nil|none|undefined|#n\/a|-)$/.test(v);
}
