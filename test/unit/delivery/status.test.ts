import { describe, expect, it } from "vitest";
import { AppError } from "../../../core/error";
import * as Rec from "../../../core/recommendation/status";
import * as Doc from "../../../core/document/status";

const REC_EXPECTED: Record<string, string[]> = {
  suggested: ["accepted", "rejected"],
  accepted: ["in_progress", "rejected", "suggested"],
  rejected: ["suggested"],
  in_progress: ["implemented", "accepted", "suggested"],
  implemented: ["suggested"],
};
const DOC_EXPECTED: Record<string, string[]> = {
  draft: ["review"],
  review: ["approved", "draft"],
  approved: ["published", "draft"],
  published: [],
};

describe("recommendation status table (spec 01)", () => {
  const states = Rec.RecommendationStatus.options;
  it("lists exactly the spec's states", () => {
    expect([...states].sort()).toEqual(Object.keys(REC_EXPECTED).sort());
    expect(Rec.INITIAL_RECOMMENDATION_STATUS).toBe("suggested");
  });
  for (const from of states) {
    for (const to of states) {
      const allowed = REC_EXPECTED[from].includes(to);
      it(`${from} -> ${to} is ${allowed ? "allowed" : "rejected"}`, () => {
        expect(Rec.canTransition(from, to)).toBe(allowed);
        if (allowed) expect(() => Rec.assertTransition(from, to)).not.toThrow();
        else {
          let err: unknown;
          try {
            Rec.assertTransition(from, to);
          } catch (e) {
            err = e;
          }
          expect(err).toBeInstanceOf(AppError);
          const a = err as AppError;
          expect(a.code).toBe("INVALID_TRANSITION");
          expect(a.status).toBe(422);
          expect(a.message).toBe(`invalid_transition: ${from} -> ${to}`);
          expect(a.extra).toEqual({ valid_transitions: REC_EXPECTED[from], from, to });
          expect(Rec.checkBatchTransition(from, to)).toEqual({ error: `invalid_transition: ${from} -> ${to}`, valid_transitions: REC_EXPECTED[from] });
        }
      });
    }
    it(`validTransitions(${from}) follows the table`, () => expect(Rec.validTransitions(from)).toEqual(REC_EXPECTED[from]));
  }
  it("rejects unknown states", () => {
    expect(Rec.canTransition("bogus", "accepted")).toBe(false);
    expect(Rec.canTransition("suggested", "bogus")).toBe(false);
    expect(Rec.validTransitions("bogus")).toEqual([]);
    expect(() => Rec.assertTransition("suggested", "bogus")).toThrow(AppError);
  });
  it("batch check returns null for an allowed change", () => expect(Rec.checkBatchTransition("suggested", "accepted")).toBeNull());
});

describe("document status table (spec 01)", () => {
  const states = Doc.DocumentStatus.options;
  it("lists exactly the spec's states; published is terminal but editable", () => {
    expect([...states].sort()).toEqual(Object.keys(DOC_EXPECTED).sort());
    expect(Doc.INITIAL_DOCUMENT_STATUS).toBe("draft");
    expect(Doc.isTerminal("published")).toBe(true);
    expect(Doc.isTerminal("approved")).toBe(false);
    for (const s of states) expect(Doc.isEditable(s)).toBe(true);
  });
  for (const from of states) {
    for (const to of states) {
      const allowed = DOC_EXPECTED[from].includes(to);
      it(`${from} -> ${to} is ${allowed ? "allowed" : "rejected"}`, () => {
        expect(Doc.canTransition(from, to)).toBe(allowed);
        if (allowed) expect(() => Doc.assertTransition(from, to)).not.toThrow();
        else {
          try {
            Doc.assertTransition(from, to);
            expect.unreachable();
          } catch (e) {
            const a = e as AppError;
            expect(a.code).toBe("INVALID_TRANSITION");
            expect(a.message).toBe(`invalid_transition: ${from} -> ${to}`);
            expect(a.extra).toEqual({ valid_transitions: DOC_EXPECTED[from], from, to });
          }
        }
      });
    }
  }
});
