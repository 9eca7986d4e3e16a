import { readFileSync } from "node:fs";
import { join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import ts from "typescript";
import { beforeAll, describe, expect, it } from "vitest";
import { groups } from "../../functions/http/routes";
import { STEP_TASKS, type StepTaskName } from "../../functions/steps/extraction.asl";
import { GROUP_BUCKET_ACCESS, groupHandler, INTEGRATIONS_CONSUMER_BUCKET_ACCESS, INTEGRATIONS_CONSUMER_HANDLER, MEMORY_CONSUMER_BUCKET_ACCESS, MEMORY_CONSUMER_HANDLER, MEMORY_SWEEPER_HANDLER, PAYMENTS_CONSUMER_HANDLER } from "../../stacks/Api";
import { ENTROPY_SCANNER_HANDLER, TASK_CYCLES_HANDLER, TASK_SWEEPER_HANDLER, TASK_WORKER_BUCKET_ACCESS, taskStepHandler } from "../../stacks/Tasks";
import { CREDIT_SWEEPER_HANDLER } from "../../stacks/Billing";
import type { BucketAccess } from "../../stacks/defaults";
import { EXECUTOR_BUCKET_ACCESS, PENDING_ACTION_CONSUMER_HANDLER, PENDING_ACTION_SWEEPER_HANDLER } from "../../stacks/PendingActions";
import {
  SOURCE_SWEEPER_BUCKET_ACCESS,
  SOURCE_SWEEPER_HANDLER,
  STEP_BUCKET_ACCESS,
  stepHandler,
  UPLOAD_BUCKET_ACCESS,
  UPLOAD_HANDLER,
} from "../../stacks/Pipelines";

/*
 * The stacks grant each function only the bucket calls it makes (stacks/defaults.ts grantBucket). Nothing running
 * locally checks IAM, so a storage call added to a function that lacks the grant would first fail in AWS with
 * AccessDenied. This test derives, from the code itself, which bucket calls each Lambda handler can reach, and
 * requires the stacks' tables to say exactly that: no call without its grant, no grant without a call.
 *
 * How: TypeScript's find-all-references, from each storage call of core/storage (and each AWS call that makes a
 * service read a stored file with the caller's rights), walked up through every top-level declaration that refers
 * to it, until it reaches a handler module. A reference counts wherever it is (an over-approximation: a helper that
 * is never called still counts), so a handler may be required to have a grant it turns out not to use, never the
 * reverse. Tests, benchmarks and the embedded runtime (local/) are left out: they are not in any Lambda.
 */

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
const ANALYSIS_TIMEOUT = 600_000;

/** Every bucket call of the code, by module and export, and the access it needs. */
const BUCKET_CALLS: Record<string, Record<string, readonly BucketAccess[]>> = {
  "core/storage/index.ts": {
    getObject: ["read"],
    getObjectHead: ["read"],
    objectSize: ["read"],
    putObject: ["write"],
    deleteObject: ["delete"],
    deletePrefix: ["list", "delete"],
    // CopyObject needs GetObject on the source and PutObject on the copy; the check reads the copy back.
    copyObjectIfMatch: ["read", "write", "delete"],
  },
  // A presigned POST is authorized with the rights of whoever signed it.
  "core/storage/presign.ts": { presignedPost: ["write"] },
  // Textract and Transcribe read the stored file with the caller's credentials.
  "core/extract/textract.ts": { startTextDetection: ["read"], detectDocumentText: ["read"], textractOcr: ["read"] },
  "core/extract/transcribe.ts": { startTranscription: ["read"] },
};
/** Exports of the storage modules that make no bucket call. */
const NOT_BUCKET_CALLS = new Set(["workspacePrefix", "s3Client", "s3", "PRESIGN_VALID_SECONDS"]);

/** Handler module (repository-relative .ts path) -> the bucket access its function is granted. */
function grantedAccess(): Map<string, readonly BucketAccess[]> {
  const file = (handler: string) => `${handler.slice(0, handler.lastIndexOf("."))}.ts`;
  const granted = new Map<string, readonly BucketAccess[]>();
  for (const group of groups()) granted.set(file(groupHandler(group)), GROUP_BUCKET_ACCESS[group] ?? []);
  for (const task of Object.keys(STEP_TASKS) as StepTaskName[]) granted.set(file(stepHandler(task)), STEP_BUCKET_ACCESS[task]);
  granted.set(file(UPLOAD_HANDLER), UPLOAD_BUCKET_ACCESS);
  granted.set(file(SOURCE_SWEEPER_HANDLER), SOURCE_SWEEPER_BUCKET_ACCESS);
  granted.set(file(PENDING_ACTION_CONSUMER_HANDLER), EXECUTOR_BUCKET_ACCESS);
  granted.set(file(PENDING_ACTION_SWEEPER_HANDLER), EXECUTOR_BUCKET_ACCESS);
  granted.set(file(PAYMENTS_CONSUMER_HANDLER), []);
  granted.set(file(INTEGRATIONS_CONSUMER_HANDLER), INTEGRATIONS_CONSUMER_BUCKET_ACCESS);
  granted.set(file(CREDIT_SWEEPER_HANDLER), []);
  granted.set(file(MEMORY_CONSUMER_HANDLER), MEMORY_CONSUMER_BUCKET_ACCESS);
  granted.set(file(MEMORY_SWEEPER_HANDLER), []);
  // The Tasks stack: the worker's grant; Fail, the sweeper, the cycles and the entropy scanner get no bucket right.
  granted.set(file(taskStepHandler("Run")), TASK_WORKER_BUCKET_ACCESS);
  granted.set(file(taskStepHandler("Fail")), []);
  granted.set(file(TASK_SWEEPER_HANDLER), []);
  granted.set(file(TASK_CYCLES_HANDLER), []);
  granted.set(file(ENTROPY_SCANNER_HANDLER), []);
  return granted;
}

/** Lambda code (what tsconfig compiles, minus tests, benchmarks and the embedded runtime) and the compiler options. */
function lambdaProject(): { files: string[]; options: ts.CompilerOptions } {
  const config = ts.readConfigFile(join(ROOT, "tsconfig.json"), ts.sys.readFile).config;
  const parsed = ts.parseJsonConfigFileContent(config, ts.sys, ROOT);
  const files = parsed.fileNames.filter((f) => !/^(test|bench|local)\//.test(relative(ROOT, f)) && !f.endsWith(".d.ts"));
  return { files, options: { ...parsed.options, noEmit: true } };
}

/** Names a top-level statement declares (functions, classes, variables including destructured ones). */
function declaredNames(statement: ts.Statement): ts.Identifier[] {
  if ((ts.isFunctionDeclaration(statement) || ts.isClassDeclaration(statement) || ts.isEnumDeclaration(statement)) && statement.name) {
    return [statement.name];
  }
  if (ts.isVariableStatement(statement)) {
    const names: ts.Identifier[] = [];
    const collect = (name: ts.BindingName) => {
      if (ts.isIdentifier(name)) names.push(name);
      else for (const element of name.elements) if (!ts.isOmittedExpression(element)) collect(element.name);
    };
    for (const declaration of statement.declarationList.declarations) collect(declaration.name);
    return names;
  }
  return [];
}

/**
 * For each bucket call, the handler modules that reach it. One language service over the Lambda code; references
 * of a declaration are looked up once and shared by every walk.
 */
function reachingHandlers(handlers: ReadonlySet<string>): Map<string, Set<string>> {
  const { files, options } = lambdaProject();
  const service = ts.createLanguageService(
    {
      getScriptFileNames: () => files,
      getScriptVersion: () => "0",
      getScriptSnapshot: (f) => (ts.sys.fileExists(f) ? ts.ScriptSnapshot.fromString(ts.sys.readFile(f)!) : undefined),
      getCurrentDirectory: () => ROOT,
      getCompilationSettings: () => options,
      getDefaultLibFileName: (options) => ts.getDefaultLibFilePath(options),
      fileExists: ts.sys.fileExists,
      readFile: ts.sys.readFile,
      readDirectory: ts.sys.readDirectory,
      directoryExists: ts.sys.directoryExists,
      getDirectories: ts.sys.getDirectories,
    },
    ts.createDocumentRegistry(),
  );
  const program = service.getProgram()!;
  const inScope = new Set(files);

  type Node = { file: string; pos: number };
  const key = (n: Node) => `${n.file}:${n.pos}`;
  const referrers = new Map<string, { handler?: string; next: Node[] }[]>();
  /** The declarations (and handler modules) that refer to the declaration at `node`. */
  const referrersOf = (node: Node) => {
    const cached = referrers.get(key(node));
    if (cached) return cached;
    const found: { handler?: string; next: Node[] }[] = [];
    for (const ref of service.getReferencesAtPosition(node.file, node.pos) ?? []) {
      if (!inScope.has(ref.fileName) || (ref.fileName === node.file && ref.textSpan.start === node.pos)) continue;
      const source = program.getSourceFile(ref.fileName)!;
      const rel = relative(ROOT, ref.fileName);
      const statement = source.statements.find((s) => s.getStart(source) <= ref.textSpan.start && ref.textSpan.start < s.end);
      if (!statement || ts.isImportDeclaration(statement) || ts.isExportDeclaration(statement)) {
        // Imports and re-exports: the uses behind them are references of their own.
        if (handlers.has(rel)) found.push({ handler: rel, next: [] });
        continue;
      }
      const names = declaredNames(statement);
      // A top-level statement that declares nothing (a side effect at import) ties the reference to the whole module.
      const next = (names.length > 0 ? names : source.statements.flatMap(declaredNames)).map((n) => ({ file: ref.fileName, pos: n.getStart(source) }));
      found.push({ handler: handlers.has(rel) ? rel : undefined, next });
    }
    referrers.set(key(node), found);
    return found;
  };

  const result = new Map<string, Set<string>>();
  for (const [module, calls] of Object.entries(BUCKET_CALLS)) {
    const source = program.getSourceFile(join(ROOT, module));
    expect(source, module).toBeDefined();
    for (const name of Object.keys(calls)) {
      const declaration = source!.statements.flatMap(declaredNames).find((n) => n.text === name);
      expect(declaration, `${module} declares ${name}`).toBeDefined();
      const reached = new Set<string>();
      const seen = new Set<string>();
      const queue: Node[] = [{ file: source!.fileName, pos: declaration!.getStart(source) }];
      while (queue.length > 0) {
        const node = queue.shift()!;
        if (seen.has(key(node))) continue;
        seen.add(key(node));
        for (const { handler, next } of referrersOf(node)) {
          if (handler) reached.add(handler);
          queue.push(...next);
        }
      }
      result.set(`${module}#${name}`, reached);
    }
  }
  return result;
}

describe("bucket grants match the bucket calls each function's code can make", () => {
  const granted = grantedAccess();
  let reach: Map<string, Set<string>>;

  beforeAll(() => {
    reach = reachingHandlers(new Set(granted.keys()));
  }, ANALYSIS_TIMEOUT);

  it("knows every export of the storage modules, and only core/storage talks to S3", () => {
    for (const module of ["core/storage/index.ts", "core/storage/presign.ts"]) {
      const source = ts.createSourceFile(module, readFileSync(join(ROOT, module), "utf8"), ts.ScriptTarget.Latest, true);
      const exported = source.statements
        .filter((s) => ts.canHaveModifiers(s) && ts.getModifiers(s)?.some((m) => m.kind === ts.SyntaxKind.ExportKeyword))
        .flatMap(declaredNames)
        .map((n) => n.text);
      for (const name of exported) {
        expect(name in BUCKET_CALLS[module] || NOT_BUCKET_CALLS.has(name), `${module} exports ${name}: classify it in BUCKET_CALLS`).toBe(true);
      }
    }
    const s3Importers = lambdaProject().files
      .filter((f) => /(from |import\()"@aws-sdk\/(client-s3|s3-presigned-post|s3-request-presigner)"/.test(readFileSync(f, "utf8")))
      .map((f) => relative(ROOT, f))
      .sort();
    // core/storage/index.ts reaches the SDK through client.ts's `s3()` (imported on first use).
    expect(s3Importers).toEqual(["core/storage/client.ts", "core/storage/presign.ts"]);
  });

  it("finds the calls where they plainly are (the analysis sees through imports, namespaces and helpers)", () => {
    // parse.ts calls getObject itself; validate.ts reaches objectSize through getObjectHead's 416 fallback;
    // workspaces.ts reaches deletePrefix through Workspace.remove -> purge's dynamic import of core/storage.
    expect(reach.get("core/storage/index.ts#getObject")).toContain("functions/steps/parse.ts");
    expect(reach.get("core/storage/index.ts#objectSize")).toContain("functions/steps/validate.ts");
    expect(reach.get("core/storage/index.ts#deletePrefix")).toContain("functions/http/workspaces.ts");
  });

  it("grants every handler exactly the bucket access its reachable calls need", () => {
    const needed = new Map<string, Set<BucketAccess>>([...granted.keys()].map((h) => [h, new Set<BucketAccess>()]));
    for (const [module, calls] of Object.entries(BUCKET_CALLS)) {
      for (const [name, access] of Object.entries(calls)) {
        for (const handler of reach.get(`${module}#${name}`)!) for (const a of access) needed.get(handler)!.add(a);
      }
    }
    // One comparison of the whole table, so a failure lists every handler that differs.
    const grantedTable = Object.fromEntries([...granted].map(([handler, access]) => [handler, [...new Set(access)].sort()]));
    const neededTable = Object.fromEntries([...needed].map(([handler, access]) => [handler, [...access].sort()]));
    expect(grantedTable).toEqual(neededTable);
  });
});
