import { setTimeout as sleep } from "node:timers/promises";
import { cancelCodes, cancelledOnlyBy, isConditionalFailure } from "../db/errors";
import { randomUUID } from "node:crypto";
import type { EntityItem } from "electrodb";
import { AppError, Errors } from "../error";
import { Config } from "../config";
import { createWriteTransaction } from "electrodb";
import { db } from "../db/service";
import { documentsOf } from "../document/listing";
import { requestScope } from "../context";
import { countByPrefix } from "../db/partition";
import { markPut } from "../db/slim-index";
import { TASK_LIST_INDEX } from "../task/task.entity";
import { PENDING_ACTION_LIST_INDEX } from "../pending-action/pending-action.entity";
import { AGENT_RUN_LIST_INDEX } from "../agent/agent-run.entity";
import { ANSWER_INDEX } from "../chat/conversation.entity";
import { DOCUMENT_INDEX } from "../document/document.entity";
import { HIGHEST_PLAN, subscriptionOf } from "../billing";
import { COUNTED_TRIES, limitsOfUser, limitsOfWorkspace, usageLimitError } from "../billing/counters";
import { accountOf } from "../billing/ledger";
import * as User from "../user";
import { LRUCache } from "lru-cache";
import { consistentGet, type ItemRef, type Prefetch } from "../db/read";
import { getAll } from "../db/bulk";
import { CYCLES_ON, type MembershipEntity, type WorkspaceEntity } from "./workspace.entity";
import { partitionOf } from "./keys";
import { beginWorkspaceDeletion, deleteWorkspace, deletionBegun, dropMembership, purgeMemberItems, requireDropMembership, WORKSPACE_DELETION_BUDGET_MS } from "./deletion";
export { deletionBegun };
import { entitlementOf } from "../billing/entitlement";
import { serviceLog } from "../log";
import type {
  AddMemberInput,
  AgentIntro,
  CreateWorkspaceInput,
  Member,
  Role,
  UpdateMemberInput,
  UpdateSettingsInput,
  UpdateWorkspaceInput,
  Workspace as WorkspaceView,
  WorkspaceSettings,
} from "./schema";

export * from "./schema";
export { partitionOf } from "./keys";
export type { ItemRef } from "../db/read";

type WorkspaceItem = EntityItem<WorkspaceEntity>;
type MembershipItem = EntityItem<MembershipEntity>;

/** Sort-key prefixes of the workspace's child resources, used for counts (agent-intro) and listings. */
export const CHILD_PREFIX = {
  source: "source#",
  insight: "insight#",
  recommendation: "recommendation#",
  document: "document#",
} as const;

const toView = (w: WorkspaceItem, role: Role): WorkspaceView => ({
  id: w.id,
  name: w.name,
  product_name: w.product_name ?? null,
  product_description: w.product_description ?? null,
  target_users: w.target_users ?? null,
  current_stage: w.current_stage ?? null,
  owner_id: w.owner_id,
  role,
  created_at: w.created_at,
  updated_at: w.updated_at,
});

async function getItem(workspaceId: string): Promise<WorkspaceItem | null> {
  const { data } = await db().entities.workspace.get({ id: workspaceId }).go({ consistent: true });
  return data;
}

/** Where the request scope keeps a verified membership (core/context.ts `memberships`). */
const scopeKeyOf = (userId: string, workspaceId: string) => `${userId}#${workspaceId}`;

/** The caller's membership of a workspace, resolved once per request (core/context.ts); undefined for a non-member. */
/**
 * A membership that lets its user in: not one of a workspace under deletion (the owner's, marked `deleting_at`,
 * core/workspace/deletion.ts), which every check treats as absent.
 */
export const live = (m: MembershipItem | null | undefined): MembershipItem | undefined => (m && !m.deleting_at ? m : undefined);

async function membershipOf(userId: string, workspaceId: string): Promise<MembershipItem | undefined> {
  const scope = requestScope();
  const key = scopeKeyOf(userId, workspaceId);
  let data = scope?.memberships.get(key) as MembershipItem | undefined;
  if (!data) {
    data = live((await db().entities.membership.get({ workspace_id: workspaceId, user_id: userId }).go({ consistent: true })).data);
    // Resolved once per request (DESIGN.md 6.1): the agent's tools call core operations that check again.
    if (data) scope?.memberships.set(key, data);
  }
  return data;
}

/** Whether this request has already verified the user's membership of the workspace (core/context.ts). */
export const verifiedInThisRequest = (userId: string, workspaceId: string): boolean => requestScope()?.memberships.has(scopeKeyOf(userId, workspaceId)) ?? false;

/**
 * The caller's membership, checked once per request (DESIGN.md section 4.3), for workspace-scoped routes (the
 * workspace id is in the path, query or body): spec 01 Authorization answers a non-member 403 FORBIDDEN. A workspace
 * that does not exist answers the same 403, so the answer does not tell an outsider which workspace ids exist.
 * @param roles when given, the caller's role must be one of them.
 * @throws AppError FORBIDDEN (403) when the caller is not a member (or the workspace does not exist) or lacks the role.
 */
export async function requireMember(userId: string, workspaceId: string, roles?: Role[]): Promise<MembershipItem> {
  const data = await membershipOf(userId, workspaceId);
  if (!data) throw Errors.forbidden();
  return requireRole(data, roles);
}

/**
 * The caller's membership of the workspace of a resource fetched by id alone (`/api/<resource>/{id}` routes): a
 * non-member gets the same 404 as for an id that does not exist, so an outsider cannot tell which ids exist
 * (docs/decisions.md "404 or 403"). A member without the role still gets 403: they may know the resource.
 * @param what the resource's name in the 404's detail ("Insight", "Document").
 * @throws AppError NOT_FOUND (404) when the caller is not a member; FORBIDDEN (403) when a member lacks the role.
 */
export async function requireResourceMember(userId: string, workspaceId: string, what: string, roles?: Role[]): Promise<MembershipItem> {
  const data = await membershipOf(userId, workspaceId);
  if (!data) throw Errors.notFound(what);
  return requireRole(data, roles);
}

function requireRole(data: MembershipItem, roles: Role[] | undefined): MembershipItem {
  if (roles && !roles.includes(data.role)) {
    throw new AppError("FORBIDDEN", `This needs the ${roles.join(" or ")} role; you are ${data.role}`);
  }
  return data;
}

/**
 * Read one item of a workspace and check the caller's membership of it in ONE round trip (docs/decisions.md "Reads in
 * one round trip"): a strongly consistent BatchGetItem of the membership and the item, or a GetItem of the item alone
 * when this request has already verified the membership (core/context.ts). The item is returned only once the
 * membership is there: a non-member never receives it.
 * @param ref the item's entity and key (the key of its table index, e.g. `{ workspace_id, id }`).
 * @param opts.scope "workspace" for a route naming the workspace (path, query, body): a non-member gets 403 FORBIDDEN
 *   (spec 01 Authorization); "resource" for a route naming the resource alone: a non-member gets the 404 of a missing
 *   id, with `opts.what` in its detail ("404 or 403"). `opts.roles`: the caller's role must be one of them (else 403).
 * @returns the membership and the item, null when there is no such item (the caller is a member).
 * @throws AppError FORBIDDEN (403) or NOT_FOUND (404) as above; SERVICE_UNAVAILABLE (503) from `consistentGet`.
 */
export async function readAsMember<T>(
  userId: string,
  workspaceId: string,
  ref: ItemRef,
  opts: { scope: "workspace" | "resource"; what?: string; roles?: Role[] },
): Promise<{ membership: MembershipItem; item: T | null }> {
  const { membership, items } = await readManyAsMember(userId, workspaceId, [ref], opts);
  return { membership, item: items[0] as T | null };
}

/**
 * `readAsMember` for several items of the workspace (at most 99): the membership and every item in one BatchGetItem,
 * or the items alone when this request has verified the membership already.
 * @returns the membership and the items in the order of `refs`, null where there is none.
 * @throws as `readAsMember`.
 */
async function readManyAsMember(
  userId: string,
  workspaceId: string,
  refs: readonly ItemRef[],
  opts: { scope: "workspace" | "resource"; what?: string; roles?: Role[] },
): Promise<{ membership: MembershipItem; items: unknown[] }> {
  const scope = requestScope();
  const scopeKey = scopeKeyOf(userId, workspaceId);
  const known = scope?.memberships.get(scopeKey) as MembershipItem | undefined;
  let membership: MembershipItem | undefined;
  let items: unknown[];
  if (known) {
    membership = known;
    items = await consistentGet(refs);
  } else {
    const memberRef: ItemRef = { entity: db().entities.membership, key: { workspace_id: workspaceId, user_id: userId } };
    const [m, ...rest] = await consistentGet([memberRef, ...refs]);
    membership = live(m as MembershipItem | null);
    items = rest;
    if (membership) scope?.memberships.set(scopeKey, membership);
  }
  if (!membership) throw opts.scope === "workspace" ? Errors.forbidden() : Errors.notFound(opts.what ?? "Resource");
  return { membership: requireRole(membership, opts.roles), items };
}

/**
 * Where an item read by id alone lives (its table key, with `workspace_id`), per container: an item never moves to
 * another workspace or document, so the mapping learnt from the id index (gsi1) stays true for the item's life and
 * needs no expiry; the bound only caps memory (~200 B an entry). Keyed by table, kind and id.
 */
const locations = new LRUCache<string, Record<string, string>>({ max: 20_000 });

/** Forget every remembered location (tests measuring a cold id). */
export function forgetLocations(): void {
  locations.clear();
}

/** How long an id the index does not know yet is looked for again, ms: the index's usual lag, well under a second. */
export const LOCATE_RETRY_MS = [100, 300] as const;

/**
 * The id index's answer, asked again after `LOCATE_RETRY_MS` while it has none. The index (gsi1) is eventually
 * consistent: an item created a moment ago by another container (a task spawned, then its progress stream opened) can
 * be missing from it for a few hundred milliseconds, and a 404 for an id the caller was just given is wrong. An id
 * that does not exist pays the wait (0.4 s) before its 404.
 */
export async function locateFresh<L>(locate: () => Promise<L | undefined>): Promise<L | undefined> {
  let found = await locate();
  for (const ms of LOCATE_RETRY_MS) {
    if (found) break;
    await sleep(ms);
    found = await locate();
  }
  return found;
}

/**
 * A workspace item fetched by its id alone (`/api/<resource>/{id}` routes), for a member of its workspace, in one
 * round trip once this container knows where the id lives: the location comes from a per-container map (an item
 * never moves), else from `ref.locate` (the id index, gsi1: one Query, asked again briefly while it does not know the
 * id: `locateFresh`); then `readAsMember` reads the membership and
 * the item together, strongly consistent. A non-member gets the 404 of a missing id (docs/decisions.md "404 or 403").
 * @param ref.kind the entity's name (part of the map's key); `ref.id` the id asked for; `ref.what` the 404's noun;
 *   `ref.roles` the roles allowed (403 for a member without one); `ref.entity` the entity to read; `ref.locate` the
 *   item's table key (with `workspace_id`) from the id index, or undefined for an unknown id.
 * @returns the item, as the entity's `get` returns it.
 * @throws AppError NOT_FOUND (404) unknown id, deleted item or not a member; FORBIDDEN (403) a member lacking the role.
 */
export async function requireResourceById<T>(
  userId: string,
  ref: {
    kind: string;
    id: string;
    what: string;
    roles?: Role[];
    entity: ItemRef["entity"];
    locate: () => Promise<({ workspace_id: string } & Record<string, string>) | undefined>;
  },
): Promise<T> {
  const cacheKey = `${Config.tableName()}#${ref.kind}#${ref.id}`;
  const location = locations.get(cacheKey) ?? (await locateFresh(ref.locate));
  if (!location) throw Errors.notFound(ref.what);
  const { item } = await readAsMember<T>(userId, location.workspace_id!, { entity: ref.entity, key: location }, { scope: "resource", what: ref.what, roles: ref.roles });
  if (!item) {
    locations.delete(cacheKey); // deleted: a later read asks the index again
    throw Errors.notFound(ref.what);
  }
  locations.set(cacheKey, location);
  return item;
}

/**
 * Create a workspace (spec 01 `POST /api/workspaces`). The workspace, the owner's membership, default settings, the
 * workspace's seats counter (1: the owner), its index marks (documents, tasks, assistant messages, core/db/slim-index.ts
 * `markPut`: nothing to backfill) and the owner's `workspaces_owned` counter are written in one transaction;
 * the counter is conditioned on the plan's `max_workspaces` (core/billing/counters.ts), so concurrent creates cannot
 * pass it. The workspace is covered by its owner's billing account (plan and balance are the account's, spec 02).
 * The transaction also checks that the owner's user item exists without `deleting_at` (no extra call).
 * @throws AppError PRODUCT_ACCESS_REQUIRED (403) when the caller has no product access; USAGE_LIMIT_EXCEEDED (402)
 *   when the caller owns as many workspaces as the plan in effect allows; UNAUTHORIZED (401) when the caller's account
 *   is being deleted (or is gone) though a container's cache still served it.
 */
export async function create(user: User.User, input: CreateWorkspaceInput): Promise<WorkspaceView> {
  if (!User.hasProductAccess(user)) {
    throw new AppError("PRODUCT_ACCESS_REQUIRED", "Your account is waiting for product access: redeem an access code first");
  }
  const id = randomUUID();
  for (let attempt = 0; attempt < COUNTED_TRIES; attempt++) {
    const { plan, limits } = await limitsOfUser(user.id);
    const limit = limits.max_workspaces;
    const account = await accountOf(user.id);
    // An account older than the counter starts it from the workspaces it owns (conditioned on it still being unset).
    const owned = account.workspaces_owned ?? (await ownedCount(user.id));
    if (limit !== null && owned >= limit) throw usageLimitError("workspaces", owned, limit, plan);
    const result = await createTransaction({ id, ownerId: user.id, input, owned, limit, counted: account.workspaces_owned !== undefined }).go();
    if (!result.canceled) {
      // Loaded when a workspace is created: the search index's code stays out of the reads' cold start (bench/cold.ts).
      await (await import("../insight/search-index")).startEmptySnapshot(id);
      return toView((await getItem(id))!, "owner");
    }
    const codes = cancelCodes(result);
    if (codes[0] === "ConditionalCheckFailed") {
      User.forget(user.id);
      throw Errors.unauthorized("This account is being deleted");
    }
    // Another write to one of these items at the same moment (the user item's, the account's): read and try again.
    if (cancelledOnlyBy(codes, ["TransactionConflict"])) continue;
    if (codes.slice(0, -1).some((c) => c !== "None")) throw new AppError("CONFLICT", "Workspace could not be created; try again");
    // Only the counter refused: the limit was reached meanwhile (the next read says so), or a concurrent create moved it.
  }
  throw new AppError("SERVICE_UNAVAILABLE", "Too many workspaces are being created at once; try again", { retryable: true });
}

/**
 * The workspace create's one transaction (`create`), unsent: `.go()` sends it, `.params()` gives its request (bench/
 * foundation.ts times the same request raw as its floor). Nine items: the owner's user item checked (exists, not being
 * deleted); the workspace, the owner's membership and the default settings (conditional creates); the seats counter;
 * the three list indexes' marks; last, the owner's `workspaces_owned` counter (started at `owned + 1` when the account
 * has none yet, else added to under `limit`).
 * @param w.id the new workspace's id
 * @param w.owned workspaces the owner owns now; w.limit the plan's `max_workspaces` (null: unlimited)
 * @param w.counted whether the account already has its `workspaces_owned` counter
 */
export function createTransaction(w: { id: string; ownerId: string; input: CreateWorkspaceInput; owned: number; limit: number | null; counted: boolean }) {
  const { id, ownerId, input, owned, limit } = w;
  return createWriteTransaction(
    db().pick("user", "workspace", "membership", "workspaceSettings", "usage", "billingAccount"),
    ({ user: owner, workspace, membership, workspaceSettings, usage, billingAccount }) => [
      // The owner still exists and is not being deleted: another container may serve a deleted user from its cache
      // for up to USER_CACHE_TTL_MS, and a workspace created then would outlive the deletion's cascade.
      owner.check({ id: ownerId }).where((a, op) => `${op.exists(a.id)} AND ${op.notExists(a.deleting_at)}`).commit(),
      workspace.create({ id, owner_id: ownerId, ...input }).commit(),
      membership.create({ workspace_id: id, user_id: ownerId, role: "owner", added_by: ownerId }).commit(),
      workspaceSettings.create({ workspace_id: id, researchCycleEnabled: false, overnightCycleNotifyEmail: false }).commit(),
      usage.update({ workspace_id: id }).set({ members: 1 }).commit(),
      // A new workspace's documents, tasks, pending actions and assistant messages are all in their indexes from the
      // start (core/db/slim-index.ts): no backfill to pay. The documents' mark keeps its create's condition.
      markPut(DOCUMENT_INDEX, id) as never,
      markPut(TASK_LIST_INDEX, id) as never,
      markPut(PENDING_ACTION_LIST_INDEX, id) as never,
      markPut(AGENT_RUN_LIST_INDEX, id) as never,
      markPut(ANSWER_INDEX, id) as never,
      // The owned-workspaces counter is the last write: a refusal of it alone is told apart by `create`.
      w.counted
        ? billingAccount
            .patch({ user_id: ownerId })
            .add({ workspaces_owned: 1 })
            .where((a, op) => (limit === null ? "" : op.lt(a.workspaces_owned, limit)))
            .commit()
        : billingAccount.patch({ user_id: ownerId }).set({ workspaces_owned: owned + 1 }).where((a, op) => op.notExists(a.workspaces_owned)).commit(),
    ],
  );
}

/** Workspaces a user owns, counted from their memberships (to start a missing counter); one under deletion is not. */
async function ownedCount(userId: string): Promise<number> {
  const { data } = await db().entities.membership.query.byUser({ user_id: userId }).go({ pages: "all" });
  return data.filter((m) => m.role === "owner" && live(m)).length;
}

/**
 * The caller's workspaces, most recently updated first (spec 01 `GET /api/workspaces`). A workspace whose deletion has
 * begun is not listed (its owner's membership is marked `deleting_at`; the others' are deleted next:
 * core/workspace/deletion.ts).
 */
export async function list(userId: string): Promise<{ workspaces: WorkspaceView[]; total: number }> {
  const { data: all } = await db().entities.membership.query.byUser({ user_id: userId }).go({ pages: "all" });
  // An owner's membership marked but still in this index was marked by a deletion older than the deletion records,
  // which nothing finishes: begin it properly (idempotent), so it gets its record, the sweeper, and the slot back.
  for (const m of all) if (m.role === "owner" && m.deleting_at) await beginWorkspaceDeletion(userId, m.workspace_id);
  const memberships = all.filter((m) => live(m));
  if (memberships.length === 0) return { workspaces: [], total: 0 };
  const roles = new Map(memberships.map((m) => [m.workspace_id, m.role]));
  const data = await getAll(memberships.map((m) => ({ id: m.workspace_id })), (keys) => db().entities.workspace.get(keys).go());
  const workspaces = data
    .map((w) => toView(w, roles.get(w.id)!))
    .sort((a, b) => b.updated_at.localeCompare(a.updated_at));
  return { workspaces, total: workspaces.length };
}

/** One workspace (spec 01 `GET /api/workspaces/{id}`); member only, one round trip. @throws FORBIDDEN (403) non-member. */
export async function get(userId: string, workspaceId: string): Promise<WorkspaceView> {
  // Membership and workspace in one BatchGetItem: a non-member gets 403 whatever the workspace item says.
  const { membership, item } = await readAsMember<WorkspaceItem>(userId, workspaceId, { entity: db().entities.workspace, key: { id: workspaceId } }, { scope: "workspace" });
  if (!item) throw Errors.notFound("Workspace");
  return toView(item, membership.role);
}

/**
 * `PATCH /api/workspaces/{id}` (spec 01): only the given fields change; owner or admin. A body with no field answers
 * the workspace as it is, unwritten: a write would move `updated_at`, and with it the workspace's place in the list
 * (most recently updated first).
 * @returns the workspace as changed (or as it is), with the caller's role.
 * @throws AppError FORBIDDEN (403) for a non-member (or a workspace that does not exist) or a member without the
 *   role; NOT_FOUND (404) when the workspace is deleted between the membership check and the write.
 */
export async function update(userId: string, workspaceId: string, input: UpdateWorkspaceInput): Promise<WorkspaceView> {
  if (Object.values(input).every((v) => v === undefined)) {
    const { membership, workspace } = await requireMemberWithWorkspace(userId, workspaceId, { roles: ["owner", "admin"] });
    return toView(workspace, membership.role);
  }
  const membership = await requireMember(userId, workspaceId, ["owner", "admin"]);
  try {
    const { data } = await db()
      .entities.workspace.patch({ id: workspaceId })
      .set(input)
      .go({ response: "all_new" });
    return toView(data as WorkspaceItem, membership.role);
  } catch (err) {
    // Deleted between the membership check and the write (the patch is conditioned on the item being there).
    if (isConditionalFailure(err)) throw Errors.notFound("Workspace");
    throw err;
  }
}

/**
 * Delete a workspace; owner only (spec 01 `DELETE /api/workspaces/{id}`: "deletes all associated data", 204):
 * core/workspace/deletion.ts `deleteWorkspace`. Returns once the deletion is durable (its first transaction: from
 * then on the workspace is not listed, refuses every request and no longer counts against `max_workspaces`), after
 * as much of the cascade as the request's budget allows; the recovery sweeper finishes the rest. The owner's next
 * DELETE goes on with it too (the owner's membership, marked, is still there and passes here only).
 * @throws AppError FORBIDDEN (403) for anyone but the owner (a workspace already gone included); SERVICE_UNAVAILABLE
 *   (503, retryable) when the first transaction kept colliding (nothing written); Error from DynamoDB (likewise)
 */
export async function remove(userId: string, workspaceId: string): Promise<void> {
  const { data } = await db().entities.membership.get({ workspace_id: workspaceId, user_id: userId }).go({ consistent: true });
  if (!data) throw Errors.forbidden();
  requireRole(data, ["owner"]);
  await deleteWorkspace(userId, workspaceId);
}

async function settingsItem(workspaceId: string) {
  const { data } = await db().entities.workspaceSettings.get({ workspace_id: workspaceId }).go({ consistent: true });
  if (!data) throw Errors.notFound("Workspace settings");
  return data;
}

const toSettings = (s: Awaited<ReturnType<typeof settingsItem>>): WorkspaceSettings => ({
  researchCycleEnabled: s.researchCycleEnabled,
  overnightCycleNotifyEmail: s.overnightCycleNotifyEmail,
  researchProgram: (s.researchProgram as WorkspaceSettings["researchProgram"]) ?? null,
});

/** Settings of a workspace; member only, one round trip. @throws FORBIDDEN (403) non-member; NOT_FOUND (404) no settings. */
export async function getSettings(userId: string, workspaceId: string): Promise<WorkspaceSettings> {
  // Membership and settings in one BatchGetItem (readAsMember): a non-member gets 403 whatever the settings say.
  const { item } = await readAsMember<Awaited<ReturnType<typeof settingsItem>>>(
    userId,
    workspaceId,
    { entity: db().entities.workspaceSettings, key: { workspace_id: workspaceId } },
    { scope: "workspace" },
  );
  if (!item) throw Errors.notFound("Workspace settings");
  return toSettings(item);
}

/** Minimum number of research sources before research cycles can be enabled (spec 01). */
export const RESEARCH_CYCLE_MIN_SOURCES = 3;

/**
 * Change settings; owner or admin. Enabling researchCycleEnabled needs the highest plan, at least 3 research
 * sources and a research program with goals (spec 01).
 * @throws AppError FORBIDDEN (403) naming every unmet requirement (`unmet_requirements`), with `feature`, `plan` and
 *   `required_plan` as a plan gate's when the plan is one of them.
 */
export async function updateSettings(userId: string, workspaceId: string, input: UpdateSettingsInput): Promise<WorkspaceSettings> {
  await requireMember(userId, workspaceId, ["owner", "admin"]);
  for (let attempt = 0; attempt < SETTINGS_TRIES; attempt++) {
    const written = await writeSettings(workspaceId, input, await settingsItem(workspaceId));
    if (written) return written;
  }
  throw new AppError("CONFLICT", "The workspace settings are being changed by another request; reload and retry");
}

/** Attempts of `updateSettings` against concurrent changes of the same settings before it answers 409. */
const SETTINGS_TRIES = 3;

/**
 * One attempt of `updateSettings` on the settings as read: the checks run on `read`, and the patch is conditioned on
 * `read.updated_at` (every write sets it), so a concurrent change (goals cleared while cycles are being enabled, or
 * the reverse) cannot slip between the checks and the write. @returns undefined when another write came first.
 */
async function writeSettings(workspaceId: string, input: UpdateSettingsInput, read: Awaited<ReturnType<typeof settingsItem>>): Promise<WorkspaceSettings | undefined> {
  const current = toSettings(read);
  const program = input.researchProgram !== undefined ? input.researchProgram : current.researchProgram;
  const enabling = input.researchCycleEnabled === true && !current.researchCycleEnabled;
  const keepsEnabled = input.researchCycleEnabled !== false && current.researchCycleEnabled;
  if (enabling || (keepsEnabled && input.researchProgram !== undefined)) {
    const unmet: string[] = [];
    // The plan in effect (a cancelled or past-due plan past its period or grace counts as the trial, core/billing).
    const { plan } = entitlementOf(await accountOf((await subscriptionOf(workspaceId)).owner_id));
    const planLacks = plan !== HIGHEST_PLAN;
    if (planLacks) unmet.push(`the ${HIGHEST_PLAN} plan (this workspace is on ${plan})`);
    const sources = await countByPrefix(partitionOf(workspaceId), CHILD_PREFIX.source, "research_source");
    if (sources < RESEARCH_CYCLE_MIN_SOURCES) unmet.push(`at least ${RESEARCH_CYCLE_MIN_SOURCES} research sources (it has ${sources})`);
    if (!program || program.goals.length === 0) unmet.push("a research program with goals");
    if (unmet.length > 0) {
      // Every unmet requirement is named (spec 01 Errors); a plan that lacks the cycles also answers as a plan gate does.
      const gate = planLacks ? { feature: "has_overnight_cycles", plan, required_plan: HIGHEST_PLAN } : {};
      throw new AppError("FORBIDDEN", `Research cycles need ${unmet.join(", ")}`, { unmet_requirements: unmet, ...gate });
    }
  }
  const patch = db()
    .entities.workspaceSettings.patch({ workspace_id: workspaceId })
    .set({
      // Enabling puts the workspace in the nightly schedule's sparse index (core/cycle); disabling takes it out.
      ...(input.researchCycleEnabled === true ? { researchCycleEnabled: true, cycle_index: CYCLES_ON } : {}),
      ...(input.researchCycleEnabled === false ? { researchCycleEnabled: false } : {}),
      ...(input.overnightCycleNotifyEmail !== undefined ? { overnightCycleNotifyEmail: input.overnightCycleNotifyEmail } : {}),
      ...(input.researchProgram !== undefined ? { researchProgram: input.researchProgram } : {}),
    });
  try {
    const { data } = await (input.researchCycleEnabled === false ? patch.remove(["cycle_index"]) : patch)
      // (An item written before `updated_at` existed has none: the first write gives it one.)
      .where((a, op) => (read.updated_at ? op.eq(a.updated_at, read.updated_at) : op.notExists(a.updated_at)))
      .go({ response: "all_new" });
    return toSettings(data as Awaited<ReturnType<typeof settingsItem>>);
  } catch (err) {
    if (isConditionalFailure(err)) return undefined;
    throw err;
  }
}

/**
 * The workspaces whose research cycles are enabled (the settings' sparse index, one Query per page; core/cycle reads
 * it every night). Whether each may still run one (the plan in effect) is the cycle's to check.
 */
export async function workspacesWithCycles(): Promise<string[]> {
  const { data } = await db().entities.workspaceSettings.query.cyclesEnabled({ cycle_index: CYCLES_ON }).go({ pages: "all", attributes: ["workspace_id"] });
  return data.map((s) => s.workspace_id);
}

/** A workspace's settings for the service's own work (the research cycles), without a caller. @throws NOT_FOUND. */
export async function settingsOf(workspaceId: string): Promise<WorkspaceSettings> {
  return toSettings(await settingsItem(workspaceId));
}

/**
 * The copilot's opening line for the workspace and the four counts (spec 01 agent-intro). The state is
 * empty (no sources), has_sources (no insights yet), has_insights (insights, nothing delivered yet), or
 * rich (insights plus recommendations or documents).
 */
export async function agentIntro(userId: string, workspaceId: string): Promise<AgentIntro> {
  await requireMember(userId, workspaceId);
  const pk = partitionOf(workspaceId);
  const [workspace, source_count, insight_count, recommendation_count, document_count] = await Promise.all([
    getItem(workspaceId),
    countByPrefix(pk, CHILD_PREFIX.source, "research_source"),
    countByPrefix(pk, CHILD_PREFIX.insight, "insight"),
    countByPrefix(pk, CHILD_PREFIX.recommendation, "recommendation"),
    documentsOf(workspaceId, { attributes: ["id"] }).then((docs) => docs.length),
  ]);
  const product = workspace?.product_name || workspace?.name || "your product";
  const plural = (n: number, word: string) => `${n} ${word}${n === 1 ? "" : "s"}`;
  let state: AgentIntro["state"];
  let intro: string;
  if (source_count === 0) {
    state = "empty";
    intro = `Welcome to ${product}. Upload your first research (interview transcripts, support tickets, survey exports, app reviews) and I will pull out what your users are telling you.`;
  } else if (insight_count === 0) {
    state = "has_sources";
    intro = `You have ${plural(source_count, "research source")} in ${product}. Run a synthesis and I will turn them into insights with verbatim quotes.`;
  } else if (recommendation_count === 0 && document_count === 0) {
    state = "has_insights";
    intro = `${product} has ${plural(insight_count, "insight")} from ${plural(source_count, "source")}. Shall I turn the strongest into prioritized recommendations?`;
  } else {
    state = "rich";
    intro = `${product} has ${plural(insight_count, "insight")}, ${plural(recommendation_count, "recommendation")} and ${plural(document_count, "document")}. Ask me to draft a PRD, challenge a spec, or find what the research says about a topic.`;
  }
  return { intro, state, source_count, insight_count, recommendation_count, document_count };
}

async function toMembers(memberships: MembershipItem[]): Promise<Member[]> {
  if (memberships.length === 0) return [];
  const users = await getAll(memberships.map((m) => ({ id: m.user_id })), (keys) => db().entities.user.get(keys).go());
  const byId = new Map(users.map((u) => [u.id, u]));
  return memberships.map((m) => ({
    user_id: m.user_id,
    email: byId.get(m.user_id)?.email ?? "",
    name: byId.get(m.user_id)?.name ?? "",
    role: m.role,
    created_at: m.created_at,
  }));
}

/** Members of a workspace, owner first then by join time; member only. */
export async function listMembers(userId: string, workspaceId: string): Promise<{ members: Member[]; total: number }> {
  await requireMember(userId, workspaceId);
  const { data } = await db().entities.membership.query.byWorkspace({ workspace_id: workspaceId }).go({ pages: "all", consistent: true });
  const rank = { owner: 0, admin: 1, member: 2 } as const;
  const members = (await toMembers(data)).sort((a, b) => rank[a.role] - rank[b.role] || a.created_at.localeCompare(b.created_at));
  return { members, total: members.length };
}

/**
 * Add a known user by e-mail with a role; owner or admin. The address names its earliest user whose provider did not
 * call it unverified and who is not being deleted (core/user `findByEmail`). The membership and the workspace's seats
 * counter are one transaction, the counter conditioned on the plan's `max_seats_per_workspace`
 * (core/billing/counters.ts), so concurrent adds cannot pass it; the route's plan gate (`usage: "seats"`) answers
 * first with the figures. The same transaction checks that the user still exists without `deleting_at`, and that the
 * workspace still exists with no deletion begun (its `wsdelete` record, core/workspace/deletion.ts): a membership
 * written after either deletion's cascade read the memberships would outlive it.
 * @throws AppError USER_NOT_FOUND (404) when nobody with that e-mail has signed in yet (or that user is being deleted);
 *   ALREADY_MEMBER (409); FORBIDDEN (403) when the workspace's deletion began meanwhile (what `requireMember` answers
 *   from then on); USAGE_LIMIT_EXCEEDED (402) when the workspace has as many members as the owner's plan in effect
 *   allows.
 */
export async function addMember(userId: string, workspaceId: string, input: AddMemberInput): Promise<Member> {
  await requireMember(userId, workspaceId, ["owner", "admin"]);
  const target = await User.findByEmail(input.email);
  const notFound = () => new AppError("USER_NOT_FOUND", `No user with the verified e-mail ${input.email} has signed in yet; ask them to sign in once, then add them`);
  if (!target) throw notFound();
  for (let attempt = 0; ; attempt++) {
    if (attempt >= COUNTED_TRIES) throw new AppError("SERVICE_UNAVAILABLE", "Too many members are being added at once; try again", { retryable: true });
    const { plan, limits } = await limitsOfWorkspace(workspaceId);
    const limit = limits.max_seats_per_workspace;
    const { data: counter } = await db().entities.usage.get({ workspace_id: workspaceId }).go({ consistent: true });
    // A workspace older than the counter starts it from its members (conditioned on it still being unset).
    const members = counter?.members ?? (await countByPrefix(partitionOf(workspaceId), "member#", "membership"));
    if (limit !== null && members >= limit) throw usageLimitError("seats", members, limit, plan);
    const result = await createWriteTransaction(
      db().pick("membership", "usage", "user", "workspace", "workspaceDeletion"),
      ({ membership, usage, user, workspace, workspaceDeletion }) => [
        membership.create({ workspace_id: workspaceId, user_id: target.id, role: input.role, added_by: userId }).commit(),
        counter?.members === undefined
          ? usage.update({ workspace_id: workspaceId }).set({ members: members + 1 }).where((a, op) => op.notExists(a.members)).commit()
          : usage.update({ workspace_id: workspaceId }).add({ members: 1 }).where((a, op) => (limit === null ? "" : op.lt(a.members, limit))).commit(),
        // The user's deletion (user.deleted) may begin after the lookup: its cascade would not see this membership.
        user.check({ id: target.id }).where((a, op) => `${op.exists(a.id)} AND ${op.notExists(a.deleting_at)}`).commit(),
        // Likewise the workspace's: its cascade deletes the memberships it read when it began.
        workspace.check({ id: workspaceId }).where((a, op) => op.exists(a.id)).commit(),
        workspaceDeletion.check({ workspace_id: workspaceId }).where((a, op) => op.notExists(a.workspace_id)).commit(),
      ],
    ).go();
    const codes = cancelCodes(result);
    if (codes[3] === "ConditionalCheckFailed" || codes[4] === "ConditionalCheckFailed") throw Errors.forbidden();
    if (codes[0] === "ConditionalCheckFailed") throw new AppError("ALREADY_MEMBER", `${input.email} is already a member of this workspace`);
    if (codes[2] === "ConditionalCheckFailed") throw notFound();
    if (!result.canceled) break;
    // The counter refused: the limit was reached meanwhile (the next read says so), or a concurrent add moved it.
  }
  const { data } = await db().entities.membership.get({ workspace_id: workspaceId, user_id: target.id }).go({ consistent: true });
  return (await toMembers([data!]))[0]!;
}

/** Change a member's role (admin or member); owner or admin. The owner's role cannot change. */
export async function updateMember(userId: string, workspaceId: string, memberId: string, input: UpdateMemberInput): Promise<Member> {
  await requireMember(userId, workspaceId, ["owner", "admin"]);
  const { data: target } = await db().entities.membership.get({ workspace_id: workspaceId, user_id: memberId }).go({ consistent: true });
  if (!target) throw Errors.notFound("Member");
  if (target.role === "owner") throw new AppError("FORBIDDEN", "The owner's role cannot be changed");
  try {
    const { data } = await db()
      .entities.membership.patch({ workspace_id: workspaceId, user_id: memberId })
      .set({ role: input.role })
      .where((attr, op) => op.ne(attr.role, "owner"))
      .go({ response: "all_new" });
    return (await toMembers([data as MembershipItem]))[0]!;
  } catch (err) {
    // Removed between the read and the write (the patch is conditioned on the item being there).
    if (isConditionalFailure(err)) throw Errors.notFound("Member");
    throw err;
  }
}

/**
 * Remove a member; owner or admin, or any member removing themselves. The owner cannot be removed. The seat goes back
 * with the membership, once (core/workspace/deletion.ts `dropMembership`).
 * @throws AppError FORBIDDEN (403) without the role, or for the owner; NOT_FOUND (404) no such member (or removed
 *   meanwhile); SERVICE_UNAVAILABLE (503) when the seat counter stays contended.
 */
export async function removeMember(userId: string, workspaceId: string, memberId: string): Promise<void> {
  if (userId === memberId) await requireMember(userId, workspaceId);
  else await requireMember(userId, workspaceId, ["owner", "admin"]);
  await requireDropMembership(workspaceId, memberId);
}

/** How often, and how far apart (ms), `removeAllOf` looks again for owned workspaces its first read missed. */
const OWNED_RECHECKS = 6;
const OWNED_RECHECK_MS = 500;

/**
 * Everything a deleted user owns (spec 02 user.deleted): workspaces they own are deleted whole (`deleteWorkspace`: each
 * begun durably, its slot given back, and its cascade run within one budget shared by the whole delivery,
 * `WORKSPACE_DELETION_BUDGET_MS`; what is left the recovery sweeper finishes; a redelivery finds the owner's
 * membership, marked, and goes on); their memberships elsewhere are removed with their seats given back, and their
 * memory, skill suggestions, ratings and conversations there deleted (`purgeMemberItems`).
 *
 * The user's memberships are found on gsi2, which is eventually consistent: a workspace whose create committed a
 * moment before the deletion began (its transaction checked the user item before `deleting_at`) may be missing from
 * the first read. Each deletion gives the owner's slot back (`workspaces_owned`), so the counter, read strongly, says
 * whether an owned workspace is left; while it is, the memberships are read again, up to OWNED_RECHECKS times
 * OWNED_RECHECK_MS apart. A counter still above 0 after that (one that drifted) is logged, not an error: it must not
 * keep the account from being deleted.
 * @throws the DynamoDB and S3 clients' errors (the redelivered event runs the cascade again)
 */
export async function removeAllOf(user: User.User): Promise<void> {
  // One budget for every owned workspace's cascade: the webhook's request must answer; each deletion is begun anyway.
  const deadline = Date.now() + WORKSPACE_DELETION_BUDGET_MS;
  await removeMemberships(user, deadline);
  for (let pass = 0; pass < OWNED_RECHECKS; pass++) {
    const { data: account } = await db().entities.billingAccount.get({ user_id: user.id }).go({ consistent: true });
    // No counter: no workspace was created since it exists, so none can have raced the deletion.
    if (!account?.workspaces_owned) return;
    await sleep(OWNED_RECHECK_MS);
    await removeMemberships(user, deadline);
  }
  serviceLog("workspace").warn("a deleted user's owned-workspaces counter is still above 0", { user_id: user.id });
}

/** One pass of `removeAllOf` over the user's memberships as gsi2 lists them now. */
async function removeMemberships(user: User.User, deadline: number): Promise<void> {
  const { data: memberships } = await db().entities.membership.query.byUser({ user_id: user.id }).go({ pages: "all" });
  for (const m of memberships) {
    if (m.role === "owner") {
      await deleteWorkspace(user.id, m.workspace_id, { deadline });
      continue;
    }
    // Purged before the membership goes (a redelivery after a crash finds the membership, so the purge runs again)
    // and after (what a request already past its membership check wrote meanwhile).
    await purgeMemberItems(m.workspace_id, user.id, { account: true });
    await dropMembership(m.workspace_id, user.id);
    await purgeMemberItems(m.workspace_id, user.id, { account: true });
  }
}

/** A workspace's product fields, as context for the AI engines. */
export interface ProductContext {
  product_name: string | null;
  product_description: string | null;
  target_users: string | null;
  current_stage: string | null;
}

/** The product fields of a workspace item already read (null: none). */
export function productContextOf(w: WorkspaceItem | null): ProductContext {
  return {
    product_name: w?.product_name ?? w?.name ?? null,
    product_description: w?.product_description ?? null,
    target_users: w?.target_users ?? null,
    current_stage: w?.current_stage ?? null,
  };
}

/** The workspace's product fields, as context for the AI engines (no membership check: callers have done it). */
export async function productContext(workspaceId: string): Promise<ProductContext> {
  return productContextOf(await getItem(workspaceId));
}

/**
 * The caller's membership and the workspace item, in ONE round trip (`readManyAsMember`: a strongly consistent
 * BatchGetItem of both, and of the items read ahead), for a request that needs the workspace itself after the check
 * (the copilot: its owner pays, its product fields go into the system prompt).
 * @param prefetch items of the workspace a later step of the request will read (core/db/read.ts `Prefetch`), read in
 *   the same round trip and handed to their `keep` once the membership check has passed (never to a non-member).
 * @throws AppError FORBIDDEN (403) when the caller is not a member (spec 01 Authorization) or lacks `roles`;
 *   NOT_FOUND (404) when the workspace is gone while the membership is still there (a purge under way).
 */
export async function requireMemberWithWorkspace(
  userId: string,
  workspaceId: string,
  opts: { roles?: Role[]; prefetch?: readonly Prefetch[] } = {},
): Promise<{ membership: MembershipItem; workspace: WorkspaceItem }> {
  const prefetch = opts.prefetch ?? [];
  const refs = [{ entity: db().entities.workspace, key: { id: workspaceId } }, ...prefetch.map((p) => p.ref)];
  const { membership, items } = await readManyAsMember(userId, workspaceId, refs, { scope: "workspace", roles: opts.roles });
  const [item, ...ahead] = items as [WorkspaceItem | null, ...unknown[]];
  if (!item) throw Errors.notFound("Workspace");
  prefetch.forEach((p, i) => p.keep(ahead[i] ?? null));
  return { membership, workspace: item };
}
