import { randomUUID } from "node:crypto";
import { expect } from "vitest";
import { idFor } from "../../core/db/agent-write";
import { db } from "../../core/db/service";
import type { PendingActionItem } from "../../core/pending-action";
import { waitFor } from "./multipart";

/**
 * One case per gated tool (core/agent/tools/writes.ts), shared by the exactly-once tests over HTTP
 * (test/http/pending-action-execution.test.ts) and the kill -9 crash test (test/flows/pending-action-crash.test.ts):
 * `setup` prepares the tool's target through the API and returns the tool input; `verify` asserts that after the
 * action ended executed the workspace holds exactly what ONE execution writes, and that every item it wrote carries
 * the action's id (DESIGN.md 6.2).
 */

/** The API as a test reaches it: in-process dispatch (http tests) or fetch against a runtime (crash tests). */
export type Api = (method: string, path: string, body?: unknown) => Promise<{ status: number; body: any }>;

export interface CaseEnv {
  api: Api;
  workspaceId: string;
  /** A completed research source of the workspace (run_synthesis reads it). */
  sourceId?: string;
}

export interface ToolCase {
  tool: string;
  setup(env: CaseEnv): Promise<{ input: Record<string, unknown>; before?: any }>;
  verify(env: CaseEnv, actionId: string, row: PendingActionItem, prepared: { input: Record<string, unknown>; before?: any }): Promise<void>;
}

const ok = async (p: Promise<{ status: number; body: any }>, status: number) => {
  const res = await p;
  expect(res.status, JSON.stringify(res.body)).toBe(status);
  return res.body;
};

const short = () => randomUUID().slice(0, 6);

async function insightOf(env: CaseEnv, title = `Target insight ${short()}`): Promise<string> {
  const body = await ok(env.api("POST", "/api/insights", { workspace_id: env.workspaceId, insight_type: "pain_point", title, description: "Sign-in takes too long on Android." }), 201);
  return body.id as string;
}

async function recommendationOf(env: CaseEnv, insightIds: string[] = []): Promise<string> {
  const body = await ok(
    env.api("POST", "/api/recommendations", { workspace_id: env.workspaceId, title: `Faster sign-in ${short()}`, description: "Cache the session token.", addresses_insight_ids: insightIds }),
    201,
  );
  return body.id as string;
}

async function documentOf(env: CaseEnv): Promise<string> {
  const body = await ok(env.api("POST", "/api/documents", { workspace_id: env.workspaceId, document_type: "prd", title: `Sign-in PRD ${short()}`, content: "# Problem\n\nSign-in is slow." }), 201);
  return body.id as string;
}

const insights = async (workspaceId: string) =>
  (await db().entities.insight.query.byWorkspace({ workspace_id: workspaceId }).go({ pages: "all", consistent: true })).data;
const recommendations = async (workspaceId: string) =>
  (await db().entities.recommendation.query.byWorkspace({ workspace_id: workspaceId }).go({ pages: "all", consistent: true })).data;
const documents = async (workspaceId: string) =>
  (await db().entities.document.query.byWorkspace({ workspace_id: workspaceId }).go({ pages: "all", consistent: true })).data;
const taggedIds = (items: { id: string; pending_action_id?: string }[], actionId: string) =>
  items.filter((i) => i.pending_action_id === actionId).map((i) => i.id).sort();
/** The first `n` ids an action derives under `prefix#<i>`. */
const derived = (actionId: string, prefix: string, n: number) => Array.from({ length: n }, (_, i) => idFor(actionId, `${prefix}#${i}`));

export const TOOL_CASES: ToolCase[] = [
  {
    tool: "create_insight",
    async setup() {
      return { input: { insight_type: "pain_point", title: `Crash-proof finding ${short()}`, description: "Users lose their work when the app restarts." } };
    },
    async verify(env, actionId, row, { input }) {
      const id = idFor(actionId, "insight");
      expect(row.result).toEqual({ insight_id: id, title: input.title });
      expect(taggedIds(await insights(env.workspaceId), actionId)).toEqual([id]);
    },
  },
  {
    tool: "update_insight",
    async setup(env) {
      const insightId = await insightOf(env);
      return { input: { insight_id: insightId, title: `Renamed by the agent ${short()}`, severity: "critical" } };
    },
    async verify(env, actionId, row, { input }) {
      expect(row.result).toEqual({ insight_id: input.insight_id, title: input.title });
      const { data } = await db().entities.insight.get({ workspace_id: env.workspaceId, id: input.insight_id as string }).go({ consistent: true });
      expect(data).toMatchObject({ title: input.title, severity: "critical", pending_action_id: actionId });
    },
  },
  {
    tool: "create_recommendation",
    async setup() {
      return { input: { title: `Offline drafts ${short()}`, description: "Keep drafts on the device." } };
    },
    async verify(env, actionId, row, { input }) {
      const id = idFor(actionId, "recommendation");
      expect(row.result).toEqual({ recommendation_id: id, title: input.title });
      expect(taggedIds(await recommendations(env.workspaceId), actionId)).toEqual([id]);
    },
  },
  {
    tool: "update_recommendation_status",
    async setup(env) {
      return { input: { recommendation_id: await recommendationOf(env), status: "accepted", user_notes: "Approved in planning" } };
    },
    async verify(env, actionId, row, { input }) {
      expect(row.result).toEqual({ recommendation_id: input.recommendation_id, status: "accepted" });
      const { data } = await db().entities.recommendation.get({ workspace_id: env.workspaceId, id: input.recommendation_id as string }).go({ consistent: true });
      expect(data).toMatchObject({ status: "accepted", user_notes: "Approved in planning", pending_action_id: actionId });
    },
  },
  {
    tool: "draft_document",
    async setup(env) {
      const insightId = await insightOf(env);
      return { input: { document_type: "prd", recommendation_id: await recommendationOf(env, [insightId]) } };
    },
    async verify(env, actionId, row) {
      const id = idFor(actionId, "document");
      expect(row.result).toMatchObject({ document_id: id, document_type: "prd", status: "draft" });
      expect(taggedIds(await documents(env.workspaceId), actionId)).toEqual([id]);
      // One document and one revision, both tagged: a replay drafted nothing twice.
      const { data: revisions } = await db().entities.revision.query.byDocument({ workspace_id: env.workspaceId, document_id: id }).go({ pages: "all", consistent: true });
      expect(revisions.map((r) => ({ n: r.revision_number, type: r.change_type, tag: r.pending_action_id }))).toEqual([{ n: 1, type: "ai_draft", tag: actionId }]);
    },
  },
  {
    tool: "update_document",
    async setup(env) {
      const documentId = await documentOf(env);
      const { data } = await db().entities.document.get({ workspace_id: env.workspaceId, id: documentId }).go({ consistent: true });
      return { input: { document_id: documentId, title: `Revised PRD ${short()}`, content: "# Problem\n\nSign-in is slow on Android 14." }, before: { version: data!.version } };
    },
    async verify(env, actionId, row, { input, before }) {
      expect(row.result).toEqual({ document_id: input.document_id, title: input.title, version: before.version + 1 });
      const { data } = await db().entities.document.get({ workspace_id: env.workspaceId, id: input.document_id as string }).go({ consistent: true });
      // Exactly one version step: the edit was applied once.
      expect(data).toMatchObject({ title: input.title, content: input.content, version: before.version + 1, pending_action_id: actionId });
    },
  },
  {
    tool: "update_block",
    async setup(env) {
      const documentId = await documentOf(env);
      const block = await ok(env.api("POST", `/api/documents/${documentId}/blocks`, { block_type: "free_text", title: "Notes", content: { markdown: "Old notes." } }), 201);
      return { input: { document_id: documentId, block_id: block.id, title: "Open questions", content: { markdown: "Does the cache survive a reinstall?" } } };
    },
    async verify(env, actionId, row, { input }) {
      expect(row.result).toEqual({ block_id: input.block_id, block_type: "free_text", title: "Open questions" });
      const { data } = await db()
        .entities.block.get({ workspace_id: env.workspaceId, document_id: input.document_id as string, id: input.block_id as string })
        .go({ consistent: true });
      expect(data).toMatchObject({ title: "Open questions", content: { markdown: "Does the cache survive a reinstall?" }, pending_action_id: actionId });
    },
  },
  {
    tool: "run_synthesis",
    async setup(env) {
      if (!env.sourceId) throw new Error("run_synthesis needs a completed source");
      return { input: { source_ids: [env.sourceId] } };
    },
    async verify(env, actionId, row) {
      const result = row.result as { insight_ids: string[]; created_ids: string[]; summary: string };
      expect(result.summary.length).toBeGreaterThan(0);
      expect(result.insight_ids.length).toBeGreaterThan(0);
      const all = await insights(env.workspaceId);
      // Every insight it wrote (created or merged into) carries its id, and nothing else does.
      expect(taggedIds(all, actionId)).toEqual([...result.insight_ids].sort());
      // It created exactly the insights it reports, under its derived ids, and no others (a replay made none extra).
      expect(result.created_ids).toEqual(derived(actionId, "insight", result.created_ids.length));
      const mine = new Set(derived(actionId, "insight", 200));
      expect(all.filter((i) => mine.has(i.id)).map((i) => i.id).sort()).toEqual([...result.created_ids].sort());
      // The workspace's synthesis lock is not left held by it. (A second run of the action may still be going: one
      // whose lease expired under a long synthesis, so another executor took the row over. It cannot write, as its
      // settlement is refused, and releases the lock when it ends.)
      await waitFor(async () => {
        const { data: lock } = await db().entities.guard.get({ scope: `ws#${env.workspaceId}`, name: "synthesis" }).go({ consistent: true });
        return !(lock?.owner ?? "").includes(actionId);
      }, 60_000, 200);
    },
  },
  {
    tool: "generate_recommendations",
    async setup(env) {
      return { input: { insight_ids: [await insightOf(env, `Slow sign-in ${short()}`), await insightOf(env, `Lost drafts ${short()}`)] } };
    },
    async verify(env, actionId, row) {
      const result = row.result as { recommendation_ids: string[]; count: number; prioritization_summary: string };
      expect(result.count).toBeGreaterThanOrEqual(3);
      expect(result.recommendation_ids).toEqual(derived(actionId, "recommendation", result.count));
      expect(result.prioritization_summary.length).toBeGreaterThan(0);
      const all = await recommendations(env.workspaceId);
      expect(taggedIds(all, actionId)).toEqual([...result.recommendation_ids].sort());
      // No recommendation of an earlier run left behind under the ids after the set (the set is at most 7).
      const mine = new Set(derived(actionId, "recommendation", 7));
      expect(all.filter((r) => mine.has(r.id)).length).toBe(result.count);
    },
  },
];

/** The case of a tool. */
export const toolCase = (tool: string): ToolCase => TOOL_CASES.find((c) => c.tool === tool)!;
