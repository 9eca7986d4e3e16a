/** The block operations the block tools call (loaded on first use: ../lazy.ts). */
export { listBlocks, updateBlock } from "../../../document/block-ops";
