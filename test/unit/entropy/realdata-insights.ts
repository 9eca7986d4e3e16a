/**
 * Test-only: insights whose descriptions are verbatim sentences of ../shared/realdata (the JupyterLab accessibility
 * usability results, a VA retention interview), as synthesis would ground them, plus the planted contradictions the
 * entropy tests expect to be found. `verbatim` checks each real description against the file it came from.
 */
import { readFileSync } from "node:fs";

const REALDATA = new URL("../../../../shared/realdata/", import.meta.url).pathname;

/** A realdata file's text with Markdown emphasis and links reduced to their words. */
export function realText(file: string): string {
  return readFileSync(REALDATA + file, "utf8")
    .replace(/\[([^\]]+)\]\([^)]+\)/g, "$1")
    .replace(/\*\*/g, "");
}

export const JUPYTER = "jupyter/usability-research/2023-05-jupyterlab-accessibility-usability-results.md";
export const VA = "va-mobile-app/interview-notes/2023-07-retention-study-participant-10.md";

export interface Seed {
  key: string;
  severity: "low" | "medium" | "high" | "critical";
  title: string;
  description: string;
  /** The realdata file the description is quoted from; absent for planted insights. */
  from?: string;
}

/** Real findings: consistent with each other (pairs on one topic that agree). */
export const REAL: Seed[] = [
  { key: "contrast-ok", severity: "medium", title: "Low color contrast was not a major blocker", description: "Low color contrast was not a major blocker for participants to complete tasks, but it was unpleasant.", from: JUPYTER },
  { key: "toc-useful", severity: "medium", title: "The table of contents is useful for navigating notebooks", description: "The table of contents is useful for navigating notebooks, but only one participant was aware and used it.", from: JUPYTER },
  { key: "toc-praised", severity: "low", title: "Only one participant used the table of contents", description: "Only one participant used the table of contents; this participant explicitly praised it.", from: JUPYTER },
  { key: "themes-cared", severity: "medium", title: "Participants cared about themes", description: "Of participants who immediately changed settings to make JupyterLab better for their needs, all but one took the time to change the theme.", from: JUPYTER },
  { key: "themes-positive", severity: "low", title: "Participants who discovered the default themes remarked positively", description: "Participants who were not aware JupyterLab had multiple default themes and found out later in the session remarked positively.", from: JUPYTER },
  { key: "shortcuts-hard", severity: "high", title: "Keyboard shortcuts are hard to find", description: "While keyboard shortcuts do appear in relevant tool tips and have a page on the JupyterLab documentation, participants frequently could not find the ones they needed.", from: JUPYTER },
  { key: "palette", severity: "medium", title: "The command palette was a popular way to navigate", description: "The command palette was one of the more popular choices for navigating through large areas of JuptyerLab in addition to completing actions within the notebook.", from: JUPYTER },
  { key: "headings", severity: "low", title: "Markdown headings were indispensable", description: "Markdown headings were indispensable in keeping participants and facilitators in the same place.", from: JUPYTER },
  { key: "dark", severity: "low", title: "Dark mode is helpful at night", description: "I do use dark mode. At night when you’re trying to calm down or get into a sleep mode. Dark setting is helpful.", from: VA },
];

/** Planted contradictions of real findings: each disagrees with the real insight named in `against`. */
export const PLANTED: (Seed & { against: string })[] = [
  { key: "contrast-block", against: "contrast-ok", severity: "high", title: "Low color contrast blocked participants from completing tasks", description: "Low color contrast was a major blocker that stopped participants from completing tasks." },
  { key: "toc-notuseful", against: "toc-useful", severity: "medium", title: "The table of contents is not useful for navigating notebooks", description: "Participants said the table of contents is not useful for navigating notebooks." },
];
