/**
 * The exhaustive check every state table gets (core/state-table.ts): each (from, to) pair is allowed or refused
 * exactly as the test's own table says (written out independently of the module), a refused move throws
 * INVALID_TRANSITION naming the valid ones, and `validTransitions` follows the table.
 */
import { expect, it } from "vitest";
import { AppError } from "../../core/error";

/** What a state module exports (core/state-table.ts `stateTable`). */
export interface StateModule {
  canTransition(from: string, to: string): boolean;
  assertTransition(from: string, to: string): void;
  validTransitions(from: string): readonly string[];
}

/**
 * Declare one test per (from, to) pair and one per state for `validTransitions`. Call inside a `describe`.
 * @param extra more checks per pair (for example a batch check), given whether the move is allowed
 */
export function itFollowsTheTable(
  S: StateModule,
  states: readonly string[],
  expected: Record<string, readonly string[]>,
  extra?: (from: string, to: string, allowed: boolean) => void,
): void {
  for (const from of states) {
    for (const to of states) {
      const allowed = expected[from]!.includes(to);
      it(`${from} -> ${to} is ${allowed ? "allowed" : "refused"}`, () => {
        expect(S.canTransition(from, to)).toBe(allowed);
        extra?.(from, to, allowed);
        if (allowed) {
          expect(() => S.assertTransition(from, to)).not.toThrow();
          return;
        }
        let err: unknown;
        try {
          S.assertTransition(from, to);
        } catch (e) {
          err = e;
        }
        expect(err).toBeInstanceOf(AppError);
        expect((err as AppError).code).toBe("INVALID_TRANSITION");
        expect((err as AppError).extra).toMatchObject({ from, to, valid_transitions: expected[from] });
      });
    }
    it(`validTransitions(${from}) follows the table`, () => expect(S.validTransitions(from)).toEqual(expected[from]));
  }
}
