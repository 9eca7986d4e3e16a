import { isConditionalFailure } from "../db/errors";
import { randomUUID } from "node:crypto";
import type { EntityItem } from "electrodb";
import { AppError, Errors } from "../error";
import { createWriteTransaction } from "electrodb";
import { db } from "../db/service";
import type { AgentWrite } from "../db/agent-write";
import { deleteKeys, partitionKeys } from "../db/partition";
import { requireMember, partitionOf } from "../workspace";
import { requireActiveSubscription } from "../billing";
import { assertTransition } from "./status";
import { diffStats } from "./diff";
import type { DocumentEntity, RevisionEntity } from "./document.entity";
import type {
  ChangeType,
  CreateDocumentInput,
  Document as DocumentView,
  ListDocumentsQuery,
  Revision as RevisionView,
  StatusInput,
  UpdateDocumentInput,
} from "./schema";

export * from "./schema";

export type DocumentItem = EntityItem<DocumentEntity>;
export type RevisionItem = EntityItem<RevisionEntity>;

export const toView = (d: DocumentItem): DocumentView => ({
  id: d.id,
  workspace_id: d.workspace_id,
  document_type: d.document_type,
  title: d.title,
  content: d.content,
  status: d.status,
  version: d.version,
  last_revision: d.last_revision,
  related_recommendation_id: d.related_recommendation_id ?? null,
  related_insight_ids: d.related_insight_ids ?? [],
  metadata: (d.metadata as Record<string, unknown>) ?? {},
  created_by: d.created_by,
  created_at: d.created_at,
  updated_at: d.updated_at,
});

export const revisionView = (r: RevisionItem): RevisionView => ({
  id: r.id,
  document_id: r.document_id,
  revision_number: r.revision_number,
  title: r.title,
  content: r.content,
  status_at_revision: r.status_at_revision as RevisionView["status_at_revision"],
  change_type: r.change_type as ChangeType,
  change_summary: r.change_summary ?? null,
  changed_by: r.changed_by,
  word_count: r.word_count,
  created_at: r.created_at,
});

export const revisionSummary = (r: RevisionItem) => {
  const { content, ...rest } = revisionView(r);
  void content;
  return rest;
};

/** Words in Markdown text, as a reader counts them (whitespace-separated runs containing a letter or digit). */
export const wordCount = (text: string): number => text.split(/\s+/).filter((w) => /[\p{L}\p{N}]/u.test(w)).length;
const revisionKey = (n: number) => String(n).padStart(6, "0");

/**
 * Resolve a document fetched by id alone and check membership of its workspace.
 * @throws AppError NOT_FOUND (404), FORBIDDEN (403).
 */
export async function requireDocument(userId: string, documentId: string): Promise<DocumentItem> {
  const { data } = await db().entities.document.query.byId({ id: documentId }).go({ limit: 1 });
  const found = data[0];
  if (!found) throw Errors.notFound("Document");
  await requireMember(userId, found.workspace_id);
  return reload(found.workspace_id, documentId);
}

/** A document by workspace and id (strongly consistent), for callers that have checked membership. @throws NOT_FOUND. */
export async function reload(workspaceId: string, documentId: string): Promise<DocumentItem> {
  const { data } = await db().entities.document.get({ workspace_id: workspaceId, id: documentId }).go({ consistent: true });
  if (!data) throw Errors.notFound("Document");
  return data;
}

/** A revision item for `doc` at number `n` (immutable once written). */
function revisionItem(doc: DocumentItem, n: number, changeType: ChangeType, userId: string, summary?: string, snapshot?: { title: string; content: string }) {
  const title = snapshot?.title ?? doc.title;
  const content = snapshot?.content ?? doc.content;
  return {
    id: randomUUID(),
    workspace_id: doc.workspace_id,
    document_id: doc.id,
    revision_number: n,
    revision_key: revisionKey(n),
    title,
    content,
    status_at_revision: doc.status,
    change_type: changeType,
    ...(summary ? { change_summary: summary } : {}),
    changed_by: userId,
    word_count: wordCount(content),
  };
}

const canceledConflict = () => new AppError("CONFLICT", "The document changed meanwhile; reload and retry");

/**
 * Create a document with its first revision ("created", or "ai_draft" for drafts) in one transaction.
 * Needs an active subscription (spec 01 `POST /api/documents`).
 */
export async function create(
  userId: string,
  input: CreateDocumentInput,
  opts: { changeType?: ChangeType; metadata?: Record<string, unknown> } & AgentWrite = {},
): Promise<DocumentView> {
  await requireMember(userId, input.workspace_id);
  await requireActiveSubscription(input.workspace_id);
  const doc = {
    id: opts.id ?? randomUUID(),
    ...(opts.pendingActionId ? { pending_action_id: opts.pendingActionId } : {}),
    workspace_id: input.workspace_id,
    document_type: input.document_type,
    title: input.title,
    content: input.content,
    status: "draft" as const,
    version: 1,
    last_revision: 1,
    related_recommendation_id: input.related_recommendation_id,
    related_insight_ids: input.related_insight_ids,
    metadata: opts.metadata ?? {},
    created_by: userId,
  };
  const now = new Date().toISOString();
  const rev = revisionItem({ ...doc, created_at: now, updated_at: now } as DocumentItem, 1, opts.changeType ?? "created", userId);
  const result = await createWriteTransaction(db().pick("document", "revision"), ({ document, revision }) => [document.create(doc).commit(), revision.create(rev).commit()]).go();
  if (result.canceled) {
    // Under an id derived from a pending action, a cancelled create means an earlier run of it wrote the document.
    if (opts.id) {
      const { data } = await db().entities.document.get({ workspace_id: input.workspace_id, id: doc.id }).go({ consistent: true });
      if (data) return toView(data);
    }
    throw canceledConflict();
  }
  return toView(await reload(input.workspace_id, doc.id));
}

/** `GET /api/documents`: filtered, most recently updated first, paginated (limit 200, max 500). */
export async function list(userId: string, q: ListDocumentsQuery): Promise<{ documents: DocumentView[]; total: number }> {
  await requireMember(userId, q.workspace_id);
  const { data } = await db().entities.document.query.byWorkspace({ workspace_id: q.workspace_id }).go({ pages: "all", consistent: true });
  const matching = data
    .filter((d) => (!q.document_type || d.document_type === q.document_type) && (!q.status || d.status === q.status))
    .sort((a, b) => b.updated_at.localeCompare(a.updated_at) || a.id.localeCompare(b.id));
  return { documents: matching.slice(q.offset, q.offset + q.limit).map(toView), total: matching.length };
}

export async function get(userId: string, documentId: string): Promise<DocumentView> {
  return toView(await requireDocument(userId, documentId));
}

/**
 * `PATCH /api/documents/{id}`: title, content and/or metadata (shallow-merged; null removes a key). Any status,
 * published included, stays editable (spec 01). `version` goes up when title or content change.
 */
export async function update(userId: string, documentId: string, input: UpdateDocumentInput): Promise<DocumentView> {
  const doc = await requireDocument(userId, documentId);
  const textChanged = (input.title !== undefined && input.title !== doc.title) || (input.content !== undefined && input.content !== doc.content);
  const metadata = input.metadata
    ? Object.fromEntries(
        Object.entries({ ...((doc.metadata as Record<string, unknown>) ?? {}), ...input.metadata }).filter(([, v]) => v !== null),
      )
    : undefined;
  try {
    const { data } = await db()
      .entities.document.patch({ workspace_id: doc.workspace_id, id: doc.id })
      .set({
        ...(input.title !== undefined ? { title: input.title } : {}),
        ...(input.content !== undefined ? { content: input.content } : {}),
        ...(metadata ? { metadata } : {}),
        ...(textChanged ? { version: doc.version + 1 } : {}),
      })
      .where((attr, op) => op.eq(attr.version, doc.version))
      .go({ response: "all_new" });
    return toView(data as DocumentItem);
  } catch (err) {
    if (isConditionalFailure(err)) throw canceledConflict();
    throw err;
  }
}

/** `DELETE /api/documents/{id}`: the document with its blocks, revisions and annotations. */
export async function remove(userId: string, documentId: string): Promise<void> {
  const doc = await requireDocument(userId, documentId);
  const keys = await partitionKeys(partitionOf(doc.workspace_id), `document#${doc.id}`);
  // Children first, the document last, so a failure leaves a document that can be deleted again.
  const own = `document#${doc.id}`;
  await deleteKeys(keys.filter((k) => k.sk !== own));
  await deleteKeys(keys.filter((k) => k.sk === own));
}

/**
 * Save the current title and content as the next immutable revision (spec 01 `POST .../versions`).
 * The document's `last_revision` moves in the same transaction, guarded by its old value, so two concurrent
 * saves cannot take the same number.
 */
export async function saveRevision(userId: string, documentId: string, summary: string | undefined, changeType: ChangeType = "manual_save") {
  const doc = await requireDocument(userId, documentId);
  const n = doc.last_revision + 1;
  const rev = revisionItem(doc, n, changeType, userId, summary);
  const result = await createWriteTransaction(db().pick("document", "revision"), ({ document, revision }) => [
    document
      .patch({ workspace_id: doc.workspace_id, id: doc.id })
      .set({ last_revision: n })
      .where((attr, op) => op.eq(attr.last_revision, doc.last_revision))
      .commit(),
    revision.create(rev).commit(),
  ]).go();
  if (result.canceled) throw canceledConflict();
  return revisionView(await getRevisionByNumber(doc, n));
}

async function getRevisionByNumber(doc: DocumentItem, n: number): Promise<RevisionItem> {
  const { data } = await db()
    .entities.revision.get({ workspace_id: doc.workspace_id, document_id: doc.id, revision_key: revisionKey(n) })
    .go({ consistent: true });
  if (!data) throw new AppError("NOT_FOUND", `Revision ${n} of this document not found`);
  return data;
}

/** `GET .../versions`: newest first (limit default 50, max 100), without content. */
export async function listRevisions(userId: string, documentId: string, limit: number) {
  const doc = await requireDocument(userId, documentId);
  const { data } = await db()
    .entities.revision.query.byDocument({ workspace_id: doc.workspace_id, document_id: doc.id })
    .go({ order: "desc", limit, consistent: true });
  return { revisions: data.map(revisionSummary), total: doc.last_revision };
}

async function requireRevision(doc: DocumentItem, revisionId: string): Promise<RevisionItem> {
  const { data } = await db().entities.revision.query.byId({ id: revisionId }).go({ limit: 1 });
  const found = data[0];
  if (!found || found.document_id !== doc.id) throw Errors.notFound("Revision");
  return getRevisionByNumber(doc, found.revision_number);
}

/** `GET .../versions/{revision_id}`: one revision with its full content. */
export async function getRevision(userId: string, documentId: string, revisionId: string): Promise<RevisionView> {
  const doc = await requireDocument(userId, documentId);
  return revisionView(await requireRevision(doc, revisionId));
}

/** `GET .../diff?from_revision&to_revision`: line-level diff of two revision numbers. */
export async function diff(userId: string, documentId: string, from: number, to: number) {
  const doc = await requireDocument(userId, documentId);
  const [a, b] = await Promise.all([getRevisionByNumber(doc, from), getRevisionByNumber(doc, to)]);
  return {
    document_id: doc.id,
    from_revision: from,
    to_revision: to,
    from_content: a.content,
    to_content: b.content,
    diff_stats: diffStats(a.content, b.content),
  };
}

/**
 * `POST .../versions/{revision_id}/restore`: the current state is saved (pre_restore), the document takes the
 * revision's title and content, and the result is saved (restore) — all in one transaction.
 */
export async function restore(userId: string, documentId: string, revisionId: string, summary: string | undefined) {
  const doc = await requireDocument(userId, documentId);
  const target = await requireRevision(doc, revisionId);
  const n = doc.last_revision;
  const note = summary ?? `Restored revision ${target.revision_number}`;
  const before = revisionItem(doc, n + 1, "pre_restore", userId, `Before restoring revision ${target.revision_number}`);
  const after = revisionItem(doc, n + 2, "restore", userId, note, { title: target.title, content: target.content });
  const result = await createWriteTransaction(db().pick("document", "revision"), ({ document, revision }) => [
    document
      .patch({ workspace_id: doc.workspace_id, id: doc.id })
      .set({ title: target.title, content: target.content, last_revision: n + 2, version: doc.version + 1 })
      .where((attr, op) => `${op.eq(attr.last_revision, n)} AND ${op.eq(attr.version, doc.version)}`)
      .commit(),
    revision.create(before).commit(),
    revision.create(after).commit(),
  ]).go();
  if (result.canceled) throw canceledConflict();
  const fresh = await reload(doc.workspace_id, doc.id);
  const [b, a] = await Promise.all([getRevisionByNumber(fresh, n + 1), getRevisionByNumber(fresh, n + 2)]);
  return { document: toView(fresh), before_revision: revisionSummary(b), after_revision: revisionSummary(a) };
}

/**
 * `POST .../status`: move through the document table (draft -> review -> approved -> published; review and
 * approved can go back to draft; published is terminal). The change is saved as a status_change revision in the
 * same transaction.
 * @throws AppError INVALID_TRANSITION (422 with valid_transitions); CONFLICT (409).
 */
export async function changeStatus(userId: string, documentId: string, input: StatusInput): Promise<DocumentView> {
  const doc = await requireDocument(userId, documentId);
  assertTransition(doc.status, input.target_status);
  const n = doc.last_revision + 1;
  const rev = revisionItem({ ...doc, status: input.target_status }, n, "status_change", userId, input.change_summary ?? `${doc.status} -> ${input.target_status}`);
  const result = await createWriteTransaction(db().pick("document", "revision"), ({ document, revision }) => [
    document
      .patch({ workspace_id: doc.workspace_id, id: doc.id })
      .set({ status: input.target_status, last_revision: n })
      .where((attr, op) => `${op.eq(attr.status, doc.status)} AND ${op.eq(attr.last_revision, doc.last_revision)}`)
      .commit(),
    revision.create(rev).commit(),
  ]).go();
  if (result.canceled) throw canceledConflict();
  return toView(await reload(doc.workspace_id, doc.id));
}
