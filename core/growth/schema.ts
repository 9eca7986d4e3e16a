import * as z from "zod";
import { jsonObject } from "../json-object";

/** Waitlist entry status (spec 02: the list's default filter is `waiting`); approval moves waiting → approved. */
export const WaitlistStatus = z.enum(["waiting", "approved"]).meta({ id: "WaitlistStatus" });
export type WaitlistStatus = z.infer<typeof WaitlistStatus>;

/** `POST /api/waitlist` (public; DESIGN.md section 5). */
export const JoinWaitlistInput = z
  .object({
    email: z.email().max(254),
    name: z.string().trim().max(200).optional(),
    /** Where the person heard of us. */
    source: z.string().trim().max(100).optional(),
    /** A listed person's referral code (from their confirmation e-mail); an unknown one is ignored. */
    referral_code: z.string().trim().max(32).optional(),
  })
  .meta({ id: "JoinWaitlistInput" });
export type JoinWaitlistInput = z.infer<typeof JoinWaitlistInput>;

/** The one answer to a join: the same whether or not the address was listed already. */
export const JoinWaitlistAnswer = z.object({ status: z.literal("received"), detail: z.string() }).meta({ id: "JoinWaitlistAnswer" });

const pageLimit = z.coerce.number().int().min(1).max(200).default(50);
const pageOffset = z.coerce.number().int().min(0).default(0);

/** `GET /api/admin/plg/waitlist` query (spec 02: status default waiting, limit default 50, offset). */
export const WaitlistQuery = z.object({ status: WaitlistStatus.default("waiting"), limit: pageLimit, offset: pageOffset });

/** Spec 02 Waitlist entry, plus when it was approved and invited. */
export const WaitlistEntryView = z
  .object({
    id: z.uuid(),
    email: z.string(),
    name: z.string(),
    /** Join number (1 = first to join); lists are in this order. */
    position: z.number().int(),
    referral_count: z.number().int(),
    status: WaitlistStatus,
    source: z.string().nullable(),
    created_at: z.string(),
    approved_at: z.string().nullable(),
    invited_at: z.string().nullable(),
  })
  .meta({ id: "WaitlistEntry" });
export type WaitlistEntryView = z.infer<typeof WaitlistEntryView>;

export const WaitlistPage = z.object({ entries: z.array(WaitlistEntryView), total: z.number().int() }).meta({ id: "WaitlistPage" });

/**
 * An access code's metadata (spec 02 "Access code": for example trial_days, trial_credits). Both are honoured on
 * redemption (core/growth `redeemAccessCode`): `trial_days` sets the trial's end to that many days after redemption,
 * `trial_credits` are granted to the redeemer's credits. Other keys are kept as given, within the bounds.
 */
export const CodeMetadata = jsonObject({ maxBytes: 4 * 1024, maxDepth: 4, maxKeys: 30, maxKeyLength: 64 })
  .pipe(
    z
      .object({
        trial_days: z.number().int().min(1).max(365).optional(),
        trial_credits: z.number().positive().max(10_000).multipleOf(0.25).optional(),
      })
      .catchall(z.unknown()),
  )
  .meta({ id: "AccessCodeMetadata" });
export type CodeMetadata = z.infer<typeof CodeMetadata>;

/** `POST /api/admin/plg/waitlist/approve`: spec 02's ids, plus optional metadata for the codes issued. */
export const ApproveInput = z
  .object({ waitlist_entry_ids: z.array(z.uuid()).min(1).max(100), metadata: CodeMetadata.optional() })
  .meta({ id: "ApproveWaitlistInput" });
export type ApproveInput = z.infer<typeof ApproveInput>;

export const ApproveResult = z
  .object({ approved_count: z.number().int(), codes_generated: z.number().int(), emails_sent: z.number().int() })
  .meta({ id: "ApproveWaitlistResult" });

/** `POST /api/admin/plg/codes/generate`. */
export const GenerateCodesInput = z
  .object({ count: z.number().int().min(1).max(500), metadata: CodeMetadata.optional() })
  .meta({ id: "GenerateCodesInput" });
export type GenerateCodesInput = z.infer<typeof GenerateCodesInput>;

export const GeneratedCodes = z
  .object({ codes: z.array(z.object({ code: z.string(), metadata: z.record(z.string(), z.unknown()) })), count: z.number().int() })
  .meta({ id: "GeneratedCodes" });

export const AccessCodeStatus = z.enum(["available", "redeemed", "revoked"]).meta({ id: "AccessCodeStatus" });

/** `GET /api/admin/plg/codes` query: optional status filter, newest first. */
/**
 * `GET /api/admin/plg/codes` query. Spec 02 gives the route no parameters and answers every code (`{codes, total}`):
 * without `limit` that is what it does (cut only at what one answer may carry, `total` counting all); `status`,
 * `limit` (at most 200) and `offset` are additions for a client that pages.
 */
export const CodesQuery = z.object({ status: AccessCodeStatus.optional(), limit: z.coerce.number().int().min(1).max(200).optional(), offset: pageOffset });

/** Spec 02 Access code. `id` is derived from the code (UUID v5), so codes made before it existed have one too. */
export const AccessCodeView = z
  .object({
    id: z.uuid(),
    code: z.string(),
    status: AccessCodeStatus,
    redeemed_by_email: z.string().nullable(),
    redeemed_at: z.string().nullable(),
    metadata: z.record(z.string(), z.unknown()),
    created_at: z.string(),
  })
  .meta({ id: "AccessCode" });

export const CodesPage = z.object({ codes: z.array(AccessCodeView), total: z.number().int() }).meta({ id: "AccessCodesPage" });

/** Spec 02 `GET /stats`; `conversion_rate` is defined in docs/decisions.md "Admin growth". */
export const GrowthStats = z
  .object({
    total_waitlist: z.number().int(),
    total_approved: z.number().int(),
    total_codes_generated: z.number().int(),
    total_codes_redeemed: z.number().int(),
    total_active_users: z.number().int(),
    conversion_rate: z.number(),
  })
  .meta({ id: "GrowthStats" });
export type GrowthStats = z.infer<typeof GrowthStats>;

export const SyncSheetsResult = z.object({ status: z.literal("synced"), synced_count: z.number().int() }).meta({ id: "SyncSheetsResult" });

/** `POST /api/admin/plg/users/{user_id}/revoke-access`. */
export const RevokeAccessParams = z.object({ user_id: z.uuid() });
