import * as z from "zod";
import { stateTable, transitionErrorString } from "../state-table";

/**
 * Document status machine (spec 01 "States and transitions → Document status"), as ONE table `from → allowed to[]`
 * (DESIGN.md section 4.7), moved by `POST /api/documents/{id}/status` with `target_status`.
 *
 * - draft → review (submit for review)
 * - review → approved (approve) | draft (request changes)
 * - approved → published (publish) | draft (revert)
 * - published: terminal, no transitions — but still editable and versions can still be saved ({@link isEditable}).
 *
 * A status never transitions to itself.
 */
export const DocumentStatus = z.enum(["draft", "review", "approved", "published"]).meta({ id: "DocumentStatus" });
export type DocumentStatus = z.infer<typeof DocumentStatus>;

/** New documents are draft (spec 01 Document.status). */
export const INITIAL_DOCUMENT_STATUS: DocumentStatus = "draft";

/** The spec table, verbatim: state → next allowed states. */
export const DOCUMENT_TRANSITIONS: Readonly<Record<DocumentStatus, readonly DocumentStatus[]>> = {
  draft: ["review"],
  review: ["approved", "draft"],
  approved: ["published", "draft"],
  published: [],
};

const table = stateTable(DOCUMENT_TRANSITIONS);

/** The states reachable from `from` in one step, in table order; none for terminal and unknown states. */
export const validTransitions = table.validTransitions;
/** True when the table allows `from -> to`. */
export const canTransition = table.canTransition;
/** @throws AppError INVALID_TRANSITION (422) with `valid_transitions`, `from`, `to` unless `from -> to` is allowed. */
export const assertTransition = table.assertTransition;
export { transitionErrorString };

/** True when no transition leaves `status` (published). */
export const isTerminal = (status: DocumentStatus): boolean => DOCUMENT_TRANSITIONS[status].length === 0;

/**
 * Content, title and blocks may be edited, and versions saved, in every status — including published
 * (spec 01: "still editable and versions can still be saved"). Kept as a function so callers state the rule.
 */
export const isEditable = (_status: DocumentStatus): boolean => true;
