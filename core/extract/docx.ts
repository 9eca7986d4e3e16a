/** DOCX extraction with mammoth: paragraphs, headings, list items and tables from the Word document model. */
import mammoth from "mammoth";
import { blocksToExtraction, type Block } from "./blocks";
import { unreadable } from "./errors";
import { extractionLimits } from "./limits";
import type { Extraction } from "./types";
import { checkedArchive } from "./zip-limits";

/** The parts of mammoth's document model (mammoth/lib/documents.js) we read. */
interface DocElement {
  type: string;
  children?: DocElement[];
  value?: string;
  styleId?: string | null;
  styleName?: string | null;
  numbering?: unknown;
  isBold?: boolean;
}

/**
 * Extract a .docx file (engine "docx"): Heading/Title styles become heading context (`fields.heading`), other
 * paragraphs and list items `paragraph` units, table rows `row` units (cells joined " | "). Word interview
 * transcripts ("Interviewer: ..." paragraphs) come out as `turn` units with speakers, like Markdown.
 *
 * The archive is checked against the extraction limits first (checkedArchive), and mammoth reads the checked copy.
 *
 * @throws ExtractionError `too_large` over a limit (see checkedArchive); `corrupt` when the file cannot be opened
 *   (truncated, not a Word document, encrypted), with mammoth's own error in the log, not in the reason.
 */
export async function extractDocx(bytes: Buffer): Promise<Extraction> {
  const limits = extractionLimits();
  const archive = await checkedArchive(bytes, { label: "Word document", maxXmlBytes: limits.maxDocxXmlBytes }, limits);
  let doc: DocElement | undefined;
  try {
    await mammoth.convertToHtml(
      { buffer: archive },
      {
        // Read mammoth's parsed document instead of its HTML: headings, lists and tables come with their structure.
        transformDocument: (d: DocElement) => {
          doc = d;
          return d;
        },
        // Skip base64-encoding every embedded image into HTML we never use.
        convertImage: mammoth.images.imgElement(async () => ({ src: "" })),
      } as Parameters<typeof mammoth.convertToHtml>[1],
    );
  } catch (err) {
    throw unreadable("The Word document could not be read (it may be truncated, corrupt or password-protected)", err, { bytes: bytes.length });
  }
  const blocks: Block[] = [];
  for (const child of doc?.children ?? []) collect(child, blocks);
  return blocksToExtraction(blocks, "docx");
}

function collect(el: DocElement, out: Block[]): void {
  if (el.type === "paragraph") {
    const text = textOf(el).trim();
    if (!text) return;
    const depth = headingDepth(el, text);
    if (depth) out.push({ type: "heading", depth, text });
    else out.push({ type: "paragraph", text, list: el.numbering ? true : undefined });
    return;
  }
  if (el.type === "table") {
    for (const row of el.children ?? []) {
      if (row.type !== "tableRow") continue;
      const cells = (row.children ?? []).map((cell) => (cell.children ?? []).map((p) => textOf(p).trim()).filter(Boolean).join(" "));
      const text = cells.join(" | ");
      if (cells.some(Boolean)) out.push({ type: "row", text, header: (row as { isHeader?: boolean }).isHeader || undefined });
    }
    return;
  }
  for (const child of el.children ?? []) collect(child, out);
}

function textOf(el: DocElement): string {
  switch (el.type) {
    case "text":
      return el.value ?? "";
    case "tab":
      return "\t";
    case "break":
      return "\n";
    // Footnote and comment references point elsewhere; their markers would only add stray numbers.
    case "noteReference":
    case "commentReference":
    case "image":
      return "";
    default:
      return (el.children ?? []).map(textOf).join("");
  }
}

/** Heading level from the paragraph style ("Heading 2", "Title"), or a short all-bold line used as a heading. */
function headingDepth(p: DocElement, text: string): number | undefined {
  const style = `${p.styleName ?? ""} ${p.styleId ?? ""}`;
  const m = /\b(?:heading|überschrift|titre|título|titolo)\s*(\d)/i.exec(style);
  if (m) return Math.min(6, Math.max(1, Number(m[1])));
  if (/\btitle\b/i.test(style)) return 1;
  if (/\bsubtitle\b/i.test(style)) return 2;
  const runs = (p.children ?? []).filter((r) => r.type === "run" && textOf(r).trim());
  if (runs.length && runs.every((r) => r.isBold) && text.length <= 100 && !/[.:;,]$/.test(text) && !text.includes("\n")) return 3;
  return undefined;
}
