/**
 * The Agent Skills format's limits on a skill's name and texts, apart from its parser (./format.ts, which needs a YAML
 * parser): the request schemas (./schema.ts) check them on every skills route and the copilot's chat path, which
 * should not load the parser to do so.
 */

/** Longest skill name (slug), in characters (Agent Skills: 64). */
export const NAME_MAX = 64;
/** Longest description, in characters (Agent Skills: 1,024). */
export const DESCRIPTION_MAX = 1024;
/** Longest compatibility note, in characters (Agent Skills: 500). */
export const COMPATIBILITY_MAX = 500;
/** A slug: lowercase ASCII letters and digits in runs joined by single hyphens. */
export const SLUG_PATTERN = /^[a-z0-9]+(?:-[a-z0-9]+)*$/;
