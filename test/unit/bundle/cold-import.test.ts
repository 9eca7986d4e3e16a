/**
 * What groups load at import (their cold start: bench/cold.ts, issue #24 point 3), built as the stacks build them
 * (stacks/defaults.ts FUNCTION_DEFAULTS: minified, split, our esbuild plugins); the modules loaded at import are those
 * of the entry chunk and the chunks it imports statically (bench/bundle.ts `coldPath`).
 * - The copilot's stream group: what a chat does not need before its first answer loads when first used instead: the
 *   document engines (a quality repair's redraft), the block operations and their Markdown parser (block tools), and
 *   the three integrations with their OAuth client (integration tools: core/agent/tools/lazy.ts).
 * - The groups that can reach Jira: jira.js gets zod's CommonJS build (`jiraZodApart`), so all of zod (its locales)
 *   loads with jira.js only, and jira.js still validates with it once bundled.
 * A test fails when a static import or a plugin change brings one back.
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { writeFile } from "node:fs/promises";
import { pathToFileURL } from "node:url";
import { build, type Metafile } from "esbuild";
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

/** Build `entry` as the stacks do into a temp folder; `fn` gets the metafile and the folder, removed afterwards. */
async function stacksBuild<T>(entry: string, fn: (metafile: Metafile, out: string) => Promise<T>): Promise<T> {
  const out = await mkdtemp(join(tmpdir(), "r2d-cold-import-"));
  try {
    const result = await build({
      ...sstOptions(out, {
        entry,
        minify: FUNCTION_DEFAULTS.nodejs.minify,
        external: FUNCTION_DEFAULTS.nodejs.esbuild.external.filter((e) => e !== "sharp"),
        splitting: FUNCTION_DEFAULTS.nodejs.splitting,
        plugins: FUNCTION_DEFAULTS.nodejs.esbuild.plugins,
      }),
      absWorkingDir: process.cwd(),
      // An entry written to the temp dir resolves packages from the repository's node_modules.
      nodePaths: [join(process.cwd(), "node_modules")],
    });
    return await fn(result.metafile!, out);
  } finally {
    await rm(out, { recursive: true, force: true });
  }
}

/** Bytes of the inputs matching `pattern` in what `entry` loads at import. */
const bytesAtImport = (metafile: Metafile, entry: string, pattern: RegExp) =>
  coldPath(metafile, entry)
    .loaded.flatMap((file) => Object.entries(metafile.outputs[file]!.inputs))
    .filter(([path]) => pattern.test(path))
    .reduce((sum, [, i]) => sum + i.bytesInOutput, 0);

describe("the groups that can reach Jira", () => {
  it("load zod tree-shaken at import (jira.js's zod loads with jira.js), and jira.js validates once bundled", async () => {
    for (const group of ["tickets", "tickettool"]) {
      const entry = `functions/http/${group}.ts`;
      await stacksBuild(entry, async (metafile) => {
        const zod = bytesAtImport(metafile, entry, /^node_modules\/zod\//);
        expect(zod, `${group}: zod bytes at import`).toBeGreaterThan(0);
        // Tree-shaken, zod is about 110 KB here; whole (locales included), about 450 KB.
        expect(zod, `${group}: zod bytes at import`).toBeLessThan(200_000);
        // English, zod's default, is used by any zod; the other 40-odd locales are what jira.js's `z` kept alive.
        expect(bytesAtImport(metafile, entry, /^node_modules\/zod\/v4\/locales\/(?!en\.js$|index\.js$)/), `${group}: zod's other locales at import`).toBe(0);
      });
    }
    // A function importing our zod and, on first use, jira.js's schemas: both work in one bundle.
    const src = join(await mkdtemp(join(tmpdir(), "r2d-jira-zod-")), "entry.ts");
    await writeFile(
      src,
      `import * as z from "zod";
export const handler = async () => {
  const ours = z.object({ a: z.string() }).safeParse({ a: 1 });
  const cloud = await import("jira.js/cloud");
  const good = cloud.AddGroupSchema.safeParse({ name: "designers" });
  const bad = cloud.AddGroupSchema.safeParse({ name: 3 });
  return { ours: ours.success, good: good.success, bad: bad.success, message: bad.error?.issues[0]?.message };
};
`,
    );
    try {
      await stacksBuild(src, async (metafile) => {
        const entryOut = Object.keys(metafile.outputs).find((k) => metafile.outputs[k]!.entryPoint && k.endsWith(".mjs"))!;
        const { handler } = (await import(pathToFileURL(join(process.cwd(), entryOut)).href)) as { handler: () => Promise<Record<string, unknown>> };
        expect(await handler()).toEqual({ ours: false, good: true, bad: false, message: "Invalid input: expected string, received number" });
      });
    } finally {
      await rm(join(src, ".."), { recursive: true, force: true });
    }
  }, 120_000);
});

describe("the stream group's cold start", () => {
  it("loads the document engines, block operations and integrations only when first used", async () => {
    await stacksBuild(ENTRY, async (metafile) => {
      const cold = coldPath(metafile, ENTRY);
      const atImport = new Set(cold.loaded.flatMap((file) => Object.keys(metafile.outputs[file]!.inputs)));
      const everywhere = new Set(Object.values(metafile.outputs).flatMap((o) => Object.keys(o.inputs)));
      for (const pattern of LOADED_WHEN_USED) {
        // Each is in the bundle (a dynamic-import chunk), so the check cannot pass by a pattern matching nothing.
        expect([...everywhere].some((p) => pattern.test(p)), `${pattern} is in the bundle`).toBe(true);
        expect([...atImport].filter((p) => pattern.test(p)), `${pattern} loaded at import`).toEqual([]);
      }
    });
  }, 60_000);
});
