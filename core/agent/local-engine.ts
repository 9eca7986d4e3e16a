/**
 * The local agent engine (DESIGN.md 6.1): a deterministic stand-in for a language model on the embedded runtime,
 * behind the same streaming Model port as Bedrock, so the agent loop, gating, events and tests are shared.
 *
 * What it is: a planner over the tool catalogue. It reads only the user's latest prompt (never tool results or
 * research text, which are data), scores every tool by its cue words and by the sentence-embedding similarity of
 * the prompt to the tool's description, and takes the best as the goal. A goal that needs ids it does not have (a
 * PRD needs a recommendation, generation needs insights) is preceded by the read tool that finds them; arguments
 * come from the prompt and from earlier results. When the plan is done it writes its answer only from what the
 * tools returned: insight titles and ids, verbatim quotes, source lists and counts, the pending action waiting for
 * approval. A write that must name one item (a recommendation's status change) takes the item the prompt names, by
 * id or by title words, and asks which one when no title clearly matches: it never guesses the target of a write.
 * The agent layer hands it the tools it may plan with (core/agent/engine.ts), as it hands them to the loop.
 * When an activated skill's output template is in the system prompt (core/skill/hook.ts), the plan first reads the
 * evidence the template's sections call for and the answer follows the template section by section, saying where the
 * evidence does not fill one (./local-template.ts).
 * A repair request of the harness (core/harness/repair.ts, a user turn starting "[quality check]") is answered by
 * rewriting its own previous answer without the lines the harness found false, saying what it removed.
 * What it is not: it does not understand the prompt beyond those cues and similarities, cannot reason across
 * results, and never invents a fact, a quote or an id.
 */
import { createHash } from "node:crypto";
import type { CallUsage, ConversationTurn, ModelStreamEvent, StreamingModel, StreamRequest, ToolSpec, TurnContent } from "../ai/ports";
import { embedder } from "../ai/select";
import { decodeVector, dot } from "../ai/vectors";
import { TOOLS } from "./tools";
import type { Tool } from "./tools";
import { parseRepairTurn, type RepairDirectives } from "../harness/repair-turn";
import { requestOf } from "../harness/complexity";
import { composeTemplated, evidenceNeeded, templateOf, type ActiveTemplate } from "./local-template";
import { promptEmbedding } from "./prompt-embedding";
import { SEVERITY_RANK } from "../insight/severity";

const DOCUMENT_TYPES: [RegExp, string][] = [
  [/\bprd\b|product requirements/i, "prd"],
  [/\buser stor(y|ies)\b/i, "user_story"],
  [/\brelease notes?\b/i, "release_notes"],
  [/\broadmap update\b/i, "roadmap_update"],
  [/\bmemo\b/i, "memo"],
  [/\bspec\b|specification/i, "spec"],
];

/** What a step does instead of calling its tool when the results leave the call open: the question to ask the user. */
interface Ask {
  ask: string;
}

/** How a step builds its tool's input from the prompt, earlier results and the plan's goal; null skips it, an Ask ends the plan with a question. */
type StepInput = (prompt: string, results: Map<string, unknown>, attachments: string[], goal: string) => Record<string, unknown> | Ask | null;

const isAsk = (x: Record<string, unknown> | Ask | null): x is Ask => typeof (x as Ask | null)?.ask === "string";

/** Reads that must come before a goal, because the goal needs ids they return. */
const PREREQUISITES: Record<string, string> = {
  draft_document: "list_recommendations",
  generate_recommendations: "list_insights",
  run_synthesis: "list_sources",
  update_recommendation_status: "list_recommendations",
};

type Rec = { id: string; title: string; status: string; priority_rank: number | null; impact_score: number | null };
type InsightBrief = { id: string; title: string; severity: string; frequency: number; insight_type: string; quotes: { text: string; source_id: string; speaker: string | null }[] };
type SourceBrief = { id: string; title: string; source_type: string; processing_status: string; mention_count?: number | null };


const recommendationsOf = (results: Map<string, unknown>): Rec[] => (results.get("list_recommendations") as { recommendations?: Rec[] } | undefined)?.recommendations ?? [];

/** By priority: an accepted one (or `preferStatus`) first, then by rank and impact; the list's order breaks ties. */
function byPriority(recs: Rec[], preferStatus = "accepted"): Rec[] {
  const order = (r: Rec) => [r.status === preferStatus ? 0 : r.status === "suggested" ? 1 : 2, r.priority_rank ?? 99, -(r.impact_score ?? 0)];
  return [...recs].sort((a, b) => {
    const [x, y] = [order(a), order(b)];
    return x[0] - y[0] || x[1] - y[1] || x[2] - y[2];
  });
}

function quoted(prompt: string): string | undefined {
  return /["“]([^"”]{3,300})["”]/.exec(prompt)?.[1];
}

// ---------------------------------------------------------------------------------------------------------------
// Which recommendation a status change is about. A write acts on the item the user named, never on a guess: by id,
// by id prefix, by its whole title, or by title words that match one title clearly better than every other.
// ---------------------------------------------------------------------------------------------------------------

type Status = "suggested" | "accepted" | "in_progress" | "implemented" | "rejected";

/** What each status is called in a prompt, and how the engine phrases a request for it. */
const STATUS_PHRASES: Record<Status, { verb: string; example: (title: string) => string }> = {
  accepted: { verb: "accept", example: (t) => `accept the recommendation "${t}"` },
  rejected: { verb: "reject", example: (t) => `reject the recommendation "${t}"` },
  in_progress: { verb: "mark as in progress", example: (t) => `mark the recommendation "${t}" as in progress` },
  implemented: { verb: "mark as implemented", example: (t) => `mark the recommendation "${t}" as implemented` },
  suggested: { verb: "move back to suggested", example: (t) => `move the recommendation "${t}" back to suggested` },
};

/**
 * The status a prompt asks for: the one after "as" or "to" when there is one ("mark X as implemented", "move X to in
 * progress"), else the verb ("reject X"); undefined when the prompt names none ("change the status of X").
 */
export function targetStatus(prompt: string): Status | undefined {
  const named = /\b(?:as|to)\s+(accepted|rejected|implemented|done|shipped|in[- ]progress|suggested)\b/i.exec(prompt)?.[1]?.toLowerCase();
  const word = named ?? /\b(reject|accept|implemented|in[- ]progress|reopen|back to suggested)\b/i.exec(prompt)?.[1]?.toLowerCase();
  if (!word) return undefined;
  if (word.startsWith("reject")) return "rejected";
  if (word.startsWith("accept")) return "accepted";
  if (word === "implemented" || word === "done" || word === "shipped") return "implemented";
  if (word.startsWith("in")) return "in_progress";
  return "suggested";
}

/**
 * Words that say nothing about which recommendation is meant: function words, politeness, and the words of the
 * command itself ("accept", "mark", "status", "recommendation"). Left in, they would match every title alike.
 */
const STOP_WORDS = new Set(
  ("a an the to of for on in at by with from and or but as is are be been it its this that these those there we our us you your i me my " +
    "they them their he she his her please can could would should will shall may might must do does did have has had get go ahead now just " +
    "ok okay yes sure also then so thanks hi hey let lets want need like make one ones which what about recommendation recommendations rec " +
    "accept accepted reject rejected mark marked move moved set change status implement implemented progress suggested done shipped back reopen")
    .split(" "),
);

/** A word cut to a rough stem, so "exports", "exporting" and "export" meet. */
function stem(word: string): string {
  if (word.length > 5 && word.endsWith("ing")) return word.slice(0, -3);
  if (word.length > 4 && word.endsWith("ies")) return `${word.slice(0, -3)}y`;
  if (word.length > 4 && word.endsWith("ed")) return word.slice(0, -2);
  if (word.length > 3 && word.endsWith("s") && !word.endsWith("ss")) return word.slice(0, -1);
  return word;
}

/** The distinct content stems of a text. */
const stems = (text: string): Set<string> => new Set(text.toLowerCase().split(/[^a-z0-9]+/).filter((w) => w && !STOP_WORDS.has(w)).map(stem));

/** A text reduced to lower-case words separated by single spaces, for whole-title matching. */
const normalized = (text: string) => ` ${text.toLowerCase().split(/[^a-z0-9]+/).filter(Boolean).join(" ")} `;

/** Below this share of the prompt's own words found in a title, the title is not what the prompt names. */
const MIN_PROMPT_SHARE = 0.5;
/** A match is clear when its score leads the next title's by at least this much; closer, the engine asks. */
const CLEAR_LEAD = 0.15;

const UUID = /\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b/gi;
/** The start of an id: 6+ hex characters with a digit among them (so words such as "facade" are not read as ids). */
const ID_PREFIX = /\b(?=[0-9a-f]*\d)[0-9a-f]{6,}\b/gi;

/** The recommendation a prompt names, or the recommendations it might mean (empty: none at all). */
export type Naming = { rec: Rec } | { candidates: Rec[]; why: "tie" | "none" | "unknown_id" };

/**
 * Which recommendation of `recs` a prompt names, in this order: an id (whole, or its first 6+ characters) of one of
 * them (a prefix that starts several ids names those as candidates); a whole title the prompt contains (the longest, so "Fix sign-in on Android tablets" beats "Fix sign-in on
 * Android"); "the top recommendation" (the first by priority); else title words. Title words score each title by
 * the F1 of two shares: of the title's words the prompt names (weighted by rarity among the titles, so a word every
 * title has counts little) and of the prompt's words the title has. The best title is named when at least half the
 * prompt's words are in it and it leads the next by CLEAR_LEAD; otherwise the candidates are those close to the best
 * (a tie) or, with no match at all, every recommendation by priority.
 */
export function namedRecommendation(prompt: string, recs: Rec[], complete = true): Naming {
  const ids = [...new Set([...prompt.matchAll(UUID)].map((m) => m[0].toLowerCase()))];
  if (ids.length) {
    const found = recs.filter((r) => ids.includes(r.id.toLowerCase()));
    if (found.length === 1) return { rec: found[0]! };
    if (found.length > 1) return { candidates: found, why: "tie" };
    // An id the list does not hold: when the list was cut, the tool checks it (a wrong one fails there, nothing is queued).
    if (!complete) return { rec: { id: ids[0]!, title: ids[0]!, status: "", priority_rank: null, impact_score: null } };
    return { candidates: byPriority(recs, "suggested"), why: "unknown_id" };
  }
  const prefixes = [...prompt.matchAll(ID_PREFIX)].map((m) => m[0].toLowerCase());
  const byPrefix = recs.filter((r) => prefixes.some((p) => r.id.toLowerCase().startsWith(p)));
  if (byPrefix.length === 1) return { rec: byPrefix[0]! };
  if (byPrefix.length > 1) return { candidates: byPrefix, why: "tie" };

  const text = normalized(prompt);
  const whole = recs.filter((r) => normalized(r.title).trim() && text.includes(normalized(r.title))).sort((a, b) => b.title.length - a.title.length);
  if (whole.length && (whole.length === 1 || whole[0]!.title.length > whole[1]!.title.length)) return { rec: whole[0]! };

  const promptStems = stems(prompt);
  const titleStems = recs.map((r) => stems(r.title));
  const df = new Map<string, number>();
  for (const ts of titleStems) for (const t of ts) df.set(t, (df.get(t) ?? 0) + 1);
  const weight = (t: string) => Math.log(1 + recs.length / (df.get(t) ?? 1));
  const scored = recs
    .map((rec, i) => {
      const ts = [...titleStems[i]!];
      const hits = ts.filter((t) => promptStems.has(t));
      const titleShare = ts.length ? hits.reduce((s, t) => s + weight(t), 0) / ts.reduce((s, t) => s + weight(t), 0) : 0;
      const promptShare = promptStems.size ? hits.length / promptStems.size : 0;
      const score = titleShare + promptShare ? (2 * titleShare * promptShare) / (titleShare + promptShare) : 0;
      return { rec, score, promptShare };
    })
    .sort((a, b) => b.score - a.score);
  const [best, second] = scored;
  if (best && best.score > 0) {
    if (best.promptShare >= MIN_PROMPT_SHARE && best.score - (second?.score ?? 0) >= CLEAR_LEAD) return { rec: best.rec };
    const close = scored.filter((s) => s.score > 0 && best.score - s.score < CLEAR_LEAD);
    if (close.length > 1) return { candidates: close.map((s) => s.rec), why: "tie" };
  }
  if (/\b(top|first|highest[- ]priority|top[- ]ranked)\s+(suggested\s+)?(one|recommendation)\b/i.test(prompt) && recs.length) return { rec: byPriority(recs, "suggested")[0]! };
  return { candidates: byPriority(recs, "suggested"), why: "none" };
}

/** The question the engine asks when a status change does not name one recommendation. */
function whichRecommendation(status: Status | undefined, naming: Extract<Naming, { candidates: Rec[] }>, total: number): Ask {
  const verb = status ? STATUS_PHRASES[status].verb : "change";
  if (naming.candidates.length === 0) return { ask: `This workspace has no recommendations yet, so there is nothing to ${verb}. Ask me to generate recommendations from your insights first.` };
  const shown = naming.candidates.slice(0, 7);
  const why =
    naming.why === "tie"
      ? `${naming.candidates.length === 2 ? "Two" : naming.candidates.length} recommendations match your message equally well:`
      : naming.why === "unknown_id"
        ? "No recommendation of this workspace has the id you gave. These are the ones it has:"
        : `No recommendation title clearly matches your message. ${shown.length < total ? `The first ${shown.length} of ${total}, by priority` : "These are the workspace's recommendations"}:`;
  const lines = shown.map((r, n) => `${n + 1}. **${r.title}** (${r.status}) [recommendation ${r.id}]`).join("\n");
  const example = STATUS_PHRASES[status ?? "accepted"].example(shown[0]!.title);
  return { ask: `Which recommendation should I ${verb}? ${why}\n\n${lines}\n\nNothing is queued yet. Say which one by its title or id, for example: ${example}.` };
}

const STATUS_CHOICES = "accept it, reject it, mark it as in progress, mark it as implemented, or move it back to suggested";

const STEPS: Record<string, StepInput> = {
  workspace_summary: () => ({}),
  search_insights: (prompt) => ({ query: prompt.slice(0, 1000), limit: 5 }),
  list_insights: () => ({ limit: 20 }),
  // A status change may name any recommendation: read as many as a page holds.
  list_recommendations: (_p, _r, _a, goal) => ({ limit: goal === "update_recommendation_status" ? 50 : 20 }),
  list_documents: () => ({ limit: 20 }),
  // Synthesis needs sources that are ready; a question about sources is about all of them.
  list_sources: (_p, _r, _a, goal) => (goal === "run_synthesis" ? { processing_status: "completed", limit: 50 } : { limit: 50 }),
  read_source_text: (_p, _r, attachments) => (attachments[0] ? { source_id: attachments[0], start: 0, length: 4000 } : null),
  draft_document: (prompt, results) => {
    const type = DOCUMENT_TYPES.find(([re]) => re.test(prompt))?.[1] ?? "prd";
    const rec = byPriority(recommendationsOf(results))[0];
    return { document_type: type, ...(rec ? { recommendation_id: rec.id } : {}), user_instructions: prompt.slice(0, 5000) };
  },
  generate_recommendations: (_p, results) => {
    const insights = (results.get("list_insights") as { insights?: InsightBrief[] } | undefined)?.insights ?? [];
    const top = [...insights].sort((a, b) => (SEVERITY_RANK[b.severity] ?? 0) - (SEVERITY_RANK[a.severity] ?? 0) || b.frequency - a.frequency).slice(0, 10);
    return top.length ? { insight_ids: top.map((i) => i.id) } : null;
  },
  run_synthesis: (_p, results) => {
    const sources = (results.get("list_sources") as { sources?: { id: string }[] } | undefined)?.sources ?? [];
    if (sources.length === 0) return { ask: "No research source of this workspace has finished processing yet, so there is nothing to synthesize. Upload interviews, surveys, tickets or feedback, or wait until they are processed, then ask again." };
    return { source_ids: sources.slice(0, 20).map((s) => s.id) };
  },
  update_recommendation_status: (prompt, results) => {
    const listed = results.get("list_recommendations") as { total?: number; recommendations?: Rec[] } | undefined;
    const recs = listed?.recommendations ?? [];
    const total = listed?.total ?? recs.length;
    const status = targetStatus(prompt);
    const naming = namedRecommendation(prompt, recs, total <= recs.length);
    if (!("rec" in naming)) return whichRecommendation(status, naming, total);
    if (!status) return { ask: `To which status should I move "${naming.rec.title}" (now ${naming.rec.status || "unknown"})? I can ${STATUS_CHOICES}. Nothing is queued yet.` };
    return { recommendation_id: naming.rec.id, status };
  },
  // The user's own memory (core/agent/tools/memory.ts): a broad "what do you know about me" reads the profile, a
  // question about one thing they said searches it by meaning.
  memory_profile: () => ({}),
  search_memory: (prompt) => ({ query: prompt.slice(0, 500), top_k: 5 }),
  create_insight: (prompt) => {
    const title = quoted(prompt);
    return title ? { insight_type: "feedback_theme", title, description: prompt.slice(0, 10_000), severity: "medium" } : null;
  },
};

/** Tools the local engine can plan (those whose input it knows how to build). */
const PLANNABLE = new Set(Object.keys(STEPS));

/**
 * Phrasings a tool's cue words miss because the prompt puts words between them ("accept the offline mode
 * recommendation", "mark recommendation 3f2a… as implemented"). A hit counts as a specific cue. Only bare verbs
 * match ("rejected recommendations" asks for a list, not a change).
 */
const PHRASINGS: Record<string, RegExp[]> = {
  update_recommendation_status: [
    /\b(accept|reject|approve|reopen)\b[^.?!]*\brecommendation/i,
    /\bmark\b[^.?!]*\bas\s+(accepted|rejected|implemented|done|shipped|in[- ]progress|suggested)\b/i,
    /\bmove\b[^.?!]*\b(back\s+)?to\s+(accepted|rejected|implemented|in[- ]progress|suggested)\b/i,
  ],
};
/**
 * Asking for a document by its verb and kind in one sentence ("Draft a PRD for the top recommendation"): the list of
 * recommendations shares the words "draft", "prd" and "recommendation" (it is the draft's prerequisite), and without
 * this it won on cue count, so the draft was never queued.
 */
PHRASINGS.draft_document = [
  /\b(?:draft|write|create|prepare)\b[^.?!]*\b(?:prd|product requirements|spec|specification|memo|user stor(?:y|ies)|release notes|roadmap update)\b/i,
];
/**
 * The memory reads: the whole profile when the user asks what the copilot knows about them or their team, or for
 * their profile; a search when they ask whether it remembers one thing they said.
 */
PHRASINGS.memory_profile = [
  /\bwhat (?:do|did) you (?:know|remember|recall)(?: about (?:me|us|my team|our team|myself|ourselves))?\s*[?.!]*$/i,
  /\bwhat (?:have|did) (?:i|we) told you(?: about (?:me|us|my team|our team|myself|ourselves))?\s*[?.!]*$/i,
  /\b(?:my|our) (?:memory )?profile\b/i,
];
PHRASINGS.search_memory = [
  /\b(?:do|did) you (?:remember|recall)\b(?!\s*(?:about (?:me|us)\b)?\s*[?.!]*$)/i,
  /\b(?:did|have) (?:i|we) (?:tell|told|mention(?:ed)?|say|said) (?:you\s+)?(?:about|that|which|what|whether|if)\b/i,
  /\bwhat did (?:i|we) (?:tell you|say|mention) about (?!(?:me|us|myself|ourselves)\s*[?.!]*$)/i,
  /\bwhat do you (?:know|remember) about (?!(?:me|us|my team|our team|myself|ourselves)\s*[?.!]*$)(?:my|our)\b/i,
];
const PHRASING_SCORE = 2;

/** Per tool catalogue (the engine is handed one): its description vectors and the goals of recent prompts. */
interface Memo {
  descriptionVectors?: Promise<Map<string, Float32Array>>;
  /** Goals of recent prompts (a prompt's exchange runs several turns); the oldest goes first when full. */
  goals: Map<string, Promise<string>>;
}
const memos = new WeakMap<readonly Tool[], Memo>();
const GOAL_CACHE_SIZE = 256;

const memoOf = (tools: readonly Tool[]): Memo => {
  let memo = memos.get(tools);
  if (!memo) memos.set(tools, (memo = { goals: new Map() }));
  return memo;
};

/** Cue hits in the prompt: each cue found counts 1 (multi-word cues 1.5: they are more specific), each phrasing 2. */
function cueScore(prompt: string, tool: Tool): number {
  const p = prompt.toLowerCase();
  const cues = tool.cues.reduce((sum, cue) => (p.includes(cue) ? sum + (cue.includes(" ") ? 1.5 : 1) : sum), 0);
  return cues + (PHRASINGS[tool.name]?.some((re) => re.test(prompt)) ? PHRASING_SCORE : 0);
}

/**
 * Choose the goal tool for a prompt: the highest cue score plus description similarity among the tools offered.
 * With no cue at all, the similarity alone decides among read tools only: a write is never chosen on similarity.
 */
async function chooseGoal(tools: readonly Tool[], prompt: string, offered: ToolSpec[]): Promise<string> {
  // Every turn of an exchange asks again for the same prompt: the answer is the same, so embed the prompt once.
  const { goals } = memoOf(tools);
  const key = `${offered.map((o) => o.name).join(",")}\n${prompt}`;
  let goal = goals.get(key);
  if (!goal) {
    goal = scoreGoal(tools, prompt, offered);
    goals.set(key, goal);
    if (goals.size > GOAL_CACHE_SIZE) goals.delete(goals.keys().next().value!);
    goal.catch(() => goals.delete(key));
  }
  return goal;
}

/**
 * The tool-description vectors computed at build time (core/agent/tool-vectors.json, written by `npm run
 * tool-vectors`, scripts/tool-vectors.ts). Embedding the 44 descriptions of the catalogue took 2.3 s of the embedder's
 * one worker on a fresh process, and every stream's first prompt embedding waited behind it (issue #24 point 6).
 */
export interface StoredToolVectors {
  /** The Embedder.id the vectors are of (`local:use-lite:512`): any other embedder embeds the descriptions itself. */
  embedder: string;
  /**
   * By tool name: `hash`, the {@link descriptionHash} of the description that was embedded; `vector`, its unit-length
   * embedding as `encodeVector` stores it (float32 little-endian, base64).
   */
  tools: Record<string, { hash: string; vector: string }>;
}

/**
 * A description's fingerprint in {@link StoredToolVectors}: the first 16 hex characters (64 bits) of the SHA-256 of
 * its UTF-8 text. A stored vector is used only for the description it was computed from.
 */
export const descriptionHash = (description: string): string => createHash("sha256").update(description, "utf8").digest("hex").slice(0, 16);

/** The stored vectors, imported on the first plan only: a chunk of its own in a bundle, never read at a Lambda's import. */
const storedToolVectors = async (): Promise<StoredToolVectors> => (await import("./tool-vectors.json")).default;

/**
 * The embeddings of the tools' descriptions, by tool name (unit-length vectors of the process's embedder): computed
 * once per process and catalogue (a failure is asked for again next time). A tool's vector comes from the build-time
 * file ({@link StoredToolVectors}) when the embedder is the file's and the description's hash is the stored one;
 * the others (a description edited without `npm run tool-vectors`, every tool under another embedder) are embedded
 * in one batch, as before the file existed. Started by the first prefetch, so a cold container's first streams do
 * not wait for it behind their prompts.
 * @throws (the promise) what the embedder throws, or when a stored vector does not have the embedder's dimensions
 */
function descriptionVectors(tools: readonly Tool[]): Promise<Map<string, Float32Array>> {
  const memo = memoOf(tools);
  if (!memo.descriptionVectors) {
    memo.descriptionVectors = embedder().then(async (emb) => {
      const vectors = new Map<string, Float32Array>();
      const stored = await storedToolVectors();
      if (stored.embedder === emb.id) {
        for (const t of tools) {
          const s = stored.tools[t.name];
          if (s?.hash === descriptionHash(t.description)) vectors.set(t.name, decodeVector(s.vector, emb.dimensions));
        }
      }
      const missing = tools.filter((t) => !vectors.has(t.name));
      if (missing.length) {
        const vs = await emb.embed(missing.map((t) => t.description));
        missing.forEach((t, i) => vectors.set(t.name, vs[i]!));
      }
      return vectors;
    });
    memo.descriptionVectors.catch(() => (memo.descriptionVectors = undefined));
  }
  return memo.descriptionVectors;
}

async function scoreGoal(tools: readonly Tool[], prompt: string, offered: ToolSpec[]): Promise<string> {
  const candidates = tools.filter((t) => PLANNABLE.has(t.name) && offered.some((o) => o.name === t.name));
  if (candidates.length === 0) return "";
  // The prompt's embedding is shared with the search this plan runs and with memory recall (./prompt-embedding.ts).
  const [vectors, promptVector] = await Promise.all([descriptionVectors(tools), promptEmbedding(prompt.slice(0, 2000))]);
  let best = "";
  let bestScore = -Infinity;
  for (const tool of candidates) {
    const cues = cueScore(prompt, tool);
    if (tool.gated && cues === 0) continue;
    const score = cues + dot(promptVector!, vectors.get(tool.name)!);
    if (score > bestScore) [best, bestScore] = [tool.name, score];
  }
  return best;
}

/** The latest user prompt, and the tool calls and results that followed it in this exchange. */
function exchange(messages: ConversationTurn[]): { prompt: string; calls: { name: string; input: Record<string, unknown> }[]; results: Map<string, unknown>; byCall: { name: string; status: string; content: unknown }[] } {
  let start = messages.length - 1;
  while (start >= 0 && !(messages[start]!.role === "user" && messages[start]!.content.some((c) => c.type === "text"))) start--;
  const prompt = start >= 0 ? messages[start]!.content.filter((c): c is Extract<TurnContent, { type: "text" }> => c.type === "text").map((c) => c.text).join("\n") : "";
  const calls: { id: string; name: string; input: Record<string, unknown> }[] = [];
  const results = new Map<string, unknown>();
  const byCall: { name: string; status: string; content: unknown }[] = [];
  for (const turn of messages.slice(start + 1)) {
    for (const c of turn.content) {
      if (c.type === "tool_use") calls.push({ id: c.id, name: c.name, input: c.input });
      if (c.type === "tool_result") {
        const call = calls.find((x) => x.id === c.id);
        if (call) {
          results.set(call.name, c.content);
          byCall.push({ name: call.name, status: c.status, content: c.content });
        }
      }
    }
  }
  return { prompt, calls, results, byCall };
}

/** The attachment ids the system prompt lists (the loop writes them there; the engine reads nothing else from it). */
const attachmentsOf = (system: string): string[] => [...(/Attached research source ids: ([^\n]+)/.exec(system)?.[1] ?? "").matchAll(/[0-9a-f-]{36}/g)].map((m) => m[0]);

/** Each source type: how a prompt names it, and how the answer counts it (one, many). */
const SOURCE_KINDS: { type: string; asked: RegExp; one: string; many: string }[] = [
  { type: "interview", asked: /\binterviews?\b/i, one: "interview", many: "interviews" },
  { type: "survey", asked: /\bsurveys?\b/i, one: "survey", many: "surveys" },
  { type: "support_ticket", asked: /\btickets?\b/i, one: "support ticket", many: "support tickets" },
  { type: "usage_data", asked: /\busage\b/i, one: "usage data source", many: "usage data sources" },
  { type: "feedback", asked: /\bfeedback\b/i, one: "feedback source", many: "feedback sources" },
  { type: "other", asked: /(?!)/, one: "other source", many: "other sources" },
];

const counted = (n: number, one: string, many: string) => `${n} ${n === 1 ? one : many}`;

/**
 * The answer to a question about sources, from `list_sources` alone: how many there are by type and status, then the
 * sources (title, type, status, mentions, id). A prompt that names a type ("which interviews") lists that type; when
 * the workspace has none of it, it says so and lists what there is.
 */
function sourcesAnswer(prompt: string, c: { total?: number; by_type?: Record<string, number>; by_status?: Record<string, number>; sources?: SourceBrief[] }): string {
  const sources = c.sources ?? [];
  const total = c.total ?? sources.length;
  if (total === 0) return "This workspace has no research sources yet. Upload interviews, surveys, support tickets, usage data or feedback, then ask again.";
  const byType = c.by_type ?? Object.fromEntries(SOURCE_KINDS.map((k) => [k.type, sources.filter((s) => s.source_type === k.type).length]));
  const byStatus = c.by_status ?? {};
  const types = SOURCE_KINDS.filter((k) => byType[k.type]).map((k) => counted(byType[k.type]!, k.one, k.many));
  const statuses = Object.entries(byStatus).filter(([, n]) => n).map(([status, n]) => `${n} ${status}`);
  const overview = `${counted(total, "research source", "research sources")}: ${types.join(", ")}${statuses.length ? ` (${statuses.join(", ")})` : ""}`;
  const asked = SOURCE_KINDS.find((k) => k.asked.test(prompt));
  const line = (s: SourceBrief) =>
    `- **${s.title}** (${s.source_type.replace(/_/g, " ")}, ${s.processing_status}${typeof s.mention_count === "number" ? `, ${counted(s.mention_count, "mention", "mentions")}` : ""}) [source ${s.id}]`;
  const list = (items: SourceBrief[], of: number) => `${items.slice(0, 20).map(line).join("\n")}${of > Math.min(20, items.length) ? `\n\n(the newest ${Math.min(20, items.length)} of ${of} shown)` : ""}`;
  if (asked) {
    const matching = sources.filter((s) => s.source_type === asked.type);
    const count = byType[asked.type] ?? matching.length;
    if (count === 0) return `This workspace has no ${asked.many}. It has ${overview}:\n\n${list(sources, total)}`;
    return `This workspace has ${overview}. The ${counted(count, asked.one, asked.many)}:\n\n${list(matching, count)}`;
  }
  return `This workspace has ${overview}:\n\n${list(sources, total)}`;
}

const MEMORY_OFF = "Memory is switched off on this service, so I keep nothing you tell me between conversations.";
const day = (iso: unknown) => (typeof iso === "string" ? iso.slice(0, 10) : "");

/** The answer to "what do you know about me": the user's profile as the memory tool returned it, nothing added. */
function profileAnswer(c: { static_facts?: string[]; dynamic_facts?: string[]; is_available?: boolean }): string {
  if (c.is_available === false) return MEMORY_OFF;
  const stable = c.static_facts ?? [];
  const recent = c.dynamic_facts ?? [];
  if (!stable.length && !recent.length) return "I do not remember anything you told me in this workspace yet. Tell me about your role, team, product, users or tools and I will remember it for later conversations.";
  const parts = [`What you told me in earlier conversations in this workspace (${counted(stable.length + recent.length, "fact", "facts")}):`];
  if (stable.length) parts.push(stable.map((f) => `- ${f}`).join("\n"));
  if (recent.length) parts.push(`Recent context:\n${recent.map((f) => `- ${f}`).join("\n")}`);
  parts.push("You can see or delete what I remember under Memory.");
  return parts.join("\n\n");
}

/** The answer to "do you remember …": the facts the memory search found, with when they were said; nothing added. */
function memorySearchAnswer(prompt: string, c: { total?: number; memories?: { content: string; stated_at?: string; disputed?: boolean }[] }): string {
  const found = c.memories ?? [];
  if (!found.length) return `I found nothing you told me in this workspace about "${prompt.slice(0, 120)}". If it matters, tell me and I will remember it.`;
  const lines = found.map((m) => `- ${m.content}${m.stated_at ? ` (you said so on ${day(m.stated_at)})` : ""}${m.disputed ? " (you also said something that disagrees with this: which holds?)" : ""}`);
  return `From what you told me in earlier conversations in this workspace:\n\n${lines.join("\n")}`;
}

const NOTHING_FOUND = "I could not find anything in this workspace to answer that. Try asking about your users' pain points, or ask me to draft a PRD.";

/** The answer, composed only from the exchange's last tool result (the goal's, when it ran). */
export function composeAnswer(prompt: string, o: { name: string; status: string; content: unknown } | undefined): string {
  if (!o) return NOTHING_FOUND;
  const c = o.content as Record<string, any>;
  if (o.status === "error" || c?.error) return `I could not run ${o.name.replace(/_/g, " ")}: ${c?.error ?? "it failed"}.`;
  if (c?.status === "queued") {
    return `I have prepared this for you: **${c.preview?.summary ?? o.name}**. Nothing is written yet: it waits for your approval as pending action \`${c.pending_action_id}\`.`;
  }
  if (o.name === "search_insights" || o.name === "list_insights") {
    const insights: InsightBrief[] = c.insights ?? [];
    if (insights.length === 0) return `I found no insight in this workspace that matches "${prompt.slice(0, 120)}". Synthesize your research sources first, then ask again.`;
    const lines = insights.slice(0, 5).map((i, n) => {
      const quote = i.quotes[0];
      const q = quote ? `\n   > "${quote.text}"${quote.speaker ? ` (${quote.speaker})` : ""} [source ${quote.source_id}]` : "";
      return `${n + 1}. **${i.title}** (${i.insight_type.replace(/_/g, " ")}, ${i.severity}, ${i.frequency} source${i.frequency === 1 ? "" : "s"}) [insight ${i.id}]${q}`;
    });
    const shown = Math.min(5, insights.length);
    // A search's total counts its matches (at most its top_k), not the workspace's insights: said as such.
    if (o.name === "search_insights") {
      const found = c.total ?? insights.length;
      return `${shown === 1 ? "The insight that matches" : `The ${shown} insights that match`} best${found > shown ? ` (of ${found} found)` : ""}:\n\n${lines.join("\n")}`;
    }
    return `From ${insights.length === 1 ? "one insight" : `${shown} of ${c.total ?? insights.length} insights`} in this workspace:\n\n${lines.join("\n")}`;
  }
  if (o.name === "workspace_summary") {
    return `${c.intro} (${c.source_count} sources, ${c.insight_count} insights, ${c.recommendation_count} recommendations, ${c.document_count} documents.)`;
  }
  if (o.name === "list_recommendations") {
    const recs: Rec[] = c.recommendations ?? [];
    return recs.length ? `Recommendations, by priority:\n\n${recs.slice(0, 7).map((r, n) => `${n + 1}. **${r.title}** (${r.status}) [recommendation ${r.id}]`).join("\n")}` : "This workspace has no recommendations yet.";
  }
  if (o.name === "list_sources") return sourcesAnswer(prompt, c);
  if (o.name === "list_documents") {
    const docs: { id: string; title: string; document_type: string; status: string }[] = c.documents ?? [];
    return docs.length ? `Documents:\n\n${docs.map((d) => `- **${d.title}** (${d.document_type}, ${d.status}) [document ${d.id}]`).join("\n")}` : "This workspace has no documents yet.";
  }
  if (o.name === "memory_profile") return profileAnswer(c);
  if (o.name === "search_memory") return memorySearchAnswer(prompt, c);
  if (o.name === "read_source_text") {
    const opening = String(c.text ?? "").split(/(?<=[.!?])\s+/).slice(0, 3).join(" ").slice(0, 600);
    return opening
      ? `**${c.title}** [source ${c.source_id}] has ${c.total_chars} characters of text. It opens: "${opening}"`
      : `**${c.title}** [source ${c.source_id}] has no extracted text yet (${c.processing_status}).`;
  }
  return NOTHING_FOUND;
}

/** Goals whose answer is about the user, not the research: a skill's template does not shape them. */
const NOT_SHAPED = new Set(["memory_profile", "search_memory"]);
/** At most this many calls in a plan an output template extends: the stream's default budget is 5 turns, the answer one of them. */
const MAX_SHAPED_PLAN = 4;

/**
 * The reads an output template calls for (local-template.ts evidenceNeeded), before the goal's own steps: insights
 * for themes and findings, recommendations, sources (each unless the goal's own steps read it); only tools offered to the run, and
 * no more than leave the plan within MAX_SHAPED_PLAN calls.
 */
function evidenceReads(t: ActiveTemplate, goal: string, offered: ToolSpec[]): string[] {
  const needed = evidenceNeeded(t.template);
  const own = new Set([goal, PREREQUISITES[goal]].filter(Boolean));
  const reads = [
    // The workspace's insights, even when the goal searches them: a synthesis template asks for every theme.
    ...(needed.has("themes") || needed.has("findings") ? ["list_insights"] : []),
    ...(needed.has("recommendations") ? ["list_recommendations"] : []),
    ...(needed.has("sources") ? ["list_sources"] : []),
  ].filter((r) => !own.has(r) && offered.some((o) => o.name === r));
  return reads.slice(0, Math.max(0, MAX_SHAPED_PLAN - own.size));
}

/** The answer on the template from every result of the exchange (a search's insights first, then the list's). */
function templatedAnswer(t: ActiveTemplate, results: Map<string, unknown>, last: { name: string; content: unknown } | undefined): string {
  const get = <T>(name: string, key: string): T[] => ((results.get(name) as Record<string, unknown> | undefined)?.[key] as T[] | undefined) ?? [];
  const seen = new Set<string>();
  const insights = [...get<InsightBrief>("search_insights", "insights"), ...get<InsightBrief>("list_insights", "insights")].filter((i) => !seen.has(i.id) && seen.add(i.id));
  const queued = last?.content as { status?: string; pending_action_id?: string; preview?: { summary?: string } } | undefined;
  return composeTemplated(t.template, {
    insights,
    recommendations: recommendationsOf(results),
    sources: get<SourceBrief>("list_sources", "sources"),
    pending: queued?.status === "queued" && queued.pending_action_id ? { id: queued.pending_action_id, summary: queued.preview?.summary ?? last!.name } : undefined,
  });
}

const estimateTokens = (s: string) => Math.ceil(s.length / 4);

/** The engine's previous answer: the text of the last assistant turn before the latest user turn. */
function previousAnswer(messages: ConversationTurn[]): string {
  for (let i = messages.length - 2; i >= 0; i--) {
    const m = messages[i]!;
    if (m.role !== "assistant") continue;
    const text = m.content.filter((c): c is Extract<TurnContent, { type: "text" }> => c.type === "text").map((c) => c.text).join("");
    if (text.trim()) return text;
  }
  return "";
}

const squash = (s: string) => s.replace(/[“”]/g, '"').replace(/[‘’]/g, "'").replace(/\s+/g, " ").trim().toLowerCase();

/**
 * The engine's answer to a repair request (issue #21, core/harness/repair.ts): its previous answer without what the
 * harness found false, line by line (a line quoting a passage that is not verbatim in its source, citing an id that
 * does not resolve, or stating a false count is left out), and a closing line saying what it removed. It cannot
 * reach for other evidence; what is left is only what held.
 */
export function repairAnswer(previous: string, d: RepairDirectives): string {
  const quotes = d.drop_quotes.map(squash).filter(Boolean);
  const ids = d.drop_ids.map((i) => i.toLowerCase());
  const counts = d.drop_counts.map((c) => squash(c.statement)).filter(Boolean);
  const removed = { quotes: 0, ids: 0, counts: 0 };
  const kept = previous.split("\n").filter((line) => {
    const l = squash(line);
    if (!l) return true;
    if (quotes.some((q) => l.includes(q))) return (removed.quotes++, false);
    if (ids.some((id) => l.includes(id))) return (removed.ids++, false);
    if (counts.some((c) => l === c)) return (removed.counts++, false);
    return true;
  });
  const what = [
    removed.quotes && counted(removed.quotes, "quote that is not verbatim in its source", "quotes that are not verbatim in their sources"),
    removed.ids && counted(removed.ids, "reference that does not resolve in this workspace", "references that do not resolve in this workspace"),
    removed.counts && counted(removed.counts, "count that the workspace does not bear out", "counts that the workspace does not bear out"),
  ].filter(Boolean);
  const body = kept.join("\n").replace(/\n{3,}/g, "\n\n").trim();
  if (!what.length) return `${body}\n\n_Checked again: nothing in this answer could be corrected from the results I have._`;
  return `${body}\n\n_Corrected after a quality check: removed ${what.join(", ")}._`;
}

/** Deterministic local agent engine (see the file's header). Costs 0 USD; token counts are estimates (4 chars each). */
export class LocalAgentModel implements StreamingModel {
  readonly engine = "local";

  /**
   * @param tools the catalogue the engine plans over (cue words, descriptions): the agent layer hands it the one it
   * hands the loop (core/agent/engine.ts). Defaults to every tool, for callers that run the loop with all of them.
   */
  constructor(private readonly tools: readonly Tool[] = TOOLS) {}

  /**
   * Start embedding what the first turn will plan from (the part of `said` that asks, `requestOf`), so the embedding
   * runs while the copilot reads the workspace instead of after. Never throws: a failed embedding is asked for again,
   * and fails there, by the turn itself.
   */
  prefetch(said: string): void {
    descriptionVectors(this.tools).catch(() => undefined);
    promptEmbedding(requestOf(said).slice(0, 2000)).catch(() => undefined);
  }

  async *stream(req: StreamRequest): AsyncIterable<ModelStreamEvent> {
    const started = performance.now();
    req.signal?.throwIfAborted();
    const { prompt: said, calls, results, byCall } = exchange(req.messages);
    const repair = parseRepairTurn(said);
    if (repair) {
      // A repair request: the previous answer, corrected; no tool runs (the plan is not made from the request).
      yield* this.say(repairAnswer(previousAnswer(req.messages), repair), req, started);
      return;
    }
    // The plan is made from what the user asks: statements about themselves ("I'm the PM of Acme.") are context, as
    // the harness sizes them (core/harness/complexity.ts), and would otherwise pull the goal and the search off topic.
    const prompt = requestOf(said);
    const attachments = attachmentsOf(req.system);
    // The plan is recomputed from the prompt on every turn (the same prompt always gives the same plan), and the next
    // step is the first not yet run. Tool results only fill arguments; they never change the plan, except that a
    // step they leave open (no recommendation clearly named) ends it with a question instead of a guess.
    const goal = attachments.length && /\b(attach|this (file|source|document)|summari[sz]e)/i.test(prompt) ? "read_source_text" : await chooseGoal(this.tools, prompt, req.tools);
    const template = templateOf(req.system);
    const shaped = template && !NOT_SHAPED.has(goal) ? template : undefined;
    const plan = [...new Set([...(shaped ? evidenceReads(shaped, goal, req.tools) : []), ...(goal ? [...(PREREQUISITES[goal] ? [PREREQUISITES[goal]!] : []), goal] : [])])];
    const failed = byCall.some((b) => b.status === "error");
    const next = failed ? undefined : plan[calls.length];
    const usage = (out: string): CallUsage => ({
      modelId: "local-agent",
      tier: req.tier,
      inputTokens: estimateTokens(req.system + JSON.stringify(req.messages)),
      outputTokens: estimateTokens(out),
      costUsd: 0,
      latencyMs: Math.round(performance.now() - started),
      attempts: 1,
    });
    let answer: string | undefined;
    if (next) {
      const input = STEPS[next]!(prompt, results, attachments, goal);
      if (isAsk(input)) answer = input.ask;
      else if (input) {
        const call = { type: "tool_call" as const, id: `local-${calls.length + 1}`, name: next, input };
        yield call;
        yield { type: "stop", reason: "tool_use", usage: usage(JSON.stringify(input)) };
        return;
      }
    }
    // Done, failed, or the next step lacks what it needs: answer from the last result (the goal's, when it ran).
    // An activated skill's template shapes an answer drawn from evidence; a question or a failure is said as it is.
    const last = byCall.at(-1);
    const lastFailed = last && (last.status === "error" || (last.content as { error?: unknown } | null)?.error);
    if (!answer && shaped && !lastFailed) answer = templatedAnswer(shaped, results, last);
    answer ??= composeAnswer(prompt, last);
    yield* this.say(answer, req, started);
  }

  /** Stream an answer word by word, then stop with its usage. */
  private async *say(answer: string, req: StreamRequest, started: number): AsyncIterable<ModelStreamEvent> {
    for (const chunk of answer.match(/\S+\s*/g) ?? []) {
      req.signal?.throwIfAborted();
      yield { type: "text", delta: chunk };
    }
    yield {
      type: "stop",
      reason: "end_turn",
      usage: {
        modelId: "local-agent",
        tier: req.tier,
        inputTokens: estimateTokens(req.system + JSON.stringify(req.messages)),
        outputTokens: estimateTokens(answer),
        costUsd: 0,
        latencyMs: Math.round(performance.now() - started),
        attempts: 1,
      },
    };
  }
}
