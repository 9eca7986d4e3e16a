/**
 * Step 1 of synthesis: turn a source's text units into mentions, the atoms that get embedded, clustered and quoted.
 *
 * A mention is a verbatim span of one unit: the whole unit when it is short (a survey answer, a review, a short
 * comment) and holds no question followed by an answer, otherwise one sentence of it (wink-nlp sentence boundaries, also cut at hard line breaks such as
 * bullets and blank lines); very short sentences are joined to the next one on the same line so a quote keeps
 * its context. Leading list/heading/quote markers are trimmed off the span. Because every unit.text occurs in the
 * source's extracted_text (core/extract/types.ts), every mention does too.
 *
 * Unit-level filters (pure functions of the unit, so vectors computed at ingestion stay aligned):
 * - headings (Markdown "#", all-bold lines), tables, code fences and text that is mostly non-letters;
 * - too short: fewer than 2 words for survey responses (the question gives them context), fewer than 4 words
 *   (or under 20 characters) for everything else; and too little content: no content word (not a stop word, not
 *   a filler such as "yeah", "okay", "gonna") in a response, fewer than 2 in anything else (transcript chatter);
 * - non-informative answers ("n/a", "none", "nothing", "no comment", "thanks", ...) and form-template lines
 *   ("Project name (required)", "(No response)");
 * - interviewer prompts: questions in the second person with no first person ("What do you like about the app?").
 * Source- and corpus-level filters (interviewer speakers, multiple-choice survey columns, template boilerplate,
 * duplicates) are applied in `filterMentions`, after embedding.
 */
import type { TextUnit } from "../../extract/types";
import { analyze, type Analysis, type Token } from "./nlp";

/** A mention's span inside its unit's text. */
export interface MentionSpan {
  /** Character offsets in unit.text, [start, end). */
  start: number;
  end: number;
  /** unit.text.slice(start, end) */
  text: string;
  /** Tokens of the span (from the unit's analysis), for cue and keyphrase extraction. */
  tokens: Token[];
  /** Noun-phrase candidates of the span, as token index ranges into `tokens`. */
  phrases: { first: number; last: number }[];
}

/** Units up to this many characters are one mention. */
export const SHORT_UNIT_CHARS = 320;
/** Sentences shorter than this are joined to the following sentence on the same line. */
const MIN_SENTENCE_CHARS = 40;

const NON_INFORMATIVE = new Set(
  [
    "n/a", "na", "n a", "none", "nothing", "no", "yes", "nope", "not sure", "idk", "i don't know", "dont know",
    "don't know", "no idea", "no comment", "no comments", "nothing else", "not applicable", "nil", "null", "ok",
    "okay", "thanks", "thank you", "thanks!", "none so far", "nothing really", "nothing comes to mind", "all good",
    "nothing at the moment", "not really", "no opinion", "none at this time", "nothing to add", "maybe", "same",
    "see above", "as above", "other", "test", "no thanks", "none that i can think of", "not at the moment",
  ].map((s) => s.replace(/[^a-z0-9 ]/g, "")),
);

/** Conversational fillers that carry no content (spoken transcripts). */
const FILLERS = new Set([
  "yeah", "yes", "okay", "ok", "oh", "um", "uh", "hmm", "mhm", "like", "know", "mean", "gonna", "wanna", "gotta",
  "right", "well", "just", "really", "thing", "things", "stuff", "got", "get", "kinda", "sorta", "actually", "basically",
  "guess", "think", "say", "said", "see", "look", "go", "going", "come", "let", "sure", "alright", "wow", "huh", "anyway",
]);

const FIRST_PERSON = new Set(["i", "me", "my", "mine", "we", "our", "us", "i'm", "i've", "i'd"]);
const SECOND_PERSON = new Set(["you", "your", "yours", "you're", "you've", "you'd"]);

/** Lower-case, letters/digits/spaces only, single spaces: the form used to compare mention texts. */
export function normalizeText(s: string): string {
  return s
    .toLowerCase()
    .replace(/['’]/g, "")
    .replace(/[^\p{L}\p{N} ]+/gu, " ")
    .replace(/\s+/g, " ")
    .trim();
}

/** Leading list, heading, quote and emphasis markers plus whitespace ("- **", "## ", "> ", "1. ", "* "). */
const LEADING_MARKERS = /^(?:\s|[-*+•>#]|\d{1,3}[.)](?=\s))+/u;

function trimSpan(text: string, start: number, end: number): [number, number] {
  const lead = LEADING_MARKERS.exec(text.slice(start, end));
  if (lead) start += lead[0].length;
  while (end > start && /\s/.test(text[end - 1])) end--;
  return [start, end];
}

/** Is a candidate span worth embedding? See the file comment for the rules. */
export function isInformative(text: string, tokens: Token[], kind: TextUnit["kind"]): boolean {
  const t = text.trim();
  if (!t) return false;
  if (/^(\||```|#)/.test(t)) return false;
  // A line that is all bold ("**Warm Up Questions - 5 min**") is a heading.
  if (/^\*\*[^*]+\*\*:?$/.test(t) || /^[^*]*\*\*$/.test(t)) return false;
  const letters = (t.match(/\p{L}/gu) ?? []).length;
  if (letters < 2 || letters / t.length < 0.5) return false;
  if (NON_INFORMATIVE.has(normalizeText(t))) return false;
  // Form templates: field labels and empty answers ("Project name (required)", "(No response)").
  if (/\((?:required|optional|no response|if applicable)\b[^)]*\)/i.test(t)) return false;
  const words = tokens.filter((k) => k.type === "word" && /\p{L}{2,}/u.test(k.value));
  const content = words.filter((k) => !k.stop && k.value.length >= 3 && !FILLERS.has(k.normal) && !FILLERS.has(k.lemma));
  if (kind === "response") {
    if (words.length < 2 || content.length < 1) return false;
  } else if (words.length < 4 || t.length < 20 || content.length < 2) {
    return false;
  }
  if (t.endsWith("?")) {
    const normals = new Set(tokens.map((k) => k.normal));
    const second = [...SECOND_PERSON].some((w) => normals.has(w));
    const first = [...FIRST_PERSON].some((w) => normals.has(w));
    if (second && !first) return false;
  }
  return true;
}

function spanOf(a: Analysis, start: number, end: number): MentionSpan {
  const tokens: Token[] = [];
  let firstIdx = -1;
  for (let i = 0; i < a.tokens.length; i++) {
    const k = a.tokens[i];
    if (k.start >= start && k.end <= end && k.end > k.start) {
      if (firstIdx < 0) firstIdx = i;
      tokens.push(k);
    }
  }
  const phrases: MentionSpan["phrases"] = [];
  if (firstIdx >= 0) {
    const lastIdx = firstIdx + tokens.length - 1;
    for (const p of a.phrases) {
      if (p.first >= firstIdx && p.last <= lastIdx) phrases.push({ first: p.first - firstIdx, last: p.last - firstIdx });
    }
  }
  return { start, end, text: a.text.slice(start, end), tokens, phrases };
}

/** Positions where a line break is a hard boundary: a blank line, or a line starting with a list/heading marker. */
function hardBreaks(text: string): number[] {
  const out: number[] = [];
  const re = /\n(?=\s*\n|\s*(?:[-*+•>#|]|\d{1,3}[.)]\s))/g;
  for (let m = re.exec(text); m; m = re.exec(text)) out.push(m.index);
  return out;
}

/**
 * The mentions of one unit, in text order. Deterministic: depends only on `unit.kind` and `unit.text`.
 * @param analysis wink analysis of unit.text, when the caller already has it
 */
export function unitMentions(unit: TextUnit, analysis?: Analysis): MentionSpan[] {
  const text = unit.text ?? "";
  if (!text.trim()) return [];
  const a = analysis ?? analyze(text);
  const keep = (s: number, e: number, out: MentionSpan[]) => {
    const [ts, te] = trimSpan(text, s, e);
    if (te <= ts) return;
    const span = spanOf(a, ts, te);
    if (isInformative(span.text, span.tokens, unit.kind)) out.push(span);
  };
  const out: MentionSpan[] = [];
  // A short unit is one mention, unless a question inside it is followed by more text (notes that put the
  // interviewer's question and the answer in one paragraph).
  const innerQuestion = /\?\s+\S/.test(text.trim());
  if ((text.length <= SHORT_UNIT_CHARS && hardBreaks(text).length === 0 && !innerQuestion) || !a.aligned || a.sentences.length === 0) {
    keep(0, text.length, out);
    return out;
  }
  // Sentence pieces, cut again at hard breaks.
  const breaks = hardBreaks(text);
  const pieces: [number, number][] = [];
  for (const s of a.sentences) {
    let from = s.start;
    for (const b of breaks) {
      if (b > from && b < s.end) {
        pieces.push([from, b]);
        from = b + 1;
      }
    }
    pieces.push([from, s.end]);
  }
  // Join a short piece to the next when no line break separates them (never a question: in notes it is the
  // interviewer's prompt and what follows is the answer).
  const joined: [number, number][] = [];
  for (const p of pieces) {
    const prev = joined[joined.length - 1];
    const prevText = prev ? text.slice(prev[0], prev[1]).trim() : "";
    if (prev && prev[1] - prev[0] < MIN_SENTENCE_CHARS && !prevText.endsWith("?") && !text.slice(prev[1], p[0]).includes("\n")) prev[1] = p[1];
    else joined.push([p[0], p[1]]);
  }
  for (const [s, e] of joined) keep(s, e, out);
  return out;
}
