import { isConditionalFailure } from "../db/errors";
import { randomInt, randomUUID } from "node:crypto";
import { v5 as uuidv5 } from "uuid";
import type { EntityItem } from "electrodb";
import { Config } from "../config";
import { serviceLog } from "../log";
import { AppError, Errors } from "../error";
import { createWriteTransaction } from "electrodb";
import { db } from "../db/service";
import type { UserEntity } from "./user.entity";
import { userEventOf, type AccessStatus, type IdpUserEvent, type IdpWebhookEvent, type TokenClaims, type UserProfile } from "./schema";
import { AccessStatusTable } from "./access";
import { LRUCache } from "lru-cache";

export * from "./schema";
export { ACCESS_TRANSITIONS, AccessStatusTable } from "./access";

export type User = EntityItem<UserEntity>;

/** Namespace for deriving our user id from the identity provider's id (UUID v5), so user creation is idempotent. */
const USER_ID_NAMESPACE = "6f1c4a52-3b0e-4c1e-9b1a-2f4d6f0e8a11";

/** Our user id for an identity-provider user id. Deterministic: the same idp id always maps to the same UUID. */
export const userIdFor = (idpId: string): string => uuidv5(idpId, USER_ID_NAMESPACE);

const CODE_ALPHABET = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789"; // no 0/O, 1/I: codes are read aloud and retyped

/** A random code of `length` characters from an unambiguous alphabet (crypto-random). */
export function randomCode(length = 8): string {
  let out = "";
  for (let i = 0; i < length; i++) out += CODE_ALPHABET[randomInt(CODE_ALPHABET.length)];
  return out;
}

/** True when the user may create workspaces and use the product (spec 01: active, or a founder). */
export const hasProductAccess = (user: Pick<User, "access_status" | "is_founder">): boolean =>
  user.is_founder === true || user.access_status === "active";

/** Spec 01 profile, snake_case plus camelCase aliases. */
export function toProfile(user: User): UserProfile {
  const access = hasProductAccess(user);
  return {
    id: user.id,
    email: user.email,
    name: user.name ?? "",
    avatar_url: user.avatar_url ?? null,
    idp_id: user.idp_id,
    idpUserId: user.idp_id,
    access_status: user.access_status,
    accessStatus: user.access_status,
    has_product_access: access,
    hasProductAccess: access,
    is_founder: user.is_founder ?? false,
    isFounder: user.is_founder ?? false,
    referral_code: user.referral_code,
    referralCode: user.referral_code,
    activated_at: user.activated_at ?? null,
    activatedAt: user.activated_at ?? null,
    created_at: user.created_at,
  };
}

/** Fetch a user by our id (strongly consistent), or null. */
export async function get(id: string): Promise<User | null> {
  const { data } = await db().entities.user.get({ id }).go({ consistent: true });
  return data;
}

/**
 * The user an e-mail address names (case-insensitive), or null. Addresses are not unique among users: one person may
 * sign in through several identities (a password and a Google account, each its own user), and a provider that does
 * not verify addresses lets anyone claim one. So only users whose provider did not say the address was unverified
 * (`email_verified` true or unsaid) count, and of those the earliest to sign up: the same user for every caller,
 * never one who merely claimed the address (docs/decisions.md "Adding a member by e-mail"). A user being deleted
 * (`deleting_at`) is left out.
 */
export async function findByEmail(email: string): Promise<User | null> {
  // Every user of the address (pages): many who merely claim it must not hide its owner.
  const { data } = await db().entities.user.query.byEmail({ email: email.toLowerCase() }).go({ pages: "all" });
  // A user whose deletion has begun names no one: a membership added now would outlive the deletion's cascade.
  const owners = data.filter((u) => u.email_verified !== false && !u.deleting_at).sort((a, b) => a.created_at.localeCompare(b.created_at) || a.id.localeCompare(b.id));
  return owners[0] ?? null;
}

/** What a user is created from (`ensure`): the identity provider's id and the claims of its first token or event. */
export interface NewUserInput {
  idpId: string;
  email: string;
  name?: string;
  avatarUrl?: string;
  emailVerified?: boolean;
}

/**
 * Create the local user for an identity-provider user, or return the existing one (spec 01, Access status).
 * New users are `pending` while access gating is on, `active` when it is off; founders are always active.
 * The user item and its referral-code guard are written in one transaction; concurrent first requests
 * resolve to the same user because the id is derived from the idp id.
 * @throws AppError UNAUTHORIZED (401) when the user was deleted within a token's lifetime (its tombstone holds), even
 *   when the deletion lands between the caller's own check and this write.
 */
export async function ensure(input: NewUserInput): Promise<User> {
  const user = await ensureUnlessDeleted(input);
  if (!user) throw Errors.unauthorized("This account was deleted");
  return user;
}

/**
 * `ensure`, answering null instead of creating a user whose tombstone holds. The transaction checks the tombstone
 * itself: a `user.deleted` that lands after a caller's `isDeleted` read and before the write would otherwise find no
 * user to delete, and the account would come back under the same id (docs/decisions.md "A deleted user stays deleted").
 */
async function ensureUnlessDeleted(input: NewUserInput): Promise<User | null> {
  const id = userIdFor(input.idpId);
  const existing = await get(id);
  if (existing) return existing;
  const email = input.email.toLowerCase();
  // An address the provider says it has not verified makes no founder: anyone could claim it.
  const isFounder = input.emailVerified !== false && Config.founderEmails().includes(email);
  const active = isFounder || !Config.accessGating();
  const now = new Date().toISOString();
  for (let attempt = 0; attempt < 5; attempt++) {
    const code = randomCode();
    const nowSeconds = Math.floor(Date.now() / 1000);
    const result = await createWriteTransaction(db().pick("user", "referralCode", "guard"), ({ user, referralCode, guard }) => [
      user
        .create({
          id,
          idp_id: input.idpId,
          email,
          ...(input.emailVerified !== undefined ? { email_verified: input.emailVerified } : {}),
          name: input.name ?? "",
          avatar_url: input.avatarUrl,
          access_status: active ? "active" : "pending",
          is_founder: isFounder,
          referral_code: code,
          activated_at: active ? now : undefined,
        })
        .commit(),
      referralCode.create({ code, user_id: id }).commit(),
      // No tombstone, or only an expired one that TTL has not removed yet (as `isDeleted` reads it).
      guard
        .check(tombstone(id))
        .where((a, op) => `${op.notExists(a.ttl)} OR ${op.lt(a.ttl, nowSeconds)}`)
        .commit(),
    ]).go();
    if (!result.canceled) return (await get(id))!;
    // Deleted meanwhile (the check refused, or the tombstone's write collided with this transaction).
    if (await isDeleted(id)) return null;
    const raced = await get(id);
    if (raced) return raced; // another request created this user first
    // otherwise the referral code collided: draw another
  }
  throw new AppError("INTERNAL", "Could not allocate a unique referral code");
}

/**
 * What a token says of the stored address that the user item does not say yet: `{ verified }` to record (undefined:
 * remove the stored false), or null when there is nothing to record. Only a token carrying that same address speaks
 * for it. Its `email_verified` is recorded whenever it differs from the stored one, in both directions: a `false` for
 * a user stored without the claim (the user.created webhook stores none) must stop that user from naming the address
 * (`findByEmail`). A token without the claim only clears a stored false (unsaid is what a new user's token is taken
 * at); against a stored true it says nothing new, so it writes nothing.
 */
function verificationToRecord(user: Pick<User, "email" | "email_verified">, claims: TokenClaims): { verified: boolean | undefined } | null {
  if (claims.email?.toLowerCase() !== user.email) return null;
  if (claims.email_verified === undefined) return user.email_verified === false ? { verified: undefined } : null;
  return claims.email_verified === user.email_verified ? null : { verified: claims.email_verified };
}

/**
 * Resolve the caller from verified token claims (the auth middleware, functions/lib/http.ts), creating the user from
 * the claims if the identity provider's user.created webhook has not arrived yet. An active or suspended user is
 * served from this container's memory for up to USER_CACHE_TTL_MS (30 s) after it was read: no DynamoDB call on most
 * requests; a pending user is read every time (DESIGN.md 6; docs/decisions.md "Reads in one round trip").
 * @throws AppError UNAUTHORIZED when the token carries no e-mail and the user is unknown, or the user was deleted
 *   (within a token's lifetime of the deletion).
 */
export async function fromClaims(claims: TokenClaims): Promise<User> {
  const id = userIdFor(claims.sub);
  const key = cacheKey(id);
  const hit = recentUsers.get(key);
  // A copy: no caller may change the item the next request of this container is served.
  // (A token that says otherwise of the cached user's address than is stored goes on to record it.)
  if (hit && !verificationToRecord(hit, claims)) return { ...hit };
  let user = await get(id);
  if (user?.deleting_at) throw Errors.unauthorized("This account is being deleted");
  const record = user && verificationToRecord(user, claims);
  if (record) {
    // The provider's latest word on the address (verified since, or unverified after all): whether it names this user
    // (findByEmail) follows it. One write, on a change only; conditioned on the address it is about.
    try {
      const patch = db().entities.user.patch({ id });
      const write = record.verified === undefined ? patch.remove(["email_verified"]) : patch.set({ email_verified: record.verified });
      user = (await write.where((a, op) => op.eq(a.email, user!.email)).go({ response: "all_new" })).data as User;
    } catch (err) {
      if (!isConditionalFailure(err)) throw err;
      user = await get(id); // deleted meanwhile (refused below), or its address changed: the new one is not this token's
      if (user?.deleting_at) throw Errors.unauthorized("This account is being deleted");
    }
  }
  if (!user) {
    // Unknown: a first request, or a deleted user's token that is still valid (refused, never re-created; `ensure`
    // checks the tombstone again in its write, for a deletion that lands after this read).
    if (await isDeleted(id)) throw Errors.unauthorized("This account was deleted");
    if (claims.email) user = await ensure({ idpId: claims.sub, email: claims.email, name: claims.name, avatarUrl: claims.picture, emailVerified: claims.email_verified });
  }
  if (!user) throw Errors.unauthorized("Token has no email claim and the user is not known yet");
  remember(key, user);
  return user;
}

/**
 * How long a container serves the caller's user item (access status, e-mail, name) from memory instead of reading it
 * for every request (docs/decisions.md "Reads in one round trip"): a suspension, a deletion or a profile change made
 * by another container takes effect within this bound; one made in this container takes effect at once (`forget`).
 */
export const USER_CACHE_TTL_MS = 30_000;
/** Users a container keeps in memory at most (about 1 KB each); the least recently seen is dropped beyond it. */
export const USER_CACHE_MAX = 2_000;

// `perf` reads Date.now (the clock tests move with vi.setSystemTime), on every read (`ttlResolution: 0`: the library
// otherwise reuses one reading for a millisecond of real time).
const recentUsers = new LRUCache<string, User>({ max: USER_CACHE_MAX, ttl: USER_CACHE_TTL_MS, ttlResolution: 0, perf: { now: () => Date.now() } });
/** Keyed by table too: a process that switches tables (tests, benchmarks) never serves a user of another one. */
const cacheKey = (id: string) => `${Config.tableName()}#${id}`;

/**
 * Keep a user for the next requests of this container, unless they are `pending`: a pending user's redemption may
 * happen in any container and must take effect at once (its next request reads the item), so only states whose way
 * out is a loss of access (active -> suspended, deletion) are served from memory, within USER_CACHE_TTL_MS.
 */
function remember(key: string, user: User): void {
  if (user.access_status === "pending") recentUsers.delete(key);
  else recentUsers.set(key, { ...user });
}

/** Drop a user from this container's cache (after a write to it here, so this container sees it at once). */
export function forget(id: string): void {
  recentUsers.delete(cacheKey(id));
}

/** Drop every cached user of this container (tests; a process that must see every change at once). */
export function forgetAll(): void {
  recentUsers.clear();
}

/**
 * Redeem an access code (spec 01 Access status: pending -> active). The code and the user change in one
 * transaction guarded by conditions, so a code is redeemed once even under concurrent redemption.
 * @throws AppError INVALID_ACCESS_CODE (400) unknown or revoked code; ACCESS_CODE_REDEEMED (409) used code;
 *   ALREADY_ACTIVE (409) the caller already has access; FORBIDDEN (403) a suspended account.
 */
export async function redeemCode(user: User, rawCode: string): Promise<User> {
  const code = rawCode.trim().toUpperCase();
  if (user.access_status === "suspended") throw new AppError("FORBIDDEN", "This account is suspended");
  if (hasProductAccess(user)) throw new AppError("ALREADY_ACTIVE", "You already have product access; keep the code for someone else");
  const { data: found } = await db().entities.accessCode.get({ code }).go({ consistent: true });
  if (!found || found.status === "revoked") throw new AppError("INVALID_ACCESS_CODE", "That access code is not valid");
  if (found.status === "redeemed") throw new AppError("ACCESS_CODE_REDEEMED", "That access code has already been redeemed");
  const now = new Date().toISOString();
  const result = await createWriteTransaction(db().pick("accessCode", "user"), ({ accessCode, user: users }) => [
    accessCode
      .patch({ code })
      .set({ status: "redeemed", redeemed_by: user.id, redeemed_by_email: user.email, redeemed_at: now })
      .where((attr, op) => op.eq(attr.status, "available"))
      .commit(),
    users
      .patch({ id: user.id })
      .set({ access_status: "active", activated_at: now })
      .where((attr, op) => op.eq(attr.access_status, "pending"))
      .commit(),
  ]).go();
  forget(user.id);
  if (result.canceled) {
    const { data: after } = await db().entities.accessCode.get({ code }).go({ consistent: true });
    if (after?.status === "redeemed") throw new AppError("ACCESS_CODE_REDEEMED", "That access code has already been redeemed");
    throw new AppError("CONFLICT", "Your account changed while redeeming; try again");
  }
  return (await get(user.id))!;
}

/**
 * Revoke a user's product access (spec 01 Access status: active → suspended, by an admin). A conditional write on the
 * status it was read in, so a concurrent change (a redemption) is never overwritten; from any other status the access
 * table (core/user/access.ts) refuses it. A suspended user is refused by every route but their own profile
 * (functions/lib/http.ts).
 * @throws AppError USER_NOT_FOUND (404) unknown user; INVALID_TRANSITION (422) with `valid_transitions` when the user
 *   is not active.
 */
export async function revokeAccess(userId: string): Promise<User> {
  for (let attempt = 0; attempt < 3; attempt++) {
    const user = await get(userId);
    if (!user) throw new AppError("USER_NOT_FOUND", "User not found");
    AccessStatusTable.assertTransition(user.access_status, "suspended");
    try {
      await db()
        .entities.user.patch({ id: userId })
        .set({ access_status: "suspended" })
        .where((attr, op) => op.eq(attr.access_status, user.access_status))
        .go();
      // This container refuses the user from the next request on; the others within USER_CACHE_TTL_MS.
      forget(userId);
      return (await get(userId))!;
    } catch (err) {
      if (!isConditionalFailure(err)) throw err;
      // The status moved since the read (or the user was deleted): decide again on a fresh read.
    }
  }
  throw new AppError("CONFLICT", "The account changed while revoking; try again");
}

/** How many users have `status` (admin growth stats), read from the by-status index page by page (no Scan). */
export async function countByAccessStatus(status: AccessStatus): Promise<number> {
  const { data } = await db().entities.user.query.byAccessStatus({ access_status: status }).go({ pages: "all", attributes: ["id"] });
  return data.length;
}

/** An access code by its text (strongly consistent), or null. */
export async function getAccessCode(code: string) {
  const { data } = await db().entities.accessCode.get({ code: code.trim().toUpperCase() }).go({ consistent: true });
  return data;
}

/**
 * Generate `count` fresh access codes (admin CLI now, admin endpoints later). Each is created with a
 * conditional put, so an existing code is never overwritten.
 */
export async function generateAccessCodes(count: number, metadata: Record<string, unknown> = {}) {
  const codes: { code: string; metadata: Record<string, unknown> }[] = [];
  while (codes.length < count) {
    const code = randomCode(10);
    try {
      await db().entities.accessCode.create({ code, metadata }).go();
      codes.push({ code, metadata });
    } catch (err) {
      if (!isConditionalFailure(err)) throw err;
    }
  }
  return codes;
}

/**
 * Apply an identity-provider webhook event (spec 02, Inbound webhook events). Each event is idempotent on its own
 * (create of an existing user, update with the same values, delete of a missing user), but a replayed *older* event
 * would undo newer ones: deliveries go through `applyIdpEventOnce`.
 */
export async function applyIdpEvent(event: IdpUserEvent, removeOwned: (user: User) => Promise<void>): Promise<void> {
  const { type, data } = event;
  const id = userIdFor(data.id);
  if (type === "user.created" || type === "user.updated") {
    const existing = await get(id);
    if (!existing) {
      // A creation or change delivered after the user's deletion (webhooks arrive in any order) creates nothing.
      if (await isDeleted(id)) return;
      if (!data.email) throw new AppError("BAD_REQUEST", `${type} without an email for an unknown user`);
      // Null when the deletion landed after the check above: nothing created, as in that case.
      await ensureUnlessDeleted({ idpId: data.id, email: data.email, name: data.name, avatarUrl: data.avatar_url });
      return;
    }
    if (type === "user.updated") {
      // A new address is not known to be verified: its `email_verified` is the provider's word on the old one. Until a
      // token of that address says otherwise it names no one (findByEmail) and grants nothing (ADMIN_EMAILS).
      const changed = data.email !== undefined && data.email.toLowerCase() !== existing.email;
      // Deliveries are deduplicated per message, not ordered: an older change retried after a newer one would undo
      // it. With the event's own time, only a change at least as new as the last one applied is written.
      const at = eventTime(event.timestamp);
      try {
        await db()
          .entities.user.patch({ id })
          .set({
            ...(data.email ? { email: data.email.toLowerCase() } : {}),
            ...(changed ? { email_verified: false } : {}),
            ...(data.name !== undefined ? { name: data.name } : {}),
            ...(data.avatar_url !== undefined ? { avatar_url: data.avatar_url } : {}),
            ...(at ? { idp_event_at: at } : {}),
          })
          .where((a, op) => (at ? `${op.notExists(a.idp_event_at)} OR ${op.lte(a.idp_event_at, at)}` : ""))
          .go();
      } catch (err) {
        if (!isConditionalFailure(err)) throw err;
        // Older than a change already applied, or the user deleted meanwhile: nothing to write either way.
        if (await get(id)) serviceLog("idp").info("an older user.updated arrived after a newer one; not applied", { user_id: id, event_at: at });
      }
      forget(id);
    }
    return;
  }
  forget(id);
  // First the tombstone, even for a user never stored here (a deletion delivered before the creation, or before the
  // user's first request): from here neither a token still valid nor a late user.created brings the account back.
  await markDeleted(id);
  const existing = await get(id);
  if (!existing) return;
  // Refused from here on, not only once the cascade ends: a workspace created meanwhile would outlive it. (Another
  // container's cached user is served up to USER_CACHE_TTL_MS longer.)
  try {
    await db().entities.user.patch({ id }).set({ deleting_at: new Date().toISOString() }).go();
  } catch (err) {
    if (!isConditionalFailure(err)) throw err;
    return; // deleted meanwhile by another delivery
  }
  await removeOwned(existing);
  // After the workspaces: a request of theirs still running there has had the longest time to store its answer.
  await removeIdempotencyRecords(id);
  await db().entities.referralCode.delete({ code: existing.referral_code }).go();
  await db().entities.user.delete({ id }).go();
  forget(id);
}

/** An event's occurrence time as stored (ISO 8601 UTC, milliseconds), or undefined when it has none or not a time. */
function eventTime(timestamp: string | undefined): string | undefined {
  const ms = timestamp === undefined ? NaN : Date.parse(timestamp);
  return Number.isFinite(ms) ? new Date(ms).toISOString() : undefined;
}

/**
 * The partition of a user's `Idempotency-Key` records (functions/lib/idempotency.ts): one per user, so the records
 * spread over partitions and the user's deletion finds them with one Query. Sort key: `<route id>#<hash of the key>`.
 */
export const idempotencyPartitionOf = (userId: string): string => `idempotency#${userId}`;

/**
 * Delete the user's idempotency records (their stored answers: drafts, syntheses), part of the `user.deleted` cascade,
 * so no answer is kept for replay after its account is gone (their TTL would keep them up to 24 hours). Safe to run
 * again: a redelivered deletion that resumes the cascade deletes whatever is left.
 * @throws Error when DynamoDB keeps refusing deletes (`deleteKeys`): the cascade stops before the user item goes, so
 *   the redelivered event runs it again.
 */
async function removeIdempotencyRecords(userId: string): Promise<void> {
  // Loaded only here: a deletion is rare, and every authenticating Lambda loads this module.
  const { deleteKeys, partitionKeys } = await import("../db/partition");
  await deleteKeys(await partitionKeys(idempotencyPartitionOf(userId)));
}

/** The tombstone of a deleted user: a guard item in the user's own partition, kept as long as a token can live. */
const tombstone = (id: string) => ({ scope: `user#${id}`, name: "deleted" });

/**
 * Mark a user deleted (spec 02 `user.deleted`) for the longest lifetime a token is accepted (`JWT_MAX_LIFETIME_SECONDS`)
 * plus a minute of clock skew: a token issued before the deletion would otherwise create the user again on its next
 * request (`fromClaims` creates unknown users from their claims), with the same derived id and none of its history.
 */
async function markDeleted(id: string): Promise<void> {
  const ttl = Math.floor(Date.now() / 1000) + Config.jwtMaxLifetimeSeconds() + 60;
  await db().entities.guard.put({ ...tombstone(id), ttl }).go();
}

/** Whether the user was deleted within a token's lifetime (its tombstone holds). */
async function isDeleted(id: string): Promise<boolean> {
  const { data } = await db().entities.guard.get(tombstone(id)).go({ consistent: true });
  return !!data && data.ttl > Date.now() / 1000;
}

/** How long a delivery holds its webhook id while applying the event: above the webhooks Lambda's 29 s timeout. */
const WEBHOOK_LEASE_SECONDS = 60;
/** The owner of a receipt whose event has been applied: no delivery holds it any more. */
const APPLIED = "applied";

/**
 * Apply a verified identity-provider webhook once per `webhook-id` (Standard Webhooks: the provider's retries of a
 * message keep its id). A receipt (a TTL'd guard item, like the locks of core/agent) is claimed with a conditional
 * put before the event is applied, marked applied after it, and kept for Config.idpWebhookDedupSeconds; so of two
 * identical deliveries at once only one applies. A failed application drops the claim, so a retry applies the event.
 * Call it only after the signature has been verified, or anyone could claim a message id ahead of the provider.
 * An event of a type the service does not handle (not user.created, user.updated, user.deleted) changes nothing and
 * claims no receipt.
 * @returns "ignored" for an unhandled type; "duplicate" when the message was applied before (answer 2xx: nothing to
 *   do); else "applied".
 * @throws AppError CONFLICT (409) while another delivery of the message is being applied (the provider retries later);
 *   whatever `applyIdpEvent` throws.
 */
export async function applyIdpEventOnce(
  webhookId: string,
  event: IdpWebhookEvent,
  removeOwned: (user: User) => Promise<void>,
): Promise<"applied" | "duplicate" | "ignored"> {
  const userEvent = userEventOf(event);
  // Acknowledged as it is: an error would have the provider retry an event there is nothing to do for.
  if (!userEvent) return "ignored";
  const receipt = { scope: `idp-webhook#${webhookId}`, name: "receipt" };
  const owner: string = randomUUID();
  const now = Math.floor(Date.now() / 1000);
  try {
    await db()
      .entities.guard.put({ ...receipt, owner, ttl: now + WEBHOOK_LEASE_SECONDS })
      // An expired claim (a delivery that crashed) or an expired receipt is free; TTL deletion lags behind.
      .where((attr, op) => `${op.notExists(attr.owner)} OR ${op.lt(attr.ttl, now)}`)
      .go();
  } catch (err) {
    if (!isConditionalFailure(err)) throw err;
    const { data } = await db().entities.guard.get(receipt).go({ consistent: true });
    if (data?.owner === APPLIED) return "duplicate";
    throw new AppError("CONFLICT", "This webhook message is being processed by another delivery; retry later");
  }
  try {
    await applyIdpEvent(userEvent, removeOwned);
  } catch (err) {
    // Drop the claim so the provider's retry applies the event; if that fails too, the lease runs out on its own.
    await db()
      .entities.guard.delete(receipt)
      .where((attr, op) => op.eq(attr.owner, owner))
      .go()
      .catch(() => undefined);
    throw err;
  }
  try {
    await db()
      .entities.guard.patch(receipt)
      .set({ owner: APPLIED, ttl: Math.floor(Date.now() / 1000) + Config.idpWebhookDedupSeconds() })
      .where((attr, op) => op.eq(attr.owner, owner))
      .go();
  } catch (err) {
    // Only after our lease ran out (longer than a Lambda may run) could another delivery hold it: it records the receipt.
    if (!isConditionalFailure(err)) throw err;
  }
  return "applied";
}
