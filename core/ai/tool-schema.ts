import * as z from "zod";

/** The JSON schema a model gets for a zod tool schema (input side, no `$schema` key); every engine uses this one. */
export function toolInputSchema(schema: z.ZodType): Record<string, unknown> {
  const json = z.toJSONSchema(schema, { io: "input", unrepresentable: "any" }) as Record<string, unknown>;
  delete json.$schema;
  return json;
}
