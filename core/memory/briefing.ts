/**
 * The `briefing` event (spec 02 Events: "conversation-resumption context: delta, active counts, memory"): sent once,
 * before the model, when a conversation created with `resumed_from` gets its first message. What changed in the
 * workspace since the prior conversation's last message, what is active now, and the user's memories most relevant to
 * the prompt.
 */
import { db } from "../db/service";
import { documentsOf } from "../document/listing";
import { memoryAvailable } from "./settings";
import { rank, toMemoryItem } from "./index";
import type { MemoryItem } from "./schema";

/** Items of each kind listed by title in a delta at most (the count is always whole). */
export const DELTA_TITLES = 10;
/** Memories in a briefing at most. */
export const BRIEFING_MEMORIES = 5;

interface Titled {
  id: string;
  title: string;
}
/** New items of one kind since the prior conversation: how many, and the newest DELTA_TITLES by title. */
export interface DeltaKind {
  count: number;
  items: Titled[];
}

/** The `briefing` event's payload. */
export interface Briefing {
  conversation_id: string;
  resumed_from: string;
  /** The prior conversation's last message (its creation when it had none); null when it is gone. */
  since: string | null;
  /** What changed since then; null when the prior conversation is gone (nothing to measure from). */
  delta: {
    sources: DeltaKind;
    insights: DeltaKind;
    recommendations: DeltaKind;
    documents: DeltaKind;
    /** Older recommendations whose status changed since. */
    recommendation_status_changes: (Titled & { status: string })[];
    /** Older documents edited since. */
    documents_updated: (Titled & { status: string })[];
  } | null;
  /**
   * Active now: completed research sources, insights not archived, recommendations suggested / accepted / in
   * progress, documents not yet published, pending actions waiting for approval.
   */
  active: { sources: number; insights: number; recommendations: number; documents: number; pending_actions: number };
  /** The user's current facts most relevant to the prompt (spec 01 Memory items). */
  memory: MemoryItem[];
  /** The same in one paragraph, for a person (and for the model's system prompt). */
  summary: string;
}

const newest = <T extends { created_at: string }>(xs: T[]) => [...xs].sort((a, b) => b.created_at.localeCompare(a.created_at));
const kindOf = <T extends { id: string; title: string; created_at: string }>(xs: T[], since: string): DeltaKind => {
  const added = newest(xs.filter((x) => x.created_at > since));
  return { count: added.length, items: added.slice(0, DELTA_TITLES).map((x) => ({ id: x.id, title: x.title })) };
};
const plural = (n: number, one: string, many = `${one}s`) => `${n} ${n === 1 ? one : many}`;

/**
 * Compose the briefing of a resumed conversation.
 * @param input the run's user, workspace, the new conversation, the one it resumes and the prompt (for the memories)
 * @returns the event's payload (see `Briefing`); its memory list is empty when memory is off or unavailable
 */
export async function briefingFor(input: { userId: string; workspaceId: string; conversationId: string; resumedFrom: string; prompt: string }): Promise<Briefing> {
  const ws = { workspace_id: input.workspaceId };
  const [prior, sources, insights, recommendations, documents, pending] = await Promise.all([
    db().entities.conversation.get({ workspace_id: input.workspaceId, id: input.resumedFrom }).go({ consistent: true }),
    db().entities.researchSource.query.byWorkspace(ws).go({ pages: "all", attributes: ["id", "title", "created_at", "processing_status"] }),
    db().entities.insight.query.byWorkspace(ws).go({ pages: "all", attributes: ["id", "title", "created_at", "is_archived"] }),
    db().entities.recommendation.query.byWorkspace(ws).go({ pages: "all", attributes: ["id", "title", "created_at", "status", "status_changed_at"] }),
    documentsOf(input.workspaceId, { attributes: ["id", "title", "created_at", "updated_at", "status"] }).then((data) => ({ data })),
    db().entities.pendingAction.query.byWorkspace(ws).go({ pages: "all", attributes: ["id", "status"] }),
  ]);
  const conv = prior.data && prior.data.user_id === input.userId ? prior.data : null;
  const since = conv ? (conv.last_message_at ?? conv.created_at) : null;
  const delta = since
    ? {
        sources: kindOf(sources.data, since),
        insights: kindOf(insights.data, since),
        recommendations: kindOf(recommendations.data, since),
        documents: kindOf(documents.data, since),
        recommendation_status_changes: recommendations.data
          .filter((r) => r.created_at <= since && (r.status_changed_at ?? "") > since)
          .slice(0, DELTA_TITLES)
          .map((r) => ({ id: r.id, title: r.title, status: r.status })),
        documents_updated: documents.data
          .filter((d) => d.created_at <= since && d.updated_at > since)
          .slice(0, DELTA_TITLES)
          .map((d) => ({ id: d.id, title: d.title, status: d.status })),
      }
    : null;
  const active = {
    sources: sources.data.filter((s) => s.processing_status === "completed").length,
    insights: insights.data.filter((i) => !i.is_archived).length,
    recommendations: recommendations.data.filter((r) => r.status === "suggested" || r.status === "accepted" || r.status === "in_progress").length,
    documents: documents.data.filter((d) => d.status !== "published").length,
    pending_actions: pending.data.filter((p) => p.status === "pending").length,
  };
  let memory: MemoryItem[] = [];
  if (memoryAvailable()) {
    const ranked = await rank(input.userId, [input.workspaceId], input.prompt);
    memory = (ranked?.hits ?? []).slice(0, BRIEFING_MEMORIES).map(({ fact, score }) => toMemoryItem(fact, score));
  }
  return { conversation_id: input.conversationId, resumed_from: input.resumedFrom, since, delta, active, memory, summary: summarize(since, delta, active, memory.length) };
}

function summarize(since: string | null, delta: Briefing["delta"], active: Briefing["active"], memories: number): string {
  const parts: string[] = [];
  if (delta && since) {
    const changes = [
      delta.sources.count && plural(delta.sources.count, "new research source"),
      delta.insights.count && plural(delta.insights.count, "new insight"),
      delta.recommendations.count && plural(delta.recommendations.count, "new recommendation"),
      delta.documents.count && plural(delta.documents.count, "new document"),
      delta.recommendation_status_changes.length && plural(delta.recommendation_status_changes.length, "recommendation status change"),
      delta.documents_updated.length && plural(delta.documents_updated.length, "document edited", "documents edited"),
    ].filter(Boolean);
    parts.push(`Since the previous conversation (${since.slice(0, 16).replace("T", " ")} UTC): ${changes.length ? changes.join(", ") : "nothing new in the workspace"}.`);
  } else {
    parts.push("The previous conversation is no longer available, so changes since it cannot be measured.");
  }
  parts.push(
    `Active now: ${plural(active.sources, "completed research source")}, ${plural(active.insights, "insight")}, ${plural(active.recommendations, "open recommendation")}, ${plural(active.documents, "unpublished document")}, ${plural(active.pending_actions, "pending action")} awaiting approval.`,
  );
  if (memories) parts.push(`${plural(memories, "remembered fact")} relevant to this request.`);
  return parts.join(" ");
}
