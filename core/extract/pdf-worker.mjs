// A piscina worker (core/extract/pdf.ts): PDF.js reads a PDF's text items off the main thread on the embedded
// runtime, so a long PDF does not stall the gateway and several PDFs parse on several cores. Plain JavaScript so
// it loads in any worker without a TypeScript loader (tsx, vitest).
import { extractTextItems, getDocumentProxy } from "unpdf";

const errorOf = (err) => ({ name: err instanceof Error ? err.name : "", message: err instanceof Error ? err.message : String(err) });

/**
 * @param {Uint8Array} bytes the PDF file
 * @returns {Promise<{ pages: number, items: unknown[][] } | { error: { name: string, message: string } }>}
 *   the text items per page, or why PDF.js could not read the file (its error name, e.g. PasswordException)
 */
export default async function readTextItems(bytes) {
  let pdf;
  try {
    pdf = await getDocumentProxy(bytes, { verbosity: 0 });
  } catch (err) {
    return { error: errorOf(err) };
  }
  try {
    const { items } = await extractTextItems(pdf);
    return { pages: pdf.numPages, items };
  } catch (err) {
    return { error: errorOf(err) };
  } finally {
    await pdf.destroy().catch(() => undefined);
  }
}
