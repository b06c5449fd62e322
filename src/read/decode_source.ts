/**
 * Decoding where the sample is read: a Source → Source wrapper (cross-cutting behaviour wraps a
 * Source, so a store file holds only its protocol) that decodes each answer's bytes as it
 * arrives, with any Decoder (src/decode/decoder.ts), and hands it on with `image` set. In a read worker
 * (src/read/worker_source.ts) this puts the decode on the worker's thread beside the fetch,
 * so the loader's thread gets pixels; in the loader's own thread it is the same as decoding in
 * the loader's transform. A file that does not decode is an error naming the sample, not
 * worth asking again (the bytes would be the same): by its key (the path or manifest key it
 * was ingested from) where the source can look it up by id, and its id. The key is not
 * fetched with the bytes (the data table has none); it is asked for on this rare path only.
 *
 * @example
 * ```ts
 * import { DecodeSource } from "./decode_source.ts";
 * import { openReadSource } from "./open.ts";
 * import { openStore } from "../source/open.ts";
 * import { ingest } from "../dataset/ingest.ts";
 * import { createJpegDecoder } from "../decode/jpeg.ts";
 * const store = await openStore("sqlite:.tmp/decode-source-example.sqlite");
 * await ingest(store, "idx:/usr/share/datasets/fashion-mnist/", { dataset: "fm", limit: 2 });
 * const [page] = await Array.fromAsync(store.scanNat("fm"));
 * await store.close();
 * const source = new DecodeSource(await openReadSource("sqlite:.tmp/decode-source-example.sqlite", "fm"), await createJpegDecoder());
 * const s = await new Promise<any>((resolve, reject) => source.fetch(page[0].id, (e, s) => (e ? reject(e) : resolve(s))));
 * console.log(s.image.width, s.image.height, s.image.channels); // 28 28 1
 * await source.close();
 * ```
 */
import { type AsyncDecoder, checkDecodeOptions, type DecodeOptions, type Decoder, type Image } from "../decode/decoder.ts";
import { CassetteError, type ErrorCode } from "../errors.ts";
import type { Retryable } from "../source/retryable.ts";
import type { FetchCallback, Source } from "../source/source.ts";
import type { ReadSource, Sample } from "./sample.ts";

/**
 * A source that can name a sample's key by its id (the SQLite and Cassandra stores, from
 * metadata_by_uuid); an export (file:, http(s)://) holds ids only.
 */
export interface KeyedSource {
  keyOf(id: string): Promise<string | undefined>;
}

/**
 * A sample whose bytes do not decode: `id`, `key` where the source knows it, and the
 * decoder's error as `cause` (a JpegError: `reason`, `offset`). Its code is the cause's
 * (ERR_MALFORMED_INPUT, or ERR_UNSUPPORTED for a JPEG process the decoder does not read).
 */
export class SampleDecodeError extends CassetteError implements Retryable {
  readonly id: string;
  readonly key?: string;
  readonly retryable = false;
  constructor(id: string, key: string | undefined, source: string, cause: unknown) {
    const why = cause instanceof Error ? cause.message : String(cause);
    const code: ErrorCode = cause instanceof CassetteError && cause.code === "ERR_UNSUPPORTED" ? "ERR_UNSUPPORTED" : "ERR_MALFORMED_INPUT";
    super(code, `Cannot decode sample ${key === undefined ? id : `'${key}' (id ${id})`} from ${source}: ${why}`, { cause });
    this.name = "SampleDecodeError";
    this.id = id;
    if (key !== undefined) this.key = key;
  }
}

export class DecodeSource implements ReadSource {
  readonly #inner: Source;
  readonly #decoder: Decoder | AsyncDecoder;
  readonly #options?: DecodeOptions;
  readonly #async: boolean;
  readonly ids?: () => string[] | Promise<string[]>;

  /** `decoder`: one here (decodes as each answer arrives), or a decode pool (answers when its worker has). */
  constructor(inner: Source, decoder: Decoder | AsyncDecoder, options?: DecodeOptions) {
    this.#inner = inner;
    if (inner.ids) this.ids = () => inner.ids!();
    this.#decoder = decoder;
    if (options) checkDecodeOptions(options); // named once here, not as every sample's error
    this.#options = options;
    this.#async = "async" in decoder;
  }
  get name(): string {
    return this.#inner.name;
  }
  get dataset(): string | undefined {
    return this.#inner.dataset;
  }

  fetch(id: string, done: FetchCallback<Sample>): boolean {
    return this.#inner.fetch(id, (err, s) => {
      if (err || !s) return done(err ?? new Error(`no answer for ${id}`));
      const failed = (e: unknown) => {
        const keyed = this.#inner as Partial<KeyedSource>;
        if (typeof keyed.keyOf !== "function") return done(new SampleDecodeError(id, undefined, this.name, e));
        // A lookup that fails leaves the id alone to name the sample: the decode error is the news.
        keyed.keyOf(id).catch(() => undefined).then((key) => done(new SampleDecodeError(id, key, this.name, e)));
      };
      let image: Image | Promise<Image>;
      try {
        // A pool takes the bytes' buffer away (transferred to its worker): it gets a copy, and
        // the sample keeps its bytes.
        image = this.#decoder.decode(this.#async ? s.data.slice() : s.data, this.#options);
      } catch (e) {
        return failed(e);
      }
      if (image instanceof Promise) image.then((image) => done(null, { ...s, image }), failed);
      else done(null, { ...s, image });
    });
  }
  onDrain(listener: () => void): void {
    this.#inner.onDrain(listener);
  }
  inFlight(): number {
    return this.#inner.inFlight();
  }
  close(): Promise<void> {
    this.#decoder.close();
    return this.#inner.close();
  }
}
