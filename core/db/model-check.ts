/**
 * ElectroDB's model check, moved from every cold start to the test suite (docs/decisions.md "ElectroDB's model check
 * runs in the tests, not at each cold start").
 *
 * ElectroDB's `Entity` constructor checks the model it is given against its JSON schemas (the jsonschema package; a
 * v1 model is checked twice, against the beta schema first, then v1): 3–8 ms per entity at a cold start, about 50 ms
 * of the dozen entities a copilot stream builds, before any request is answered. Our models are static code, so the
 * check gives the same answer on every start: test/unit/db/model-check.test.ts runs it, ElectroDB's own function, on
 * every model of the catalogue (core/db/service.ts), and the entities are constructed without it. Everything else the
 * constructor does (parsing the model into keys, indexes and attributes) is unchanged, and still throws on a model it
 * cannot parse.
 */
import { Entity } from "electrodb";

type ModelChecked = { _validateModel?: (model: unknown) => void };
const prototype = Entity.prototype as unknown as ModelChecked;

/**
 * ElectroDB's model check as its constructor calls it (`Entity.prototype._validateModel`), kept before it is turned
 * off; undefined when the installed ElectroDB has no such method (the test then fails: this file is to be revisited).
 * @throws ElectroError `InvalidModel` naming each property that breaks the schema
 */
export const electroModelCheck: ((model: unknown) => void) | undefined = prototype._validateModel;

/** Construct entities without the model check from now on, in this process (idempotent). */
export function skipModelCheckAtConstruction(): void {
  if (electroModelCheck) prototype._validateModel = () => undefined;
}
