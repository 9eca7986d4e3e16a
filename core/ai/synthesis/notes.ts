/**
 * The structure of interview notes, for step 1 of synthesis (mentions.ts): whose words a line is.
 *
 * Notes mix four voices in one file: the conversation guide and the interviewer's questions, session metadata
 * (date, participant code, who took the notes), the participant's background (age, where they live, service
 * history) and what the participant said — quoted or blockquoted speech, answers written after the question, and
 * the note-taker's paraphrase in bullets. Only the participant's words and the note-taker's paraphrase of them are
 * evidence; questions, the guide's script, metadata and background are never a theme nor a voice.
 *
 * Everything here is a pure function of a text (and, for background, the question and heading it sits under), so
 * mention spans stay a pure function of their unit and the vectors computed at ingestion stay aligned.
 */

/** Whose words a mention is, as far as the structure of its unit tells (see `MentionSpan.origin`). */
export type Origin = "speech" | "answer" | "note";

/** Quoted speech shorter than this many words is a term or a label ("the “Claims” tab"), not someone's words. */
const MIN_QUOTE_WORDS = 4;

/**
 * Ranges of quoted speech inside a text, without the quotation marks: “…” pairs and "…" pairs of at least
 * `MIN_QUOTE_WORDS` words. Straight quotes pair in order; an odd one out is ignored.
 * @returns [start, end) character ranges, in text order, not overlapping
 */
export function quotedSpeech(text: string): [number, number][] {
  const out: [number, number][] = [];
  const re = /“([^“”]+)”|"([^"]+)"/g;
  for (let m = re.exec(text); m; m = re.exec(text)) {
    const inner = m[1] ?? m[2];
    if (inner.trim().split(/\s+/).filter((w) => /\p{L}/u.test(w)).length < MIN_QUOTE_WORDS) continue;
    const start = m.index + 1;
    out.push([start, start + inner.length]);
  }
  return out;
}

const SECOND = /\b(you|your|yours|you're|you've|you'd|you'll|yourself)\b/i;
const FIRST_SINGULAR = /\b(i|i'm|i've|i'd|i'll|me|my|mine|myself)\b/i;
const FIRST_PLURAL = /\b(we|we're|we've|we'll|us|our)\b/i;
/** Words of a moderator's script: instructions, consent, session logistics. */
const SCRIPT_CUE = /\b(please|feel free|skip|go ahead|think aloud|think out loud|recording|session|today|let's|let me know|wrap up|we('re| are) going to|we will|we'll)\b/i;

/** Openings of a prompt that is not phrased as a question ("Tell me a little bit about yourself."). */
const PROMPT_OPENING =
  /^(?:(?:so|and|now|okay|ok|next|first|finally|lastly),?\s+)?(?:tell (?:me|us)|show (?:me|us)|walk (?:me|us) through|talk (?:me|us) through|describe|explain|imagine|think about|please (?:tell|show|describe|explain|share|walk|go)|can you|could you|would you|will you)\b/i;

const apostrophes = (s: string) => s.replace(/’/g, "'");

/**
 * Is this sentence of notes or a document the interviewer's (a question put to the participant, or the guide's
 * script)? Not used for transcript turns (a participant's own questions stay) nor survey answers.
 * - A question addressed to the participant (second person), even with "I" in it ("Are you comfortable if I
 *   record…?"); a question without any person is a prompt when an answer follows it in the same unit
 *   (`followed`): "Last time used app? Just used it last week".
 * - A prompt opening ("Tell me a little bit about yourself.", "Walk me through…", "Imagine…").
 * - A statement addressed to the participant with the moderator's script cues and no first person singular
 *   ("Feel free to answer the questions you’re comfortable with", "Now we’re going to talk about your experience").
 */
export function isInterviewerLine(sentence: string, followed: boolean): boolean {
  const s = apostrophes(sentence.trim());
  if (PROMPT_OPENING.test(s)) return true;
  if (s.endsWith("?")) {
    if (SECOND.test(s)) return true;
    return followed && !FIRST_SINGULAR.test(s);
  }
  return SECOND.test(s) && !FIRST_SINGULAR.test(s) && (FIRST_PLURAL.test(s) || SCRIPT_CUE.test(s));
}

/** Labels of session metadata lines ("Date: …", "Notetaker: …", "Age: 54"). */
const META_LABEL =
  /^(date|day|time|duration|length|session(?: \w+)?|study|project|round|recording|zoom(?: link)?|link|timestamps?|start(?:ed)?|end(?:ed)?|location|city|state|country|region|age|gender|sex|pronouns|race|ethnicity|branch|rank|era|service(?: \w+){0,2}|years of service|disability(?: rating)?|rating|device|devices|phone|platform|browser|os|operating system|assistive tech(?:nology)?|occupation|job|employment|role|education|income|household|family|marital status|demographics?|background|profile)\s*(?:\([^)]*\))?(?:\s*[:=]\s*|\s+[–-]\s+)/i;
/** People of a session who are not the participant: their lines are never the participant's words. */
const STAFF_LABEL = /^(interviewer|moderator|facilitator|researcher|note ?-?taker|notes? by|observer|host|q)\s*(?:\([^)]*\))?\s*:\s*/i;
/** Participant-code labels: "Participant: P3, 54, Army" is metadata; "Participant: I never use it" is speech. */
const PARTICIPANT_LABEL = /^(participant|respondent|user|interviewee|p\d{1,3})\s*(?:\([^)]*\))?(?:\s*[:=]\s*|\s+[–-]\s+)/i;

/** A line of session metadata or a line of the session's staff (see the label lists); false for anything else. */
export function isSessionMetadata(line: string): boolean {
  const t = apostrophes(line.trim());
  if (STAFF_LABEL.test(t)) return true;
  const words = t.split(/\s+/).length;
  const meta = META_LABEL.exec(t);
  if (meta) return words <= 25;
  const p = PARTICIPANT_LABEL.exec(t);
  if (p) return words <= 10 && !FIRST_SINGULAR.test(t.slice(p[0].length));
  // A date or clock time on its own ("July 2023", "Tuesday, 4 May 2023, 10:00 AM").
  return /^(?:(?:mon|tue|wed|thu|fri|sat|sun)\w*,?\s+)?(?:\d{1,2}\s+)?(?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)\w*\.?\s+(?:\d{1,2},?\s+)?\d{4}\b[\s\d:apm.,]*$/i.test(t);
}

/** Headings of sections about who the participant is, not what they experience. */
const PROFILE_HEADING =
  /\b(demographics?|participant (?:background|profile|info(?:rmation)?|details|summary|overview)|about the participant|background|profile|screener|service history|bio(?:graphy)?)\b/i;

/** Questions about who the participant is. */
const PROFILE_QUESTION = new RegExp(
  [
    String.raw`tell (?:me|us) (?:a (?:little )?(?:bit )?)?about yourself`,
    String.raw`introduce yourself`,
    String.raw`where (?:are you from|do you live|did you grow up|are you based|do you work)`,
    String.raw`how old`,
    String.raw`\byour (?:age|gender|job|occupation|role|education|background|rank|branch)\b`,
    String.raw`how long (?:have you been|were you|did you (?:serve|stay)) (?:out of|in|with) the (?:military|service|army|navy|air force|marines?|marine corps|coast guard|guard|reserves?)`,
    String.raw`how long (?:did|have) you serve`,
    String.raw`which branch|what branch|when did you (?:serve|separate|retire|get out|leave the)`,
    String.raw`(?:type|kind|model|make) of (?:phone|device|computer|tablet)`,
    String.raw`what (?:phone|device|computer)`,
    String.raw`disability rating|service[- ]connect`,
    String.raw`what do you do for (?:a living|work)|where do you work|are you (?:working|employed|retired|married)`,
    String.raw`how many (?:kids|children|people (?:live|in your household))`,
  ].join("|"),
  "i",
);

/** Statements of who someone is: age, where they live, service history, occupation, family. */
const PROFILE_STATEMENT = new RegExp(
  [
    String.raw`\b\d{1,3}[- ]?(?:years?[- ]old|y/?o)\b`,
    String.raw`\bi(?:'m| am) (?:a |an )?(?:\d{1,3}\b|retired|disabled|(?:army|navy|air force|marine|coast guard|national guard|reserve)s?\b|(?:combat )?veteran\b)`,
    String.raw`\b(?:army|navy|air force|marine corps|marines|coast guard|national guard|reserves?) (?:veteran|vet|retiree)\b`,
    String.raw`\bveteran of\b`,
    String.raw`\b(?:served|deployed|enlisted|retired) (?:in|from|with|to|for|as)\b`,
    String.raw`\b(?:years|yrs) (?:in|of) (?:the )?(?:military|army|navy|air force|marines|service|active duty)\b`,
    String.raw`\b(?:out of|left|separated from|got out of) the (?:military|service|army|navy|air force|marines)\b`,
    String.raw`\bservice[- ]connected\b`,
    String.raw`\bdisability rating\b`,
    String.raw`\b\d{1,3} ?% (?:disabled|disability|rating|rated|service)\b`,
    String.raw`\b(?:i|we) (?:live|lived|grew up|was born|were born)\b`,
    // "I am from Ohio", not "how far I am from Madison".
    String.raw`(?<!\b(?:far|away|miles|hours?|minutes|distance|close|closer|near)\s)\bi(?:'m| am) (?:originally )?from\b`,
    String.raw`\bi work (?:as|at|for|in)\b`,
    String.raw`\bi(?:'m| am) (?:married|single|divorced|widowed)\b`,
  ].join("|"),
  "i",
);

/** Background statements longer than this many words carry more than background: they stay. */
const PROFILE_MAX_WORDS = 16;
/** A background statement that also speaks of the product or gives a reason is evidence ("I'm a veteran but the app…"). */
const BEYOND_PROFILE = /\b(?:but|because|although|though|so that|app|apps|website|site|portal|log ?in|login|sign ?in|screen|feature|features)\b/i;

/**
 * Is this span about who the participant is rather than what they experience (demographics, service history,
 * where they live, their device)? True when it sits under a background heading, answers a background question,
 * or is a short background statement ("I am an Army Veteran and live in Wisconsin.") that says nothing of the
 * product and gives no reason.
 * @param question the interviewer's question it answers, when known
 * @param heading the heading it sits under, when known
 * @param statements whether a short background statement counts (not for survey answers and reviews, which are
 *   the respondent's own writing: "I'm a veteran" there introduces an opinion)
 */
export function isProfile(text: string, question?: string, heading?: string, statements = true): boolean {
  if (heading && PROFILE_HEADING.test(heading)) return true;
  if (question && PROFILE_QUESTION.test(apostrophes(question))) return true;
  if (!statements) return false;
  const t = apostrophes(text);
  return t.split(/\s+/).length <= PROFILE_MAX_WORDS && PROFILE_STATEMENT.test(t) && !BEYOND_PROFILE.test(t);
}

/**
 * Headings of a report's sections about how the research was run, not what it found: method, study design, what
 * was tested, limitations, scope, recruitment, the team, funding, acknowledgements, future work.
 */
const METHOD_HEADING =
  /^(?:#+\s*)?(?:(?:research |study |test(?:ing)? )?(?:method(?:s|ology)?|design|plan|protocol|procedure|setup|set-up)|what (?:was|we) tested|test(?:ing)? (?:environment|script|setup)|limitations?|scope|caveats?|recruit(?:ment|ing)|sample|team|credits|funding|acknowledge?ments?|about (?:this|the) (?:study|research|report)|(?:potential )?future work|next steps for (?:this|the) (?:study|research)|appendix\b.*)\s*:?$/i;

/**
 * Sentences describing the study's procedure ("Participants were first asked to complete a set of tasks", "These
 * results are from user interviews conducted in May 2023", "This study is not an attempt to …"): the researchers'
 * account of the method, never evidence. Third person only: a participant's "we tested it in production" is evidence.
 */
const PROCEDURE_STATEMENT =
  /^(?:it is (?:important|worth) (?:to note|noting|noting again) that )?(?:(?:a|the|our|this) [\w -]{0,40}?\b(?:script|guide|protocol)\b[\w ]{0,30}?\b(?:asked|told|instructed|required|was (?:chosen|used|written|designed|adapted))\b|(?:the|these|our|this) (?:(?:results|findings|sessions?|interviews?|study|test(?:ing)?|research|script)\b[^.]{0,80}\b(?:were|was|are|is)\s+(?:(?:first|then|also|not)\s+)*(?:conducted|run|held|from|based on|recorded|an attempt|designed|limited)\b)|(?:participants|respondents|interviewees) were (?:(?:first|then|also)\s+)*(?:asked|given|shown|recruited|invited|selected|compensated|paid|told)\b|the (?:researchers?|facilitators?|moderators?) (?:(?:first|then|also)\s+)*(?:recruited|conducted|asked|interviewed|selected|recorded)\b)/i;

/**
 * Whether a document's passage is the researchers' account of their method (see `METHOD_HEADING` and
 * `PROCEDURE_STATEMENT`) rather than what participants said or did: never evidence (issue #11, like session
 * metadata).
 * @param text the passage
 * @param heading the nearest heading above it, if any
 */
export function isStudyMethod(text: string, heading?: string): boolean {
  if (heading && METHOD_HEADING.test(heading.trim())) return true;
  const t = apostrophes(text.trim()).replace(/^[-*>\s]+/, "").replace(/^\*\*|\*\*/g, "");
  // Someone speaking for themselves ("A script I wrote was used in production") is a participant, not the method.
  return !FIRST_SINGULAR.test(t) && PROCEDURE_STATEMENT.test(t);
}

/** A clock time at the start of a line of notes ("[00:12:31]", "12:31 -", "(1:02:03)"). */
export const LEADING_TIMESTAMP = /^[[(]?(?:\d{1,2}:)?\d{1,2}:\d{2}(?:[.,]\d{1,3})?[\])]?\s*[-–—:]?\s*/;

/** Words of emphasis: intensifiers, absolutes and strong feeling ("I hate…", "every single time", "so easy"). */
const EMPHASIS =
  /!|\b(?:really|so (?:much|easy|hard|bad|good|slow|helpful|frustrating|annoying)|very|extremely|absolutely|totally|completely|always|never|every (?:single )?time|constantly|hate|hated|love|loved|awful|terrible|horrible|worst|best|amazing|frustrat\w*|annoy\w*|stress\w*|impossible|nightmare|biggest|most important|the main)\b/i;

/** Whether a participant says this with emphasis (see `EMPHASIS`); a one-voice theme said so needs fewer passages. */
export function isEmphatic(text: string): boolean {
  return EMPHASIS.test(text);
}
