/**
 * One participant (issue #11 item 1), at engine level, on an interview we wrote for this test: a participant who
 * keeps coming back to three topics across a session, an interviewer whose turns are questions. With the bag-of-words
 * test embedder the themes are lexical, so the test is about the support rule and the descriptions, not about the
 * embedding model (the real model is exercised through the API in test/http/synthesis-one-interview.test.ts).
 */
import { describe, expect, it } from "vitest";
import type { TextUnit } from "../../../core/extract/types";
import { synthesize, type SynthesisSource } from "../../../core/ai/synthesis";
import { hashEmbedder } from "./helpers";

/**
 * The participant's answers: five topics, each raised in three separate turns, and one-off remarks. (A keyphrase
 * prominent in three themes or more, and in more than a quarter of them, is taken for the product's name.)
 */
const ANSWERS = [
  "The refill button in the pharmacy tab never tells me whether my refill request went through.",
  "I drive forty minutes to the clinic, so the clinic visit takes my whole morning.",
  "Logging in with my password fails most mornings and I have to reset the password again.",
  "The appointment reminder text message comes the same day as the appointment, too late.",
  "The claim status page shows the same claim letter every week without any change.",
  "My daughter set up the tablet for me last spring when she visited.",
  "I sent another refill request yesterday and the pharmacy tab still shows the refill as pending.",
  "The weather was terrible during my last trip, honestly.",
  "The password reset email takes ages, and logging in again fails with the new password too.",
  "Another clinic visit next week means another drive of forty minutes and a lost morning.",
  "I read the news on the tablet in the evening.",
  "I wish the pharmacy tab showed the refill status, because each refill request feels lost.",
  "A reminder text message a week before the appointment would let me arrange the appointment ride.",
  "I keep a paper calendar on the fridge for birthdays.",
  "Every single time the password expires, logging in fails and the password reset locks me out.",
  "The claim letter on the claim status page never says when the claim will be decided.",
  "The clinic parking is fine once I get there.",
  "The drive to the clinic is why I would rather do a video visit than lose a morning.",
  "The claim status page is where I check my claim every week, and the claim letter never changes.",
  "Without an appointment reminder text message, I almost missed my last appointment.",
];

function interview(speaker: string): TextUnit[] {
  const units: TextUnit[] = [];
  ANSWERS.forEach((a, i) => {
    units.push({ kind: "turn", speaker: "Interviewer", text: i % 2 ? "What happened next with that?" : "Can you tell me more about how you use it?" });
    units.push({ kind: "turn", speaker, text: a });
  });
  return units;
}

function source(id: string, units: TextUnit[], source_type = "interview"): SynthesisSource {
  return { id, title: `${id}.vtt`, source_type, units, extracted_text: units.map((u) => `${u.speaker ? `${u.speaker}: ` : ""}${u.text}`).join("\n") };
}

describe("synthesis of one participant", () => {
  it("turns the points one participant keeps coming back to into insights, said to be that participant's", async () => {
    const src = source("p7", interview("P7"));
    const out = await synthesize({ sources: [src], embedder: hashEmbedder(128) });
    expect(out.insights.length, out.summary).toBeGreaterThanOrEqual(3);
    for (const d of out.insights) {
      expect(d.description).toMatch(/^One participant \(P7\), in \d+ separate passages/);
      expect(d.frequency).toBe(1);
      for (const q of d.quotes) {
        expect(src.extracted_text).toContain(q.text);
        expect(q.speaker).toBe("P7");
      }
    }
    const quoted = out.insights.flatMap((d) => d.quotes.map((q) => q.text)).join("\n");
    expect(quoted).toMatch(/refill/);
    expect(quoted).toMatch(/password/);
    // One-off remarks and the interviewer's questions never become evidence.
    expect(quoted).not.toMatch(/weather|fridge|news|Can you tell me/);
  });

  it("keeps the two-voice rule when the same interview sits among many respondents", async () => {
    // Thirty respondents, each in their own words (identical answers would read as a multiple-choice column).
    const topics = [
      "search results load slowly on my phone",
      "please add a dark theme for night reading",
      "the home screen is clean and easy to scan",
      "push notifications arrive twice for every message",
      "the font size setting resets after each update",
    ];
    const tails = ["every day", "at work", "in the evening", "on weekends", "most of the time", "lately"];
    const survey: TextUnit[] = Array.from({ length: 30 }, (_, i) => ({
      kind: "response",
      speaker: `r${i}`,
      text: `Honestly, ${topics[i % 5]} ${tails[Math.floor(i / 5)]}.`,
      fields: { question: "Anything else?" },
    }));
    const out = await synthesize({ sources: [source("p7", interview("P7")), source("survey", survey, "survey")], embedder: hashEmbedder(128) });
    // The participant's own themes have one voice among 31 people: not enough; the respondents' themes stay.
    for (const d of out.insights) expect(d.description).not.toMatch(/^One participant/);
    expect(out.insights.every((d) => d.quotes.every((q) => q.speaker !== "P7"))).toBe(true);
    expect(out.insights.length).toBeGreaterThan(0);
  });
});
