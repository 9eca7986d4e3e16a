/**
 * Pre-flight sizing of a request (issue #21; spec 02 `harness_complexity`): the prompt is cut into clauses, each
 * clause is given the workflow it asks for by its cue words, and the number and kinds of clauses decide the level.
 * Deterministic rules over the text (the same prompt always gets the same answer), honest about what they are: they
 * read the request's structure ("…, then draft a PRD"), not its meaning.
 *
 * - simple: one clause of one workflow;
 * - medium: two clauses of one workflow (two questions one run answers), or one long clause (over 300 characters);
 *   also the fixed pipeline of the stream variant;
 * - complex: two or more clauses of different workflows, or three or more clauses: it becomes a mission
 *   (./plan.ts, ./mission.ts) of one subtask per clause.
 *
 * Only clauses that ask for something count: a question, an imperative, a request phrasing ("can you", "I'd like"),
 * or a workflow's cue. A first-person statement ("I'm the PM of Acme.", "We use Mixpanel for analytics.") tells the
 * copilot who is asking; it is kept as `context`, not made a subtask (an introduction plus one question is simple).
 */

/** The workflows a subtask can be (spec 02 mission_proposed `workflow_type`). */
export type WorkflowType = "research" | "synthesis" | "recommendation" | "drafting";

export type ComplexityLevel = "simple" | "medium" | "complex";

/** One clause of the request: what a subtask will be asked. */
export interface Clause {
  text: string;
  workflow_type: WorkflowType;
  /** The user sequenced this clause after the previous one ("then", "after that", "finally"). */
  sequenced: boolean;
}

/** The `harness_complexity` payload, with the clauses the planner works from. */
export interface Complexity {
  level: ComplexityLevel;
  reason: string;
  /** Non-zero only for complex requests (spec 02). */
  subtask_count: number;
  clauses: Clause[];
  /** Statements that ask for nothing (who the user is, what they use): context for every subtask, not one of them. */
  context: string[];
}

/** At most this many subtasks in a mission; further clauses join the last one. */
export const MAX_SUBTASKS = 5;
/** One clause longer than this is medium. */
const LONG_CLAUSE_CHARS = 300;

/** Cue words per workflow, most specific first: a clause takes the first workflow whose cue it has, else research. */
const CUES: [WorkflowType, RegExp][] = [
  ["drafting", /\b(draft|write|prepare|create|produce)\b[^.?!]*\b(prd|spec|specification|memo|user stor(y|ies)|roadmap update|release notes|document|one-pager)\b|\bprd\b/i],
  ["synthesis", /\b(synthesi[sz]e|synthesis|cluster|extract (the )?(themes|insights|findings)|find (the )?(themes|patterns)|(analy[sz]e|process) (the |our |all )?(interviews?|sources?|research|surveys?|reviews?|tickets?|transcripts?))\b/i],
  ["recommendation", /\b(recommend\w*|prioriti[sz]e\w*|what should we (build|do|fix|ship)|next steps|generate recommendations)\b/i],
];

/** A clause that asks for nothing (a greeting, thanks) is not a subtask. */
const FILLER = /^(hi|hello|hey|thanks?( you)?|please|ok(ay)?|great|cool)[\s,.!]*$/i;
/** Words that sequence a clause after the one before it. */
const SEQUENCE = /^(?:and\s+)?(?:then|after that|afterwards|next|finally|once (?:that'?s|it'?s|this is) done)\b[\s,]*/i;
/** Verbs that start a new request inside a sentence ("…, and draft a PRD"). */
const ACTION_START = "(?:draft|write|prepare|create|produce|recommend|prioriti[sz]e|synthesi[sz]e|analy[sz]e|generate|list|show|find|summari[sz]e|tell|give|what|which|how|who|why)";

/** A first-person statement: it opens with the speaker or their team ("I'm…", "We use…", "Our app…"). */
const FIRST_PERSON = /^(?:i|i'm|i’m|im|i am|i've|i’ve|we|we're|we’re|we've|we’ve|our|my|us)\b/i;
/** First-person phrasings that are still requests ("I'd like…", "we need to know…", "I wonder…"). */
const REQUEST_PHRASE = /\b(?:please|can you|could you|would you|will you|want (?:you|to)|would like|['’]d like|need (?:you|to|a|an|the)|wonder|curious|looking for|trying to|have to|help (?:me|us)|tell (?:me|us)|show (?:me|us)|give (?:me|us)|let(?:'|’)?s)\b/i;

/**
 * A clause that asks for nothing: a first-person statement that is not a question, has no request phrasing and no
 * workflow cue ("I'm the PM of Acme.", "We use Mixpanel for analytics."). Other statements ("Users hate the login")
 * are still read as research questions: without the first person, the rules cannot tell a claim from a topic.
 */
export function isContext(text: string): boolean {
  const t = text.trim();
  return FIRST_PERSON.test(t) && !/\?\s*$/.test(t) && !REQUEST_PHRASE.test(t) && workflowOf(t) === "research";
}

/**
 * The part of a prompt that asks for something: its clauses without the first-person statements ({@link isContext}),
 * joined; the whole prompt when every clause is a statement (there is nothing else to go on).
 */
export function requestOf(prompt: string): string {
  const { clauses } = split(prompt);
  return clauses.length ? clauses.map((c) => c.text).join(" ") : prompt;
}

/** The request's clauses: sentences, lines and list items, split again at "then"-words and at ", and <verb>". */
export function clausesOf(prompt: string): Clause[] {
  return split(prompt).clauses;
}

/** Clauses that ask for something, and the statements of context, in the prompt's order. */
function split(prompt: string): { clauses: Clause[]; context: string[] } {
  const pieces = prompt
    .split(/\n+|(?<=[.?!;])\s+/)
    .map((s) => s.replace(/^\s*(?:\d+[.)]|[-*•])\s+/, "").trim())
    .filter(Boolean);
  const out: Clause[] = [];
  const context: string[] = [];
  for (const piece of pieces) {
    const parts = piece.split(new RegExp(`,?\\s+(?=(?:and\\s+)?(?:then|after that|afterwards|finally)\\b)|,?\\s+and\\s+(?=${ACTION_START}\\b)|;\\s*`, "i"));
    for (const part of parts) {
      const sequenced = SEQUENCE.test(part.trim());
      const text = part.trim().replace(SEQUENCE, "").replace(/^and\s+/i, "").trim();
      if (!text || FILLER.test(text) || text.split(/\s+/).length < 2) continue;
      if (isContext(text)) {
        context.push(text);
        continue;
      }
      out.push({ text: text.charAt(0).toUpperCase() + text.slice(1), workflow_type: workflowOf(text), sequenced: sequenced && out.length > 0 });
    }
  }
  if (out.length > MAX_SUBTASKS) {
    const rest = out.splice(MAX_SUBTASKS - 1);
    out.push({ ...rest[0]!, text: rest.map((c) => c.text).join(" ") });
  }
  return { clauses: out, context };
}

/** The workflow a clause asks for (its first matching cue), else research: a question over the workspace. */
export function workflowOf(text: string): WorkflowType {
  return CUES.find(([, re]) => re.test(text))?.[0] ?? "research";
}

/**
 * Size a copilot request (spec 02 `harness_complexity`, pre-flight).
 * @param entry the stream it came from: chat is sized from its prompt; a stream variant runs one fixed operation
 *   (simple), the pipeline three in sequence (medium); neither is decomposed further.
 */
export function classify(prompt: string, entry: "chat" | "synthesis" | "recommendation" | "drafting" | "pipeline" = "chat"): Complexity {
  if (entry === "pipeline") return { level: "medium", reason: "The pipeline runs synthesis, recommendations and drafting in a fixed sequence", subtask_count: 0, clauses: [], context: [] };
  if (entry !== "chat") return { level: "simple", reason: `One ${entry} operation, asked for directly`, subtask_count: 0, clauses: [], context: [] };
  const { clauses, context } = split(prompt);
  const told = context.length ? ` (and ${context.length === 1 ? "one statement" : `${context.length} statements`} of context)` : "";
  const kinds = [...new Set(clauses.map((c) => c.workflow_type))];
  if (clauses.length >= 2 && (kinds.length >= 2 || clauses.length >= 3)) {
    return {
      level: "complex",
      reason: `${clauses.length} requests of ${kinds.length} kind${kinds.length === 1 ? "" : "s"} (${kinds.join(", ")}): split into a mission of ${clauses.length} subtasks${told}`,
      subtask_count: clauses.length,
      clauses,
      context,
    };
  }
  if (clauses.length === 2) return { level: "medium", reason: `Two ${kinds[0]} requests that one run answers${told}`, subtask_count: 0, clauses, context };
  // The request's own length: an introduction does not make a question long.
  const asked = clauses.length ? clauses.map((c) => c.text).join(" ").length : prompt.length;
  if (asked > LONG_CLAUSE_CHARS) return { level: "medium", reason: `One ${kinds[0] ?? "research"} request with details (${asked} characters)${told}`, subtask_count: 0, clauses, context };
  return { level: "simple", reason: `One ${kinds[0] ?? "research"} request${told}`, subtask_count: 0, clauses, context };
}
