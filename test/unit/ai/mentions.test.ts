import { describe, expect, it } from "vitest";
import type { TextUnit } from "../../../core/extract/types";
import { embedUnits, packPerUnit, vectorsAligned } from "../../../core/ai/synthesis/embed";
import { boilerplateTexts, interviewerSpeakers, structuredQuestions, unitSkipReason } from "../../../core/ai/synthesis/filters";
import { normalizeText, unitMentions } from "../../../core/ai/synthesis/mentions";
import { collectMentions } from "../../../core/ai/synthesis";
import { hashEmbedder } from "./helpers";

describe("unitMentions", () => {
  it("keeps a short unit whole and splits a long one into verbatim sentences", () => {
    const short: TextUnit = { kind: "response", text: "More reliable launches, please." };
    expect(unitMentions(short).map((m) => m.text)).toEqual(["More reliable launches, please."]);

    // Real usability finding (jupyter/usability-research), longer than one mention.
    const text =
      "- **JupyterLab’s default focus styling needs to be improved.** Based only on the sessions, no regions appear have a designated focus state. Some regions (like the file browser) have hover states that can be triggered by the keyboard, but these are not consistent.\n- Many participants had to work to find things within the notebook.";
    const ms = unitMentions({ kind: "paragraph", text });
    expect(ms.length).toBeGreaterThanOrEqual(3);
    for (const m of ms) {
      expect(text.slice(m.start, m.end)).toBe(m.text);
      expect(m.text).not.toMatch(/^[-*\s]/); // list markers trimmed
      expect(m.tokens.length).toBeGreaterThan(0);
    }
    expect(ms[0].text.startsWith("JupyterLab’s default focus styling")).toBe(true);
    expect(ms.at(-1)!.text).toBe("Many participants had to work to find things within the notebook.");
  });

  it("drops headings, too-short, non-informative, form-template and prompt mentions", () => {
    const none = (u: TextUnit) => expect(unitMentions(u)).toEqual([]);
    none({ kind: "section", text: "## Findings" });
    none({ kind: "paragraph", text: "**Warm Up Questions - 5 min**" });
    none({ kind: "response", text: "N/A" });
    none({ kind: "response", text: "Nothing" });
    none({ kind: "response", text: "Reliability." }); // one word: too short even for an answer
    none({ kind: "turn", text: "Yeah, okay, right." });
    none({ kind: "paragraph", text: "Software Project name (required) JupyterLab" });
    none({ kind: "turn", text: "What do you like about the app?" });
    expect(unitMentions({ kind: "response", text: "Start-up time" })).toHaveLength(1);
    // A user's own question stays (first person).
    expect(unitMentions({ kind: "comment", text: "Is there a way where I can see what data my variables are storing?" })).toHaveLength(1);
  });

  it("does not join an interviewer's question to the answer that follows it", () => {
    const text =
      "*What do you like about the app?  You don’t have to click everywhere. Everything is in one place for me and I can find my appointments quickly when I need them, which matters a lot because I drive far.";
    const ms = unitMentions({ kind: "paragraph", text });
    expect(ms.map((m) => m.text)).not.toContain("What do you like about the app?  You don’t have to click everywhere.");
    expect(ms.some((m) => m.text.startsWith("You don’t have to click everywhere."))).toBe(true);
  });

  it("normalises text for comparison", () => {
    expect(normalizeText("  It’s SLOW!!  really  ")).toBe("its slow really");
    expect(normalizeText("Don't")).toBe("dont");
  });
});

describe("source filters", () => {
  it("finds the interviewer of a transcript by who asks and who talks about themselves", () => {
    const turns: TextUnit[] = [];
    for (let i = 0; i < 12; i++) {
      turns.push({ kind: "turn", speaker: "Moderator A", text: `Can you show me where you would go next? What do you expect to see on screen ${i}?` });
      turns.push({ kind: "turn", speaker: "P16", text: `I would tap the claims button. I check my claim status every month. My wife helps me ${i}.` });
    }
    expect([...interviewerSpeakers(turns)]).toEqual(["Moderator A"]);
    expect(unitSkipReason(turns[0], new Set(["Moderator A"]), new Set())).toBe("interviewer");
    expect(unitSkipReason(turns[1], new Set(["Moderator A"]), new Set())).toBeNull();
    // One speaker only: nobody is dropped.
    expect(interviewerSpeakers(turns.filter((t) => t.speaker === "P16")).size).toBe(0);
  });

  it("recognises multiple-choice, multi-select, tag and name-list survey columns but not free text", () => {
    const col = (q: string, answers: string[]): TextUnit[] => answers.map((a) => ({ kind: "response", text: a, fields: { question: q } }));
    const units = [
      ...col("How often?", Array.from({ length: 40 }, (_, i) => ["Daily", "Weekly", "Monthly"][i % 3])),
      ...col("Words", Array.from({ length: 40 }, (_, i) => ["simple;cool", "cool;quick;simple", "intuitive;simple"][i % 3])),
      ...col("Role", Array.from({ length: 40 }, (_, i) => `role${i} scientist`)),
      ...col("What hinders you?", Array.from({ length: 40 }, (_, i) => `The kernel dies when I load dataset number ${i} and I lose my work`)),
    ];
    const q = structuredQuestions(units);
    expect([...q].sort()).toEqual(["How often?", "Role", "Words"]);
  });

  it("marks text repeated across sources as boilerplate", () => {
    const b = boilerplateTexts([
      { norm: "the following questions are a way to get to know you better", sourceId: "a" },
      { norm: "the following questions are a way to get to know you better", sourceId: "b" },
      { norm: "login is slow", sourceId: "a" },
      { norm: "login is slow", sourceId: "b" },
      { norm: "my claim has been pending for three years now", sourceId: "a" },
    ]);
    expect([...b]).toEqual(["the following questions are a way to get to know you better"]);
  });
});

describe("per-unit vectors (ingestion precompute)", () => {
  const units: TextUnit[] = [
    { kind: "response", text: "Login takes forever and asks for a token every time." },
    { kind: "section", text: "# Heading" },
    {
      kind: "paragraph",
      text: "The claims page never loads for me. It always says there is trouble loading claims information. I have tried on wifi and on cellular data with the same result, and the letters page is no better either. The benefit summary letter just spins and spins without ever showing the document I need for my taxes. I called the help desk twice and they told me to reinstall the app, which did not help at all.",
    },
  ];

  it("packs each unit's mention vectors in order and detects misalignment", async () => {
    const emb = hashEmbedder(16);
    const vecs = await embedUnits(units, emb);
    const spans = units.map((u) => unitMentions(u));
    expect(vecs).toHaveLength(3);
    expect(vecs[1].length).toBe(0);
    expect(vecs[2].length).toBe(spans[2].length * 16);
    expect(emb.calls).toHaveLength(1); // one batch for the whole source
    const [direct] = await emb.embed([spans[2][1].text]);
    expect(Array.from(vecs[2].subarray(16, 32))).toEqual(Array.from(direct));
    expect(vectorsAligned(spans, vecs, 16, emb.id, emb.id)).toBe(true);
    expect(vectorsAligned(spans, vecs, 16, "other-embedder", emb.id)).toBe(false);
    expect(vectorsAligned(spans, vecs.slice(0, 2), 16, undefined, emb.id)).toBe(false);
    expect(vectorsAligned([spans[0], null, spans[2]], [vecs[0], new Float32Array(0), vecs[2]], 16, undefined, emb.id)).toBe(true);
    expect(packPerUnit([[], []], [], 16).map((v) => v.length)).toEqual([0, 0]);
  });

  it("reuses aligned precomputed vectors and embeds only the rest", async () => {
    const emb = hashEmbedder(16);
    const vectors = await embedUnits(units, emb);
    const src = (id: string, withVectors: boolean) => ({
      id,
      title: id,
      source_type: "feedback",
      units,
      extracted_text: units.map((u) => u.text).join("\n"),
      ...(withVectors ? { vectors, vectors_embedder_id: emb.id } : {}),
    });
    const fresh = hashEmbedder(16);
    const corpus = await collectMentions([src("a", true), src("b", false)], fresh);
    expect(corpus.stats.vectors_reused).toBeGreaterThan(0);
    expect(corpus.stats.vectors_computed).toBe(corpus.stats.vectors_reused);
    expect(fresh.calls.flat()).toHaveLength(corpus.stats.vectors_computed);
  });
});
