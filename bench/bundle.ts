/**
 * Bundle benchmark: size and cold import time of the workspaces Lambda (functions/http/workspaces.ts) bundled as
 * SST v2 bundles a nodejs22.x function.
 *
 *   npm run bench -- bundle
 *
 * The esbuild options mirror sst@2.49.8 runtime/handlers/node.js for an ESM function in deploy mode: platform node,
 * format esm, target esnext, mainFields module/main, bundle, keepNames, the createRequire banner, external only
 * `sharp` and `pg-native` (the AWS SDK v3 is bundled: SST v2 marks only the v2 `aws-sdk` external, and only for CJS
 * on nodejs16.x), minify off unless `nodejs.minify` is set, the source map uploaded apart (not in the bundle).
 * Variants: SST's default (not minified), minified, minified with `@aws-sdk/*` left to the runtime's SDK v3, and
 * the stacks' own settings (stacks/defaults.ts FUNCTION_DEFAULTS: minified, `nodejs.splitting` so dynamic imports
 * become chunks loaded only when reached, and the SDK code a Lambda never runs left external), the figure the
 * targets are judged on.
 * Cold import: a fresh Node 22 (node_modules/.bin/node) per run `import()`s the bundle and reports the elapsed ms.
 * Cold start to first response: the same, then one `GET /api/workspaces/{id}` through the handler against DynamoDB
 * Local, since work deferred from import (ElectroDB entities are built on first use) lands on the first request.
 * Then the top contributors (esbuild metafile), the import chain that pulls each in, and one profiled cold start.
 */
import { build, type BuildOptions, type Metafile } from "esbuild";
import { spawn } from "node:child_process";
import { mkdir, mkdtemp, readdir, readFile, rm, stat, symlink, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { gzipSync } from "node:zlib";
import { Recorder, fmtMs, printTable } from "./lib/stats";
import { busyWarning, machineLine } from "./lib/machine";
import { bundleProfileByContributor, printContributors } from "./lib/profile";
import { startBenchRuntime } from "./lib/runtime";
import { FUNCTION_DEFAULTS } from "../stacks/defaults";
import { lambdaContext, toApiGatewayEvent } from "../local/apigw";
import { sized, sizeNote } from "./lib/size";

const ROOT = resolve(fileURLToPath(new URL("..", import.meta.url)));
const ENTRY_REL = "functions/http/workspaces.ts";
const ENTRY = join(ROOT, ENTRY_REL);
const NODE = join(ROOT, "node_modules/.bin/node");
const IMPORT_RUNS = sized(10, 1);
/** One unrecorded run before the recorded ones (OS file cache, DynamoDB Local warm-up); none at the smoke size. */
const UNRECORDED_RUNS = sized(1, 0);
const IMPORT_TIMEOUT_MS = 20_000;
const TARGET_BYTES = 1_000_000;
const TARGET_IMPORT_MS = 150;
const TOP_N = 12;

/** SST v2.49.8's ESM banner: require, __dirname for bundled CJS code. */
export const SST_ESM_BANNER = [
  `import { createRequire as topLevelCreateRequire } from 'module';`,
  `const require = topLevelCreateRequire(import.meta.url);`,
  `import { fileURLToPath as topLevelFileUrlToPath, URL as topLevelURL } from "url"`,
  `const __dirname = topLevelFileUrlToPath(new topLevelURL(".", import.meta.url))`,
  "",
].join("\n");

/**
 * esbuild options of sst@2.49.8 for `runtime: "nodejs22.x"`, ESM, deploy mode (source map aside). With
 * `nodejs.splitting` SST writes to the function's folder with `.mjs` chunks instead of one file.
 * @param opts.entry the handler module, absolute (default: the workspaces group); the output is named after it
 */
export function sstOptions(outdir: string, opts: { minify: boolean; external: string[]; splitting?: boolean; entry?: string; plugins?: readonly unknown[] }): BuildOptions {
  const entry = opts.entry ?? ENTRY;
  const name = entry.split("/").pop()!.replace(/\.ts$/, "");
  return {
    entryPoints: [entry],
    platform: "node",
    external: ["sharp", "pg-native", ...opts.external],
    keepNames: true,
    bundle: true,
    logLevel: "silent",
    metafile: true,
    format: "esm",
    target: "esnext",
    mainFields: ["module", "main"],
    banner: { js: SST_ESM_BANNER },
    splitting: opts.splitting,
    ...(opts.splitting ? { outdir, outExtension: { ".js": ".mjs" } } : { outfile: join(outdir, `${name}.mjs`) }),
    sourcemap: false,
    minify: opts.minify,
    // SST spreads `nodejs.esbuild` (but `external`) over its options: the stacks' plugins.
    // Typed by SST's own esbuild copy; the plugin API (onResolve, onLoad) is the same in ours.
    ...(opts.plugins ? { plugins: [...opts.plugins] as BuildOptions["plugins"] } : {}),
    absWorkingDir: ROOT,
  };
}

interface Variant {
  name: string;
  minify: boolean;
  external: string[];
  /** The runtime provides these packages: resolve them from the project's node_modules when importing. */
  needsNodeModules: boolean;
  /** SST's `nodejs.splitting`: dynamic imports become separate chunks, loaded only when reached. */
  splitting?: boolean;
  /** esbuild plugins (the stacks' `nodejs.esbuild.plugins`). */
  plugins?: readonly unknown[];
  /** The settings the stacks deploy with (stacks/defaults.ts FUNCTION_DEFAULTS.nodejs): the judged row. */
  deployed?: boolean;
}

const VARIANTS: Variant[] = [
  { name: "SST v2 default (no minify), SDK bundled", minify: false, external: [], needsNodeModules: false },
  { name: "minified, SDK bundled", minify: true, external: [], needsNodeModules: false },
  { name: "minified, @aws-sdk/* external (runtime SDK)", minify: true, external: ["@aws-sdk/*"], needsNodeModules: true },
  {
    name: "our stacks: minified, split, SDK bundled",
    minify: FUNCTION_DEFAULTS.nodejs.minify,
    // NEVER_ON_LAMBDA: SDK credential providers a Lambda never reaches (stacks/defaults.ts).
    external: FUNCTION_DEFAULTS.nodejs.esbuild.external.filter((e) => e !== "sharp"),
    needsNodeModules: false,
    splitting: FUNCTION_DEFAULTS.nodejs.splitting,
    plugins: FUNCTION_DEFAULTS.nodejs.esbuild.plugins,
    deployed: true,
  },
];

/**
 * The entry output of a build and the chunks it loads at import: itself plus the chunks it (transitively) imports
 * with static import statements. Dynamic-import chunks load only when reached.
 */
export function coldPath(metafile: Metafile, entryRel = ENTRY_REL): { entry: string; coldBytes: number; totalBytes: number; files: string[]; loaded: string[] } {
  const outputs = metafile.outputs;
  const entry = Object.keys(outputs).find((k) => outputs[k]!.entryPoint === entryRel && k.endsWith(".mjs"));
  if (!entry) throw new Error(`no output for ${entryRel} in the metafile`);
  const seen = new Set<string>([entry]);
  const queue = [entry];
  while (queue.length > 0) {
    for (const imp of outputs[queue.pop()!]!.imports) {
      if (imp.kind === "import-statement" && outputs[imp.path] && !seen.has(imp.path)) {
        seen.add(imp.path);
        queue.push(imp.path);
      }
    }
  }
  const files = Object.keys(outputs).filter((k) => k.endsWith(".mjs"));
  const sum = (keys: Iterable<string>) => [...keys].reduce((a, k) => a + outputs[k]!.bytes, 0);
  return { entry, coldBytes: sum(seen), totalBytes: sum(files), files, loaded: [...seen] };
}

/** The child: import the bundle, check the handler export, report ms. performance.now() counts from process start. */
const PROBE = `
const cpu0 = process.cpuUsage();
const t0 = performance.now();
const mod = await import(process.argv[2]);
const importMs = performance.now() - t0;
const cpu = process.cpuUsage(cpu0);
if (process.argv[3] !== "any" && typeof mod.handler !== "function") { console.error("bundle has no handler export"); process.exit(3); }
process.stdout.write(JSON.stringify({ importMs, importCpuMs: (cpu.user + cpu.system) / 1000, sinceStartMs: performance.now() }));
`;

/**
 * The child for cold start to first response: import the bundle, invoke the handler with the event in argv[3] (a
 * JSON file) twice, report import, first (cold) and second (warm) invocation ms. Fails unless both answer 200.
 */
const FIRST_REQUEST_PROBE = `
import { readFileSync } from "node:fs";
const { event, context } = JSON.parse(readFileSync(process.argv[3], "utf8"));
context.getRemainingTimeInMillis = () => 30000;
const t0 = performance.now();
const { handler } = await import(process.argv[2]);
const t1 = performance.now();
const first = await handler({ ...event, requestContext: { ...event.requestContext, requestId: "cold" } }, { ...context, awsRequestId: "cold" });
const t2 = performance.now();
const second = await handler({ ...event, requestContext: { ...event.requestContext, requestId: "warm" } }, { ...context, awsRequestId: "warm" });
const t3 = performance.now();
if (first.statusCode !== 200 || second.statusCode !== 200) { console.error("status", first.statusCode, second.statusCode, first.body); process.exit(4); }
process.stdout.write(JSON.stringify({ importMs: t1 - t0, firstMs: t2 - t1, warmMs: t3 - t2, startToFirstMs: t2 }));
`;

interface FirstRequestRun {
  importMs: number;
  firstMs: number;
  warmMs: number;
  /** Process start to the first response. */
  startToFirstMs: number;
}

/** Run a child node with `args` and `env`; resolve with its stdout parsed as JSON. */
export function runChild<T>(args: string[], env: Record<string, string>): Promise<T> {
  return new Promise((resolvePromise, reject) => {
    const child = spawn(NODE, args, { cwd: tmpdir(), env, stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    let err = "";
    child.stdout.on("data", (d: Buffer) => (out += d.toString()));
    child.stderr.on("data", (d: Buffer) => (err += d.toString()));
    const timer = setTimeout(() => child.kill("SIGKILL"), IMPORT_TIMEOUT_MS);
    child.on("error", reject);
    child.on("exit", (code) => {
      clearTimeout(timer);
      if (code !== 0) return reject(new Error(`${args.join(" ")} failed (exit ${code}): ${err.trim().slice(0, 800)}`));
      try {
        resolvePromise(JSON.parse(out) as T);
      } catch {
        reject(new Error(`child printed no result: ${out.slice(0, 200)} ${err.slice(0, 200)}`));
      }
    });
  });
}

/**
 * Cold start to first response of the deployed-settings bundle: start the embedded runtime (DynamoDB Local), create
 * a user and a workspace through the gateway, then in IMPORT_RUNS fresh processes import the bundle and answer
 * `GET /api/workspaces/{id}` (token verified against inline JWKS, as on Lambda after the JWKS is cached).
 */
async function timeFirstRequests(dir: string, bundleFile: string) {
  const rt = await startBenchRuntime({ tableName: "r2d-bench-bundle", bucketName: "r2d-bench-bundle" });
  try {
    const token = await rt.idp.sign({ email: "cold-start@example.com", name: "Cold Start" });
    const res = await fetch(`${rt.base}/api/workspaces`, {
      method: "POST",
      headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
      body: JSON.stringify({ name: "Cold start" }),
    });
    if (res.status !== 201) throw new Error(`creating the workspace failed: ${res.status} ${await res.text()}`);
    const { id } = (await res.json()) as { id: string };
    const path = `/api/workspaces/${id}`;
    const event = toApiGatewayEvent({ method: "GET", path, headers: { authorization: `Bearer ${token}` } }, { workspace_id: id }, "GET /api/workspaces/{workspace_id}");
    const eventFile = join(dir, "event.json");
    await writeFile(eventFile, JSON.stringify({ event, context: lambdaContext("workspaces") }));
    const probe = join(dir, "first-request.mjs");
    await writeFile(probe, FIRST_REQUEST_PROBE);
    const keys = ["STAGE", "AWS_REGION", "TABLE_NAME", "BUCKET_NAME", "DYNAMODB_ENDPOINT", "S3_ENDPOINT", "JWT_ISSUER", "JWT_AUDIENCE", "JWT_JWKS", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "ACCESS_GATING", "LOG_LEVEL", "POWERTOOLS_LOG_LEVEL"];
    const env: Record<string, string> = { PATH: process.env.PATH ?? "/usr/bin:/bin", LANG: "en_US.UTF-8", TZ: ":UTC" };
    for (const k of keys) if (process.env[k] !== undefined) env[k] = process.env[k]!;
    const args = [probe, pathToFileURL(bundleFile).href, eventFile];
    for (let r = 0; r < UNRECORDED_RUNS; r++) await runChild<FirstRequestRun>(args, env); // OS file cache, DynamoDB Local warm-up
    const rec = { imports: new Recorder(), first: new Recorder(), total: new Recorder(), warm: new Recorder(), start: new Recorder() };
    for (let r = 0; r < IMPORT_RUNS; r++) {
      const run = await runChild<FirstRequestRun>(args, env);
      rec.imports.record(run.importMs);
      rec.first.record(run.firstMs);
      rec.total.record(run.importMs + run.firstMs);
      rec.warm.record(run.warmMs);
      rec.start.record(run.startToFirstMs);
    }
    return { imports: rec.imports.summary(), first: rec.first.summary(), total: rec.total.summary(), warm: rec.warm.summary(), start: rec.start.summary() };
  } finally {
    await rt.stop();
  }
}

interface ImportRun {
  importMs: number;
  /** CPU time (user + system, all threads) of the import: less sensitive than wall time to other load. */
  importCpuMs: number;
  sinceStartMs: number;
  wallMs: number;
}

/** Spawn a fresh Node with a Lambda-like minimal environment and import the bundle once. */
async function importOnce(probe: string, bundle: string, opts: { anyModule?: boolean; nodeFlags?: string[] } = {}): Promise<ImportRun> {
  const t0 = performance.now();
  const parsed = await runChild<{ importMs: number; importCpuMs: number; sinceStartMs: number }>(
    [...(opts.nodeFlags ?? []), probe, pathToFileURL(bundle).href, opts.anyModule ? "any" : "handler"],
    { PATH: process.env.PATH ?? "/usr/bin:/bin", AWS_REGION: "us-east-1", LANG: "en_US.UTF-8", TZ: ":UTC" },
  );
  return { ...parsed, wallMs: performance.now() - t0 };
}

/**
 * Bytes by contributor (an npm package, or the first-party folder named `appPrefix` + folder), largest first.
 * @param keys the output files counted (default every one; `coldPath(...).loaded` for what the import loads)
 */
export function contributors(metafile: Metafile, keys: readonly string[] = Object.keys(metafile.outputs), appPrefix = "(app) "): { name: string; bytes: number }[] {
  const totals = new Map<string, number>();
  for (const key of keys) {
    for (const [path, { bytesInOutput }] of Object.entries(metafile.outputs[key]!.inputs)) {
      const packages = [...path.matchAll(/node_modules\/((?:@[^/]+\/)?[^/]+)/g)];
      const name = packages.length > 0 ? packages[packages.length - 1]![1]! : `${appPrefix}${path.split("/").slice(0, 2).join("/")}`;
      totals.set(name, (totals.get(name) ?? 0) + bytesInOutput);
    }
  }
  return [...totals.entries()].map(([name, bytes]) => ({ name, bytes })).sort((a, b) => b.bytes - a.bytes);
}

/**
 * The shortest import chain from the entry to the first input whose path matches `target`, with each edge's kind
 * (import-statement, dynamic-import, require-call): why a package is in the bundle.
 */
function importChain(metafile: Metafile, target: (path: string) => boolean): string[] | undefined {
  const inputs = metafile.inputs;
  const prev = new Map<string, { from: string; kind: string }>();
  const queue = [ENTRY_REL];
  const seen = new Set(queue);
  while (queue.length > 0) {
    const current = queue.shift()!;
    for (const imp of inputs[current]?.imports ?? []) {
      if (!inputs[imp.path] || seen.has(imp.path)) continue;
      seen.add(imp.path);
      prev.set(imp.path, { from: current, kind: imp.kind });
      if (target(imp.path)) {
        const chain: string[] = [];
        for (let at: string | undefined = imp.path; at; at = prev.get(at)?.from) {
          const edge = prev.get(at);
          chain.unshift(edge ? `${at} (${edge.kind})` : at);
        }
        return chain;
      }
      queue.push(imp.path);
    }
  }
  return undefined;
}

/** Packages DESIGN.md section 2 keeps out of every Lambda bundle (local-only engines, loaded lazily). */
const LOCAL_ONLY = /node_modules\/(wink-[^/]+|@energetic-ai\/[^/]+|tesseract\.js[^/]*|@tesseract\.js-data\/[^/]+|unpdf|mammoth|exceljs)\//;

const fmtMB = (bytes: number) => `${(bytes / 1_000_000).toFixed(3)} MB`;

/** Import `file` IMPORT_RUNS times, each in a fresh process, after UNRECORDED_RUNS unrecorded runs (OS file cache). */
async function timeImports(probe: string, file: string, anyModule = false) {
  for (let r = 0; r < UNRECORDED_RUNS; r++) await importOnce(probe, file, { anyModule });
  const rec = { imports: new Recorder(), cpu: new Recorder(), sinceStart: new Recorder(), wall: new Recorder() };
  for (let r = 0; r < IMPORT_RUNS; r++) {
    const run = await importOnce(probe, file, { anyModule });
    rec.imports.record(run.importMs);
    rec.cpu.record(run.importCpuMs);
    rec.sinceStart.record(run.sinceStartMs);
    rec.wall.record(run.wallMs);
  }
  return { imports: rec.imports.summary(), cpu: rec.cpu.summary(), sinceStart: rec.sinceStart.summary(), wall: rec.wall.summary() };
}

interface Result {
  variant: Variant;
  outfile: string;
  /** All output files. */
  bytes: number;
  /** What an import loads: the entry and its static-import chunks. */
  coldBytes: number;
  gzip: number;
  metafile: Metafile;
  timing: Awaited<ReturnType<typeof timeImports>>;
}

export default async function bundle(): Promise<void> {
  console.log("== bundle: functions/http/workspaces.ts as SST v2 bundles it for nodejs22.x ==");
  console.log(machineLine());
  if (sizeNote()) console.log(sizeNote());
  const dir = await mkdtemp(join(tmpdir(), "r2d-bundle-"));
  try {
    const probe = join(dir, "probe.mjs");
    await writeFile(probe, PROBE);
    const empty = join(dir, "empty.mjs");
    await writeFile(empty, "export {};\n");
    const results: Result[] = [];
    for (const [i, variant] of VARIANTS.entries()) {
      const vdir = join(dir, `v${i}`);
      await mkdir(vdir);
      if (variant.needsNodeModules) await symlink(join(ROOT, "node_modules"), join(vdir, "node_modules"), "dir");
      const t0 = performance.now();
      const result = await build(sstOptions(vdir, variant));
      const buildMs = performance.now() - t0;
      const cp = coldPath(result.metafile!);
      const outfile = resolve(ROOT, cp.entry);
      if (!variant.splitting && cp.totalBytes !== (await stat(outfile)).size) throw new Error("metafile size disagrees with the file");
      let gzip = 0;
      for (const f of cp.files) gzip += gzipSync(await readFile(resolve(ROOT, f)), { level: 9 }).length;
      const externals = [
        ...new Set(
          Object.values(result.metafile!.inputs)
            .flatMap((input) => input.imports)
            .filter((imp) => imp.external && !imp.path.startsWith("node:") && !imp.path.startsWith("<") && !/^[a-z_]+$/.test(imp.path))
            .map((imp) => imp.path),
        ),
      ].sort();
      const files = cp.files.length > 1 ? ` in ${cp.files.length} files, ${cp.coldBytes} loaded at import` : "";
      console.log(`built "${variant.name}" in ${fmtMs(buildMs)} ms: ${cp.totalBytes} bytes${files}${externals.length ? `; left external: ${externals.join(", ")}` : ""}`);
      results.push({ variant, outfile, bytes: cp.totalBytes, coldBytes: cp.coldBytes, gzip, metafile: result.metafile!, timing: await timeImports(probe, outfile) });
    }
    const baseline = await timeImports(probe, empty, true);

    console.log(`\nBundle size and cold import (${IMPORT_RUNS} fresh processes of the pinned Node 22 per variant; ms):`);
    const timingCells = (t: Result["timing"]) => [fmtMs(t.imports.p50), fmtMs(t.imports.p90), fmtMs(t.imports.min), fmtMs(t.cpu.p50)];
    printTable(
      ["variant", "bytes", "MB", "loaded at import", "gzip MB", "< 1 MB", "import p50", "import p90", "import min", "import CPU p50", `< ${TARGET_IMPORT_MS} ms`, "start->ready p50"],
      [
        ...results.map((r) => [
          r.variant.name,
          r.bytes,
          fmtMB(r.bytes),
          fmtMB(r.coldBytes),
          fmtMB(r.gzip),
          r.bytes < TARGET_BYTES ? "met" : "NOT met",
          ...timingCells(r.timing),
          r.timing.imports.p50 < TARGET_IMPORT_MS ? "met" : "NOT met",
          fmtMs(r.timing.sinceStart.p50),
        ]),
        ["baseline: empty module", "", "", "", "", "", ...timingCells(baseline), "", fmtMs(baseline.sinceStart.p50)],
      ],
    );
    console.log(
      "import = await import(bundle) in the child, wall time (module evaluation incl. handler init); min = best of the runs (closest to\n" +
        "an idle machine); import CPU = user+system CPU of that import over all threads (steadier than wall time on a busy machine); start->ready = process start to handler ready. The external\n" +
        "variant loads the project's SDK from node_modules (on Lambda: the runtime's SDK v3 copy, whose version can differ).\n" +
        "bytes = all output files; loaded at import = the entry and the chunks it imports statically (with splitting, the\n" +
        "S3 client of workspace deletion is a chunk loaded on the first delete).",
    );

    const deployed = results.find((r) => r.variant.deployed);
    if (deployed) {
      const t = await timeFirstRequests(dir, deployed.outfile);
      console.log(`\nCold start to first response, "${deployed.variant.name}" (${IMPORT_RUNS} fresh processes; GET /api/workspaces/{id} against DynamoDB Local; ms):`);
      printTable(
        ["measure", "p50", "p90", "min"],
        [
          ["import", fmtMs(t.imports.p50), fmtMs(t.imports.p90), fmtMs(t.imports.min)],
          ["first request (cold)", fmtMs(t.first.p50), fmtMs(t.first.p90), fmtMs(t.first.min)],
          ["import + first request", fmtMs(t.total.p50), fmtMs(t.total.p90), fmtMs(t.total.min)],
          ["second request (warm)", fmtMs(t.warm.p50), fmtMs(t.warm.p90), fmtMs(t.warm.min)],
          ["process start to first response", fmtMs(t.start.p50), fmtMs(t.start.p90), fmtMs(t.start.min)],
        ],
      );
      console.log(
        "first request - warm request = what a cold start adds to the first call after import: the entities it touches are\n" +
          "built (ElectroDB validates each model), the SDK client is created, the first connection to DynamoDB Local is opened.",
      );
    }

    const minified = results.find((r) => r.variant.minify && r.variant.external.length === 0 && !r.variant.splitting)!;
    const list = contributors(minified.metafile);
    const total = list.reduce((a, c) => a + c.bytes, 0);
    console.log(`\nTop contributors to "${minified.variant.name}" (bytes in output):`);
    printTable(
      ["contributor", "bytes", "share"],
      [
        ...list.slice(0, TOP_N).map((c) => [c.name, c.bytes, `${((100 * c.bytes) / total).toFixed(1)}%`]),
        [`(${Math.max(0, list.length - TOP_N)} more)`, list.slice(TOP_N).reduce((a, c) => a + c.bytes, 0), ""],
      ],
    );
    const bytesMatching = (re: RegExp) =>
      Object.values(minified.metafile.outputs)
        .flatMap((o) => Object.entries(o.inputs))
        .filter(([path]) => re.test(path))
        .reduce((a, [, v]) => a + v.bytesInOutput, 0);
    const sdk = bytesMatching(/node_modules\/@(aws-sdk|smithy|aws-crypto)\//);
    console.log(
      `of which: zod locales ${bytesMatching(/node_modules\/zod\/.*\/locales\//)} B; AWS SDK v3 in all (@aws-sdk, @smithy, @aws-crypto) ${sdk} B ` +
        `(S3 client + presigned post ${bytesMatching(/node_modules\/@aws-sdk\/(client-s3|s3-presigned-post)\//)} B, credential providers ` +
        `${bytesMatching(/node_modules\/@aws-sdk\/(nested-clients|credential-provider[^/]*)\//)} B); multipart parser (busboy) ${bytesMatching(/busboy/)} B.`,
    );

    // Why the heaviest packages are in the bundle: the import chain from the entry to each.
    console.log(`\nWhy the heaviest are in "${minified.variant.name}" (shortest import chain from the entry):`);
    for (const c of list.filter((x) => !x.name.startsWith("(app)")).slice(0, 3)) {
      const chain = importChain(minified.metafile, (path) => path.includes(`node_modules/${c.name}/`));
      console.log(`  ${c.name} (${c.bytes} B):\n    ${chain ? chain.join("\n    -> ") : "(no chain found)"}`);
    }
    const localOnly = Object.keys(minified.metafile.inputs).filter((path) => LOCAL_ONLY.test(path));
    if (localOnly.length > 0) {
      const chain = importChain(minified.metafile, (path) => LOCAL_ONLY.test(path));
      console.log(
        `warning: local-only engine code (DESIGN.md section 2: "no Lambda bundle carries the local engines") is in this Lambda bundle: ` +
          `${bytesMatching(LOCAL_ONLY)} B from ${[...new Set(localOnly.map((path) => LOCAL_ONLY.exec(path)![1]))].join(", ")}; first reached via\n    ${chain?.join("\n    -> ")}`,
      );
    }

    // Where a cold import spends its CPU: profile one import of SST's default (unminified) bundle, whose module
    // boundaries esbuild marks with "// <path>" comments, and attribute samples to the module they fall in.
    const sstDefault = results[0]!;
    const profDir = join(dir, "profile");
    await mkdir(profDir);
    await importOnce(probe, sstDefault.outfile, { nodeFlags: ["--cpu-prof", "--cpu-prof-interval", "100", "--cpu-prof-dir", profDir] });
    const profFile = (await readdir(profDir)).find((f) => f.endsWith(".cpuprofile"));
    if (profFile) {
      const profile = JSON.parse(await readFile(join(profDir, profFile), "utf8"));
      const byContributor = bundleProfileByContributor(profile, await readFile(sstDefault.outfile, "utf8"), pathToFileURL(sstDefault.outfile).href);
      printContributors(`\nOne cold start of "${sstDefault.variant.name}" under the CPU profiler (self time, ms; process start to exit):`, byContributor, 16);
    }

    const warning = busyWarning();
    console.log(`\nat the end: ${machineLine()}`);
    if (warning) console.log(warning);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
