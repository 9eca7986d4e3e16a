/**
 * Task settings that restate a rule of another module (so the tasks and progress functions do not bundle what they
 * never call) must give that module's answer.
 */
import { afterEach, describe, expect, it } from "vitest";
import { aiEngine } from "../../../core/ai/select";
import { MAX_POLLS, POLL_INTERVAL_MS, SILENCE_MS, TaskSettings } from "../../../core/task/settings";

const saved = process.env.AI_ENGINE;
afterEach(() => {
  if (saved === undefined) delete process.env.AI_ENGINE;
  else process.env.AI_ENGINE = saved;
});

describe("task settings", () => {
  it.each([undefined, "", "local", "bedrock", "openai-compatible", "BEDROCK", "something"])("AI_ENGINE=%s: the engine a task reserves as is core/ai's", (value) => {
    if (value === undefined) delete process.env.AI_ENGINE;
    else process.env.AI_ENGINE = value;
    expect(TaskSettings.engine()).toBe(aiEngine());
  });

  it("the progress stream's figures are the spec's: polls every 3 s, at most 200, the state again after 10 s", () => {
    expect({ POLL_INTERVAL_MS, MAX_POLLS, SILENCE_MS }).toEqual({ POLL_INTERVAL_MS: 3000, MAX_POLLS: 200, SILENCE_MS: 10_000 });
  });

  it("reads its bounds from the environment, falling back on the defaults for values that are not positive numbers", () => {
    process.env.TASK_STALE_SECONDS = "5";
    expect(TaskSettings.staleMs()).toBe(5000);
    process.env.TASK_STALE_SECONDS = "-1";
    expect(TaskSettings.staleMs()).toBe(60_000);
    delete process.env.TASK_STALE_SECONDS;
    expect(TaskSettings.heartbeatMs()).toBe(10_000);
    expect(TaskSettings.maxAttempts()).toBe(3);
    process.env.TASK_PROGRESS_LIVE = "off";
    expect(TaskSettings.liveChannel()).toBe(false);
    delete process.env.TASK_PROGRESS_LIVE;
    expect(TaskSettings.liveChannel()).toBe(true);
  });
});
