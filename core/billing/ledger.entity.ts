import { Entity } from "electrodb";
import { BOOST_PORTION } from "./account.entity";

/** The kinds of credit events (DESIGN.md section 6.3). */
export const LEDGER_KINDS = ["grant", "reserve", "settle", "release", "expire"] as const;
export type LedgerKind = (typeof LEDGER_KINDS)[number];

/**
 * One credit event, immutable (DESIGN.md section 6.3). Its key is derived from the event's source, and it is created
 * only if absent (`attribute_not_exists`, ElectroDB `create`) in the same transaction as the balance change it
 * records, so a retried event finds its item and changes nothing:
 *
 * | kind | key |
 * |---|---|
 * | grant (monthly) | `grant#period#<period start>` (the invoice and the first-use grant of a period are one grant) |
 * | grant (boost, trial) | `grant#<source>` (checkout session id, `milestone#<name>`, ...) |
 * | reserve, settle, release | `run#<run id>#<kind>` |
 * | expire | `expire#period#<period start>` (quota left at a period reset), `expire#boost#<boost id>` |
 *
 * `delta` is the item's change of the spendable balance (quota remaining plus every boost's remaining), so the sum of
 * a user's ledger deltas is the spendable balance; `quota` and `boosts` split it by bucket.
 */
export const buildCreditLedgerEntity = () => new Entity({
  model: { entity: "credit_ledger", version: "1", service: "r2d" },
  attributes: {
    user_id: { type: "string", required: true },
    key: { type: "string", required: true },
    kind: { type: LEDGER_KINDS, required: true },
    /** What caused it: invoice id, checkout session id, milestone, run id. */
    source: { type: "string", required: true },
    run_id: { type: "string" },
    /** Bucket of a grant. */
    bucket: { type: ["monthly", "boost", "trial"] as const },
    /** The event's amount in credits: granted, reserved, charged (settle: the actual cost), released, expired. */
    credits: { type: "number", required: true },
    /** Signed change of the spendable balance, in credits. */
    delta: { type: "number", required: true },
    /** Signed change of the quota's remaining credits. */
    quota: { type: "number", required: true, default: 0 },
    /** Signed change of each boost's remaining credits. */
    boosts: { type: "list", items: BOOST_PORTION, default: () => [] },
    /** Settle and release: the credits the reservation held. */
    held: { type: "number" },
    /** Settle: credits charged (the actual cost less any shortfall). */
    charged: { type: "number" },
    /** Settle: credits of the actual cost the balance could not cover. */
    shortfall: { type: "number" },
    /** Credits lost instead of returned (expiry, period reset, return to a closed bucket). */
    forfeited: { type: "number" },
    /** Settle: model tokens and cost of the run (compute budget). */
    tokens: { type: "number" },
    cost_usd: { type: "number" },
    /** The account's period when the item was written. */
    period_start: { type: "string" },
    created_at: { type: "string", required: true, readOnly: true, default: () => new Date().toISOString() },
  },
  indexes: {
    byUser: {
      pk: { field: "pk", composite: ["user_id"], template: "bill#${user_id}", casing: "none" },
      sk: { field: "sk", composite: ["key"], template: "ledger#${key}", casing: "none" },
    },
  },
});
export type CreditLedgerEntity = ReturnType<typeof buildCreditLedgerEntity>;
