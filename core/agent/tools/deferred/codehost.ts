/** The code host operations the code host tools call (loaded on first use: ../lazy.ts). */
export { allLinks, createIssue, createUnlinkedIssue, refreshLink, selectedRepo, toLinkView, withCodeHost } from "../../../integration/codehost";
