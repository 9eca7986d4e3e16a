import { isConditionalFailure } from "../db/errors";
import { randomUUID } from "node:crypto";
import { LIST_RESPONSE_BYTES, wireBytes } from "../response-size";
import type { EntityItem } from "electrodb";
import { AppError, Errors } from "../error";
import { createWriteTransaction } from "electrodb";
import { COUNTED_TRIES, documentCounter } from "../billing/counters";
import { db } from "../db/service";
import { getAll } from "../db/bulk";
import { asWrite, commitWrites, tagOf, type AgentWrite } from "../db/agent-write";
import { deleteKeys, partitionKeys } from "../db/partition";
import { requireMember, requireResourceById, partitionOf } from "../workspace";
import { requireActiveSubscription } from "../billing";
import { assertTransition } from "./status";
import { diffStats, fitDiffTexts } from "./diff";
import { assertJsonObject } from "../json-object";
import { documentsOf } from "./listing";
import { beginDocumentDeletion, finishDocumentDeletion } from "./deletion";
import {
  discardContent,
  documentContentKey,
  documentPrefix,
  readContent,
  revisionContentKey,
  sameContent,
  storeContent,
  type StoredContent,
} from "./content";
import type { DocumentEntity, RevisionEntity } from "./document.entity";
import {
  METADATA_BOUNDS,
  type ChangeType,
  type CreateDocumentInput,
  type Document as DocumentView,
  type ListDocumentsQuery,
  type Revision as RevisionView,
  type StatusInput,
  type UpdateDocumentInput,
} from "./schema";

export * from "./schema";

export type DocumentItem = EntityItem<DocumentEntity>;
export type RevisionItem = EntityItem<RevisionEntity>;

/**
 * The API view of a document item. `content` is the document's text when the caller has it (read with
 * {@link view} otherwise); an item whose text is stored beside it cannot be viewed without it.
 * @throws AppError INVARIANT_VIOLATION when the item's text is stored beside it and `content` is not given.
 */
export const toView = (d: DocumentItem, content?: string): DocumentView => ({
  id: d.id,
  workspace_id: d.workspace_id,
  document_type: d.document_type,
  title: d.title,
  content: knownContent(d, content),
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

/** The API view of a revision item; `content` as for {@link toView}. */
export const revisionView = (r: RevisionItem, content?: string): RevisionView => ({
  ...revisionSummary(r),
  content: knownContent(r, content),
});

/** A revision without its content (the versions list). */
export const revisionSummary = (r: RevisionItem): Omit<RevisionView, "content"> => ({
  id: r.id,
  document_id: r.document_id,
  revision_number: r.revision_number,
  title: r.title,
  status_at_revision: r.status_at_revision as RevisionView["status_at_revision"],
  change_type: r.change_type as ChangeType,
  change_summary: r.change_summary ?? null,
  changed_by: r.changed_by,
  word_count: r.word_count,
  created_at: r.created_at,
});

function knownContent(item: StoredContent, content: string | undefined): string {
  if (content !== undefined) return content;
  if (item.content_ref) throw new AppError("INVARIANT_VIOLATION", "This text is stored beside its item and was not read");
  return item.content;
}

/** Words in Markdown text, as a reader counts them (whitespace-separated runs containing a letter or digit). */
export const wordCount = (text: string): number => text.split(/\s+/).filter((w) => /[\p{L}\p{N}]/u.test(w)).length;
const revisionKey = (n: number) => String(n).padStart(6, "0");

/**
 * Resolve a document fetched by id alone and check membership of its workspace.
 * @throws AppError NOT_FOUND (404), also when the caller is not a member of its workspace (its existence is not revealed).
 */
export async function requireDocument(userId: string, documentId: string): Promise<DocumentItem> {
  // One round trip once the container knows the id's workspace (core/workspace requireResourceById).
  return requireResourceById<DocumentItem>(userId, {
    kind: "document",
    id: documentId,
    what: "Document",
    entity: db().entities.document,
    locate: async () => {
      const { data } = await db().entities.document.query.byId({ id: documentId }).go({ limit: 1, attributes: ["workspace_id"] });
      return data[0] && { workspace_id: data[0].workspace_id, id: documentId };
    },
  });
}

/** A document by workspace and id (strongly consistent), for callers that have checked membership. @throws NOT_FOUND. */
export async function reload(workspaceId: string, documentId: string): Promise<DocumentItem> {
  const { data } = await db().entities.document.get({ workspace_id: workspaceId, id: documentId }).go({ consistent: true });
  if (!data) throw Errors.notFound("Document");
  return data;
}

/**
 * A document item with its text, read from the bucket when it is stored beside the item. An edit that committed
 * after `doc` was read may have removed the object `doc` points at; then the item is read again, and the returned
 * item is that newer one.
 * @throws AppError NOT_FOUND when the document was deleted meanwhile; INVARIANT_VIOLATION when the current item's
 *   object is missing or does not match its pointer.
 */
export async function withContent(doc: DocumentItem): Promise<{ doc: DocumentItem; content: string }> {
  let current = doc;
  for (let attempt = 0; ; attempt++) {
    if (!current.content_ref) return { doc: current, content: current.content };
    const content = await readContent(current.content_ref);
    if (content !== null) return { doc: current, content };
    const fresh = await reload(current.workspace_id, current.id);
    if (attempt >= 2 || fresh.content_ref?.key === current.content_ref.key) {
      throw new AppError("INVARIANT_VIOLATION", `Document ${doc.id} points at a text that does not exist`);
    }
    current = fresh;
  }
}

/** The API view of a document item, its text read from the bucket when stored there. */
export async function view(doc: DocumentItem): Promise<DocumentView> {
  const { doc: current, content } = await withContent(doc);
  return toView(current, content);
}

/**
 * The view of an item just read back after our own write: `content` is its text when the item is still at
 * `version` (nothing else changed the text since), else the text is read.
 */
const viewAfterWrite = (item: DocumentItem, version: number, content: string) => (item.version === version ? toView(item, content) : view(item));

/** A revision's text. @throws AppError INVARIANT_VIOLATION when its stored text is missing (revisions are immutable). */
export async function revisionContent(r: RevisionItem): Promise<string> {
  if (!r.content_ref) return r.content;
  const content = await readContent(r.content_ref);
  if (content === null) throw new AppError("INVARIANT_VIOLATION", `Revision ${r.id} points at a text that does not exist`);
  return content;
}

/**
 * A revision item for `doc` at number `n` (immutable once written), with `snapshot` as its title and text. A large
 * text is uploaded here, before the caller writes the item.
 */
async function revisionItem(
  doc: DocumentItem,
  n: number,
  changeType: ChangeType,
  userId: string,
  summary: string | undefined,
  snapshot: { title: string; content: string },
  tag: { pending_action_id?: string } = {},
) {
  const id = randomUUID();
  const stored = await storeContent(revisionContentKey(doc.workspace_id, doc.id, id), snapshot.content);
  return {
    id,
    workspace_id: doc.workspace_id,
    document_id: doc.id,
    revision_number: n,
    revision_key: revisionKey(n),
    title: snapshot.title,
    ...stored,
    status_at_revision: doc.status,
    change_type: changeType,
    ...(summary ? { change_summary: summary } : {}),
    changed_by: userId,
    word_count: wordCount(snapshot.content),
    ...tag,
  };
}

const canceledConflict = () => new AppError("CONFLICT", "The document changed meanwhile; reload and retry");

/**
 * The ids a document body references must be the workspace's: its recommendation and its insights (issue #10
 * point 6). Only the keys are read.
 * @throws AppError VALIDATION_ERROR (422) naming the unknown ids (`Errors.unknownIds`).
 */
async function requireReferences(workspaceId: string, recommendationId: string | undefined, insightIds: string[]): Promise<void> {
  if (recommendationId) {
    const { data } = await db()
      .entities.recommendation.get({ workspace_id: workspaceId, id: recommendationId })
      .go({ consistent: true, attributes: ["id"] });
    if (!data) throw Errors.unknownIds("recommendation", "related_recommendation_id", [recommendationId]);
  }
  const unique = [...new Set(insightIds)];
  if (unique.length === 0) return;
  const data = await getAll(
    unique.map((id) => ({ workspace_id: workspaceId, id })),
    (keys) => db().entities.insight.get(keys).go({ consistent: true, attributes: ["id"] }),
  );
  const known = new Set(data.map((i) => i.id));
  const unknown = unique.filter((id) => !known.has(id));
  if (unknown.length) throw Errors.unknownIds("insight", "related_insight_ids", unknown);
}

/** What a document write hands its settlement (AgentWrite.settle): the document as written. */
export interface DocumentWritten {
  id: string;
  title: string;
  document_type: DocumentItem["document_type"];
  status: DocumentItem["status"];
  version: number;
}

/**
 * Create a document with its first revision ("created", or "ai_draft" for drafts) in one transaction.
 * Needs an active subscription (spec 01 `POST /api/documents`). A text over INLINE_CONTENT_MAX_BYTES is stored beside
 * the items, uploaded before the transaction. For an approved pending action (`opts`, DESIGN.md 6.2) the document is
 * created under `opts.id`, it and its revision carry the action's id, and `opts.settle` commits in the same
 * transaction; a document already under `opts.id` (an earlier run's) is the answer.
 * @throws AppError FORBIDDEN, SUBSCRIPTION_REQUIRED (402), VALIDATION_ERROR (422) for a recommendation or insights
 *   that are not the workspace's, CONFLICT (409); SettlementRefused when the executor lost the action meanwhile.
 */
export async function create(
  userId: string,
  input: CreateDocumentInput,
  opts: { changeType?: ChangeType; metadata?: Record<string, unknown> } & AgentWrite<DocumentWritten> = {},
): Promise<DocumentView> {
  await requireMember(userId, input.workspace_id);
  await requireActiveSubscription(input.workspace_id);
  await requireReferences(input.workspace_id, input.related_recommendation_id, input.related_insight_ids);
  const id = opts.id ?? randomUUID();
  const doc = {
    id,
    ...tagOf(opts),
    workspace_id: input.workspace_id,
    document_type: input.document_type,
    title: input.title,
    ...(await storeContent(documentContentKey(input.workspace_id, id), input.content)),
    status: "draft" as const,
    version: 1,
    last_revision: 1,
    related_recommendation_id: input.related_recommendation_id,
    related_insight_ids: input.related_insight_ids,
    metadata: opts.metadata ?? {},
    created_by: userId,
  };
  const now = new Date().toISOString();
  const rev = await revisionItem(
    { ...doc, created_at: now, updated_at: now } as DocumentItem,
    1,
    opts.changeType ?? "created",
    userId,
    undefined,
    { title: input.title, content: input.content },
    tagOf(opts),
  );
  const settlement = opts.settle?.({ id, title: input.title, document_type: input.document_type, status: "draft", version: 1 });
  let refused: string[] | null = null;
  try {
    // The plan's documents-a-month counter is the third write of the create's transaction, conditioned on the limit
    // (core/billing/counters.ts), so concurrent creates cannot pass it; a counter moved by a concurrent create while
    // room is left is read again.
    for (let attempt = 0; attempt < COUNTED_TRIES; attempt++) {
      const counter = await documentCounter(input.workspace_id);
      refused = await commitWrites(
        ["document", "revision", "usage"],
        [asWrite(db().entities.document.create(doc)), asWrite(db().entities.revision.create(rev)), asWrite(counter.update(db().entities.usage))],
        settlement,
      );
      if (!refused || refused[2] !== "ConditionalCheckFailed" || refused[0] !== "None") break;
      const limitReached = await counter.refused();
      if (limitReached) throw limitReached;
    }
  } catch (err) {
    // Nothing of it was written: the texts uploaded for it belong to no item (their keys are fresh).
    await discardContent(doc.content_ref, rev.content_ref);
    throw err;
  }
  if (refused) {
    await discardContent(doc.content_ref, rev.content_ref);
    // Under an id derived from a pending action, a cancelled create means an earlier run of it wrote the document.
    if (opts.id) {
      const { data } = await db().entities.document.get({ workspace_id: input.workspace_id, id: doc.id }).go({ consistent: true });
      if (data) return view(data);
    }
    throw canceledConflict();
  }
  return viewAfterWrite(await reload(input.workspace_id, doc.id), 1, input.content);
}

/** What a listing's documents may weigh together (core/response-size.ts; one document's text alone may take 3 MB). */
export { LIST_RESPONSE_BYTES };

/**
 * `GET /api/documents`: filtered, most recently updated first, paginated (limit 200, max 500). The documents come
 * from their sparse index (./listing.ts): a document written a moment ago may be missing or show its previous state.
 * A page ends early, after at least one document, where the next would take it past LIST_RESPONSE_BYTES: fewer than
 * `limit` documents with more to come (`total`) means the next page starts at `offset` + the documents given.
 */
export async function list(userId: string, q: ListDocumentsQuery): Promise<{ documents: DocumentView[]; total: number }> {
  await requireMember(userId, q.workspace_id);
  const matching = listed(await documentsOf(q.workspace_id), q);
  const page = matching.slice(q.offset, q.offset + q.limit);
  const documents: DocumentView[] = [];
  let bytes = 0;
  // Only the page's stored texts are read, 8 at a time, until the response is full; a document deleted meanwhile is
  // left out.
  for (let i = 0; i < page.length; i += 8) {
    const views = await Promise.all(
      page.slice(i, i + 8).map((d) =>
        view(d).catch((err: unknown) => {
          if (err instanceof AppError && err.code === "NOT_FOUND") return null;
          throw err;
        }),
      ),
    );
    for (const v of views) {
      if (!v) continue;
      // Measured as the Lambda answer carries it (the body is a string inside the proxy result's JSON).
      const size = wireBytes(v);
      if (documents.length && bytes + size > LIST_RESPONSE_BYTES) return { documents, total: matching.length };
      documents.push(v);
      bytes += size;
    }
  }
  return { documents, total: matching.length };
}

/** What a document listing shows of a document without its text. */
export type DocumentSummary = Pick<DocumentItem, (typeof SUMMARY_ATTRIBUTES)[number]>;
const SUMMARY_ATTRIBUTES = ["id", "title", "document_type", "status", "version", "updated_at"] as const;

/**
 * The workspace's documents as `list` filters and orders them, without their texts: no document's content is read
 * (the copilot's `list_documents` tool shows titles, types and states; a large text lives in S3).
 * @param q the workspace, optional type and status filters, and the page (`offset`, `limit`)
 * @returns the page's summaries and how many documents match
 * @throws AppError FORBIDDEN when the user is not a member.
 */
export async function listSummaries(
  userId: string,
  q: Pick<ListDocumentsQuery, "workspace_id" | "document_type" | "status" | "offset" | "limit">,
): Promise<{ documents: DocumentSummary[]; total: number }> {
  await requireMember(userId, q.workspace_id);
  const matching = listed(await documentsOf(q.workspace_id, { attributes: SUMMARY_ATTRIBUTES }), q);
  return { documents: matching.slice(q.offset, q.offset + q.limit), total: matching.length };
}

/** A listing's documents: of the type and status asked for (when asked), most recently updated first, then by id. */
function listed<D extends Pick<DocumentItem, "id" | "document_type" | "status" | "updated_at">>(docs: D[], q: Pick<ListDocumentsQuery, "document_type" | "status">): D[] {
  return docs
    .filter((d) => (!q.document_type || d.document_type === q.document_type) && (!q.status || d.status === q.status))
    .sort((a, b) => b.updated_at.localeCompare(a.updated_at) || a.id.localeCompare(b.id));
}

/** `GET /api/documents/{id}`: the document with its full content. @throws AppError NOT_FOUND, FORBIDDEN. */
export async function get(userId: string, documentId: string): Promise<DocumentView> {
  return view(await requireDocument(userId, documentId));
}

/**
 * `PATCH /api/documents/{id}`: title, content and/or metadata (shallow-merged; null removes a key). Any status,
 * published included, stays editable (spec 01). `version` goes up when title or content change. A new large text
 * is uploaded before the item changes; the replaced one is deleted after. For an approved pending action (`opts`,
 * DESIGN.md 6.2) the change carries the action's id in the same write, and commits together with `opts.settle`.
 * @param opts.expectedVersion write only over this version (a writer that read the document earlier, such as the
 *   harness's quality repair, must not replace an edit made since; the write is conditioned on it)
 * @throws AppError VALIDATION_ERROR (422) when the merged metadata exceeds METADATA_BOUNDS; CONFLICT (409), also when
 *   the document is no longer at `opts.expectedVersion`; SettlementRefused when the executor lost the action meanwhile
 *   (nothing written).
 */
export async function update(
  userId: string,
  documentId: string,
  input: UpdateDocumentInput,
  opts: AgentWrite<DocumentWritten> & { expectedVersion?: number } = {},
): Promise<DocumentView> {
  const doc = await requireDocument(userId, documentId);
  // The write below is conditioned on the version read here, so checking it against the caller's makes the write
  // conditional on the caller's version.
  if (opts.expectedVersion !== undefined && doc.version !== opts.expectedVersion) throw canceledConflict();
  const contentChanged = input.content !== undefined && !sameContent(doc, input.content);
  const textChanged = (input.title !== undefined && input.title !== doc.title) || contentChanged;
  const metadata = input.metadata
    ? Object.fromEntries(
        Object.entries({ ...((doc.metadata as Record<string, unknown>) ?? {}), ...input.metadata }).filter(([, v]) => v !== null),
      )
    : undefined;
  // Each patch is within bounds on its own; what is stored is the merge.
  if (metadata) assertJsonObject(["body", "metadata"], metadata, METADATA_BOUNDS);
  const stored = contentChanged ? await storeContent(documentContentKey(doc.workspace_id, doc.id), input.content!) : undefined;
  const changes = {
    ...(input.title !== undefined ? { title: input.title } : {}),
    ...(stored ?? {}),
    ...(metadata ? { metadata } : {}),
    ...(textChanged ? { version: doc.version + 1 } : {}),
    ...tagOf(opts),
  };
  if (Object.keys(changes).length === 0) return view(doc); // the same text again: nothing to write
  const patch = db().entities.document.patch({ workspace_id: doc.workspace_id, id: doc.id }).set(changes);
  // A text that now fits inline drops the old pointer. The metadata stored is a merge with what was read: it is
  // written only over that (its `updated_at`), since a metadata change does not move `version` and two at once would
  // each drop the other's keys; the loser gets 409.
  const write = (stored && !stored.content_ref && doc.content_ref ? patch.remove(["content_ref"]) : patch).where((attr, op) =>
    metadata ? `${op.eq(attr.version, doc.version)} AND ${op.eq(attr.updated_at, doc.updated_at)}` : op.eq(attr.version, doc.version),
  );
  let data: DocumentItem;
  try {
    if (opts.settle) {
      const version = textChanged ? doc.version + 1 : doc.version;
      const settlement = opts.settle({ id: doc.id, title: input.title ?? doc.title, document_type: doc.document_type, status: doc.status, version });
      if (await commitWrites(["document"], [asWrite(write)], settlement)) throw new ConditionFailed();
      data = await reload(doc.workspace_id, doc.id);
    } else {
      data = (await write.go({ response: "all_new" })).data as DocumentItem;
    }
  } catch (err) {
    await discardContent(stored?.content_ref);
    if (err instanceof ConditionFailed || isConditionalFailure(err)) throw canceledConflict();
    throw err;
  }
  if (contentChanged) {
    await discardContent(doc.content_ref);
    return viewAfterWrite(data, doc.version + 1, input.content!);
  }
  return view(data);
}

/** A refused condition of a transaction (the document's version moved), told apart from other errors. */
class ConditionFailed extends Error {}

/**
 * `DELETE /api/documents/{id}`: the document with its blocks, revisions and annotations, then its stored texts
 * (./deletion.ts). The document is marked `deleting_at`, with a deletion record, before its child keys are read:
 * block and annotation creates are conditioned on that mark's absence (core/document/block-ops.ts), so none commits
 * after the read and stays behind as an orphan; they answer 404 from then on. A DELETE that fails part-way is
 * finished by the recovery sweeper from its record, or by the DELETE sent again.
 * @throws AppError NOT_FOUND (404) when the document does not exist or the caller is not a member of its workspace
 */
export async function remove(userId: string, documentId: string): Promise<void> {
  const doc = await requireDocument(userId, documentId);
  // false: deleted meanwhile by another DELETE; what is left of it goes below, as before.
  await beginDocumentDeletion(doc.workspace_id, doc.id);
  await finishDocumentDeletion(doc.workspace_id, doc.id);
}

/**
 * Save the current title and content as the next immutable revision (spec 01 `POST .../versions`).
 * The document's `last_revision` moves in the same transaction, guarded by its old value, so two concurrent
 * saves cannot take the same number.
 * @param opts.expectedVersion save only while the document is at this version (a writer's revision of its own text,
 *   not of an edit made since its write)
 * @throws AppError CONFLICT (409), also when the document is no longer at `opts.expectedVersion` (default: the version
 *   read here, so an edit committed between the read and the write refuses the save rather than have the revision
 *   hold the replaced text).
 */
export async function saveRevision(userId: string, documentId: string, summary: string | undefined, changeType: ChangeType = "manual_save", opts: { expectedVersion?: number } = {}) {
  const { doc, content } = await withContent(await requireDocument(userId, documentId));
  // The revision holds the text read here, so it commits only while the document still holds it: a content PATCH
  // moves `version` but not `last_revision`, and without this a save that read version 3 would commit after a PATCH
  // wrote version 4, its revision holding the replaced text (409, as restore answers).
  const expected = opts.expectedVersion ?? doc.version;
  if (doc.version !== expected) throw canceledConflict();
  const n = doc.last_revision + 1;
  const rev = await revisionItem(doc, n, changeType, userId, summary, { title: doc.title, content });
  const result = await createWriteTransaction(db().pick("document", "revision"), ({ document, revision }) => [
    document
      .patch({ workspace_id: doc.workspace_id, id: doc.id })
      .set({ last_revision: n })
      // Not while a DELETE removes the document: a revision written after it listed the children would be left behind.
      .where((attr, op) => `${op.eq(attr.last_revision, doc.last_revision)} AND ${op.eq(attr.version, expected)} AND ${op.notExists(attr.deleting_at)}`)
      .commit(),
    revision.create(rev).commit(),
  ]).go();
  if (result.canceled) {
    await discardContent(rev.content_ref);
    throw canceledConflict();
  }
  return revisionView(await getRevisionByNumber(doc, n), content);
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
  const rev = await requireRevision(doc, revisionId);
  return revisionView(rev, await revisionContent(rev));
}

/**
 * `GET .../diff?from_revision&to_revision`: line-level diff of two revision numbers. `diff_stats` counts the whole
 * texts; the two texts answered are cut together to DIFF_TEXT_RESPONSE_BYTES of JSON (`content_truncated` says so),
 * each keeping its beginning: two revisions of 1,000,000 three-byte characters passed Lambda's 6 MB answer.
 */
export async function diff(userId: string, documentId: string, from: number, to: number) {
  const doc = await requireDocument(userId, documentId);
  const [a, b] = await Promise.all([getRevisionByNumber(doc, from), getRevisionByNumber(doc, to)]);
  const [fromContent, toContent] = await Promise.all([revisionContent(a), revisionContent(b)]);
  const fitted = fitDiffTexts(fromContent, toContent);
  return {
    document_id: doc.id,
    from_revision: from,
    to_revision: to,
    from_content: fitted.from,
    to_content: fitted.to,
    content_truncated: fitted.truncated,
    diff_stats: diffStats(fromContent, toContent),
  };
}

/**
 * `POST .../versions/{revision_id}/restore`: the current state is saved (pre_restore), the document takes the
 * revision's title and content, and the result is saved (restore) — all in one transaction. Large texts (both
 * snapshots and the document's new text) are uploaded first; the document's replaced text is deleted after.
 * @throws AppError NOT_FOUND, CONFLICT (409).
 */
export async function restore(userId: string, documentId: string, revisionId: string, summary: string | undefined) {
  const { doc, content } = await withContent(await requireDocument(userId, documentId));
  const target = await requireRevision(doc, revisionId);
  const targetContent = await revisionContent(target);
  const n = doc.last_revision;
  const note = summary ?? `Restored revision ${target.revision_number}`;
  const [before, after, stored] = await Promise.all([
    revisionItem(doc, n + 1, "pre_restore", userId, `Before restoring revision ${target.revision_number}`, { title: doc.title, content }),
    revisionItem(doc, n + 2, "restore", userId, note, { title: target.title, content: targetContent }),
    storeContent(documentContentKey(doc.workspace_id, doc.id), targetContent),
  ]);
  const result = await createWriteTransaction(db().pick("document", "revision"), ({ document, revision }) => {
    const patch = document
      .patch({ workspace_id: doc.workspace_id, id: doc.id })
      .set({ title: target.title, ...stored, last_revision: n + 2, version: doc.version + 1 });
    const write = !stored.content_ref && doc.content_ref ? patch.remove(["content_ref"]) : patch;
    return [
      write.where((attr, op) => `${op.eq(attr.last_revision, n)} AND ${op.eq(attr.version, doc.version)} AND ${op.notExists(attr.deleting_at)}`).commit(),
      revision.create(before).commit(),
      revision.create(after).commit(),
    ];
  }).go();
  if (result.canceled) {
    await discardContent(before.content_ref, after.content_ref, stored.content_ref);
    throw canceledConflict();
  }
  await discardContent(doc.content_ref);
  const fresh = await reload(doc.workspace_id, doc.id);
  const [b, a] = await Promise.all([getRevisionByNumber(fresh, n + 1), getRevisionByNumber(fresh, n + 2)]);
  return { document: await viewAfterWrite(fresh, doc.version + 1, targetContent), before_revision: revisionSummary(b), after_revision: revisionSummary(a) };
}

/**
 * `POST .../status`: move through the document table (draft -> review -> approved -> published; review and
 * approved can go back to draft; published is terminal). The change is saved as a status_change revision in the
 * same transaction.
 * @throws AppError INVALID_TRANSITION (422 with valid_transitions); CONFLICT (409), also when an edit moved the
 *   document's version after the read (the revision would record a text the document no longer holds).
 */
export async function changeStatus(userId: string, documentId: string, input: StatusInput): Promise<DocumentView> {
  const found = await requireDocument(userId, documentId);
  assertTransition(found.status, input.target_status);
  // withContent reads the item again when an edit replaced its stored text meanwhile, and the write below is
  // conditioned on that newer item's status: the transition is checked on the status actually written over, so a
  // status change racing an edit cannot commit a move the table forbids (draft -> approved, say).
  const { doc, content } = await withContent(found);
  assertTransition(doc.status, input.target_status);
  const n = doc.last_revision + 1;
  const summary = input.change_summary ?? `${doc.status} -> ${input.target_status}`;
  const rev = await revisionItem({ ...doc, status: input.target_status }, n, "status_change", userId, summary, { title: doc.title, content });
  const result = await createWriteTransaction(db().pick("document", "revision"), ({ document, revision }) => [
    document
      .patch({ workspace_id: doc.workspace_id, id: doc.id })
      .set({ status: input.target_status, last_revision: n })
      // And on the version read: the revision records the text read here as the one given this status, so a content
      // PATCH committed meanwhile (it moves `version`, not `last_revision`) refuses it (409, as restore answers).
      .where((attr, op) => `${op.eq(attr.status, doc.status)} AND ${op.eq(attr.last_revision, doc.last_revision)} AND ${op.eq(attr.version, doc.version)} AND ${op.notExists(attr.deleting_at)}`)
      .commit(),
    revision.create(rev).commit(),
  ]).go();
  if (result.canceled) {
    await discardContent(rev.content_ref);
    throw canceledConflict();
  }
  return viewAfterWrite(await reload(doc.workspace_id, doc.id), doc.version, content);
}
