import { AppError } from "../../core/error";
import { extract, type ExtractEngines } from "../../core/extract";
import { getObject } from "../../core/storage";
import { engineMode, storeExtraction, type StepState } from "./common";

/**
 * In AWS, images are read by Textract's synchronous text detection: only PNGs and JPEGs of at most 10 MB get here
 * (Validate's routeOf sends TIFFs, which may have many pages, to StartTextract and fails larger images). Everything
 * else parses the same everywhere.
 */
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
  return { ...state, stats: await storeExtraction(state, extraction) };
}
