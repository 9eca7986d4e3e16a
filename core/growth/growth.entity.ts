import { Entity } from "electrodb";

/**
 * A waitlist entry (spec 02 "Waitlist entry"). Keyed by e-mail, so one address is listed once by a conditional
 * create; found by id through gsi1 (approve names entries by id) and listed per status in join order through gsi2.
 */
export const buildWaitlistEntryEntity = () => new Entity({
  model: { entity: "waitlist_entry", version: "1", service: "r2d" },
  attributes: {
    email: { type: "string", required: true },
    id: { type: "string", required: true },
    name: { type: "string", default: "" },
    /** Where the person heard of us (free text from the join form, e.g. "twitter"). */
    source: { type: "string" },
    status: { type: ["waiting", "approved"] as const, required: true, default: "waiting" },
    /** Join number: 1 for the first entry ever (core/growth `nextPosition`); stable, so it sorts the lists. */
    position: { type: "number", required: true, padding: { length: 12, char: "0" } },
    /** This entry's code to share; others who join with it add to `referral_count`. */
    referral_code: { type: "string", required: true },
    /** The code this entry joined with, when it named a listed one. */
    referred_by: { type: "string" },
    referral_count: { type: "number", required: true, default: 0 },
    /** The access code issued on approval. */
    access_code: { type: "string" },
    approved_at: { type: "string" },
    /** When the invitation e-mail went out (unset if sending failed after the approval). */
    invited_at: { type: "string" },
    created_at: { type: "string", required: true, readOnly: true, default: () => new Date().toISOString() },
  },
  indexes: {
    byEmail: {
      pk: { field: "pk", composite: ["email"], template: "waitlist#${email}", casing: "none" },
      sk: { field: "sk", composite: [], template: "waitlist", casing: "none" },
    },
    byId: {
      index: "gsi1",
      pk: { field: "gsi1pk", composite: ["id"], template: "waitlistentry#${id}", casing: "none" },
      sk: { field: "gsi1sk", composite: [], template: "waitlistentry", casing: "none" },
    },
    byStatus: {
      index: "gsi2",
      pk: { field: "gsi2pk", composite: ["status"], template: "waitlist#status#${status}", casing: "none" },
      sk: { field: "gsi2sk", composite: ["position"], casing: "none" },
    },
  },
});
export type WaitlistEntryEntity = ReturnType<typeof buildWaitlistEntryEntity>;

/** Uniqueness guard and look-up of a waitlist entry's referral code: written in the entry's create transaction. */
export const buildWaitlistReferralEntity = () => new Entity({
  model: { entity: "waitlist_referral", version: "1", service: "r2d" },
  attributes: {
    code: { type: "string", required: true },
    email: { type: "string", required: true },
  },
  indexes: {
    byCode: {
      pk: { field: "pk", composite: ["code"], template: "wlref#${code}", casing: "none" },
      sk: { field: "sk", composite: [], template: "wlref", casing: "none" },
    },
  },
});
export type WaitlistReferralEntity = ReturnType<typeof buildWaitlistReferralEntity>;

/** A named counter, incremented atomically (waitlist join numbers). No TTL: unlike the guards, it must stay. */
export const buildGrowthCounterEntity = () => new Entity({
  model: { entity: "growth_counter", version: "1", service: "r2d" },
  attributes: {
    name: { type: "string", required: true },
    value: { type: "number", required: true, default: 0 },
  },
  indexes: {
    byName: {
      pk: { field: "pk", composite: ["name"], template: "counter#${name}", casing: "none" },
      sk: { field: "sk", composite: [], template: "counter", casing: "none" },
    },
  },
});
export type GrowthCounterEntity = ReturnType<typeof buildGrowthCounterEntity>;
