import { Entity } from "electrodb";

/*
 * Memory lives in the workspace partition, per user (DESIGN.md 6.6):
 *   memory#<user id>#<fact id>     a fact: current, or superseded (kept as history with invalid_at and superseded_by)
 *   memhead#<user id>              the user's memory head in the workspace: a version bumped in the same transaction
 *                                  as every change to their facts, so a warm cache of facts and vectors is checked
 *                                  with one small read (core/memory/store.ts)
 * One Query with begins_with reads a user's facts in a workspace; deleting the workspace removes them with the rest
 * of its partition. gsi1 (`memory#<id>`) finds a fact by id alone (DELETE /api/memory/{memory_id}).
 */

const wsKey = { field: "pk", composite: ["workspace_id"], template: "ws#${workspace_id}", casing: "none" } as const;

/**
 * A remembered fact (spec 01 Memory; issue #22): what a user stated about the team, the product, its users, goals,
 * tools or themselves, with its source message and time. A changed fact is superseded, not deleted (Graphiti's
 * valid_at / invalid_at): `invalid_at` is when it stopped being true and `superseded_by` the fact that replaced it.
 * Two sources that disagree both stay current and name each other in `contradicts`.
 */
export const buildMemoryFactEntity = () => new Entity({
  model: { entity: "memory_fact", version: "1", service: "r2d" },
  attributes: {
    id: { type: "string", required: true, readOnly: true },
    workspace_id: { type: "string", required: true, readOnly: true },
    /** The person the fact was learned from and who alone sees it. */
    user_id: { type: "string", required: true, readOnly: true },
    content: { type: "string", required: true, readOnly: true },
    /** static: stable facts (team, product, users, goals); dynamic: recent, dated context. */
    kind: { type: ["static", "dynamic"] as const, required: true, readOnly: true },
    /** What the fact is about ("tool.for:analytics", "product.users"): facts about the same subject are reconciled. */
    subject: { type: "string", required: true, readOnly: true },
    /** The fact's value for its subject, normalised (lower case, single spaces). */
    value: { type: "string", required: true, readOnly: true },
    /** The subject holds several values at once (tools in use, preferences): a new value adds, it does not replace. */
    multi: { type: "boolean", required: true, readOnly: true },
    source_conversation_id: { type: "string", required: true, readOnly: true },
    /** The user message the fact was stated in. */
    source_message_id: { type: "string", required: true, readOnly: true },
    /** Which extractor read it: "rules" (local engine) or "model". */
    extractor: { type: "string", required: true, readOnly: true },
    /** When it became true as far as we know: the time of the message that stated it. */
    valid_at: { type: "string", required: true, readOnly: true },
    /** When a later fact superseded it; absent while current. */
    invalid_at: { type: "string" },
    superseded_by: { type: "string" },
    /** Current facts from another source that disagree with this one (both kept, flagged). */
    contradicts: { type: "set", items: "string" },
    /** base64 of a unit-length Float32Array of `content`, and the embedder that made it. */
    vector: { type: "string" },
    embedder_id: { type: "string" },
    created_at: { type: "string", required: true, readOnly: true, default: () => new Date().toISOString() },
    updated_at: { type: "string", required: true, default: () => new Date().toISOString(), set: () => new Date().toISOString(), watch: "*" },
  },
  indexes: {
    byUser: { pk: wsKey, sk: { field: "sk", composite: ["user_id", "id"], template: "memory#${user_id}#${id}", casing: "none" } },
    byId: {
      index: "gsi1",
      pk: { field: "gsi1pk", composite: ["id"], template: "memory#${id}", casing: "none" },
      sk: { field: "gsi1sk", composite: [], template: "memory", casing: "none" },
    },
  },
});
export type MemoryFactEntity = ReturnType<typeof buildMemoryFactEntity>;

/**
 * A user's memory head in a workspace: `version` changes with every write to their facts (cache validation);
 * `forgotten_at` is the watermark of their last wholesale deletion.
 */
export const buildMemoryHeadEntity = () => new Entity({
  model: { entity: "memory_head", version: "1", service: "r2d" },
  attributes: {
    workspace_id: { type: "string", required: true },
    user_id: { type: "string", required: true },
    version: { type: "number", required: true, default: 0 },
    /**
     * When the user last deleted all their memory in the workspace (ISO 8601): statements made at or before it are not
     * learned, so an exchange still owed to memory does not bring deleted facts back. Absent: never (and on heads
     * written before it existed).
     */
    forgotten_at: { type: "string" },
    updated_at: { type: "string", required: true, default: () => new Date().toISOString(), set: () => new Date().toISOString(), watch: "*" },
  },
  indexes: {
    byUser: { pk: wsKey, sk: { field: "sk", composite: ["user_id"], template: "memhead#${user_id}", casing: "none" } },
  },
});
export type MemoryHeadEntity = ReturnType<typeof buildMemoryHeadEntity>;
