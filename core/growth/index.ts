/**
 * Admin growth (spec 02 "Admin growth (/api/admin/plg)", "Waitlist entry and access code"; DESIGN.md section 5): the
 * public waitlist, approval with invitation e-mails, access codes and their metadata, stats, the spreadsheet sync and
 * the admin's revocation of access. Who is an admin is the HTTP layer's (functions/lib/auth.ts `isAdminClaims`).
 */
import { randomUUID } from "node:crypto";
import { createWriteTransaction, type EntityItem } from "electrodb";
import { v5 as uuidv5 } from "uuid";
import pLimit from "p-limit";
import { Config } from "../config";
import { serviceLog } from "../log";
import { db } from "../db/service";
import { fitResponse } from "../response-size";
import { isConditionalFailure } from "../db/errors";
import { AppError } from "../error";
import { rateLimit } from "../rate-limit";
import * as User from "../user";
import { accountOf, grant } from "../billing/ledger";
import { mailer, type MailMessage } from "../mail";
import type { WaitlistEntryEntity } from "./growth.entity";
import type {
  ApproveInput,
  CodeMetadata,
  GenerateCodesInput,
  GrowthStats,
  JoinWaitlistInput,
  WaitlistEntryView,
  WaitlistStatus,
} from "./schema";
import type * as z from "zod";
import type { CodesQuery, WaitlistQuery } from "./schema";

export * from "./schema";

type Entry = EntityItem<WaitlistEntryEntity>;

const log = () => serviceLog();

/** Namespace of access code ids (UUID v5 of the code). */
const ACCESS_CODE_ID_NAMESPACE = "0b6c3f1e-7d2a-4f59-9a47-3c1e5b8d2f60";

// ---------------------------------------------------------------------------------------------------------------
// Waitlist

const JOIN_ANSWER = {
  status: "received" as const,
  detail: "Thanks. If this address was not on the waitlist yet, it is now; we will write to it when a place opens.",
};

/** The next join number: one atomic increment of a counter item (ADD), so concurrent joins never share a number. */
async function nextPosition(): Promise<number> {
  const { data } = await db().entities.growthCounter.update({ name: "waitlist_position" }).add({ value: 1 }).go({ response: "all_new" });
  if (typeof data.value !== "number") throw new AppError("INTERNAL", "The waitlist counter returned no value");
  return data.value;
}

const emailKey = (email: string) => email.trim().toLowerCase();

/**
 * Join the waitlist (public `POST /api/waitlist`). Counted per client address first (Config.rateLimit
 * "waitlist_join"); then the entry is created only if the address is not listed (a conditional create, with its
 * referral code's guard in the same transaction, and the referrer's `referral_count` + 1 when `referral_code` names a
 * listed entry). A new entry gets a confirmation e-mail with its place and referral code.
 * The answer is the same whatever happened, so the endpoint does not tell who is listed; a failed confirmation
 * e-mail is logged, not answered.
 * @param address the client's IP address (API Gateway's `sourceIp`)
 * @throws AppError RATE_LIMITED (429) over the address's limit.
 */
export async function joinWaitlist(input: JoinWaitlistInput, address: string): Promise<typeof JOIN_ANSWER> {
  const { max, windowSeconds } = Config.rateLimit("waitlist_join");
  await rateLimit(`addr#${address}`, max, windowSeconds, "waitlist_join");
  const email = emailKey(input.email);
  const { data: listed } = await db().entities.waitlistEntry.get({ email }).go({ consistent: true });
  if (listed) return JOIN_ANSWER;
  const refCode = input.referral_code?.trim().toUpperCase();
  const { data: referrer } = refCode ? await db().entities.waitlistReferral.get({ code: refCode }).go({ consistent: true }) : { data: null };
  const position = await nextPosition();
  for (let attempt = 0; attempt < 5; attempt++) {
    const referral_code = User.randomCode(8);
    const id = randomUUID();
    const result = await createWriteTransaction(db().pick("waitlistEntry", "waitlistReferral"), ({ waitlistEntry, waitlistReferral }) => [
      waitlistEntry
        .create({
          email, id, name: input.name ?? "", source: input.source || undefined, status: "waiting", position, referral_code,
          referral_count: 0, referred_by: referrer ? refCode : undefined,
        })
        .commit(),
      waitlistReferral.create({ code: referral_code, email }).commit(),
      // Counted in the same transaction as the new entry, so a repeated or failed join never counts.
      ...(referrer
        ? [waitlistEntry.update({ email: referrer.email }).add({ referral_count: 1 }).where((a, op) => op.exists(a.id)).commit()]
        : []),
    ]).go();
    if (!result.canceled) {
      await confirmJoin(email, position, referral_code);
      return JOIN_ANSWER;
    }
    const { data: raced } = await db().entities.waitlistEntry.get({ email }).go({ consistent: true });
    if (raced) return JOIN_ANSWER; // a concurrent join of the same address won
    // otherwise the referral code collided: draw another (the join number stays ours)
  }
  throw new AppError("INTERNAL", "Could not allocate a unique referral code");
}

async function confirmJoin(email: string, position: number, referralCode: string): Promise<void> {
  try {
    await (await mailer()).send({
      to: email,
      subject: "You are on the Research-to-Delivery waitlist",
      text:
        `Thanks for joining the waitlist. You are number ${position}.\n\n` +
        `Share your referral code with colleagues: ${referralCode}\n` +
        `(they enter it when they join at ${Config.appUrl()}).\n\nWe will write again with your access code.\n`,
    });
  } catch (err) {
    log().warn("waitlist confirmation e-mail failed", { error: err as Error });
  }
}

const entryView = (e: Entry): WaitlistEntryView => ({
  id: e.id,
  email: e.email,
  name: e.name ?? "",
  position: e.position,
  referral_count: e.referral_count ?? 0,
  status: e.status,
  source: e.source ?? null,
  created_at: e.created_at,
  approved_at: e.approved_at ?? null,
  invited_at: e.invited_at ?? null,
});

/** Every entry of a status in join order, read from the by-status index page by page (admin scale; no Scan). */
async function entriesWithStatus(status: WaitlistStatus): Promise<Entry[]> {
  const { data } = await db().entities.waitlistEntry.query.byStatus({ status }).go({ pages: "all" });
  return data;
}

/**
 * `GET /api/admin/plg/waitlist`: the entries of a status (default waiting) in join order, a page of `limit` from
 * `offset`, and how many there are.
 */
export async function listWaitlist(query: z.output<typeof WaitlistQuery>): Promise<{ entries: WaitlistEntryView[]; total: number }> {
  const all = await entriesWithStatus(query.status);
  return { entries: all.slice(query.offset, query.offset + query.limit).map(entryView), total: all.length };
}

async function entryById(id: string): Promise<Entry | null> {
  const { data } = await db().entities.waitlistEntry.query.byId({ id }).go({ limit: 1 });
  return data[0] ?? null;
}

function invitation(email: string, code: string, metadata: Record<string, unknown>): MailMessage {
  const trial = typeof metadata.trial_days === "number" ? `\nYour trial lasts ${metadata.trial_days} days from the day you redeem it.` : "";
  const credits = typeof metadata.trial_credits === "number" ? `\nIt comes with ${metadata.trial_credits} credits.` : "";
  return {
    to: email,
    subject: "Your invitation to Research-to-Delivery",
    text:
      `A place opened for you. Your access code: ${code}\n\n` +
      `Sign in at ${Config.appUrl()} and redeem it (POST /api/auth/redeem-code {"code": "${code}"}).${trial}${credits}\n`,
  };
}

/** Waitlist entries `approveWaitlist` approves and invites at once (SES allows 14 sends a second by default). */
export const APPROVALS_AT_ONCE = 8;

/**
 * Approve waitlist entries (`POST /api/admin/plg/waitlist/approve`): for each waiting entry, an access code (with
 * `metadata`) is created and the entry moves waiting → approved in one transaction conditioned on `waiting`, then
 * the invitation e-mail with the code is sent. Ids that are unknown or not waiting (approved before, or by a
 * concurrent approval) are skipped and counted nowhere. The mail engine is resolved first: when mail is not
 * configured nothing is approved.
 * @returns approved_count (entries moved), codes_generated (codes created; one per approval), emails_sent
 *   (invitations accepted by the mail engine; an approval whose e-mail failed keeps its code, `invited_at` unset).
 * @throws AppError SERVICE_UNAVAILABLE (503) naming MAIL_FROM when SES has no sender.
 */
export async function approveWaitlist(input: ApproveInput): Promise<{ approved_count: number; codes_generated: number; emails_sent: number }> {
  const mail = await mailer();
  const metadata: Record<string, unknown> = input.metadata ?? {};
  let approved = 0;
  let codes = 0;
  let sent = 0;
  const limit = pLimit(APPROVALS_AT_ONCE);
  // Entries go APPROVALS_AT_ONCE at a time: one by one, 100 ids (four calls each, an SES send among them) could
  // outlast the function's 29 s, cut off with an entry approved whose invitation was never sent.
  // Every entry runs to its end before the answer (a failure of one must not leave the others running unanswered);
  // the first failure is then thrown, and the entries approved meanwhile are skipped by a retry (no longer waiting).
  const outcomes = await Promise.allSettled([...new Set(input.waitlist_entry_ids)].map((id) => limit(() => approveAndInvite(id))));
  const failure = outcomes.find((o): o is PromiseRejectedResult => o.status === "rejected");
  if (failure) throw failure.reason;
  return { approved_count: approved, codes_generated: codes, emails_sent: sent };

  async function approveAndInvite(id: string): Promise<void> {
    const entry = await entryById(id);
    if (!entry || entry.status !== "waiting") return;
    const code = await approveOne(entry, metadata);
    if (!code) return;
    approved++;
    codes++;
    try {
      await mail.send(invitation(entry.email, code, metadata));
    } catch (err) {
      log().warn("invitation e-mail failed", { waitlist_entry_id: id, error: err as Error });
      return;
    }
    // Sent is sent: a failed record of it must not report the invitation as unsent (an operator would mail again).
    sent++;
    await db()
      .entities.waitlistEntry.patch({ email: entry.email })
      .set({ invited_at: new Date().toISOString() })
      .go()
      .catch((err: unknown) => log().warn("invitation sent; recording invited_at failed", { waitlist_entry_id: id, error: err as Error }));
  }
}

/** One approval's transaction; the code, or null when the entry is no longer waiting. */
async function approveOne(entry: Entry, metadata: Record<string, unknown>): Promise<string | null> {
  for (let attempt = 0; attempt < 5; attempt++) {
    const code = User.randomCode(10);
    const now = new Date().toISOString();
    const result = await createWriteTransaction(db().pick("accessCode", "waitlistEntry"), ({ accessCode, waitlistEntry }) => [
      accessCode.create({ code, metadata, waitlist_entry_id: entry.id }).commit(),
      waitlistEntry
        .patch({ email: entry.email })
        // position is part of the by-status index key, so it goes with the status that moves the entry there.
        .set({ status: "approved", position: entry.position, access_code: code, approved_at: now })
        .where((a, op) => op.eq(a.status, "waiting"))
        .commit(),
    ]).go();
    if (!result.canceled) return code;
    const { data: fresh } = await db().entities.waitlistEntry.get({ email: entry.email }).go({ consistent: true });
    if (fresh?.status !== "waiting") return null;
    // still waiting: the code collided with an existing one; draw another
  }
  throw new AppError("INTERNAL", "Could not allocate a unique access code");
}

// ---------------------------------------------------------------------------------------------------------------
// Access codes

/** `POST /api/admin/plg/codes/generate`: `count` fresh codes carrying `metadata` (spec 02). */
export async function generateCodes(input: GenerateCodesInput): Promise<{ codes: { code: string; metadata: Record<string, unknown> }[]; count: number }> {
  const codes = await User.generateAccessCodes(input.count, input.metadata ?? {});
  return { codes, count: codes.length };
}

/**
 * `GET /api/admin/plg/codes` (spec 02 `{codes, total}`): codes newest first, optionally of one status; every one from
 * `offset`, or a page of `limit`; cut at what one answer may carry (`fitResponse`), `total` counting every match.
 */
export async function listCodes(query: z.output<typeof CodesQuery>) {
  const { data } = await db().entities.accessCode.query.all({}).go({ pages: "all", order: "desc" });
  const matching = query.status ? data.filter((c) => c.status === query.status) : data;
  const page = matching.slice(query.offset, query.limit === undefined ? undefined : query.offset + query.limit);
  return {
    codes: fitResponse(page.map((c) => ({
      id: uuidv5(c.code, ACCESS_CODE_ID_NAMESPACE),
      code: c.code,
      status: c.status,
      redeemed_by_email: c.redeemed_by_email ?? null,
      redeemed_at: c.redeemed_at ?? null,
      metadata: (c.metadata ?? {}) as Record<string, unknown>,
      created_at: c.created_at,
    }))),
    total: matching.length,
  };
}

/**
 * Redeem an access code and honour its metadata (`POST /api/auth/redeem-code`; spec 02 Access code metadata):
 * the redemption itself is core/user `redeemCode` (pending → active, once per code); then `trial_credits` are granted
 * to the user's credits (a trial grant keyed by the code, so it is granted once) and `trial_days` sets the trial's end
 * to that many days after the redemption, while the account is on the trial plan (a paid plan has no trial to set).
 * The grant comes after the redemption's transaction: when it fails, the code is taken and the request fails, and the
 * redeemer's retry (then refused with ALREADY_ACTIVE or ACCESS_CODE_REDEEMED) honours the metadata again before the
 * refusal, so the credits are not lost.
 * @throws whatever `User.redeemCode` throws.
 */
export async function redeemAccessCode(user: User.User, rawCode: string): Promise<User.User> {
  let active: User.User;
  try {
    active = await User.redeemCode(user, rawCode);
  } catch (err) {
    if (err instanceof AppError && (err.code === "ALREADY_ACTIVE" || err.code === "ACCESS_CODE_REDEEMED")) {
      const code = await User.getAccessCode(rawCode);
      if (code?.status === "redeemed" && code.redeemed_by === user.id) await honourMetadata(user.id, code);
    }
    throw err;
  }
  const code = await User.getAccessCode(rawCode);
  if (code) await honourMetadata(user.id, code);
  return active;
}

/** Grant a redeemed code's `trial_credits` (keyed by the code: once) and set its `trial_days` (from the redemption). */
async function honourMetadata(userId: string, code: { code: string; metadata?: unknown; redeemed_at?: string }): Promise<void> {
  const metadata = (code.metadata ?? {}) as CodeMetadata;
  if (typeof metadata.trial_credits === "number" && metadata.trial_credits > 0) {
    await grant(userId, { source: `access-code#${code.code}`, credits: metadata.trial_credits, bucket: "trial" });
  }
  if (typeof metadata.trial_days === "number") await setTrialEnd(userId, code.redeemed_at ?? new Date().toISOString(), metadata.trial_days);
}

/**
 * Set a trial account's end to `days` after `from` (the trial is the account's period while it is `trialing` on the
 * `trial` plan; core/billing/ledger.ts `accountOf`). Conditioned on the plan still being the trial and the period
 * being the one read, so a subscription that arrived meanwhile is never given a trial end.
 */
async function setTrialEnd(userId: string, from: string, days: number): Promise<void> {
  const account = await accountOf(userId);
  if (account.plan !== "trial" || account.status !== "trialing") return;
  const period_end = new Date(Date.parse(from) + days * 86_400_000).toISOString();
  try {
    await db()
      .entities.billingAccount.patch({ user_id: userId })
      .set({ period_end })
      .where((a, op) => `${op.eq(a.plan, "trial")} AND ${op.eq(a.status, "trialing")} AND ${op.eq(a.period_start, account.period_start)}`)
      .go();
  } catch (err) {
    if (!isConditionalFailure(err)) throw err;
  }
}

// ---------------------------------------------------------------------------------------------------------------
// Stats, sheet, revocation

/**
 * `GET /api/admin/plg/stats` (spec 02; docs/decisions.md "Admin growth"): total_waitlist (every entry, any status),
 * total_approved, total_codes_generated (every code), total_codes_redeemed, total_active_users (users whose
 * access_status is active), conversion_rate = invitation codes redeemed / entries approved, a fraction from 0 to 1
 * rounded to 4 decimals (0 when none is approved).
 */
export async function stats(): Promise<GrowthStats> {
  const [entries, codes, activeUsers] = await Promise.all([
    everyEntry(),
    db().entities.accessCode.query.all({}).go({ pages: "all", attributes: ["code", "status", "waitlist_entry_id"] }),
    User.countByAccessStatus("active"),
  ]);
  const approved = entries.filter((e) => e.status === "approved");
  const redeemed = codes.data.filter((c) => c.status === "redeemed");
  const converted = redeemed.filter((c) => c.waitlist_entry_id).length;
  return {
    total_waitlist: entries.length,
    total_approved: approved.length,
    total_codes_generated: codes.data.length,
    total_codes_redeemed: redeemed.length,
    total_active_users: activeUsers,
    conversion_rate: approved.length === 0 ? 0 : Math.round((converted / approved.length) * 10_000) / 10_000,
  };
}

/**
 * Every waitlist entry, once each. An entry only moves waiting → approved, so the waiting ones are read first: one
 * approved between the two reads is in both, and its approved copy is kept (read the other way round it would be in
 * neither).
 */
async function everyEntry(): Promise<Entry[]> {
  const byId = new Map((await entriesWithStatus("waiting")).map((e) => [e.id, e]));
  for (const e of await entriesWithStatus("approved")) byId.set(e.id, e);
  return [...byId.values()];
}

/** The spreadsheet's columns, in order (the CSV's header row). */
export const SHEET_COLUMNS = ["id", "email", "name", "position", "referral_count", "status", "source", "created_at", "approved_at", "invited_at"] as const;

/**
 * `POST /api/admin/plg/sync-sheets`: every waitlist entry (any status) in join order, one row each under a header,
 * replacing the sheet's content (core/growth/sheets.ts picks the sheet).
 * @throws AppError SERVICE_UNAVAILABLE (503) naming the settings in a deployed stage without the spreadsheet.
 */
export async function syncSheets(): Promise<{ status: "synced"; synced_count: number }> {
  // The Sheets client (Google's auth library, googleapis) and the CSV writer load for this admin route only, not
  // with the growth group's every cold start (bench/cold.ts).
  const { sheetTarget } = await import("./sheets");
  const target = sheetTarget();
  const entries = (await everyEntry()).sort((a, b) => a.position - b.position);
  const rows = entries.map((e) => {
    const view = entryView(e);
    return SHEET_COLUMNS.map((col) => (view[col] === null ? "" : String(view[col])));
  });
  await target.replaceRows([[...SHEET_COLUMNS], ...rows]);
  return { status: "synced", synced_count: rows.length };
}

/** `POST /api/admin/plg/users/{user_id}/revoke-access`: active → suspended (core/user `revokeAccess`), as the profile. */
export async function revokeAccess(userId: string): Promise<User.UserProfile> {
  return User.toProfile(await User.revokeAccess(userId));
}
