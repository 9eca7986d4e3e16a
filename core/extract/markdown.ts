/**
 * Markdown and plain-text extraction. Markdown is parsed (CommonMark + GFM, via micromark/mdast) and rendered to
 * plain text, so quotes taken from units read like prose instead of carrying "**", link targets and escapes.
 */
import { fromMarkdown } from "mdast-util-from-markdown";
import { gfmFromMarkdown } from "mdast-util-gfm";
import { gfm } from "micromark-extension-gfm";
import type { Nodes, PhrasingContent, RootContent } from "mdast";
import { blocksToExtraction, type Block } from "./blocks";
import type { Extraction } from "./types";

/** Parse Markdown into document blocks: headings, paragraphs and list items (as plain text), table rows, code. */
export function markdownToBlocks(markdown: string): Block[] {
  const tree = fromMarkdown(markdown, { extensions: [gfm()], mdastExtensions: [gfmFromMarkdown()] });
  const out: Block[] = [];
  for (const node of tree.children) walk(node, out, false);
  return out;
}

/** Markdown -> readable plain text (blocks separated by blank lines), e.g. for issue comment bodies. */
export function markdownToPlain(markdown: string): string {
  return markdownToBlocks(markdown)
    .map((b) => (b.type === "paragraph" && b.list ? `- ${b.text}` : b.text))
    .filter((t) => t.trim())
    .join("\n\n");
}

/** Depth given to a bold line standing for a heading: below every real heading, so the next real one ends it. */
const PSEUDO_HEADING_DEPTH = 7;

/**
 * A paragraph that opens with a bold or italic line of its own ("**Warm Up Questions - 5 min**", alone or followed
 * by a line break): notes exported from word processors mark their sections that way instead of with "#". A
 * bold lead-in on the same line ("**Finding.** Details") and a bold speaker label ("**Tania:**") are not headings.
 * @returns the heading text and the paragraph's remaining children, or undefined
 */
function pseudoHeading(children: PhrasingContent[]): { heading: string; rest: PhrasingContent[] } | undefined {
  const [first, next] = children;
  if (!first || (first.type !== "strong" && first.type !== "emphasis")) return undefined;
  const alone = children.length === 1;
  const brokenAfter = next && ((next.type === "text" && /^[ \t]*\n/.test(next.value)) || next.type === "break");
  if (!alone && !brokenAfter) return undefined;
  const heading = inline(first.children).trim();
  if (!heading || /[.!?:;,]$/.test(heading) || heading.split(/\s+/).length > 12) return undefined;
  return { heading, rest: children.slice(1) };
}

function walk(node: RootContent, out: Block[], inList: boolean, inQuote = false): void {
  switch (node.type) {
    case "heading":
      out.push({ type: "heading", depth: node.depth, text: inline(node.children).trim() });
      return;
    case "paragraph": {
      const pseudo = inList || inQuote ? undefined : pseudoHeading(node.children);
      if (pseudo) out.push({ type: "heading", depth: PSEUDO_HEADING_DEPTH, text: pseudo.heading });
      const text = inline(pseudo ? pseudo.rest : node.children).trim();
      if (text) out.push({ type: "paragraph", text, list: inList || undefined, quote: inQuote || undefined });
      return;
    }
    case "list":
      for (const item of node.children) walk(item, out, true, inQuote);
      return;
    case "listItem":
    case "blockquote":
    case "footnoteDefinition":
      for (const child of node.children) walk(child, out, node.type === "listItem" ? true : inList, inQuote || node.type === "blockquote");
      return;
    case "table":
      node.children.forEach((row, i) => {
        const text = row.children.map((cell) => inline(cell.children).trim()).join(" | ");
        if (text.replace(/[|\s]/g, "")) out.push({ type: "row", text, header: i === 0 || undefined });
      });
      return;
    case "code":
      if (node.value.trim()) out.push({ type: "code", text: node.value });
      return;
    // html blocks (comments, layout markup), thematic breaks and link definitions carry no prose.
    default:
      return;
  }
}

const GENERIC_ALT = /^(image|img|picture|photo|screenshot|screen ?shot\b.*|untitled|[\w.-]+\.(png|jpe?g|gif|svg|webp))$/i;

/** Whether a UTF-16 code unit is a space or a tab. */
const isBlank = (c: number) => c === 32 || c === 9;

/**
 * A paragraph's soft line breaks as single spaces, with the spaces and tabs around each break dropped (what
 * `/[ \t]*\n[ \t]*\/g` replaced), in linear time: that regex retries a long run of spaces from each of its characters,
 * quadratic in the run's length (seconds for 50,000 spaces in an upload).
 */
export function softBreaks(value: string): string {
  if (!value.includes("\n")) return value;
  const lines = value.split("\n");
  return lines
    .map((line, i) => {
      let start = 0;
      let end = line.length;
      if (i > 0) while (start < end && isBlank(line.charCodeAt(start))) start++;
      if (i < lines.length - 1) while (end > start && isBlank(line.charCodeAt(end - 1))) end--;
      return line.slice(start, end);
    })
    .join(" ");
}

/** Inline content as plain text: emphasis and links reduced to their words, images to their alt text. */
function inline(nodes: PhrasingContent[] | Nodes[]): string {
  let s = "";
  for (const n of nodes as Nodes[]) {
    switch (n.type) {
      case "text":
        // A soft line break inside a paragraph renders as a space.
        s += softBreaks(n.value);
        break;
      case "inlineCode":
        s += n.value;
        break;
      case "break":
        s += "\n";
        break;
      case "image":
      case "imageReference":
        // Alt text is words only when someone wrote it; "image" and file names are upload defaults.
        if (n.alt && !GENERIC_ALT.test(n.alt.trim())) s += n.alt;
        break;
      case "html":
        if (/^<br\s*\/?>$/i.test(n.value.trim())) s += "\n";
        break;
      case "footnoteReference":
        break;
      default:
        if ("children" in n) s += inline(n.children as Nodes[]);
    }
  }
  return s;
}

/** A Markdown file (text/markdown): paragraphs with heading context, or speaker turns for a transcript. */
export function extractMarkdown(markdown: string): Extraction {
  return blocksToExtraction(markdownToBlocks(markdown), "markdown");
}

/**
 * A plain-text file: paragraphs split on blank lines. A transcript written one turn per line ("Name: words",
 * optionally "[00:01:02] Name: words") is split on lines instead, so each turn keeps its speaker.
 */
export function extractPlainText(text: string): Extraction {
  const lines = text.split("\n").map((l) => l.trim()).filter(Boolean);
  const byLine = lines.length >= 3 && blocksToExtraction(lines.map((t) => ({ type: "paragraph", text: t })), "text");
  if (byLine && byLine.transcript) return byLine;
  const paragraphs = text
    .split(/\n[ \t]*\n/)
    .map((p) => p.trim())
    .filter(Boolean)
    .map((t): Block => ({ type: "paragraph", text: t }));
  return blocksToExtraction(paragraphs, "text");
}
