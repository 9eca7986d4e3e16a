/** The model catalogue (core/ai/catalogue.ts): a setting with defaults, read by the copilot, costing and the stacks. */
import { describe, expect, it } from "vitest";
import { bedrockResourceArns, catalogue, DEFAULT_CATALOGUE, EMBEDDING_MODEL_ID, outputTokens } from "../../../core/ai/catalogue";
import { SettingError } from "../../../core/config";
import { AppError } from "../../../core/error";

const [haiku, sonnet, opus] = DEFAULT_CATALOGUE;

describe("catalogue", () => {
  it("defaults to one model per tier at the spec's rates", () => {
    const c = catalogue({});
    expect(c.defaults).toEqual({ small: haiku, mid: sonnet, large: opus });
    expect([haiku!.inputUsdPer1M, haiku!.outputUsdPer1M, sonnet!.inputUsdPer1M, sonnet!.outputUsdPer1M, opus!.inputUsdPer1M, opus!.outputUsdPer1M]).toEqual([0.8, 4, 3, 15, 15, 75]);
    expect(c.find("anthropic.claude-v2")).toBeUndefined();
  });

  it("reads MODEL_CATALOGUE, and adds a tier default named by BEDROCK_MODEL_<TIER> that it lacks", () => {
    const custom = [{ id: "m-small", tier: "small", inputUsdPer1M: 1, outputUsdPer1M: 2, maxOutputTokens: 1000, thinking: false }, { ...sonnet }, { ...opus }];
    const c = catalogue({ MODEL_CATALOGUE: JSON.stringify(custom), BEDROCK_MODEL_LARGE: "eu.anthropic.other-v1:0" });
    expect(c.defaults.small.id).toBe("m-small");
    expect(c.defaults.large).toMatchObject({ id: "eu.anthropic.other-v1:0", tier: "large", inputUsdPer1M: 15, outputUsdPer1M: 75, thinking: false });
    expect(c.models.map((m) => m.id)).toContain("eu.anthropic.other-v1:0");
  });

  it("refuses a malformed setting in one sentence", () => {
    expect(() => catalogue({ MODEL_CATALOGUE: "[{" })).toThrow(SettingError);
    expect(() => catalogue({ MODEL_CATALOGUE: JSON.stringify([{ ...sonnet, tier: "huge" }]) })).toThrow(/MODEL_CATALOGUE entry 0.tier/);
    expect(() => catalogue({ MODEL_CATALOGUE: JSON.stringify([sonnet]) })).toThrow(/has no small model/);
  });

  it("gives IAM exactly the catalogue's models (inference profile and the foundation model it routes to) and the embedding model", () => {
    const arns = bedrockResourceArns({ partition: "aws", account: "123456789012" }, {});
    expect(arns).toContain(`arn:aws:bedrock:*:123456789012:inference-profile/${opus!.id}`);
    expect(arns).toContain("arn:aws:bedrock:*::foundation-model/anthropic.claude-opus-4-1-20250805-v1:0");
    expect(arns).toContain(`arn:aws:bedrock:*::foundation-model/${EMBEDDING_MODEL_ID}`);
    expect(arns).toHaveLength(DEFAULT_CATALOGUE.length * 2 + 1);
    expect(arns.some((a) => a.endsWith("/*"))).toBe(false);
  });
});

describe("outputTokens", () => {
  it("caps at the model's limit, and with thinking leaves room above the budget", () => {
    expect(outputTokens(haiku!, {})).toBe(4096);
    expect(outputTokens(haiku!, { maxTokens: 100_000 })).toBe(8192);
    expect(outputTokens(opus!, { thinking: { budgetTokens: 16_000 } })).toBe(20_096);
    expect(outputTokens({ ...opus!, maxOutputTokens: 18_000 }, { thinking: { budgetTokens: 16_000 } })).toBe(18_000);
  });

  it("refuses thinking on a model without it, or a budget its limit cannot hold", () => {
    expect(() => outputTokens(haiku!, { thinking: { budgetTokens: 8000 } })).toThrow(AppError);
    expect(() => outputTokens({ ...opus!, maxOutputTokens: 8000 }, { thinking: { budgetTokens: 8000 } })).toThrow(/does not fit/);
    expect(() => outputTokens(opus!, { thinking: { budgetTokens: 512 } })).toThrow(/does not fit/);
  });
});
