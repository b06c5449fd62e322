/** `cassette ingest SOURCE --store URL --dataset NAME`: samples from a source into a store. */
// Bun answers a bare "undici" with its own stub (oven-sh/bun#12773): the file path reaches the
// installed package in every runtime, as src/source/http/http.ts does.
import undici from "undici/index.js";
import { CassetteError } from "../errors.ts";
import { S3Client } from "../source/http/s3.ts";
import { ingest, type IngestSummary } from "../dataset/ingest.ts";
import { checkDatasetName } from "../dataset/spec.ts";
import { createAutoDecoder } from "../decode/decoders.ts";
import { openStore } from "../source/open.ts";
import { parseStoreAddress } from "../source/kinds.ts";
import { progress } from "../observe/progress.ts";
import { runtime } from "../../runtime-adapters/index.ts";
import { intOption, listOption, parseArgs, required, usageError } from "./args.ts";
import { readBoundedBody } from "../util/bounded_body.ts";
import { stopOnCtrlC } from "../util/ctrl_c.ts";

/** Sources with at most this many files are decoded in full at ingest unless --no-verify. */
const VERIFY_UP_TO = 10_000;
/** The largest file fetched for a manifest's http(s):// path, and a shard entry: 256 MiB. */
const MAX_FILE_BYTES = 256 * 1024 * 1024;

export const help = `usage: cassette ingest SOURCE --store URL --dataset NAME [options]

SOURCE is one of:
  DIR                  an ImageFolder: DIR/<class>/<image>.jpg|.png (label = class index, the
                       class folders in sorted order; the names are stored with the dataset
                       as its label map: cassette info --json shows spec.label.classes)
  SHARD.tar            a WebDataset shard; also DIR holding .tar files and no sub-folder
  'PREFIX-{000000..000009}.tar'   shards by a brace pattern as webdataset writes them
                       (quote it, or the shell expands it into several arguments)
  idx:PATH-PREFIX      (Fashion-)MNIST idx files, e.g. idx:/usr/share/datasets/fashion-mnist/
                       (each image is encoded to JPEG with jpeg-js at --quality)
  FILE.jsonl|FILE.csv  a manifest: 'path' (relative to the manifest, an http(s):// URL, or
                       s3://BUCKET/KEY[?endpoint=…] with the credentials cassette reads
                       buckets with), 'label' (int or class name; in JSONL also a list:
                       class numbers or names for several classes a sample, or numbers
                       with a fraction for a float vector) or 'mask' (a PNG or JPEG path,
                       read like 'path': the label is that image), optional 'key', and
                       any metadata columns (e.g. patient_id)

Shards: entries group into samples by webdataset's key rule (the path up to the first dot
of its basename; consecutive entries with one key are one sample). A sample's key is its
__key__ (unique across the shards: a repeated key is a bad entry, the first one kept), its
image its .jpg/.jpeg/.png, its label .cls (or .cls2, the .json's "label" or "cls", an integer
.txt); .json "class" names the label. Other entries are ignored; a corrupt shard is listed
with the byte offset where it breaks, and the samples wholly before that point are kept.

Samples are written atomically and keyed by sampleId(NAME, KEY): a re-run skips what is
stored and resumes an interrupted ingest. Bad files are not stored: each is listed at the
end with its path and why, and the exit status is 1 (--strict stops at the first instead).

Every file's header is checked. With --verify each JPEG and PNG is also decoded in full, so
corrupt data is found now, not by the epoch that first reads it; this is the default when the
source has at most ${VERIFY_UP_TO} files (--no-verify turns it off). A file that does not decode is
a bad file: not stored, and listed with the decoder's reason and byte offset.

Ctrl-C stops after the samples being written, says how many are stored and where, and exits
with status 130. Run the same command again to resume: stored samples are skipped.

  --store URL          sqlite:PATH or cassandra://[user:pass@]host[,host…][:port]/KEYSPACE
  --dataset NAME       dataset name (letters, digits, . - _)
  --group-by COL,…     columns that group samples (metadata_by_nat's partition key)
  --replication R      a keyspace cassette makes: replication factor R (SimpleStrategy) or a
                       CQL map, e.g. "{'class': 'NetworkTopologyStrategy', 'dc1': 3}";
                       default min(3, the cluster's nodes); a keyspace there keeps its own
  --quality Q          JPEG quality for idx sources (default 90)
  --limit N            only the first N items (per idx split)
  --max-entry-bytes N  the largest shard entry or fetched URL (default ${MAX_FILE_BYTES})
  --label-kind K       a manifest's label kind where its values alone do not say: int, ints,
                       floats (e.g. lists of whole numbers that are a vector) or blob
  --strict             stop at the first bad file instead of skipping it
  --verify             decode every JPEG and PNG in full before storing it (whatever the count)
  --no-verify          check headers only, even for a small source
  --json               print one JSON document: the summary
Credentials may also come from CASSETTE_CASSANDRA_USER / CASSETTE_CASSANDRA_PASSWORD.`;

export async function run(argv: string[]): Promise<number> {
  const buckets = new Buckets();
  const { positional, options } = parseArgs(argv, "ingest", ["store", "dataset", "group-by", "quality", "limit", "replication", "max-entry-bytes", "label-kind"], ["strict", "verify", "no-verify"]);
  if (options.has("help")) return void console.log(help), 0;
  const [source, extra] = positional;
  if (!source) usageError("ingest", "needs a SOURCE");
  if (extra) {
    const shards = /\.tar$/i.test(source) ? " (for several shards, quote a brace pattern such as 'PREFIX-{000000..000009}.tar', or give their folder)" : "";
    usageError("ingest", `takes one SOURCE: got also '${extra}'${shards}`);
  }
  if (options.has("verify") && options.has("no-verify")) usageError("ingest", "takes --verify or --no-verify, not both");
  const json = options.has("json");
  // Checked before the store is opened: a refused name left an empty store file behind.
  const dataset = checkDatasetName(required(options, "ingest", "dataset"));
  const address = required(options, "ingest", "store");
  const replication = replicationOption(options.get("replication") as string | undefined, address);
  const decoder = options.has("no-verify") ? undefined : await createAutoDecoder();
  const labelKind = options.get("label-kind") as string | undefined;
  if (labelKind !== undefined && !["int", "ints", "floats", "blob"].includes(labelKind)) usageError("ingest", `--label-kind must be int, ints, floats or blob: current value is ${labelKind}`);
  const maxBytes = intOption(options, "ingest", "max-entry-bytes") ?? MAX_FILE_BYTES;
  if (!(maxBytes > 0)) usageError("ingest", `--max-entry-bytes must be a positive integer: current value is ${maxBytes}`);
  const store = await openStore(address, { cassandra: { replication } });
  const http = new undici.Agent().compose(undici.interceptors.redirect({ maxRedirections: 3 }));
  // Ctrl-C: the first stops the ingest after the samples being written, which then says what
  // is stored; a second exits at once (each stored sample is whole either way).
  const stop = stopOnCtrlC(store.address);
  try {
    let bar: ReturnType<typeof progress> | undefined;
    const summary = await ingest(store, source, {
      dataset,
      groupBy: listOption(options, "group-by"),
      quality: intOption(options, "ingest", "quality"),
      limit: intOption(options, "ingest", "limit"),
      strict: options.has("strict"),
      labelKind: labelKind as "int" | "ints" | "floats" | "blob" | undefined,
      // A reduced (1/8) decode entropy-decodes every block, where corruption shows, and skips
      // most of the IDCT and colour work; any size, as a reader may raise maxPixels.
      verify: decoder && { format: decoder.format, decode: (b) => decoder.decode(b, { scale: 0.125, maxPixels: Infinity }) },
      verifyUpTo: options.has("verify") ? Infinity : VERIFY_UP_TO,
      signal: stop.signal,
      maxEntryBytes: maxBytes,
      fetchUrl: (url) => (url.startsWith("s3://") ? buckets.get(url, maxBytes) : fetchUrl(http, url, maxBytes)),
      onProgress: (p) => {
        bar ??= progress("ingest", p.total, json, runtime.now() - p.seconds * 1000);
        bar.update(p.done, `${p.written} new, ${p.existing} stored, ${p.errors} bad, ${(p.bytes / 1e6).toFixed(1)} MB`);
      },
    });
    if (!summary.interrupted) bar?.done();
    if (summary.interrupted) interrupted(summary, store.address);
    if (json) console.log(JSON.stringify({ ...summary, store: store.address }));
    else {
      console.log(`dataset ${summary.dataset} in ${store.address}: ${summary.written} written, ${summary.existing} already stored, ${summary.errors.length} skipped`);
      console.log(`  ${(summary.bytes / 1e6).toFixed(1)} MB in ${summary.seconds.toFixed(1)} s (${(summary.written / Math.max(summary.seconds, 1e-9)).toFixed(0)} samples/s)`);
      const labels = Object.entries(summary.perLabel);
      if (labels.length) console.log(`  per label: ${labels.map(([l, n]) => `${l}:${n}`).join(" ")}`);
      if (summary.verified) console.log("  each file written was decoded in full first (--verify)");
      else if (decoder && summary.written) console.log(`  headers checked, files not decoded: ${summary.total} is over ${VERIFY_UP_TO} (--verify decodes each)`);
      for (const e of summary.errors.slice(0, 20)) console.log(`  skipped ${e.path ?? e.key}: ${e.reason}`);
      if (summary.errors.length > 20) console.log(`  … and ${summary.errors.length - 20} more (--json lists all)`);
    }
    return summary.interrupted ? 130 : summary.errors.length ? 1 : 0;
  } finally {
    stop.dispose();
    decoder?.close();
    await http.close();
    await buckets.close();
    await store.close();
  }
}

/**
 * GETs `url` (a manifest's http(s):// path) with undici: a 2xx body of at most `max` bytes,
 * redirects followed (3 at most); anything else throws, and the row is a bad file.
 */
async function fetchUrl(agent: InstanceType<typeof undici.Dispatcher>, url: string, max: number): Promise<Uint8Array> {
  const res = await undici.request(url, { dispatcher: agent, headersTimeout: 30_000, bodyTimeout: 30_000 });
  if (res.statusCode < 200 || res.statusCode >= 300) {
    await res.body.dump().catch(() => {});
    throw new Error(`GET ${url} answered ${res.statusCode}`);
  }
  return readBoundedBody(res.body, Number(res.headers["content-length"]), max, (why) =>
    new CassetteError("ERR_TOO_LARGE", `Cannot read ${url} as ${why}: more than ${max} (--max-entry-bytes)`));
}

/** --replication: a factor or a CQL map, for a cassandra:// store only. */
function replicationOption(r: string | undefined, address: string): string | number | undefined {
  if (r === undefined) return undefined;
  if (parseStoreAddress(address).kind !== "cassandra") usageError("ingest", `Cannot use --replication ${r} as the store is not Cassandra: it sets a keyspace's replication (cassandra://…)`);
  if (/^[1-9][0-9]*$/.test(r)) return Number(r);
  if (/^\{.*\}$/s.test(r.trim())) return r.trim();
  usageError("ingest", `Cannot use --replication ${r}: it takes a replication factor (e.g. 3) or a CQL map ({'class': …})`);
}

/** What an interrupted ingest leaves, and how to go on (stderr: stdout may be --json); train.ts says it too. */
export function interrupted(s: IngestSummary, address: string): void {
  const seen = s.written + s.existing + s.errors.length;
  const bad = s.errors.length ? `, ${s.errors.length} bad and not stored` : "";
  console.error(`\ningest interrupted after ${seen} of the ${s.total} samples of dataset '${s.dataset}': ` +
    `${s.written + s.existing} are in ${address} (${s.written} written by this run, ${s.existing} stored before${bad}), each one whole; the other ${s.total - seen} were not reached.`);
  console.error("Run the same command again to resume: stored samples are skipped (ids are UUIDv5 of dataset and key), none is written twice.");
}

/**
 * A manifest's s3:// paths, read with one S3Client per bucket and its options (the query, e.g.
 * ?endpoint=…), made on first use: `s3://BUCKET/KEY` is KEY in BUCKET.
 */
class Buckets {
  readonly #clients = new Map<string, Promise<S3Client>>();
  async get(url: string, max: number): Promise<Uint8Array> {
    const m = /^s3:\/\/([^/?#]+)\/([^?#]+)(\?[^#]*)?$/.exec(url);
    if (!m) throw new CassetteError("ERR_INVALID_OPTION", `Cannot read ${url} as it is not s3://BUCKET/KEY`);
    const [, bucket, key, query = ""] = m;
    const at = `s3://${bucket}${query}`;
    let client = this.#clients.get(at);
    if (!client) this.#clients.set(at, client = S3Client.open(at));
    const data = await (await client).get(decodeURIComponent(key), max);
    if (data === undefined) throw new CassetteError("ERR_STORE", `Cannot read ${url} as there is no such object`);
    return data;
  }
  async close(): Promise<void> {
    for (const c of this.#clients.values()) await c.then((x) => x.close(), () => {});
  }
}
