import { AppError } from "./error";

/** The error string of an invalid transition (spec 01 batch status errors): `invalid_transition: <from> -> <to>`. */
export const transitionErrorString = (from: string, to: string): string => `invalid_transition: ${from} -> ${to}`;

/**
 * Operations over one state table `from -> allowed to[]` (DESIGN.md section 4.7). Unknown states (corrupt stored
 * data) have no transitions; a state never transitions to itself unless the table says so.
 */
export function stateTable<S extends string>(transitions: Readonly<Record<S, readonly S[]>>) {
  const isState = (s: string): s is S => Object.hasOwn(transitions, s);
  /** The states reachable from `from` in one step, in table order. */
  const validTransitions = (from: string): S[] => (isState(from) ? [...transitions[from]] : []);
  /** True when the table allows `from -> to`. */
  const canTransition = (from: string, to: string): boolean => isState(from) && isState(to) && transitions[from].includes(to);
  return {
    transitions,
    validTransitions,
    canTransition,
    /**
     * Throws unless `from -> to` is allowed.
     * @throws AppError INVALID_TRANSITION (422) with extra `{ valid_transitions, from, to }`.
     */
    assertTransition(from: string, to: string): void {
      if (!canTransition(from, to)) {
        throw new AppError("INVALID_TRANSITION", transitionErrorString(from, to), { valid_transitions: validTransitions(from), from, to });
      }
    },
    /** Per-item check for batch updates: null when allowed, else the item's `{ error, valid_transitions }`. */
    checkBatchTransition(from: string, to: string): null | { error: string; valid_transitions: S[] } {
      return canTransition(from, to) ? null : { error: transitionErrorString(from, to), valid_transitions: validTransitions(from) };
    },
  };
}
