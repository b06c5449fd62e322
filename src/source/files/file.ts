/**
 * A folder of objects as a Source (`file:DIR`), and the object layout it shares with HTTP
 * stores (`http(s)://HOST/PREFIX`) and `cassette export`, which writes it:
 *
 *   DIR/<id>          one file per sample: its bytes, exactly as the store holds them
 *   DIR/labels.json   { "format": "cassette-labels", "version": 1, "dataset": NAME,
 *                       "count": N, "labels": { "<id>": label, … } }
 *
 * Ids are object names: a letter or digit, then letters, digits, `.`, `_`, `-` (every
 * sampleId() UUID is one), so `labels.json` and the export's temporary `.cassette-part-…`
 * files can never be taken for a sample. labels.json is written last: its presence marks a
 * complete export, and a reader opens a store by reading it once.
 *
 * Reads go through `runtime.readFile` with bounded concurrency: at most `concurrency` files
 * are read at once; requests beyond that wait in a queue, and `fetch` answers false once
 * `maxInFlight` requests are queued or running.
 *
 * @example
 * ```ts
 * import { openFileSource } from "./file.ts";
 * try {
 *   await openFileSource(".tmp/no-such-export");
 * } catch (e) {
 *   console.log((e as { code: string }).code); // ERR_STORE
 * }
 * ```
 */
import { join } from "node:path";
import { runtime } from "../../../runtime-adapters/index.ts";
import { CassetteError } from "../../errors.ts";
import { storeError } from "../retryable.ts";
import { Capacity, type FetchCallback, type Source } from "../source.ts";

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

/** How a `file:DIR` source reads an export's folder: the dataset expected, files read at once, and requests accepted. */
export interface FileSourceOptions {
  /** The dataset expected in labels.json (default: whatever it names). */
  dataset?: string;
  /** Files read at once (default 16). */
  concurrency?: number;
  /** Requests accepted (queued or being read) before `fetch` answers false (default 256). */
  maxInFlight?: number;
}

/** Opens `dir` (the layout above): reads labels.json once; errors say what is missing. */
export async function openFileSource(dir: string, o: FileSourceOptions = {}): Promise<FileSource> {
  const path = join(dir, LABELS_FILE);
  let bytes: Uint8Array;
  try {
    bytes = await runtime.readFile(path);
  } catch (e) {
    if (isNotFound(e)) {
      throw new CassetteError("ERR_STORE", `Cannot open file:${dir} as ${path} does not exist: write the folder with cassette export (an interrupted export has no labels.json yet)`);
    }
    throw new CassetteError("ERR_STORE_UNREACHABLE", `Cannot open file:${dir} as ${path} cannot be read: ${(e as Error).message}`, { cause: e });
  }
  const { dataset, labels } = parseLabels(new TextDecoder().decode(bytes), path);
  checkDataset(dataset, o.dataset, `file:${dir}`);
  return new FileSource(dir, dataset, labels, o);
}

export class FileSource implements Source {
  readonly name: string;
  readonly dataset: string;
  readonly #dir: string;
  readonly #labels: ReadonlyMap<string, number>;
  readonly #cap: Capacity;
  readonly #concurrency: number;
  #reading = 0;
  #queue: [string, FetchCallback][] = [];
  #closed = false;

  constructor(dir: string, dataset: string, labels: ReadonlyMap<string, number>, o: FileSourceOptions = {}) {
    const concurrency = o.concurrency ?? 16, maxInFlight = o.maxInFlight ?? 256;
    for (const [k, v] of [["concurrency", concurrency], ["maxInFlight", maxInFlight]] as const) {
      if (!Number.isInteger(v) || v < 1) throw new CassetteError("ERR_INVALID_OPTION", `Cannot open file:${dir} as '${k}' must be a positive integer: current value is ${v}`);
    }
    this.#dir = dir;
    this.dataset = dataset;
    this.#labels = labels;
    this.#concurrency = concurrency;
    this.#cap = new Capacity(maxInFlight);
    this.name = `file:${dir} (${dataset})`;
  }

  /** The sample ids labels.json lists. */
  ids(): string[] {
    return [...this.#labels.keys()];
  }

  fetch(id: string, done: FetchCallback): boolean {
    this.#queue.push([id, done]);
    const more = this.#cap.take();
    this.#next();
    return more;
  }

  #next(): void {
    while (this.#reading < this.#concurrency && this.#queue.length > 0) {
      const [id, done] = this.#queue.shift()!;
      this.#reading++;
      this.#read(id).then(
        (data) => this.#finish(done, null, { id, label: this.#labels.get(id)!, data, conn: "file" }),
        (err) => this.#finish(done, err),
      );
    }
  }

  async #read(id: string): Promise<Uint8Array> {
    if (this.#closed) throw storeError("ERR_INVALID_OPTION", `Cannot read sample ${id}: ${this.name} is closed`, false);
    if (!this.#labels.has(id)) {
      throw storeError("ERR_STORE", `Cannot find sample ${id} of dataset '${this.dataset}' in file:${this.#dir}: it is not in ${LABELS_FILE}`, false);
    }
    const path = join(this.#dir, id);
    try {
      return await runtime.readFile(path);
    } catch (e) {
      if (isNotFound(e)) {
        throw storeError("ERR_STORE", `Cannot find sample ${id} of dataset '${this.dataset}' in file:${this.#dir}: ${path} does not exist`, false);
      }
      // EIO, EMFILE, a stale network mount: the next read may work.
      throw storeError("ERR_STORE_UNREACHABLE", `Cannot read ${path}: ${(e as Error).message}`, true, { cause: e });
    }
  }

  #finish(done: FetchCallback, err: Error | null, s?: Parameters<FetchCallback>[1]): void {
    this.#reading--;
    this.#cap.release();
    this.#next();
    done(err, s);
  }

  onDrain(listener: () => void): void {
    this.#cap.onDrain(listener);
  }
  inFlight(): number {
    return this.#cap.inFlight;
  }
  close(): Promise<void> {
    this.#closed = true;
    return Promise.resolve();
  }
}

/** A missing file, as each runtime reports it (Node and Bun: code ENOENT; Deno: NotFound). */
function isNotFound(e: unknown): boolean {
  const err = e as { code?: string; name?: string };
  return err?.code === "ENOENT" || err?.name === "NotFound";
}
