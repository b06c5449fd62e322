/**
 * The export's object layout (file.ts's comment draws it): the labels file's name and format,
 * which names are object names, labels.json written and read. Shared by the folder source
 * (file.ts), the HTTP and S3 sources (a page's too: nothing here needs a file system) and the
 * export.
 */
import { CassetteError } from "../../errors.ts";

/** The name of the labels file beside the objects. */
export const LABELS_FILE = "labels.json";
/** What labels.json's `format` field says. */
export const LABELS_FORMAT = "cassette-labels";
/** Prefix of the export's temporary files (never a valid id: ids start with a letter or digit). */
export const PART_PREFIX = ".cassette-part-";

const OBJECT_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,254}$/;

/** Whether `id` can be stored as an object name (DIR/<id>, PREFIX/<id>). */
export function isObjectName(id: string): boolean {
  return OBJECT_NAME.test(id) && id !== LABELS_FILE;
}

/** The contents of labels.json. */
export interface LabelsFile {
  format: typeof LABELS_FORMAT;
  version: 1;
  dataset: string;
  count: number;
  labels: Record<string, number>;
}

/** labels.json's text for `labels` of `dataset` (ids sorted, so re-exports write the same bytes). */
export function formatLabels(dataset: string, labels: ReadonlyMap<string, number>): string {
  const sorted: Record<string, number> = {};
  for (const id of [...labels.keys()].sort()) sorted[id] = labels.get(id)!;
  const file: LabelsFile = { format: LABELS_FORMAT, version: 1, dataset, count: labels.size, labels: sorted };
  return JSON.stringify(file);
}

/** Parses and checks labels.json; errors name `where` and what is wrong. */
export function parseLabels(text: string, where: string): { dataset: string; labels: Map<string, number> } {
  const bad = (why: string): never => {
    throw new CassetteError("ERR_MALFORMED_INPUT", `Cannot read labels file ${where} as ${why}`);
  };
  let f: LabelsFile;
  try {
    f = JSON.parse(text);
  } catch (e) {
    return bad(`it is not JSON: ${(e as Error).message}`);
  }
  if (f?.format !== LABELS_FORMAT) bad(`its 'format' is not "${LABELS_FORMAT}": current value is ${JSON.stringify(f?.format)}`);
  if (f.version !== 1) {
    throw new CassetteError("ERR_UNSUPPORTED", `Cannot read labels file ${where} as its version is ${f.version}: this cassette reads version 1`);
  }
  if (typeof f.dataset !== "string" || !f.dataset) bad("it names no 'dataset'");
  if (typeof f.labels !== "object" || f.labels === null || Array.isArray(f.labels)) bad("it has no 'labels' object");
  const labels = new Map<string, number>();
  for (const [id, label] of Object.entries(f.labels)) {
    if (!isObjectName(id)) bad(`'${id}' is not a valid sample id (a letter or digit, then letters, digits, . _ -)`);
    if (!Number.isInteger(label)) bad(`the label of ${id} is not an integer: current value is ${JSON.stringify(label)}`);
    labels.set(id, label);
  }
  if (f.count !== labels.size) bad(`its 'count' is ${f.count} but it lists ${labels.size} labels`);
  return { dataset: f.dataset, labels };
}

/** Checks the dataset a labels file names against the one asked for. */
export function checkDataset(found: string, wanted: string | undefined, where: string): void {
  if (wanted !== undefined && wanted !== found) {
    throw new CassetteError("ERR_STORE", `Cannot read dataset '${wanted}' from ${where} as it holds dataset '${found}'`);
  }
}
