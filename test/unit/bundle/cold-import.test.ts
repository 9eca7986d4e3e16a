/**
 * What the copilot's stream group loads at import (its cold start: bench/cold.ts, issue #24 point 3). Built as the
 * stacks build it (stacks/defaults.ts FUNCTION_DEFAULTS: minified, split, our esbuild plugin); the modules loaded at
 * import are those of the entry chunk and the chunks it imports statically (bench/bundle.ts `coldPath`). The code a
 * chat does not need before its first answer loads when first used instead: the document engines (a quality repair's
 * redraft), the block operations and their Markdown parser (block tools), and the three integrations with their OAuth
 * client (integration tools: core/agent/tools/lazy.ts). This test fails when a static import brings one back.
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { build } from "esbuild";
import { describe, expect, it } from "vitest";
import { coldPath, sstOptions } from "../../../bench/bundle";
import { FUNCTION_DEFAULTS } from "../../../stacks/defaults";

const ENTRY = "functions/http/stream.ts";
/** Inputs (paths as esbuild's metafile names them) the stream group must not load at import. */
const LOADED_WHEN_USED = [
  /^core\/document\/engine\/(index|local|bedrock|actions)\.ts$/,
  /^core\/document\/block-ops\.ts$/,
  /^node_modules\/marked\//,
  /^core\/integration\/(codehost|planner|filestore)\/index\.ts$/,
  /^core\/integration\/oauth\.ts$/,
  /^node_modules\/oauth4webapi\//,
  /^node_modules\/@linear\/sdk\//,
];

describe("the stream group's cold start", () => {
  it("loads the document engines, block operations and integrations only when first used", async () => {
    const out = await mkdtemp(join(tmpdir(), "r2d-stream-import-"));
    try {
      const result = await build({
        ...sstOptions(out, {
          entry: ENTRY,
          minify: FUNCTION_DEFAULTS.nodejs.minify,
          external: FUNCTION_DEFAULTS.nodejs.esbuild.external.filter((e) => e !== "sharp"),
          splitting: FUNCTION_DEFAULTS.nodejs.splitting,
          plugins: FUNCTION_DEFAULTS.nodejs.esbuild.plugins,
        }),
        absWorkingDir: process.cwd(),
      });
      const metafile = result.metafile!;
      const cold = coldPath(metafile, ENTRY);
      const atImport = new Set(cold.loaded.flatMap((file) => Object.keys(metafile.outputs[file]!.inputs)));
      const everywhere = new Set(Object.values(metafile.outputs).flatMap((o) => Object.keys(o.inputs)));
      for (const pattern of LOADED_WHEN_USED) {
        // Each is in the bundle (a dynamic-import chunk), so the check cannot pass by a pattern matching nothing.
        expect([...everywhere].some((p) => pattern.test(p)), `${pattern} is in the bundle`).toBe(true);
        expect([...atImport].filter((p) => pattern.test(p)), `${pattern} loaded at import`).toEqual([]);
      }
    } finally {
      await rm(out, { recursive: true, force: true });
    }
  }, 60_000);
});
