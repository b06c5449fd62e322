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
import { checkDataset, LABELS_FILE, parseLabels } from "./layout.ts";

export { checkDataset, formatLabels, isObjectName, LABELS_FILE, LABELS_FORMAT, type LabelsFile, parseLabels, PART_PREFIX } from "./layout.ts";

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
