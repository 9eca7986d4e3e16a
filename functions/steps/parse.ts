import { AppError } from "../../core/error";
import * as Research from "../../core/research";
import { extract, type ExtractEngines } from "../../core/extract";
import { getObject } from "../../core/storage";
import { engineMode, requireCurrentAttempt, type StepState } from "./common";

/** In AWS, images are read by Textract's synchronous text detection; everything else parses the same everywhere. */
async function enginesFor(state: StepState): Promise<Partial<ExtractEngines>> {
  if (engineMode() !== "aws") return {};
  const { textractOcr } = await import("../../core/extract/textract");
  return { ocr: textractOcr({ bucket: state.bucket, key: state.key }) };
}

/** Parse step: extract the text in-Lambda and store the extraction next to the file. */
export async function handler(state: StepState): Promise<StepState> {
  const bytes = await getObject(state.key);
  if (!bytes) throw new AppError("NOT_FOUND", "The uploaded file is missing from storage; upload it again");
  const extraction = await extract(
    { bytes, kind: state.kind!, contentType: state.content_type!, filename: state.file_name! },
    await enginesFor(state),
  );
  // Parsing can take minutes: a source reprocessed or deleted meanwhile must not get this (stale) result. One
  // deleted between this check and the write is caught by Complete, which removes the extraction again.
  await requireCurrentAttempt(state);
  await Research.writeExtraction(state.workspace_id, state.source_id, extraction);
  return {
    ...state,
    stats: { char_count: extraction.extracted_text.length, unit_count: extraction.units.length, pages: extraction.pages, engine: extraction.engine },
  };
}
