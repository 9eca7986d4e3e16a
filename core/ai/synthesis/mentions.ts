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
 * - interviewer prompts: questions in the second person with no first person ("What do you like about the app?");
 * - in documents (interview notes): the structure of notes (notes.ts) — quoted speech is its own mention, prompts,
 *   the guide's script, session metadata and background (demographics, service history) are dropped, and each
 *   mention says whose words it is (`origin`) and which question it answers.
 * Source- and corpus-level filters (interviewer speakers, multiple-choice survey columns, template boilerplate,
 * duplicates) are applied in `filterMentions`, after embedding.
 */
import type { TextUnit } from "../../extract/types";
import { analyze, type Analysis, type Token } from "./nlp";
import { isInterviewerLine, isProfile, isSessionMetadata, isStudyMethod, LEADING_TIMESTAMP, quotedSpeech, type Origin } from "./notes";

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
  /**
   * Whose words, as far as the unit's structure tells (notes.ts): `speech` — quoted or blockquoted words, a
   * transcript turn; `answer` — what follows the interviewer's question in a line of notes; `note` — a
   * note-taker's or author's line (paraphrase). Absent for survey answers and comments (the respondent's own
   * writing). Quotes prefer speech and answers over notes.
   */
  origin?: Origin;
  /** The interviewer's question this span answers, when the unit holds both ("How far is it? It’s far for me…"). */
  question?: string;
  /**
   * The researchers' account of their method (a report's limitations, "Participants were asked to …", notes.ts
   * `isStudyMethod`): clustered with the rest, so the themes around it form as they would, but never evidence —
   * never a quote, a title or a count, and a theme made mostly of it is dropped.
   */
  method?: boolean;
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
export const FILLERS = new Set([
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
  // Markers, then a clock time of notes ("- [00:12:31] …"), then markers again.
  for (const re of [LEADING_MARKERS, LEADING_TIMESTAMP, LEADING_MARKERS]) {
    const lead = re.exec(text.slice(start, end));
    if (lead) start += lead[0].length;
  }
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

/** Unit kinds that are documents (notes, findings, reports) rather than someone's own turn or answer. */
const DOCUMENT_KINDS = new Set<TextUnit["kind"]>(["paragraph", "section", "row", "page"]);

/** The voice a unit's text is in before looking inside it (see `MentionSpan.origin`). */
function unitOrigin(unit: TextUnit): Origin | undefined {
  if (unit.kind === "turn" || unit.fields?.form === "quote") return "speech";
  return DOCUMENT_KINDS.has(unit.kind) ? "note" : undefined;
}

/** `pieces` with the ranges `cut` taken out of them (each piece split around every range it overlaps). */
function subtract(pieces: [number, number][], cut: [number, number][]): [number, number][] {
  const out: [number, number][] = [];
  for (const [s, e] of pieces) {
    let from = s;
    for (const [cs, ce] of cut) {
      // The quotation marks around a range go with it.
      const [a, b] = [cs - 1, ce + 1];
      if (b <= from || a >= e) continue;
      if (a > from) out.push([from, a]);
      from = Math.max(from, b);
    }
    if (from < e) out.push([from, e]);
  }
  return out;
}

/** Sentence pieces of text[from, to), cut again at hard breaks, short ones joined to the next (see file comment). */
function sentencePieces(text: string, a: Analysis, from: number, to: number): [number, number][] {
  const breaks = hardBreaks(text);
  const pieces: [number, number][] = [];
  for (const s of a.sentences) {
    let start = Math.max(s.start, from);
    const end = Math.min(s.end, to);
    if (end <= start) continue;
    for (const b of breaks) {
      if (b > start && b < end) {
        pieces.push([start, b]);
        start = b + 1;
      }
    }
    pieces.push([start, end]);
  }
  // Join a short piece to the next when no line break separates them (never to or from a question: in notes it is
  // the interviewer's prompt, the text before it ends the previous answer and the text after it is the answer).
  const joined: [number, number][] = [];
  for (const p of pieces) {
    const prev = joined[joined.length - 1];
    const prevText = prev ? text.slice(prev[0], prev[1]).trim() : "";
    const question = prevText.endsWith("?") || text.slice(p[0], p[1]).trim().endsWith("?");
    if (prev && prev[1] - prev[0] < MIN_SENTENCE_CHARS && !question && !text.slice(prev[1], p[0]).includes("\n")) prev[1] = p[1];
    else joined.push([p[0], p[1]]);
  }
  return joined;
}

/**
 * The mentions of one unit, in text order. Deterministic: depends only on the unit (kind, text, fields).
 *
 * In documents (notes, findings), quoted speech of 4+ words is a mention of its own (`speech`, quotation marks
 * excluded) and the text around it is the note-taker's (`note`); a question put to the participant, the guide's
 * script, session metadata and background (demographics, service history) are dropped (notes.ts); what follows a
 * question in the same unit is its `answer` and carries the question.
 * @param analysis wink analysis of unit.text, when the caller already has it
 */
export function unitMentions(unit: TextUnit, analysis?: Analysis): MentionSpan[] {
  const text = unit.text ?? "";
  if (!text.trim()) return [];
  const a = analysis ?? analyze(text);
  const doc = DOCUMENT_KINDS.has(unit.kind);
  const base = unitOrigin(unit);
  const heading = unit.fields?.heading;
  const quotes = doc && a.aligned ? quotedSpeech(text) : [];
  const out: MentionSpan[] = [];
  const keep = (s: number, e: number, origin: Origin | undefined, question?: string) => {
    const [ts, te] = trimSpan(text, s, e);
    if (te <= ts) return;
    const span = spanOf(a, ts, te);
    if (!isInformative(span.text, span.tokens, unit.kind)) return;
    if (doc && isSessionMetadata(span.text)) return;
    // How the research was run (method, limitations, the study's procedure) is the researchers', not evidence.
    if (doc && isStudyMethod(span.text, heading)) span.method = true;
    // A survey answer or a review is the respondent's own writing: only its question can make it background.
    if (isProfile(span.text, question ?? unit.fields?.question, heading, doc || unit.kind === "turn")) return;
    if (origin) span.origin = origin;
    if (question) span.question = question;
    out.push(span);
  };
  // A short unit is one mention, unless a question inside it is followed by more text (notes that put the
  // interviewer's question and the answer in one paragraph) or it quotes someone.
  const innerQuestion = /\?\s+\S/.test(text.trim());
  if (((text.length <= SHORT_UNIT_CHARS && hardBreaks(text).length === 0 && !innerQuestion) || !a.aligned || a.sentences.length === 0) && !quotes.length) {
    const whole = text.trim();
    if (doc && isInterviewerLine(whole.replace(LEADING_MARKERS, ""), false)) return out;
    keep(0, text.length, base);
    return out;
  }
  const pieces: { range: [number, number]; origin: Origin | undefined }[] = [
    ...subtract(sentencePieces(text, a, 0, text.length), quotes).map((range) => ({ range, origin: base })),
    ...quotes.flatMap(([s, e]) =>
      (e - s <= SHORT_UNIT_CHARS ? [[s, e] as [number, number]] : sentencePieces(text, a, s, e)).map((range) => ({ range, origin: "speech" as const })),
    ),
  ].sort((p, q) => p.range[0] - q.range[0]);
  let question: string | undefined;
  pieces.forEach(({ range: [s, e], origin }) => {
    const piece = text.slice(s, e).trim();
    if (doc && origin !== "speech") {
      const followed = /[\p{L}\p{N}]/u.test(text.slice(e));
      const line = piece.replace(LEADING_MARKERS, "").replace(LEADING_TIMESTAMP, "");
      if (isInterviewerLine(line, followed)) {
        if (line.endsWith("?")) question = line;
        return;
      }
      if (question && origin === "note") origin = "answer";
    }
    keep(s, e, origin, doc ? question : undefined);
  });
  return out;
}
