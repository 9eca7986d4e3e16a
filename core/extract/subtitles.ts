/** WebVTT and SRT transcripts (Zoom, Teams, Otter exports, captions) parsed with the `subtitle` package. */
import { parseSync, type NodeCue } from "subtitle";
import { decodeHTMLStrict } from "entities/decode";
import { ExtractionError, unreadable } from "./errors";
import { capField } from "./limits";
import { TextBuilder, formatTimestamp, splitSpeakerLine } from "./text";
import type { Extraction } from "./types";

interface Cue {
  start: number;
  speaker?: string;
  text: string;
}

/** A parsed cue: `raw` is the whole cleaned text, used when a "Name:" prefix turns out not to be a speaker. */
interface ParsedCue extends Cue {
  raw: string;
  /** Named by a WebVTT voice span, which is a speaker even if it appears once. */
  voiced: boolean;
}

/**
 * Extract a WebVTT or SRT file as speaker turns (engine "vtt" or "srt").
 *
 * Speakers come from WebVTT voice spans (`<v Name>`) or a "Name: " prefix (Zoom, Teams), capped at MAX_FIELD_CHARS
 * (limits.ts) like unit fields, in the units and the transcript lines alike. Consecutive cues of the same speaker are
 * merged into one turn (captioners split sentences across cues; a turn is what a person said before someone else
 * spoke), timestamped at its first cue. Cues without any speaker stay one turn each.
 * extracted_text = transcript = one line per turn, "[HH:MM:SS.mmm] Speaker: words".
 *
 * @throws ExtractionError `corrupt` when the file cannot be parsed, `no_text` when it has no cues.
 */
export function extractSubtitles(text: string, format: "vtt" | "srt"): Extraction {
  let nodes;
  try {
    nodes = parseSync(text);
  } catch (err) {
    // The parser's words quote the offending line; the reason gives its number and what was expected instead.
    const row = /at row (\d+)/.exec(err instanceof Error ? err.message : "");
    const where = row ? `: a cue timing line ("00:00:01.000 --> 00:00:04.000") was expected near line ${row[1]}` : " (a cue timing is malformed)";
    throw unreadable(`The ${format === "vtt" ? "WebVTT" : "SRT"} file could not be read${where}`, err);
  }
  const cues: ParsedCue[] = [];
  for (const node of nodes) {
    if (node.type !== "cue") continue;
    const cue = toCue(node);
    if (cue.text) cues.push(cue);
  }
  if (!cues.length) throw new ExtractionError("no_text", `The ${format === "vtt" ? "WebVTT" : "SRT"} file has no captions`);

  // "Name: " prefixes are only speakers when the same names recur; a one-off "Note: ..." cue is just words.
  const counts = new Map<string, number>();
  for (const c of cues) if (c.speaker) counts.set(c.speaker, (counts.get(c.speaker) ?? 0) + 1);

  const turns: Cue[] = [];
  for (const c of cues) {
    const speaker = c.speaker && (c.voiced || (counts.get(c.speaker) ?? 0) >= 2) ? c.speaker : undefined;
    const words = speaker ? c.text : c.raw;
    const last = turns[turns.length - 1];
    if (last && speaker && last.speaker === speaker) last.text += ` ${words}`;
    else turns.push({ start: c.start, speaker, text: words });
  }

  const b = new TextBuilder();
  turns.forEach((t, i) => {
    if (i) b.text("\n");
    const timestamp = formatTimestamp(t.start);
    b.text(`[${timestamp}] ${t.speaker ? `${t.speaker}: ` : ""}`);
    b.unit({ kind: "turn", text: t.text, speaker: t.speaker, timestamp });
  });
  return b.build(format, { transcript: true });
}

function toCue(node: NodeCue): ParsedCue {
  let body = node.data.text;
  // WebVTT voice span: "<v Ann>words" or "<v.loud Ann>words".
  const voice = /^\s*<v(?:\.[\w.-]+)?\s+([^>]+)>/i.exec(body);
  const clean = (s: string) =>
    decodeEntities(s.replace(/<[^>]*>/g, ""))
      .split("\n")
      .map((l) => l.trim())
      .filter(Boolean)
      .join(" ");
  if (voice) {
    body = body.slice(voice[0].length);
    const text = clean(body);
    return { start: node.data.start, speaker: capField(voice[1].trim()), text, raw: text, voiced: true };
  }
  const raw = clean(body);
  const line = splitSpeakerLine(raw);
  return { start: node.data.start, speaker: line.speaker && capField(line.speaker), text: line.speaker ? line.text.trim() : raw, raw, voiced: false };
}

/**
 * Character references in cue text decoded as HTML does (`entities`: every named reference, numeric ones out of range
 * become U+FFFD instead of failing the file), then as subtitles show them: a no-break space is a space, and the
 * direction marks (U+200E, U+200F) are dropped.
 */
const decodeEntities = (s: string) => decodeHTMLStrict(s).replace(/\u00a0/g, " ").replace(/[\u200e\u200f]/g, "");
