/**
 * What text extraction produces for one research source (spec 01 Research source: extracted_text, transcript).
 *
 * Invariant, relied on by synthesis grounding: every `unit.text` occurs verbatim in `extracted_text`, so a quote
 * taken from a unit can always be found in the source's extracted text.
 */
export type UnitKind = "paragraph" | "section" | "response" | "turn" | "comment" | "page" | "row";

export interface TextUnit {
  kind: UnitKind;
  /** The unit's own words, verbatim as they appear in extracted_text. */
  text: string;
  /** Who said or wrote it: transcript speaker, ticket commenter, survey respondent id. */
  speaker?: string;
  /** Where in a recording (HH:MM:SS.mmm) a transcript turn starts. */
  timestamp?: string;
  /** Survey question header for a response; other structured context (e.g. ticket title). */
  fields?: Record<string, string>;
  /** Human-readable position: "page 3", "row 17", "issue #123 comment 2". */
  locator?: string;
}

export interface Extraction {
  extracted_text: string;
  /** Speaker-labelled transcript for audio, video and subtitle files. */
  transcript?: string;
  units: TextUnit[];
  /** Page count for paged documents (PDF). */
  pages?: number;
  /** Which engine produced it: "unpdf", "tesseract", "textract", "pocketsphinx", "transcribe", "csv", ... */
  engine: string;
}
