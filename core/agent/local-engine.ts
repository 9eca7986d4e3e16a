/**
 * The local agent engine (DESIGN.md 6.1): a deterministic stand-in for a language model on the embedded runtime,
 * behind the same streaming Model port as Bedrock, so the agent loop, gating, events and tests are shared.
 *
 * What it is: a planner over the tool catalogue. It reads only the user's latest prompt (never tool results or
 * research text, which are data), scores every tool by its cue words and by the sentence-embedding similarity of
 * the prompt to the tool's description, and takes the best as the goal. A goal that needs ids it does not have (a
 * PRD needs a recommendation, generation needs insights) is preceded by the read tool that finds them; arguments
 * come from the prompt and from earlier results. When the plan is done it writes its answer only from what the
 * tools returned: insight titles and ids, verbatim quotes, counts, the pending action waiting for approval.
 * What it is not: it does not understand the prompt beyond those cues and similarities, cannot reason across
 * results, and never invents a fact, a quote or an id.
 */
import type { CallUsage, ConversationTurn, ModelStreamEvent, StreamingModel, StreamRequest, ToolSpec, TurnContent } from "../ai/ports";
import { embedder } from "../ai/select";
import { dot } from "../ai/vectors";
import { TOOLS } from "./tools";
import type { Tool } from "./tools";

const DOCUMENT_TYPES: [RegExp, string][] = [
  [/\bprd\b|product requirements/i, "prd"],
  [/\buser stor(y|ies)\b/i, "user_story"],
  [/\brelease notes?\b/i, "release_notes"],
  [/\broadmap update\b/i, "roadmap_update"],
  [/\bmemo\b/i, "memo"],
  [/\bspec\b|specification/i, "spec"],
];

/** A tool call the plan makes: its name and how to build its input from the prompt and earlier results. */
interface Step {
  tool: string;
  input(prompt: string, results: Map<string, unknown>, attachments: string[]): Record<string, unknown> | null;
}

/** Reads that must come before a goal, because the goal needs ids they return. */
const PREREQUISITES: Record<string, string> = {
  draft_document: "list_recommendations",
  generate_recommendations: "list_insights",
  run_synthesis: "list_sources",
  update_recommendation_status: "list_recommendations",
};

type Rec = { id: string; title: string; status: string; priority_rank: number | null; impact_score: number | null };
type InsightBrief = { id: string; title: string; severity: string; frequency: number; insight_type: string; quotes: { text: string; source_id: string; speaker: string | null }[] };

const SEVERITY_RANK: Record<string, number> = { critical: 4, high: 3, medium: 2, low: 1 };

/** The recommendation a prompt is about: an accepted one first, then by rank and impact. */
function leadRecommendation(results: Map<string, unknown>, preferStatus?: string): Rec | undefined {
  const recs = (results.get("list_recommendations") as { recommendations?: Rec[] } | undefined)?.recommendations ?? [];
  const order = (r: Rec) => [r.status === (preferStatus ?? "accepted") ? 0 : r.status === "suggested" ? 1 : 2, r.priority_rank ?? 99, -(r.impact_score ?? 0)];
  return [...recs].sort((a, b) => {
    const [x, y] = [order(a), order(b)];
    return x[0] - y[0] || x[1] - y[1] || x[2] - y[2];
  })[0];
}

function quoted(prompt: string): string | undefined {
  return /["“]([^"”]{3,300})["”]/.exec(prompt)?.[1];
}

const STEPS: Record<string, Step["input"]> = {
  workspace_summary: () => ({}),
  search_insights: (prompt) => ({ query: prompt.slice(0, 1000), limit: 5 }),
  list_insights: () => ({ limit: 20 }),
  list_recommendations: () => ({ limit: 20 }),
  list_documents: () => ({ limit: 20 }),
  list_sources: () => ({ processing_status: "completed", limit: 50 }),
  read_source_text: (_p, _r, attachments) => (attachments[0] ? { source_id: attachments[0], start: 0, length: 4000 } : null),
  draft_document: (prompt, results) => {
    const type = DOCUMENT_TYPES.find(([re]) => re.test(prompt))?.[1] ?? "prd";
    const rec = leadRecommendation(results);
    return { document_type: type, ...(rec ? { recommendation_id: rec.id } : {}), user_instructions: prompt.slice(0, 5000) };
  },
  generate_recommendations: (_p, results) => {
    const insights = (results.get("list_insights") as { insights?: InsightBrief[] } | undefined)?.insights ?? [];
    const top = [...insights].sort((a, b) => (SEVERITY_RANK[b.severity] ?? 0) - (SEVERITY_RANK[a.severity] ?? 0) || b.frequency - a.frequency).slice(0, 10);
    return top.length ? { insight_ids: top.map((i) => i.id) } : null;
  },
  run_synthesis: (_p, results) => {
    const sources = (results.get("list_sources") as { sources?: { id: string }[] } | undefined)?.sources ?? [];
    return sources.length ? { source_ids: sources.slice(0, 20).map((s) => s.id) } : null;
  },
  update_recommendation_status: (prompt, results) => {
    const status = /\breject/i.test(prompt) ? "rejected" : /\bimplemented\b/i.test(prompt) ? "implemented" : /in progress/i.test(prompt) ? "in_progress" : "accepted";
    const rec = leadRecommendation(results, "suggested");
    return rec ? { recommendation_id: rec.id, status } : null;
  },
  create_insight: (prompt) => {
    const title = quoted(prompt);
    return title ? { insight_type: "feedback_theme", title, description: prompt.slice(0, 10_000), severity: "medium" } : null;
  },
};

/** Tools the local engine can plan (those whose input it knows how to build). */
const PLANNABLE = new Set(Object.keys(STEPS));

let descriptionVectors: Promise<Map<string, Float32Array>> | undefined;

/** Cue hits in the prompt: each cue found counts 1 (multi-word cues 1.5: they are more specific). */
function cueScore(prompt: string, tool: Tool): number {
  const p = prompt.toLowerCase();
  return tool.cues.reduce((sum, cue) => (p.includes(cue) ? sum + (cue.includes(" ") ? 1.5 : 1) : sum), 0);
}

/**
 * Choose the goal tool for a prompt: the highest cue score plus description similarity among the tools offered.
 * With no cue at all, the similarity alone decides among read tools only: a write is never chosen on similarity.
 */
async function chooseGoal(prompt: string, offered: ToolSpec[]): Promise<string> {
  // Every turn of an exchange asks again for the same prompt: the answer is the same, so embed the prompt once.
  const key = `${offered.map((o) => o.name).join(",")}\n${prompt}`;
  let goal = goals.get(key);
  if (!goal) {
    goal = scoreGoal(prompt, offered);
    goals.set(key, goal);
    if (goals.size > GOAL_CACHE_SIZE) goals.delete(goals.keys().next().value!);
    goal.catch(() => goals.delete(key));
  }
  return goal;
}

/** Goals of recent prompts (a prompt's exchange runs several turns); the oldest goes first when full. */
const goals = new Map<string, Promise<string>>();
const GOAL_CACHE_SIZE = 256;

async function scoreGoal(prompt: string, offered: ToolSpec[]): Promise<string> {
  const candidates = TOOLS.filter((t) => PLANNABLE.has(t.name) && offered.some((o) => o.name === t.name));
  if (candidates.length === 0) return "";
  const emb = await embedder();
  descriptionVectors ??= emb.embed(TOOLS.map((t) => t.description)).then((vs) => new Map(TOOLS.map((t, i) => [t.name, vs[i]!])));
  const [vectors, [promptVector]] = await Promise.all([descriptionVectors, emb.embed([prompt.slice(0, 2000)])]);
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
    return `From ${insights.length === 1 ? "one insight" : `${Math.min(5, insights.length)} of ${c.total ?? insights.length} insights`} in this workspace:\n\n${lines.join("\n")}`;
  }
  if (o.name === "workspace_summary") {
    return `${c.intro} (${c.source_count} sources, ${c.insight_count} insights, ${c.recommendation_count} recommendations, ${c.document_count} documents.)`;
  }
  if (o.name === "list_recommendations") {
    const recs: Rec[] = c.recommendations ?? [];
    return recs.length ? `Recommendations, by priority:\n\n${recs.slice(0, 7).map((r, n) => `${n + 1}. **${r.title}** (${r.status}) [recommendation ${r.id}]`).join("\n")}` : "This workspace has no recommendations yet.";
  }
  if (o.name === "list_documents") {
    const docs: { id: string; title: string; document_type: string; status: string }[] = c.documents ?? [];
    return docs.length ? `Documents:\n\n${docs.map((d) => `- **${d.title}** (${d.document_type}, ${d.status}) [document ${d.id}]`).join("\n")}` : "This workspace has no documents yet.";
  }
  if (o.name === "read_source_text") {
    const opening = String(c.text ?? "").split(/(?<=[.!?])\s+/).slice(0, 3).join(" ").slice(0, 600);
    return opening ? `**${c.title}** has ${c.total_chars} characters of text. It opens: "${opening}"` : `**${c.title}** has no extracted text yet (${c.processing_status}).`;
  }
  return NOTHING_FOUND;
}

const estimateTokens = (s: string) => Math.ceil(s.length / 4);

/** Deterministic local agent engine (see the file's header). Costs 0 USD; token counts are estimates (4 chars each). */
export class LocalAgentModel implements StreamingModel {
  readonly engine = "local";

  async *stream(req: StreamRequest): AsyncIterable<ModelStreamEvent> {
    const started = performance.now();
    req.signal?.throwIfAborted();
    const { prompt, calls, results, byCall } = exchange(req.messages);
    const attachments = attachmentsOf(req.system);
    // The plan is recomputed from the prompt on every turn (the same prompt always gives the same plan), and the next
    // step is the first not yet run. Tool results only fill arguments; they never change the plan.
    const goal = attachments.length && /\b(attach|this (file|source|document)|summari[sz]e)/i.test(prompt) ? "read_source_text" : await chooseGoal(prompt, req.tools);
    const plan = goal ? [...(PREREQUISITES[goal] ? [PREREQUISITES[goal]!] : []), goal] : [];
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
    if (next) {
      const input = STEPS[next]!(prompt, results, attachments);
      if (input) {
        const call = { type: "tool_call" as const, id: `local-${calls.length + 1}`, name: next, input };
        yield call;
        yield { type: "stop", reason: "tool_use", usage: usage(JSON.stringify(input)) };
        return;
      }
    }
    // Done, failed, or the next step lacks what it needs: answer from the last result (the goal's, when it ran).
    const answer = composeAnswer(prompt, byCall.at(-1));
    for (const chunk of answer.match(/\S+\s*/g) ?? []) {
      req.signal?.throwIfAborted();
      yield { type: "text", delta: chunk };
    }
    yield { type: "stop", reason: "end_turn", usage: usage(answer) };
  }
}
