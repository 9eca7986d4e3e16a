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
/** Longest license note, in characters (the format gives none; a licence name or the name of a bundled file is short). */
export const LICENSE_MAX = 500;
/**
 * Bounds of `metadata` (the format gives none). `keys` and `totalChars` count the keys beyond this service's own
 * (format.ts META: display name, version, category, icon, trigger keywords), which an export always adds, so a skill
 * imported at the bounds exports and imports again; `key` and `value` bound every entry, and a value must hold
 * `trigger-keywords` at a create's limits (20 keywords of 60 characters, comma-separated: about 1,240 characters).
 * Together with the other fields at their limits a skill stays well under DynamoDB's 400 KB item.
 */
export const METADATA_LIMITS = { keys: 32, key: 64, value: 2_048, totalChars: 8_192 } as const;
/** Bounds of `allowed-tools` (the format gives none): tools (list items, or words of the space-delimited string) and each one's length. */
export const ALLOWED_TOOLS_LIMITS = { tools: 32, tool: 128 } as const;
/** A slug: lowercase ASCII letters and digits in runs joined by single hyphens. */
export const SLUG_PATTERN = /^[a-z0-9]+(?:-[a-z0-9]+)*$/;
