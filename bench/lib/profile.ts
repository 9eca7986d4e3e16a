import { Session } from "node:inspector/promises";
import type { Profiler } from "node:inspector";
import { fileURLToPath } from "node:url";
import { resolve, sep } from "node:path";
import { fmtMs, printTable } from "./stats";

/** Repository root (bench/lib/../..), to name first-party code by folder. */
type CallFrame = Profiler.ProfileNode["callFrame"];

const ROOT = resolve(fileURLToPath(new URL("../..", import.meta.url)));

/**
 * Run `fn` under the V8 sampling CPU profiler of this process (node:inspector) and return its profile.
 * @param intervalUs sampling interval in microseconds.
 */
export async function cpuProfile<T>(fn: () => Promise<T>, intervalUs = 50): Promise<{ result: T; profile: Profiler.Profile }> {
  const session = new Session();
  session.connect();
  try {
    await session.post("Profiler.enable");
    await session.post("Profiler.setSamplingInterval", { interval: intervalUs });
    await session.post("Profiler.start");
    let outcome: { ok: true; value: T } | { ok: false; error: unknown };
    try {
      outcome = { ok: true, value: await fn() };
    } catch (error) {
      outcome = { ok: false, error };
    }
    const { profile } = await session.post("Profiler.stop");
    if (!outcome.ok) throw outcome.error;
    return { result: outcome.value, profile };
  } finally {
    await session.post("Profiler.disable").catch(() => undefined);
    session.disconnect();
  }
}

const GROUPS: [RegExp, string][] = [
  [/^@(aws-sdk|smithy)\//, "AWS SDK v3 (@aws-sdk, @smithy)"],
  [/^@middy\//, "middy (core + http middlewares + router)"],
  [/^@aws-lambda-powertools\//, "Powertools logger"],
  [/^electrodb$/, "ElectroDB"],
  [/^aws-jwt-verify$/, "aws-jwt-verify (JWT verify)"],
  [/^zod$/, "zod"],
  [/^(undici|hdr-histogram-js)$/, "bench harness (undici client, histogram)"],
  [/^(tsx|esbuild|get-tsconfig)$/, "tsx loader"],
];

/** A readable bucket for one profile frame: a package group, a first-party folder, Node internals, or a V8 pseudo-frame. */
export function categorize(frame: CallFrame): string {
  const { url, functionName } = frame;
  if (!url) {
    if (functionName === "(idle)") return "(idle: waiting on I/O, i.e. DynamoDB Local)";
    if (functionName === "(garbage collector)") return "(garbage collector)";
    if (functionName === "(program)") return "(program: V8/native, unattributed)";
    if (functionName === "(root)") return "(root)";
    if (functionName === "parse" || functionName === "stringify") return "JSON.parse / JSON.stringify (builtins)";
    // Native socket writes: on a busy machine the syscall also absorbs the loopback peer being scheduled.
    if (/^(writev|writeBuffer|writeUtf8String|writeLatin1String|writeAsciiString|writeUcs2String)$/.test(functionName)) {
      return "socket writes (native writev/write syscalls)";
    }
    return "V8 builtins (other)";
  }
  if (url === "node:inspector") return "(profiler itself)";
  if (url.startsWith("node:")) return "Node internals (http, net, streams, crypto)";
  let path = url;
  if (url.startsWith("file://")) {
    try {
      path = fileURLToPath(url);
    } catch {
      path = url;
    }
  }
  const packages = [...path.matchAll(/node_modules[\\/]((?:@[^\\/]+[\\/])?[^\\/]+)/g)];
  if (packages.length > 0) {
    const name = packages[packages.length - 1]![1]!.replace(/\\/g, "/");
    for (const [re, label] of GROUPS) if (re.test(name)) return label;
    return `package: ${name}`;
  }
  if (path.startsWith(ROOT + sep)) {
    const segments = path.slice(ROOT.length + 1).split(sep);
    if (segments[0] === "bench") return "bench harness (undici client, histogram)";
    return `app: ${segments.slice(0, 2).join("/")}${segments.length > 2 ? "/" : ""}`;
  }
  return "other";
}

/** Self time (ms) per category over the whole profile. */
export function selfTimeByCategory(profile: Profiler.Profile, bucket: (frame: CallFrame) => string = categorize): Map<string, number> {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const out = new Map<string, number>();
  const samples = profile.samples ?? [];
  const deltas = profile.timeDeltas ?? [];
  for (let i = 0; i < samples.length; i++) {
    const node = byId.get(samples[i]!);
    if (!node) continue;
    const label = bucket(node.callFrame);
    out.set(label, (out.get(label) ?? 0) + (deltas[i] ?? 0) / 1000);
  }
  return out;
}

/**
 * Attribute a CPU profile of a process that imported an esbuild bundle (built without whitespace minification, so
 * esbuild's `// <path>` comments mark where each module's code starts) to contributors: npm packages (the AWS SDK
 * families together), first-party folders, V8 compilation of the bundle, Node internals, GC.
 * @returns self time in ms per contributor.
 */
export function bundleProfileByContributor(profile: Profiler.Profile, bundleText: string, bundleUrl: string): Map<string, number> {
  const marks: { line: number; path: string }[] = [];
  bundleText.split("\n").forEach((text, line) => {
    const m = /^\/\/ (\S+\/\S+)$/.exec(text);
    if (m) marks.push({ line, path: m[1]! });
  });
  const moduleAt = (line: number): string | undefined => {
    let lo = 0;
    let hi = marks.length - 1;
    let found: string | undefined;
    while (lo <= hi) {
      const mid = (lo + hi) >> 1;
      if (marks[mid]!.line <= line) {
        found = marks[mid]!.path;
        lo = mid + 1;
      } else hi = mid - 1;
    }
    return found;
  };
  const contributorOf = (path: string): string => {
    const packages = [...path.matchAll(/node_modules\/((?:@[^/]+\/)?[^/]+)/g)];
    if (packages.length === 0) return `app: ${path.split("/").slice(0, 2).join("/")}`;
    const name = packages[packages.length - 1]![1]!;
    if (/^@(aws-sdk|smithy|aws-crypto)\//.test(name)) return "AWS SDK v3 (@aws-sdk, @smithy)";
    return name;
  };
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const out = new Map<string, number>();
  const samples = profile.samples ?? [];
  const deltas = profile.timeDeltas ?? [];
  for (let i = 0; i < samples.length; i++) {
    const frame = byId.get(samples[i]!)?.callFrame;
    if (!frame) continue;
    let label: string;
    if (frame.url === bundleUrl) {
      const mod = moduleAt(frame.lineNumber);
      label = mod ? contributorOf(mod) : "esbuild runtime helpers + SST banner";
    } else if (!frame.url) {
      label = ["(garbage collector)", "(program)", "(idle)", "(root)"].includes(frame.functionName) ? frame.functionName : "V8 builtins";
    } else if (frame.url.startsWith("node:")) {
      label = frame.functionName === "compileSourceTextModule" ? "V8 parse + compile of the bundle (ESM)" : "Node internals (bootstrap, ESM loader, builtins)";
    } else {
      label = "probe";
    }
    out.set(label, (out.get(label) ?? 0) + (deltas[i] ?? 0) / 1000);
  }
  out.delete("(root)");
  return out;
}

/**
 * Print a cold start's self time by contributor (`bundleProfileByContributor`'s map): the largest first, those of at
 * least 0.5 ms, at most `top` rows, with their share of the whole.
 */
export function printContributors(title: string, byContributor: Map<string, number>, top: number): void {
  const sum = [...byContributor.values()].reduce((a, b) => a + b, 0);
  console.log(title);
  printTable(
    ["where", "ms", "share"],
    [...byContributor.entries()]
      .sort((a, b) => b[1] - a[1])
      .filter(([, ms]) => ms >= 0.5)
      .slice(0, top)
      .map(([label, ms]) => [label, fmtMs(ms), `${((100 * ms) / sum).toFixed(0)}%`]),
  );
}
