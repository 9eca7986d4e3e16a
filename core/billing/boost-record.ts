/**
 * What a boost grant is called in `GET /api/billing/boosts` (spec 02 Boost pack; spec 01 conventions: identifiers are
 * UUID strings). A boost bucket is keyed by its grant's source (`boost_id`: a Checkout Session id `cs_…` for a bought
 * pack, `referral#<referred user id>` for referral credits), which is neither a UUID nor a pack type; this module
 * derives both from it. Kept apart from the views so the payments consumer (core/billing/sync.ts) names referral
 * grants with the same prefix the views recognise.
 */
import { v5 as uuidv5 } from "uuid";

/** Source prefix of a referral grant: `referral#<referred user id>` (one per referred account, its ledger key too). */
export const REFERRAL_SOURCE_PREFIX = "referral#";

/** The grant source of the referral credits a referred user's paid checkout earns their referrer. */
export const referralSource = (referredUserId: string): string => `${REFERRAL_SOURCE_PREFIX}${referredUserId}`;

/** The boost packs by credits (spec 02 Credits: starter 40, plus 100, max 215). */
const PACK_BY_CREDITS: Record<number, "starter" | "plus" | "max"> = { 40: "starter", 100: "plus", 215: "max" };

/** A boost record's `pack_type`: a spec pack (starter, plus, max), `referral` credits, or `other` for any other grant. */
export type BoostRecordType = "starter" | "plus" | "max" | "referral" | "other";

/**
 * The `pack_type` of a boost grant: `referral` for a referral grant (by its source, whatever its credits), else the
 * spec's pack of that many credits, else `other` (a grant of another size: none is sold, tests and support grants).
 * @param source the grant's source (the boost's `boost_id`)
 * @param credits credits the grant added
 */
export function boostRecordType(source: string, credits: number): BoostRecordType {
  if (source.startsWith(REFERRAL_SOURCE_PREFIX)) return "referral";
  return PACK_BY_CREDITS[credits] ?? "other";
}

/** Namespace of boost record ids (a fixed v4 UUID; never change it: ids already handed out would change). */
const BOOST_ID_NAMESPACE = "f31976c3-fbd3-4a49-a9ed-f1d324c4beb8";

/**
 * The UUID of a boost record: v5 of the owner and the grant's source, so the same grant always answers the same id
 * (a grant is applied once per account and source) and two accounts' grants never share one.
 * @param userId the account the boost belongs to
 * @param source the grant's source (the boost's `boost_id`)
 */
export const boostRecordId = (userId: string, source: string): string => uuidv5(`boost:${userId}:${source}`, BOOST_ID_NAMESPACE);
