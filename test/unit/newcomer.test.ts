/**
 * A newcomer's first commands (issue #10, points 13-15), run as the newcomer runs them, in child processes:
 * `npm test` without ffmpeg, `npm test` and `npm start` without Java, the token command `npm start` prints, and
 * `npm run token` with --help or a wrong flag. What is asserted is what lands on the terminal and the exit code.
 */
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { checkJava, freePort, javaMajor, PrerequisiteError } from "../../local/dynamodb";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));
// The CLIs' own entry points under this Node, as `npm start`, `npm run token` and `npm test` run them.
const TSX = join(ROOT, "node_modules/tsx/dist/cli.mjs");
const VITEST = join(ROOT, "node_modules/vitest/vitest.mjs");

/** This environment minus the outer vitest's own variables, which would make a nested vitest think it is a worker. */
function cleanEnv(extra: Record<string, string>): NodeJS.ProcessEnv {
  const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith("VITEST") && k !== "NODE_OPTIONS"));
  return { ...env, NO_COLOR: "1", FORCE_COLOR: "0", ...extra };
}

interface Run {
  status: number | null;
  stdout: string;
  stderr: string;
}

function run(args: string[], env: NodeJS.ProcessEnv): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, args, { cwd: ROOT, env, stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d: Buffer) => (stdout += d.toString("utf8")));
    child.stderr.on("data", (d: Buffer) => (stderr += d.toString("utf8")));
    child.on("error", reject);
    child.on("close", (status) => resolve({ status, stdout, stderr }));
  });
}

/** A stack frame ("    at fn (file:1:2)") or vitest's code frame ("❯ file:1:2"): what a one-sentence failure must not show. */
const STACK = /^\s+at |❯ /m;

let scratch: string;
beforeAll(async () => {
  scratch = await mkdtemp(join(tmpdir(), "r2d-newcomer-"));
});
afterAll(() => rm(scratch, { recursive: true, force: true }));

describe("npm test without ffmpeg and pocketsphinx (point 13)", () => {
  it("skips the tests that need them, says why once, and passes", async () => {
    // FFMPEG_PATH is the runtime's override; pointing it nowhere is what a machine without ffmpeg looks like to it.
    const res = await run([VITEST, "run", "test/unit/extract/speech.test.ts"], cleanEnv({ FFMPEG_PATH: join(scratch, "no-ffmpeg") }));
    const out = res.stdout + res.stderr;
    expect(res.status, out).toBe(0);
    // ffmpeg is missing here; so may pocketsphinx be, on a newcomer's machine (they are optional for `npm test`).
    expect(out).toMatch(/Audio tests skipped\. Audio transcription needs ffmpeg and pocketsphinx: apt-get install -y ffmpeg pocketsphinx pocketsphinx-en-us \(missing: ffmpeg(, [A-Za-z -]+)*\)/);
    expect(out).toMatch(/Tests\s+\d+ passed \| \d+ skipped \(\d+\)/);
  }, 60_000);
});

describe("npm test and npm start without Java (point 14)", () => {
  /** The sentence, from the one place that words it, as a machine without Java gets it. */
  async function sentence(path: string): Promise<string> {
    const saved = process.env.PATH;
    process.env.PATH = path;
    try {
      checkJava();
    } catch (err) {
      if (err instanceof PrerequisiteError) return err.message;
      throw err;
    } finally {
      process.env.PATH = saved;
    }
    throw new Error("java was found on an empty PATH");
  }

  it("both print the same one sentence and exit 1, with no stack trace", async () => {
    // An empty directory as the whole PATH: no java to find. Node itself runs from process.execPath.
    const noJava = await mkdtemp(join(scratch, "path-"));
    const expected = await sentence(noJava);
    expect(expected).toMatch(/^Java 17 or newer is required/);

    const start = await run([TSX, "local/start.ts"], cleanEnv({ PATH: noJava, DATA_DIR: join(scratch, "start-data") }));
    expect(start.stderr).toBe(`${expected}\n`);
    expect(start.status).toBe(1);

    const test = await run([VITEST, "run", "test/unit/pending-action-status.test.ts"], cleanEnv({ PATH: noJava }));
    expect(test.stderr).toBe(`${expected}\n`);
    expect(test.stdout).not.toMatch(/No test files found|Error/);
    expect(test.stdout + test.stderr).not.toMatch(STACK);
    expect(test.status).toBe(1);
  }, 60_000);
});

describe("npm run token (point 15)", () => {
  it("--help prints the usage and exits 0", async () => {
    const res = await run([TSX, "local/token.ts", "--help"], cleanEnv({}));
    expect(res.stderr).toBe("");
    expect(res.status).toBe(0);
    expect(res.stdout).toMatch(/^Usage: npm run -s token -- --email you@example.com/);
    expect(res.stdout).toContain("TOKEN=$(npm run -s token -- --email you@example.com)");
  });

  it("an unknown flag or a missing e-mail is one sentence and exit 2, with no stack trace", async () => {
    const unknown = await run([TSX, "local/token.ts", "--emial", "you@example.com"], cleanEnv({}));
    expect(unknown.stderr).toBe("Unknown option '--emial' (npm run -s token -- --help lists the options).\n");
    expect(unknown.stdout).toBe("");
    expect(unknown.status).toBe(2);

    const missing = await run([TSX, "local/token.ts", "--data", join(scratch, "token-data")], cleanEnv({}));
    expect(missing.stderr).toBe("An e-mail is required, as in: npm run -s token -- --email you@example.com\n");
    expect(missing.status).toBe(2);
    // A token the service would refuse (functions/lib/auth.ts bounds the lifetime) is not printed at all.
    const tooLong = await run([TSX, "local/token.ts", "--email", "you@example.com", "--hours", "48", "--data", join(scratch, "token-data")], cleanEnv({}));
    expect(tooLong.stderr).toBe("--hours can be at most 24: the service refuses longer-lived tokens (JWT_MAX_LIFETIME_SECONDS).\n");
    expect(tooLong.stdout).toBe("");
    expect(tooLong.status).toBe(2);
  });

  it("npm start with an unknown option is one sentence, with no stack trace", async () => {
    const res = await run([TSX, "local/start.ts", "--bogus"], cleanEnv({}));
    expect(res.stderr).toBe("Unknown option '--bogus'. Options: --port N, --data DIR.\n");
    expect(res.status).toBe(1);
  });
});

describe("the token command npm start prints (point 15)", () => {
  let server: ChildProcess | undefined;
  afterAll(async () => {
    if (!server || server.exitCode !== null) return;
    const exited = new Promise((r) => server!.once("exit", r));
    server.kill("SIGTERM");
    await exited;
  });

  it("pasted into a shell, sets TOKEN to a token the running service accepts", async () => {
    // A data directory other than .data, as the README's walkthrough uses: the command must name it.
    const port = await freePort();
    server = spawn(process.execPath, [TSX, "local/start.ts"], {
      cwd: ROOT,
      env: cleanEnv({ PORT: String(port), DATA_DIR: join(scratch, "runtime-data") }),
      stdio: ["ignore", "pipe", "pipe"],
    });
    let banner = "";
    let errors = "";
    server.stderr!.on("data", (d: Buffer) => (errors += d.toString("utf8")));
    await new Promise<void>((resolve, reject) => {
      server!.stdout!.on("data", (d: Buffer) => {
        banner += d.toString("utf8");
        if (banner.includes("Ctrl-C to stop.")) resolve();
      });
      server!.once("exit", (code) => reject(new Error(`npm start exited (${code}) before it was ready: ${banner}${errors}`)));
    });
    const command = /TOKEN=\$\(.*\)/.exec(banner)?.[0];
    expect(command, banner).toBeDefined();

    // npm must be on PATH here, as it is in the newcomer's shell.
    const shell = await new Promise<Run>((resolve, reject) => {
      const child = spawn("sh", ["-c", `${command} && printf %s "$TOKEN"`], { cwd: ROOT, env: cleanEnv({}), stdio: ["ignore", "pipe", "pipe"] });
      let stdout = "";
      child.stdout.on("data", (d: Buffer) => (stdout += d.toString("utf8")));
      child.on("error", reject);
      child.on("close", (status) => resolve({ status, stdout, stderr: "" }));
    });
    expect(shell.status).toBe(0);
    expect(shell.stdout).toMatch(/^[\w-]+\.[\w-]+\.[\w-]+$/);

    const me = await fetch(`http://127.0.0.1:${port}/api/auth/me`, { headers: { authorization: `Bearer ${shell.stdout}` } });
    expect(me.status).toBe(200);
    expect(await me.json()).toMatchObject({ email: "you@example.com" });
  }, 60_000);
});

describe("npm start and the token command with a bad setting or damaged data: one sentence, no stack trace", () => {
  const start = (env: Record<string, string>) => run([TSX, "local/start.ts"], cleanEnv(env));

  it("reads Java's major version in both of its spellings", () => {
    expect(javaMajor('java version "1.8.0_381"')).toBe(8);
    expect(javaMajor('openjdk version "17.0.9" 2023-10-17')).toBe(17);
    expect(javaMajor('openjdk version "21" 2023-09-19')).toBe(21);
    expect(javaMajor("no version here")).toBe(0);
  });

  it("a PORT that is no port, a data folder that is a file, a port in use: refused before anything starts", async () => {
    const bad = await start({ PORT: "abc", DATA_DIR: join(scratch, "port-data") });
    expect(bad.stderr).toBe("PORT must be a whole number from 1 to 65535, not 'abc'.\n");
    expect(bad.status).toBe(1);

    const file = join(scratch, "a-file");
    await writeFile(file, "x");
    const notDir = await start({ DATA_DIR: file });
    expect(notDir.stderr).toBe(`The data folder ${file} is a file: set DATA_DIR (or --data) to a folder.\n`);

    const taken = createServer();
    const port = await new Promise<number>((ok) => taken.listen(0, "127.0.0.1", () => ok((taken.address() as { port: number }).port)));
    try {
      const inUse = await start({ PORT: String(port), DATA_DIR: join(scratch, "in-use-data") });
      expect(inUse.stderr).toBe(`Port ${port} is already in use: set PORT to another one (PORT=${port + 1} npm start).\n`);
      expect(inUse.status).toBe(1);
    } finally {
      taken.close();
    }
  });

  it("a damaged key of the dev identity provider", async () => {
    const data = join(scratch, "damaged-key");
    await mkdir(join(data, "idp"), { recursive: true });
    await writeFile(join(data, "idp", "private.jwk"), "");
    const res = await run([TSX, "local/token.ts", "--email", "you@example.com", "--data", data], cleanEnv({}));
    expect(res.stderr).toBe(`The dev identity provider's key ${join(data, "idp", "private.jwk")} is damaged: delete it and start again (tokens made with it stop working).\n`);
    expect(res.stdout + res.stderr).not.toMatch(STACK);
    expect(res.status).toBe(1);
  });

  it("a damaged DynamoDB Local database: says which folder, and leaves no DynamoDB Local running", async () => {
    const data = join(scratch, "damaged-db");
    const dbDir = join(data, "dynamodb");
    await mkdir(dbDir, { recursive: true });
    await writeFile(join(dbDir, "local_us-east-1.db"), randomBytes(64 * 1024));
    const res = await start({ DATA_DIR: data, PORT: String(await freePort()) });
    expect(res.stderr).toBe(`DynamoDB Local cannot read its data in ${dbDir}: move that folder away (or delete it to start afresh) and try again.\n`);
    expect(res.status).toBe(1);
    const left = spawnSync("pgrep", ["-f", dbDir], { encoding: "utf8" });
    expect(left.stdout.trim()).toBe("");
  }, 60_000);
});
