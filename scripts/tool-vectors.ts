/**
 * Write the embeddings of the copilot tools' descriptions (the catalogue the local agent engine plans over, TOOLS of
 * core/agent/tools, as core/agent/engine.ts hands it) to core/agent/tool-vectors.json, the file the local engine
 * reads instead of embedding them (core/agent/local-engine.ts `descriptionVectors`).
 *
 * Why a generated file: the vectors are a pure function of the descriptions and the embedder, and embedding the 44
 * descriptions took 2.3 s of the local embedder's one worker on a fresh process, in front of every stream's first
 * prompt (issue #24 point 6). A description edited without regenerating still works (that tool is embedded at run
 * time); test/unit/tool-vectors-generated.test.ts fails until the file is regenerated.
 *
 *   npm run tool-vectors               write the file (embeds every description with the local embedder, a few seconds)
 *   npm run tool-vectors -- --check    exit 1 when a tool's entry is missing, stale or no longer in the catalogue
 */
import { readFileSync, writeFileSync } from "node:fs";
import { dirname, join, relative } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import type { Embedder } from "../core/ai/ports";
import { LocalEmbedder } from "../core/ai/local-embedder";
import { encodeVector } from "../core/ai/vectors";
import { descriptionHash, type StoredToolVectors } from "../core/agent/local-engine";
import { TOOLS, type Tool } from "../core/agent/tools";

const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..");
export const TOOL_VECTORS_FILE = join(ROOT, "core", "agent", "tool-vectors.json");

/**
 * The file's text for `tools` embedded by `emb`: `{ embedder, tools: { <name>: { hash, vector } } }` with the tools by
 * name in code-point order, two-space JSON, a final newline. The descriptions are embedded in one batch.
 * @throws Error when two tools share a name, or what the embedder throws
 */
export async function renderToolVectors(tools: readonly Tool[] = TOOLS, emb: Embedder = new LocalEmbedder()): Promise<string> {
  const names = tools.map((t) => t.name);
  const twice = names.filter((n, i) => names.indexOf(n) !== i);
  if (twice.length) throw new Error(`tool names must be unique: ${[...new Set(twice)].join(", ")}`);
  const vectors = await emb.embed(tools.map((t) => t.description));
  const byName = tools.map((t, i) => [t.name, { hash: descriptionHash(t.description), vector: encodeVector(vectors[i]!) }] as const);
  byName.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  const file: StoredToolVectors = { embedder: emb.id, tools: Object.fromEntries(byName) };
  return `${JSON.stringify(file, null, 2)}\n`;
}

/**
 * What is out of date in a stored file for `tools`: one line per tool with no entry, with the hash of another
 * description, or stored but no longer in the catalogue; empty when the file is current. Vectors are not compared
 * (that needs the embedder: the test does it).
 */
export function staleEntries(file: StoredToolVectors, tools: readonly Tool[] = TOOLS): string[] {
  const problems: string[] = [];
  for (const t of tools) {
    const entry = file.tools[t.name];
    if (!entry) problems.push(`${t.name}: no stored vector`);
    else if (entry.hash !== descriptionHash(t.description)) problems.push(`${t.name}: description changed since its vector was stored`);
  }
  const names = new Set(tools.map((t) => t.name));
  for (const name of Object.keys(file.tools)) if (!names.has(name)) problems.push(`${name}: stored but no longer in the catalogue`);
  return problems;
}

/** The committed file, parsed. @throws Error when it is missing or not JSON */
export const readToolVectors = (): StoredToolVectors => JSON.parse(readFileSync(TOOL_VECTORS_FILE, "utf8")) as StoredToolVectors;

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) {
  const where = relative(ROOT, TOOL_VECTORS_FILE);
  if (process.argv.includes("--check")) {
    const problems = (() => {
      try {
        return staleEntries(readToolVectors());
      } catch (err) {
        return [`cannot read it (${(err as Error).message})`];
      }
    })();
    if (problems.length) {
      console.error(`${where} is out of date: run npm run tool-vectors\n  ${problems.join("\n  ")}`);
      process.exit(1);
    }
    console.log(`${where} is up to date`);
  } else {
    try {
      const text = await renderToolVectors();
      writeFileSync(TOOL_VECTORS_FILE, text);
      console.log(`wrote ${where} (${TOOLS.length} tools, ${text.length} characters)`);
    } finally {
      await LocalEmbedder.shutdown();
    }
  }
}
