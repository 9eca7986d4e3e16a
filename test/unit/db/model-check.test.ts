/**
 * ElectroDB's model check runs here, on every model of the catalogue, instead of in each entity's constructor at a
 * cold start (core/db/model-check.ts).
 */
import { Entity } from "electrodb";
import { describe, expect, it } from "vitest";
import { entityBuilders } from "../../../core/db/service";
import { electroModelCheck } from "../../../core/db/model-check";

describe("ElectroDB's model check (core/db/model-check.ts)", () => {
  it("is still ElectroDB's constructor step, and the service's entities are constructed without it", () => {
    // A newer ElectroDB without the method would leave the check in the constructor: this file is then to be revisited.
    expect(typeof electroModelCheck).toBe("function");
    expect((Entity.prototype as unknown as { _validateModel: unknown })._validateModel).not.toBe(electroModelCheck);
  });

  it.each(Object.keys(entityBuilders))("passes for the %s model", (name) => {
    const entity = entityBuilders[name as keyof typeof entityBuilders]() as unknown as { schema: unknown };
    expect(() => electroModelCheck!(entity.schema)).not.toThrow();
  });

  it("fails a model that breaks ElectroDB's schema, naming the property", () => {
    const model = {
      model: { entity: "broken", version: "1", service: "r2d" },
      attributes: { id: { type: "string", required: "yes" } },
      indexes: { primary: { pk: { field: "pk", composite: ["id"] }, sk: { field: "sk", composite: [] } } },
    };
    expect(() => electroModelCheck!(model)).toThrow(/required/);
  });
});
