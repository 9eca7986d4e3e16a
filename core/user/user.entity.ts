import { Entity } from "electrodb";

/** A person known to the service (spec 01, User). Keyed by our id, which is derived from the idp id. */
export const buildUserEntity = () => new Entity({
  model: { entity: "user", version: "1", service: "r2d" },
  attributes: {
    id: { type: "string", required: true },
    idp_id: { type: "string", required: true },
    email: { type: "string", required: true },
    /**
     * The identity provider's `email_verified` when its token said it (absent: it did not say, as the local identity
     * provider and the user.created webhook). A false one names no one when members are added by e-mail.
     */
    email_verified: { type: "boolean" },
    name: { type: "string", default: "" },
    avatar_url: { type: "string" },
    access_status: { type: ["pending", "active", "suspended"] as const, required: true },
    /**
     * The occurrence time (ISO 8601, UTC) of the newest identity-provider `user.updated` event applied to the user (the
     * Standard Webhooks envelope's `timestamp`): an older event delivered late changes nothing.
     */
    idp_event_at: { type: "string" },
    /** ISO 8601 time its deletion (`user.deleted`) started: from then the user is refused, as if deleted already. */
    deleting_at: { type: "string" },
    is_founder: { type: "boolean", default: false },
    referral_code: { type: "string", required: true },
    activated_at: { type: "string" },
    created_at: { type: "string", required: true, readOnly: true, default: () => new Date().toISOString() },
    updated_at: { type: "string", required: true, default: () => new Date().toISOString(), set: () => new Date().toISOString(), watch: "*" },
  },
  indexes: {
    byId: {
      pk: { field: "pk", composite: ["id"], template: "user#${id}", casing: "none" },
      sk: { field: "sk", composite: [], template: "user", casing: "none" },
    },
    byEmail: {
      index: "gsi2",
      pk: { field: "gsi2pk", composite: ["email"], template: "email#${email}", casing: "none" },
      sk: { field: "gsi2sk", composite: ["id"], template: "user#${id}", casing: "none" },
    },
    /** Users by access status (admin growth stats count the active ones without a Scan). */
    byAccessStatus: {
      index: "gsi3",
      pk: { field: "gsi3pk", composite: ["access_status"], template: "access#${access_status}", casing: "none" },
      sk: { field: "gsi3sk", composite: ["id"], template: "user#${id}", casing: "none" },
    },
  },
});
export type UserEntity = ReturnType<typeof buildUserEntity>;

/** Uniqueness guard for referral codes: written in the same transaction as the user. */
export const buildReferralCodeEntity = () => new Entity({
  model: { entity: "referral_code", version: "1", service: "r2d" },
  attributes: {
    code: { type: "string", required: true },
    user_id: { type: "string", required: true },
  },
  indexes: {
    byCode: {
      pk: { field: "pk", composite: ["code"], template: "referral#${code}", casing: "none" },
      sk: { field: "sk", composite: [], template: "referral", casing: "none" },
    },
  },
});
export type ReferralCodeEntity = ReturnType<typeof buildReferralCodeEntity>;

/** Product access codes (spec 02, Access code). Redeemed once, by a conditional write. */
export const buildAccessCodeEntity = () => new Entity({
  model: { entity: "access_code", version: "1", service: "r2d" },
  attributes: {
    code: { type: "string", required: true },
    status: { type: ["available", "redeemed", "revoked"] as const, required: true, default: "available" },
    redeemed_by: { type: "string" },
    redeemed_by_email: { type: "string" },
    redeemed_at: { type: "string" },
    metadata: { type: "any", default: () => ({}) },
    /** The waitlist entry the code was issued to on approval (core/growth), for the invitation conversion rate. */
    waitlist_entry_id: { type: "string" },
    created_at: { type: "string", required: true, readOnly: true, default: () => new Date().toISOString() },
  },
  indexes: {
    byCode: {
      pk: { field: "pk", composite: ["code"], template: "accesscode#${code}", casing: "none" },
      sk: { field: "sk", composite: [], template: "accesscode", casing: "none" },
    },
    all: {
      index: "gsi2",
      pk: { field: "gsi2pk", composite: [], template: "accesscodes", casing: "none" },
      sk: { field: "gsi2sk", composite: ["created_at", "code"], template: "${created_at}#${code}", casing: "none" },
    },
  },
});
export type AccessCodeEntity = ReturnType<typeof buildAccessCodeEntity>;
