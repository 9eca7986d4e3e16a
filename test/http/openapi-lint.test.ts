/**
 * The served OpenAPI document passes `redocly lint` with the recommended ruleset (and the two exceptions redocly.yaml
 * gives its reasons for): zero errors, zero warnings. The document comes through the real docs handler, as a client
 * gets it. @redocly/cli ships as one bundle without a Node API to import, so its command runs on a temporary file.
 */
import { execFile } from "node:child_process";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { call } from "../support/api";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));
const CLI = join(ROOT, "node_modules/@redocly/cli/bin/cli.js");
const CONFIG = join(ROOT, "redocly.yaml");

interface LintProblem {
  ruleId: string;
  severity: string;
  message: string;
  location: { pointer?: string }[];
}
interface LintReport {
  totals: { errors: number; warnings: number; ignored: number };
  problems: LintProblem[];
}

/** `redocly lint --format=json` on one file with the repository's redocly.yaml; no telemetry, no update check. */
function lint(file: string): Promise<LintReport> {
  return new Promise((resolve, reject) => {
    execFile(
      process.execPath,
      [CLI, "lint", "--config", CONFIG, "--format=json", file],
      {
        cwd: ROOT,
        maxBuffer: 64 * 1024 * 1024,
        env: { ...process.env, REDOCLY_TELEMETRY: "off", REDOCLY_SUPPRESS_UPDATE_NOTICE: "true", NO_COLOR: "1" },
      },
      // Exit code 1 means "problems found": the JSON on stdout says which. Anything without a JSON report is a failure.
      (error, stdout, stderr) => {
        try {
          resolve(JSON.parse(stdout) as LintReport);
        } catch {
          reject(new Error(`redocly lint gave no JSON report (${error?.message ?? "exit 0"}):\n${stderr}\n${stdout}`));
        }
      },
    );
  });
}

const describeProblems = (report: LintReport) =>
  report.problems.map((p) => `${p.severity} ${p.ruleId} at ${p.location[0]?.pointer ?? "?"}: ${p.message}`).join("\n");

describe("redocly lint on GET /api/openapi.json", () => {
  let dir: string;
  let served: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), "r2d-openapi-"));
    const res = await call("GET", "/api/openapi.json");
    expect(res.status).toBe(200);
    served = res.text;
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it("reports no problem (recommended rules), and catches one when an operation loses its security", async () => {
    const file = join(dir, "openapi.json");
    await writeFile(file, served);
    // The same document with one public operation's `security: []` removed: proves the linter really reads the file
    // with the recommended rules, so the clean report above cannot come from linting nothing.
    const broken = JSON.parse(served);
    delete broken.paths["/api/docs"].get.security;
    const brokenFile = join(dir, "broken.json");
    await writeFile(brokenFile, JSON.stringify(broken));

    const [report, brokenReport] = await Promise.all([lint(file), lint(brokenFile)]);

    expect(report.problems, describeProblems(report)).toEqual([]);
    expect(report.totals).toMatchObject({ errors: 0, warnings: 0 });
    expect(brokenReport.problems.map((p) => [p.ruleId, p.location[0]?.pointer])).toEqual([["security-defined", "#/paths/~1api~1docs/get"]]);
  }, 15_000);

  it("redocly.yaml extends the recommended ruleset and turns off only the rules it explains", async () => {
    const config = await readFile(CONFIG, "utf8");
    expect(config).toMatch(/^extends:\s*\n\s+- recommended\s*$/m);
    const off = [...config.matchAll(/^\s+([\w-]+):\s*off\s*$/gm)].map((m) => m[1]);
    expect(off.sort()).toEqual(["info-license", "no-ambiguous-paths", "operation-2xx-response", "operation-4xx-response"]);
  });
});
