/**
 * Mid-stream quality alerts (issue #21; spec 02 `harness_stream_alert`): as the answer streams, at 500, 2,000 and
 * 5,000 characters its text so far is checked against the workspace snapshot read in pre-flight, with no read of
 * its own (a check must not hold up the tokens):
 *
 * - it cites nothing (no insight, source, recommendation, document or pending-action id): a warning at 500, critical
 *   from 2,000 on (a long answer with no evidence);
 * - it quotes text (“…” or "…", 4+ words) found nowhere in the workspace (insight quotes, titles, descriptions) nor
 *   in this run's tool results: critical;
 * - it names an id that is not in the workspace nor among this run's tool results: critical;
 * - it carries a redaction marker ([redacted], ███, …): warning.
 * Each issue is reported once, at the first checkpoint that sees it. The post-flight verifier decides; these only warn.
 */
import { REDACTION_RE } from "../ai/synthesis/markers";
import { citesAnything, quotedSpans, quoteKey } from "./claims";
import type { Send } from "./events";
import type { WorkspaceSnapshot } from "./profile";

/** Characters of answer at which the checks run (spec 02). */
export const CHECKPOINTS = [500, 2000, 5000] as const;

/** One `harness_stream_alert` payload. */
export interface StreamAlert {
  severity: "warning" | "critical";
  checkpoint: (typeof CHECKPOINTS)[number];
  issue: string;
  suggestion: string;
}

const UUID = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/gi;

/** Every string inside a value (a tool result), depth first. */
export function stringsOf(value: unknown, out: string[] = []): string[] {
  if (typeof value === "string") out.push(value);
  else if (Array.isArray(value)) for (const v of value) stringsOf(v, out);
  else if (value && typeof value === "object") for (const v of Object.values(value)) stringsOf(v, out);
  return out;
}

/** Watches one answer as it streams; `reset` starts a new answer (a repaired attempt). */
export class StreamMonitor {
  private text = "";
  private next = 0;
  private readonly reported = new Set<string>();
  /** Text the run's tools returned (normalised): quotes drawn from it are in the workspace. */
  private toolText = "";
  private readonly toolIds = new Set<string>();
  readonly alerts: StreamAlert[] = [];

  /**
   * @param snapshot the workspace as pre-flight read it
   * @param allowed text the answer may quote besides the workspace's (the user's prompt)
   */
  constructor(
    private readonly snapshot: WorkspaceSnapshot,
    private readonly send: Send,
    allowed: string[] = [],
  ) {
    for (const a of allowed) this.toolText += ` ${quoteKey(a)}`;
  }

  /** A tool result the run received (what it may quote and cite besides the snapshot). */
  observeTool(content: unknown): void {
    for (const s of stringsOf(content)) {
      this.toolText += ` ${quoteKey(s)}`;
      for (const m of s.matchAll(UUID)) this.toolIds.add(m[0].toLowerCase());
    }
  }

  /** More answer text; runs the checks of every checkpoint it passes. */
  push(delta: string): void {
    this.text += delta;
    while (this.next < CHECKPOINTS.length && this.text.length >= CHECKPOINTS[this.next]!) this.check(CHECKPOINTS[this.next++]!);
  }

  /** A new answer begins (the repaired attempt): checkpoints count from zero again; reported issues stay reported. */
  reset(): void {
    this.text = "";
    this.next = 0;
  }

  private inWorkspace(span: string): boolean {
    const key = quoteKey(span);
    return this.toolText.includes(key) || this.snapshot.texts.some((t) => t.includes(key));
  }

  private alert(checkpoint: StreamAlert["checkpoint"], key: string, a: Omit<StreamAlert, "checkpoint">) {
    if (this.reported.has(key)) return;
    this.reported.add(key);
    const alert = { ...a, checkpoint };
    this.alerts.push(alert);
    this.send("harness_stream_alert", alert);
  }

  private check(checkpoint: StreamAlert["checkpoint"]): void {
    const text = this.text;
    if (!citesAnything(text)) {
      this.alert(checkpoint, `uncited#${checkpoint === 500 ? "w" : "c"}`, {
        severity: checkpoint === 500 ? "warning" : "critical",
        issue: `${checkpoint.toLocaleString("en-US")} characters in, the answer cites no insight or source`,
        suggestion: "Ground each claim in the workspace: cite [insight <id>] or [source <id>] from the tool results.",
      });
    }
    for (const span of quotedSpans(text)) {
      if (this.inWorkspace(span)) continue;
      this.alert(checkpoint, `quote#${quoteKey(span)}`, {
        severity: "critical",
        issue: `The answer quotes text that is not in the workspace: “${span.slice(0, 160)}”`,
        suggestion: "Quote only text that appears verbatim in a source or an insight; paraphrase without quotation marks otherwise.",
      });
    }
    for (const m of text.matchAll(UUID)) {
      const id = m[0].toLowerCase();
      if (this.snapshot.ids.has(id) || this.toolIds.has(id)) continue;
      this.alert(checkpoint, `id#${id}`, {
        severity: "critical",
        issue: `The answer cites ${id}, which is not in this workspace`,
        suggestion: "Cite only ids the tools returned.",
      });
    }
    if (REDACTION_RE.test(text)) {
      this.alert(checkpoint, "redaction", {
        severity: "warning",
        issue: "The answer carries a redaction marker",
        suggestion: "Leave out redacted passages instead of quoting their markers.",
      });
    }
  }
}
