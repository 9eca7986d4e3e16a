import type { ZodType } from "zod";
import { toolInputSchema } from "../../ai/tool-schema";
import type { ToolSpec } from "../../ai/ports";
import { READ_TOOLS } from "./reads";
import { GATED_TOOLS } from "./writes";
import { INTEGRATION_TOOLS } from "./integrations";
import { PLANNER_TOOLS } from "./planner";
import { FILESTORE_TOOLS } from "./filestore";
import { MEMORY_TOOLS } from "./memory";
import type { GatedTool, Tool } from "./types";

export type * from "./types";

/**
 * Every tool the copilot can call (DESIGN.md 6.1, issue "Tools over what exists"): read tools run at once, gated
 * tools become pending actions. One definition each; the pending-action executor finds gated tools here by name.
 */
export const TOOLS: readonly Tool[] = [...READ_TOOLS, ...GATED_TOOLS, ...INTEGRATION_TOOLS, ...PLANNER_TOOLS, ...FILESTORE_TOOLS, ...MEMORY_TOOLS];

const byName = new Map(TOOLS.map((t) => [t.name, t]));

/** A tool by name, or undefined. */
export const toolByName = (name: string): Tool | undefined => byName.get(name);

/** A gated tool by name, or undefined (what the pending-action executor runs). */
export const gatedTool = (name: string): GatedTool | undefined => {
  const tool = byName.get(name);
  return tool?.gated ? tool : undefined;
};

const specs = new Map<Tool, ToolSpec>();

/** The tool as offered to a model: name, description, JSON schema of its input (converted once per tool, not per run). */
export const toolSpec = (tool: Tool): ToolSpec => {
  let spec = specs.get(tool);
  if (!spec) specs.set(tool, (spec = { name: tool.name, description: tool.description, inputSchema: toolInputSchema(tool.input) }));
  return spec;
};

/**
 * Validate a tool call's input against the tool's schema (the loop, before running or queuing it; the executor,
 * after merging the approver's edits). @returns the parsed input, or the problems as one line (`path: message; ...`).
 */
export function parseToolInput<I>(tool: { input: ZodType<I> }, raw: unknown): { ok: true; data: I } | { ok: false; problems: string } {
  const parsed = tool.input.safeParse(raw);
  if (parsed.success) return { ok: true, data: parsed.data };
  return { ok: false, problems: parsed.error.issues.map((i) => `${i.path.map(String).join(".") || "(input)"}: ${i.message}`).join("; ") };
}
