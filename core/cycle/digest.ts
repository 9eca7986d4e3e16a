/**
 * The morning digest of a research cycle (issue #23 point 3; workspace setting `overnightCycleNotifyEmail`, spec 01):
 * one plain-text e-mail per member of the workspace saying what the night's cycle changed, with links into the app
 * (APP_URL). Sent through the mail port (core/mail: SES in AWS, `.eml` files under `.data/outbox/` locally).
 */
import { Config } from "../config";

/** What one night's cycle changed (kept on the night's record and the cycle's task). */
export interface CycleChanges {
  new_sources: { id: string; title: string; source_type: string }[];
  insights_created: { id: string; title: string; severity: string }[];
  insights_merged: { id: string; title: string }[];
  /** Contradictions and stale sources the entropy scanner flagged (at most 20; the scan keeps them all). */
  issues: { issue_type: string; severity: string; detail: string; insight_ids: string[]; source_id: string | null }[];
  /** Whether the entropy scanner ran (false: it failed, and `issues` is empty). */
  scanned: boolean;
}

/** True when the night changed something a member would want to hear about. */
export const changedAnything = (c: CycleChanges): boolean =>
  c.new_sources.length + c.insights_created.length + c.insights_merged.length + c.issues.length > 0;

/** Links into the app (APP_URL; the frontend's routes: docs/decisions.md "Overnight research cycles"). */
export const links = {
  workspace: (ws: string) => `${Config.appUrl()}/workspaces/${ws}`,
  insight: (ws: string, id: string) => `${Config.appUrl()}/workspaces/${ws}/insights/${id}`,
  source: (ws: string, id: string) => `${Config.appUrl()}/workspaces/${ws}/research/${id}`,
  task: (ws: string, id: string) => `${Config.appUrl()}/workspaces/${ws}/tasks/${id}`,
  settings: (ws: string) => `${Config.appUrl()}/workspaces/${ws}/settings`,
};

const plural = (n: number, one: string, many = `${one}s`) => `${n} ${n === 1 ? one : many}`;

/** The digest's subject line. */
export function digestSubject(workspaceName: string, date: string, c: CycleChanges): string {
  const parts = [plural(c.insights_created.length, "new insight"), ...(c.insights_merged.length ? [`${c.insights_merged.length} updated`] : []), ...(c.issues.length ? [plural(c.issues.length, "issue")] : [])];
  return `Research cycle ${date} for ${workspaceName}: ${parts.join(", ")}`;
}

/** The digest's body (plain text, one line per change, each with its link). */
export function digestText(input: { workspaceId: string; workspaceName: string; date: string; taskId: string; goals: string[]; changes: CycleChanges }): string {
  const { workspaceId: ws, changes: c } = input;
  const lines = [
    `Good morning,`,
    "",
    `Last night's research cycle for ${input.workspaceName} (${input.date}, 02:00 UTC) looked at ${plural(c.new_sources.length, "new research source")}.`,
  ];
  if (input.goals.length) lines.push("", "Research program goals:", ...input.goals.map((g) => `  - ${g}`));
  if (c.new_sources.length) {
    lines.push("", `New sources synthesized (${c.new_sources.length}):`);
    for (const s of c.new_sources) lines.push(`  - ${s.title} (${s.source_type.replace(/_/g, " ")})`, `    ${links.source(ws, s.id)}`);
  }
  if (c.insights_created.length) {
    lines.push("", `New insights (${c.insights_created.length}):`);
    for (const i of c.insights_created) lines.push(`  - ${i.title} [${i.severity}]`, `    ${links.insight(ws, i.id)}`);
  }
  if (c.insights_merged.length) {
    lines.push("", `Existing insights with new evidence (${c.insights_merged.length}):`);
    for (const i of c.insights_merged) lines.push(`  - ${i.title}`, `    ${links.insight(ws, i.id)}`);
  }
  if (c.issues.length) {
    lines.push("", `Flagged for review (${c.issues.length}):`);
    for (const issue of c.issues) {
      lines.push(`  - ${issue.issue_type === "contradictory_insights" ? "Contradiction" : issue.issue_type === "stale_source" ? "Stale source" : issue.issue_type} [${issue.severity}]: ${issue.detail}`);
      for (const id of issue.insight_ids.slice(0, 2)) lines.push(`    ${links.insight(ws, id)}`);
      if (issue.source_id) lines.push(`    ${links.source(ws, issue.source_id)}`);
    }
  } else if (!c.scanned) {
    lines.push("", "Contradictions and stale sources were not checked this time.");
  }
  lines.push(
    "",
    `The cycle's full record: ${links.task(ws, input.taskId)}`,
    "",
    `You receive this because overnight research cycles and their digest are on for ${input.workspaceName}. Turn them off in the workspace settings: ${links.settings(ws)}`,
  );
  return `${lines.join("\n")}\n`;
}
