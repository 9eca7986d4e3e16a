/**
 * Imports point down (DESIGN.md 4, convention 11): handlers → core areas → core/ai, core/extract, core/db → config
 * and errors; a lower layer never imports a higher one, and no files import each other in a circle. The import graph
 * of core/ is read with the TypeScript compiler's own pre-processor (`ts.preProcessFile`: static imports, re-exports,
 * `import type` and dynamic `import()` alike, since a lazily loaded module is still a dependency).
 */
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import ts from "typescript";
import { describe, expect, it } from "vitest";

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "../../..");
const CORE = join(ROOT, "core");

/** Every source file under core/, by path relative to the repository (core/ai/select.ts). */
function coreFiles(dir = CORE): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return coreFiles(path);
    return /\.(ts|mts|mjs)$/.test(name) && !name.endsWith(".d.ts") ? [relative(ROOT, path)] : [];
  });
}

/** The file a relative specifier names, as the bundler resolves it (extension or index added); null for packages. */
function resolveImport(from: string, specifier: string): string | null {
  if (!specifier.startsWith(".")) return null;
  const base = resolve(ROOT, dirname(from), specifier).replace(/\.js$/, "");
  const found = [`${base}.ts`, `${base}.mts`, join(base, "index.ts"), base].find((p) => existsSync(p) && statSync(p).isFile());
  if (!found) throw new Error(`${from}: cannot resolve "${specifier}"`);
  return relative(ROOT, found);
}

/** The import graph of core/: each file and the core/ files it imports. */
function importGraph(): Map<string, string[]> {
  const graph = new Map<string, string[]>();
  for (const file of coreFiles()) {
    const { importedFiles } = ts.preProcessFile(readFileSync(join(ROOT, file), "utf8"), true, true);
    const targets = importedFiles.map((i) => resolveImport(file, i.fileName)).filter((t): t is string => !!t && t.startsWith("core/"));
    graph.set(file, [...new Set(targets)]);
  }
  return graph;
}

/** The import circles: strongly connected components of two or more files (Tarjan), or a file importing itself. */
function cycles(graph: Map<string, string[]>): string[][] {
  let next = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  const visit = (v: string) => {
    index.set(v, next);
    low.set(v, next++);
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
    }
    if (low.get(v) === index.get(v)) {
      const component: string[] = [];
      let w: string;
      do {
        w = stack.pop()!;
        onStack.delete(w);
        component.push(w);
      } while (w !== v);
      if (component.length > 1 || (graph.get(v) ?? []).includes(v)) found.push(component.sort());
    }
  };
  for (const v of graph.keys()) if (!index.has(v)) visit(v);
  return found;
}

/** Every file `from` reaches by imports, itself excluded. */
function reachable(graph: Map<string, string[]>, from: string[]): Set<string> {
  const seen = new Set<string>();
  const todo = from.flatMap((f) => graph.get(f) ?? []);
  while (todo.length) {
    const f = todo.pop()!;
    if (seen.has(f)) continue;
    seen.add(f);
    todo.push(...(graph.get(f) ?? []));
  }
  return seen;
}

const LOWER = /^core\/(ai|extract|db)\//;
/** The bottom layer, below the lower one: the files directly under core/ (config, errors, request context, crash points...). */
const isBottom = (f: string) => /^core\/[^/]+$/.test(f);
/** ElectroDB entities are registered in one Service (DESIGN.md 3): only core/db/service.ts imports them. */
const isEntity = (f: string) => f.endsWith(".entity.ts");



describe("core/ imports point down (DESIGN.md 4, convention 11)", () => {
  const graph = importGraph();

  it("reads a graph that holds the files and edges it should (the test would see a circle if there were one)", () => {
    expect(graph.get("core/agent/engine.ts")).toEqual(expect.arrayContaining(["core/ai/select.ts", "core/agent/tools/index.ts", "core/agent/local-engine.ts"]));
    // Dynamic imports count: select.ts loads its engines lazily.
    expect(graph.get("core/ai/select.ts")).toEqual(expect.arrayContaining(["core/ai/bedrock-stream.ts", "core/ai/openai-stream.ts", "core/ai/local-embedder.ts"]));
    expect(graph.get("core/agent/tools/reads.ts")).toEqual(expect.arrayContaining(["core/insight/search.ts", "core/insight/index.ts"]));
    expect(cycles(new Map([["a", ["b"]], ["b", ["c"]], ["c", ["a"]], ["d", ["a"]]]))).toEqual([["a", "b", "c"]]);
  });

  it("core/ai, core/extract and core/db import only each other and the bottom layer (and core/db/service.ts the entities)", () => {
    const upward = [...graph]
      .filter(([from]) => LOWER.test(from))
      .flatMap(([from, targets]) => targets.filter((t) => !LOWER.test(t) && !isBottom(t) && !(from === "core/db/service.ts" && isEntity(t))).map((t) => `${from} -> ${t}`));
    expect(upward).toEqual([]);
  });

  it("the files directly under core/ (config, errors...) import only each other", () => {
    const upward = [...graph].filter(([from]) => isBottom(from)).flatMap(([from, targets]) => targets.filter((t) => !isBottom(t)).map((t) => `${from} -> ${t}`));
    expect(upward).toEqual([]);
  });

  it("nothing core/ai, core/extract or core/db reaches leads into the agent layer or an area's operations", () => {
    const reached = reachable(graph, [...graph.keys()].filter((f) => LOWER.test(f)));
    // The agent layer (its entity aside, which core/db registers), and any area's operations (its index.ts).
    const higher = [...reached].filter((f) => (f.startsWith("core/agent/") && !isEntity(f)) || (/^core\/[a-z-]+\/index\.ts$/.test(f) && !LOWER.test(f)));
    expect(higher).toEqual([]);
  });

  it("has no circle through core/ai/select.ts: the model selection never reaches the agent's tools", () => {
    const selectReaches = reachable(graph, ["core/ai/select.ts"]);
    expect(selectReaches.has("core/ai/select.ts")).toBe(false);
    expect([...selectReaches].filter((f) => f.startsWith("core/agent/"))).toEqual([]);
  });

  it("has no circle between core/ files, not even one closed by an `import type`", () => {
    expect(cycles(graph).map((c) => c.join(" -> "))).toEqual([]);
  });
});
