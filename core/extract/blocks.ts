/**
 * Document-shaped sources (Markdown, plain text, DOCX, PDF) all reduce to a list of blocks; this turns blocks into
 * an Extraction: paragraph units with their heading context, or speaker turns when the document is a transcript.
 */
import { capField } from "./limits";
import { TextBuilder, detectTranscript } from "./text";
import type { Extraction, TextUnit } from "./types";

export type Block =
  | { type: "heading"; depth: number; text: string }
  /**
   * `list`: a list item, shown with a "- " bullet in extracted_text. `quote`: inside a blockquote (in interview
   * notes, the participant's own words), recorded as `fields.form = "quote"` on its unit.
   */
  | { type: "paragraph"; text: string; list?: boolean; quote?: boolean; locator?: string }
  /** A table row, cells joined with " | ". A header row is context in extracted_text, not a unit. */
  | { type: "row"; text: string; header?: boolean; locator?: string }
  /** Code or preformatted text: kept in extracted_text, never a unit (it is not anyone's words). */
  | { type: "code"; text: string };

/**
 * Lay blocks out as extracted_text (blocks separated by a blank line, list items by a newline) and record units:
 * - prose: one `paragraph` unit per paragraph or list item, `row` per table row, with `fields.heading` (innermost
 *   heading) and `fields.section` (the heading path "A > B" when nested), each capped at MAX_FIELD_CHARS
 *   (limits.ts, capField; the heading stays whole in extracted_text);
 * - transcripts (see detectTranscript): one `turn` per paragraph with `speaker` (carried over to unlabelled
 *   follow-on paragraphs) and `timestamp` when the paragraph opens with one; the label stays in extracted_text,
 *   the unit text is the words after it.
 */
export function blocksToExtraction(blocks: Block[], engine: string, extra: { pages?: number } = {}): Extraction {
  const b = new TextBuilder();
  const paragraphs = blocks.filter((x): x is Extract<Block, { type: "paragraph" }> => x.type === "paragraph");
  const turns = detectTranscript(paragraphs.map((p) => p.text));
  const turnOf = new Map(turns ? paragraphs.map((p, i) => [p, turns[i]] as const) : []);

  // Open headings, outermost first; a heading closes every open heading of its depth or deeper (depths may skip).
  // Their texts are capped, and the context fields are built once per heading change and shared by the units under
  // it: a 100,000-character heading over 200 paragraphs was 40 MB of copies and 60 MB of JSON.
  const headings: { depth: number; text: string }[] = [];
  let context: { heading?: string; section?: string } = {};
  let speaker: string | undefined;
  let previous: Block | undefined;
  for (const block of blocks) {
    if (!block.text.trim()) continue;
    if (previous) b.text(previous.type === "paragraph" && previous.list && block.type === "paragraph" && block.list ? "\n" : "\n\n");
    previous = block;

    if (block.type === "heading") {
      while (headings.length && headings[headings.length - 1]!.depth >= block.depth) headings.pop();
      headings.push({ depth: block.depth, text: capField(block.text.trim()) });
      context = { heading: headings[headings.length - 1]!.text };
      if (headings.length > 1) context.section = capField(headings.map((h) => h.text).join(" > "));
      b.text(block.text);
      continue;
    }
    if (block.type === "code" || (block.type === "row" && block.header)) {
      b.text(block.text);
      continue;
    }
    const fields: Record<string, string> = {};
    if (context.heading) fields.heading = context.heading;
    if (context.section) fields.section = context.section;
    if (block.type === "paragraph" && block.quote) fields.form = "quote";
    const locator = block.locator;

    if (block.type === "row") {
      b.unit({ kind: "row", text: block.text, fields, locator });
      continue;
    }
    if (block.list) b.text("- ");
    const turn = turnOf.get(block);
    if (turn) {
      // Capped like fields: a speaker carries over to the follow-on paragraphs.
      if (turn.speaker) speaker = capField(turn.speaker);
      // Everything before the words (timestamp, "Name: ") stays in the text as it was written.
      b.text(block.text.slice(0, block.text.length - turn.text.length));
      const unit: TextUnit = speaker
        ? { kind: "turn", text: turn.text.trim(), speaker, timestamp: turn.timestamp, fields, locator }
        : { kind: "paragraph", text: turn.text.trim(), timestamp: turn.timestamp, fields, locator };
      b.unit(unit);
      b.text(turn.text.slice(turn.text.trimEnd().length));
      continue;
    }
    b.unit({ kind: "paragraph", text: block.text.trim(), fields, locator });
  }
  return b.build(engine, { transcript: Boolean(turns), pages: extra.pages });
}
