import { Entity } from "electrodb";

/** Value of `retry` while a failed cycle is owed its one retry: its partition in the sparse index is `cycle#retry`. */
export const CYCLE_RETRY = "retry" as const;
/**
 * Value of `retry` while a cycle runs: its partition in the sparse index is `cycle#watch`, and at `retry_at` the
 * sweeper checks the record against its task, so a record whose task ended without it (the writer stopped between
 * the two writes) takes the outcome without a person.
 */
export const CYCLE_WATCH = "watch" as const;

/**
 * One night's research cycle of a workspace (docs/decisions.md "Overnight research cycles"): created once per
 * workspace and UTC date by a conditional create, so a schedule delivered twice (EventBridge is at-least-once) or a
 * second run the same night finds it and does nothing. Names the task that records the cycle (spec: "each cycle
 * recorded as a task"), counts its attempts (a failed cycle is retried the same night, once), and keeps what the
 * cycle changed for the morning digest.
 *
 * Indexes:
 * - byWorkspace: the workspace partition (`ws#<id>`, sk `cycle#<date>`): the night's marker, and the last cycle.
 * - retries (gsi3, SPARSE): failed cycles owed their retry, in one partition `cycle#retry`, and running cycles, in
 *   `cycle#watch`, each by `retry_at` (when the sweeper looks at it).
 */
export const buildCycleEntity = () => new Entity({
  model: { entity: "research_cycle", version: "1", service: "r2d" },
  attributes: {
    workspace_id: { type: "string", required: true },
    /** The UTC night, YYYY-MM-DD. */
    date: { type: "string", required: true },
    status: { type: ["running", "completed", "failed"] as const, required: true },
    /** 1 for the night's first run, 2 for its retry. */
    attempts: { type: "number", required: true },
    /** The task of the current attempt. */
    task_id: { type: "string", required: true },
    /** Research sources created up to this time were looked at; the next cycle starts after it. */
    cutoff_at: { type: "string", required: true },
    created_at: { type: "string", required: true, readOnly: true, default: () => new Date().toISOString() },
    finished_at: { type: "string" },
    error: { type: "string" },
    /** What the cycle changed (core/cycle `CycleChanges`), for the digest. */
    changes: { type: "any" },
    digest_sent_at: { type: "string" },
    /**
     * Why the sweeper looks at the record (the sparse index's partition): `CYCLE_RETRY` while a failed cycle is owed
     * its retry, `CYCLE_WATCH` while it runs; absent otherwise.
     */
    retry: { type: [CYCLE_RETRY, CYCLE_WATCH] as const },
    /** When the sweeper looks at the record (ISO): the retry's time, or the next check of a running cycle's task. */
    retry_at: { type: "string" },
  },
  indexes: {
    byWorkspace: {
      pk: { field: "pk", composite: ["workspace_id"], template: "ws#${workspace_id}", casing: "none" },
      sk: { field: "sk", composite: ["date"], template: "cycle#${date}", casing: "none" },
    },
    retries: {
      index: "gsi3",
      condition: (attr) =>
        ((attr.status === "failed" && attr.retry === CYCLE_RETRY) || (attr.status === "running" && attr.retry === CYCLE_WATCH)) && typeof attr.retry_at === "string",
      pk: { field: "gsi3pk", composite: ["retry"], template: "cycle#${retry}", casing: "none" },
      sk: { field: "gsi3sk", composite: ["retry_at"], template: "due#${retry_at}", casing: "none" },
    },
  },
});
export type CycleEntity = ReturnType<typeof buildCycleEntity>;
