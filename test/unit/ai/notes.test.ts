/**
 * Interview-note structure (issue #11 item 4): whose words each line of notes is. Uses our own small notes file
 * (test/fixtures/notes/session-notes.md), written for these tests: session metadata, a background section, the
 * guide's prompts, "question? answer" bullets, a note-taker's paraphrase with quoted speech, a blockquote.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { extractMarkdown } from "../../../core/extract/markdown";
import { unitMentions, type MentionSpan } from "../../../core/ai/synthesis/mentions";
import { isEmphatic, isInterviewerLine, isProfile, isSessionMetadata, isStudyMethod, quotedSpeech } from "../../../core/ai/synthesis/notes";

const NOTES = readFileSync(join(import.meta.dirname, "../../fixtures/notes/session-notes.md"), "utf8");

function mentionsOf(markdown: string): (MentionSpan & { unitText: string })[] {
  const x = extractMarkdown(markdown);
  return x.units.flatMap((u) => unitMentions(u).map((m) => ({ ...m, unitText: u.text })));
}

describe("notes structure (notes.ts)", () => {
  it("finds quoted speech of 4+ words, without the quotation marks, and ignores quoted labels", () => {
    const t = 'She opened the “Claims” tab and said “I never know where my letters are kept.” Then "ok".';
    const ranges = quotedSpeech(t);
    expect(ranges.map(([s, e]) => t.slice(s, e))).toEqual(["I never know where my letters are kept."]);
  });

  it("tells the interviewer's lines from the participant's", () => {
    expect(isInterviewerLine("Are you comfortable if I record my screen today?", false)).toBe(true);
    expect(isInterviewerLine("Tell me a little bit about yourself.", false)).toBe(true);
    expect(isInterviewerLine("Last time used app?", true)).toBe(true);
    expect(isInterviewerLine("Feel free to answer the questions you’re comfortable with.", false)).toBe(true);
    // The participant's own words: first person, or a generic "you" without the script's cues.
    expect(isInterviewerLine("Why can't I just log in with my face?", false)).toBe(false);
    expect(isInterviewerLine("You don’t have to click everywhere.", false)).toBe(false);
    expect(isInterviewerLine("I call the pharmacy every time.", false)).toBe(false);
  });

  it("recognises session metadata and staff lines, not the participant's labelled speech", () => {
    for (const line of ["Date: 12 March 2025", "Notetaker: Sam", "Interviewer: Why did you stop using it?", "Participant: P7, 58, Army", "July 2023", "Age: 58"]) {
      expect(isSessionMetadata(line), line).toBe(true);
    }
    for (const line of ["Participant: I never use the app at night because it is too bright.", "Time-consuming to find the letters every month.", "The refill page is slow."]) {
      expect(isSessionMetadata(line), line).toBe(false);
    }
  });

  it("recognises background (demographics, service history) by heading, question or a short statement", () => {
    expect(isProfile("Retired bus driver, lives in a small town", undefined, "Participant background")).toBe(true);
    expect(isProfile("Northern Virginia, close to D.C.", "Where are you from, where do you live now?")).toBe(true);
    expect(isProfile("An old Android phone", "What type of phone do you have?")).toBe(true);
    expect(isProfile("I am an Army veteran and live alone.")).toBe(true);
    expect(isProfile("For everything, I’m 80% service connected.")).toBe(true);
    // Experience, even when it names a place or a distance.
    expect(isProfile("Community care because of how far I am from Madison.")).toBe(false);
    expect(isProfile("It’s far for me to drive to the VA hospital.", "How far away is it from you?")).toBe(false);
    expect(isProfile("I have a pending claim that has been sitting for 3 years.")).toBe(false);
    // Background that also speaks of the product is evidence.
    expect(isProfile("I'm a disabled veteran and the app keeps logging me out.")).toBe(false);
    // A review's "I'm a veteran" introduces an opinion; its question alone can make it background.
    expect(isProfile("I am a veteran and I love it.", undefined, undefined, false)).toBe(false);
    expect(isProfile("Ohio", "Where do you live?", undefined, false)).toBe(true);
  });

  it("marks emphasis", () => {
    expect(isEmphatic("I call the pharmacy every single time")).toBe(true);
    expect(isEmphatic("Honestly the status page is the worst part")).toBe(true);
    expect(isEmphatic("I check it on Mondays.")).toBe(false);
  });
});

describe("a findings report's account of its method (isStudyMethod)", () => {
  it("drops sections about how the research was run, and procedure statements in the third person", () => {
    for (const h of ["Limitations", "What was tested", "## Method", "Methodology", "Study design", "Potential Future Work", "Funding", "Team", "Recruitment"]) {
      expect(isStudyMethod("The cell prompts were hard to read.", h), h).toBe(true);
    }
    for (const t of [
      "These results are from user interviews conducted in May 2023 with this test script.",
      "Participants were first asked to complete a set of tasks.",
      "This study is not an attempt to determine JupyterLab’s conformance with any accessibility standard.",
      "It is important to note that the script explicitly asked participants to use the command palette.",
      "- **Participants were recruited through an open call.**",
      "A usability testing style script was chosen for this testing session because of the need for scoped results.",
    ]) {
      expect(isStudyMethod(t), t).toBe(true);
    }
  });

  it("keeps findings, and what participants say about their own testing", () => {
    for (const h of ["Findings", "Navigation", "Opportunities for improvement", undefined]) {
      expect(isStudyMethod("The syntax highlighting had particularly poor contrast.", h), String(h)).toBe(false);
    }
    for (const t of ["We tested it in production and it broke.", "A script I wrote was used in production and it broke.", "Participants wanted browser settings to carry over.", "The script editor was confusing to users."]) {
      expect(isStudyMethod(t), t).toBe(false);
    }
  });

  it("a report's method sections are marked as method (context for clustering, never evidence); its findings are not", () => {
    const md = "# Results\n\n## Limitations\n\nThese participants joined as a part of an open call, so they are self-selected.\n\n## Findings\n\nThe syntax highlighting had particularly poor contrast for most participants.\n";
    const units = extractMarkdown(md).units;
    const spans = units.flatMap((u) => unitMentions(u)).map((m) => ({ text: m.text, method: m.method ?? false }));
    expect(spans).toEqual([
      { text: "These participants joined as a part of an open call, so they are self-selected.", method: true },
      { text: "The syntax highlighting had particularly poor contrast for most participants.", method: false },
    ]);
  });
});

describe("mentions of a notes file", () => {
  const ms = mentionsOf(NOTES);
  const texts = ms.map((m) => m.text);

  it("keeps only the participant's words and the note-taker's paraphrase, each a verbatim span of its unit", () => {
    expect(texts).toEqual([
      "I call the pharmacy every single time because the app never shows my refills.",
      "P7 finds the refill screen confusing:",
      "I never know if my refill actually went through to the pharmacy.",
      "She checks the app twice a week for refill status.",
      "Honestly the refill status page is the worst part, it just says pending for days.",
      "I would like a text message when my refill is ready.",
    ]);
    for (const m of ms) expect(m.unitText.slice(m.start, m.end)).toBe(m.text);
  });

  it("never keeps metadata, background, prompts or timestamps", () => {
    const all = texts.join("\n");
    for (const absent of ["Date", "Notetaker", "Age", "Army", "bus driver", "Tell me", "Android", "00:04:12", "anything else", "Session details"]) {
      expect(all, absent).not.toContain(absent);
    }
  });

  it("labels quoted and blockquoted speech as speech, bullets as notes, and what follows a question as its answer", () => {
    const origin = (t: string) => ms.find((m) => m.text === t)!;
    expect(origin("I never know if my refill actually went through to the pharmacy.").origin).toBe("speech");
    expect(origin("Honestly the refill status page is the worst part, it just says pending for days.").origin).toBe("speech");
    expect(origin("She checks the app twice a week for refill status.").origin).toBe("note");
    const answer = origin("I would like a text message when my refill is ready.");
    expect(answer.origin).toBe("answer");
    expect(answer.question).toBe("Is there anything else you wanted to share before we wrap up?");
    // The clock time in front of the question is not part of it.
    expect(origin("I call the pharmacy every single time because the app never shows my refills.").question).toBe("How do you refill a prescription today?");
  });

  it("reads a bold line of its own as a heading (word-processor notes), a bold lead-in as text", () => {
    const x = extractMarkdown("## Study\n\n**Refills**\nShe checks the app twice a week.\n\n**Finding one.** The page is slow.");
    expect(x.units.map((u) => [u.text, u.fields?.heading])).toEqual([
      ["She checks the app twice a week.", "Refills"],
      // A bold heading holds until the next heading, like "###" would.
      ["Finding one. The page is slow.", "Refills"],
    ]);
  });

  it("marks blockquote paragraphs as quotes in the unit's fields", () => {
    const x = extractMarkdown("- a note line about the refill page\n\n> I never know if it went through.");
    expect(x.units.map((u) => u.fields?.form)).toEqual([undefined, "quote"]);
  });
});
