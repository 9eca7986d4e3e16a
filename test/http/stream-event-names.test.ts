/**
 * Every stream event name the service emits is one of spec 02's (issue #21 point 3). Three checks, none of which can
 * fall behind the code:
 *
 * 1. the names core/harness/events.ts types every emit site with (`StreamEventName`; `EventSink.send` takes only
 *    those, so another name does not compile) are exactly the spec's table, parsed from the spec itself;
 * 2. every event name written as a literal at an emit site in core/ and functions/ (`send("…"`, `event: "…"`) is in
 *    that table: this catches sites typed as free strings (a run hook's `send`);
 * 3. on the wire: the shared SSE reader every stream test uses (test/support/sse.ts `readStream`) fails on any name
 *    outside the table, so each stream test checks every event it read. This file checks that the reader does.
 */
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join, relative } from "node:path";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { describe, expect, it } from "vitest";
import { STREAM_EVENTS } from "../../core/harness/events";
import { readStream, specEventNames } from "../support/sse";

const ROOT = join(import.meta.dirname, "../..");

function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return sources(path);
    return name.endsWith(".ts") && !name.endsWith(".d.ts") ? [path] : [];
  });
}

describe("stream event names (spec 02 Events)", () => {
  const spec = specEventNames();

  it("reads the spec's table (its first and last rows, and both names of a shared row)", () => {
    for (const name of ["token", "done", "harness_swarm_activated", "harness_swarm_complete", "milestone_unlocked"]) expect(spec.has(name)).toBe(true);
    expect(specEventNames("### Stream format\n\n| Event | Payload fields |\n|---|---|\n| a / b_c | x |\n| d | y |\n| e | z |\n| f | z |\n| g | z |\n| h | z |\n| i | z |\n| j | z |\n| k | z |\n\ntext")).toEqual(new Set(["a", "b_c", "d", "e", "f", "g", "h", "i", "j", "k"]));
  });

  it("types emit sites with exactly the spec's names", () => {
    expect([...STREAM_EVENTS].sort()).toEqual([...spec].sort());
  });

  it("emits only the spec's names at every literal emit site of core/ and functions/", () => {
    const found: string[] = [];
    for (const file of [...sources(join(ROOT, "core")), ...sources(join(ROOT, "functions"))]) {
      const text = readFileSync(file, "utf8");
      for (const m of text.matchAll(/\bsend\(\s*["'`]([A-Za-z0-9_.:-]+)["'`]|\bevent:\s*["'`]([A-Za-z0-9_.:-]+)["'`]/g)) {
        found.push(`${relative(ROOT, file)}: ${m[1] ?? m[2]}`);
      }
    }
    // The scan sees the sites it should (it would miss nothing a refactor moved).
    expect(found).toEqual(expect.arrayContaining(["core/agent/copilot.ts: done", "core/harness/index.ts: harness_contract", "functions/lib/sse.ts: token"]));
    expect(found.filter((f) => !spec.has(f.split(": ")[1]!))).toEqual([]);
  });

  it("fails a stream read that carries an event outside the table", async () => {
    const server = createServer((_req, res) => {
      res.writeHead(200, { "content-type": "text/event-stream" });
      res.end("event: token\ndata: {\"content\":\"hi\"}\n\nevent: harness_secret\ndata: {}\n\nevent: done\ndata: {}\n\n");
    });
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    try {
      await expect(readStream(base, "/x", "t", {})).rejects.toThrow('"harness_secret", which is not an event of spec 02');
    } finally {
      await new Promise((r) => server.close(r));
    }
  });
});
