/** The file store operations the file store tools call (loaded on first use: ../lazy.ts). */
export { readText, UnsupportedType, withFileStore, writeFile } from "../../../integration/filestore";
