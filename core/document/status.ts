import * as z from "zod";
import { AppError } from "../error";

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

const isStatus = (s: string): s is DocumentStatus => Object.hasOwn(DOCUMENT_TRANSITIONS, s);

/** The states reachable from `from` in one step, in table order; `[]` for published and for unknown states. */
export function validTransitions(from: string): DocumentStatus[] {
  return isStatus(from) ? [...DOCUMENT_TRANSITIONS[from]] : [];
}

/** True when the table allows `from → to`. */
export function canTransition(from: string, to: string): boolean {
  return isStatus(from) && isStatus(to) && DOCUMENT_TRANSITIONS[from].includes(to);
}

/** True when no transition leaves `status` (published). */
export const isTerminal = (status: DocumentStatus): boolean => DOCUMENT_TRANSITIONS[status].length === 0;

/**
 * Content, title and blocks may be edited, and versions saved, in every status — including published
 * (spec 01: "still editable and versions can still be saved"). Kept as a function so callers state the rule.
 */
export const isEditable = (_status: DocumentStatus): boolean => true;

/** Error string in the same form as the recommendation batch errors: `invalid_transition: <from> -> <to>`. */
export const transitionErrorString = (from: string, to: string): string => `invalid_transition: ${from} -> ${to}`;

/**
 * Throws unless `from → to` is allowed.
 *
 * @throws AppError `INVALID_TRANSITION` (HTTP 422) with extra `{ valid_transitions: DocumentStatus[], from, to }`
 *   and message `invalid_transition: <from> -> <to>`.
 */
export function assertTransition(from: string, to: string): void {
  if (!canTransition(from, to)) {
    throw new AppError("INVALID_TRANSITION", transitionErrorString(from, to), {
      valid_transitions: validTransitions(from),
      from,
      to,
    });
  }
}
