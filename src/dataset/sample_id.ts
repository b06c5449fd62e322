/**
 * Portable sample ids: the UUIDv5 (RFC 9562 §5.5) of `DATASET/KEY` under cassette's namespace.
 * The same dataset and key give the same id on every machine and in every store, so ingesting
 * twice never duplicates a sample ("Scaling DL data management with Cassandra DB" (IEEE BigData
 * 2021), §3.2).
 */
import { createHash } from "node:crypto";
import { CassetteError } from "../errors.ts";

/** cassette's namespace: UUIDv5(URL namespace, "https://github.com/cassette-loader/cassette#sample-id"). */
export const SAMPLE_NAMESPACE = "7817fee2-018a-55c3-9a1e-8a4f57e9ff97";

/** UUIDv5 of `name` under `namespace` (both as text), lower-case canonical form. */
export function uuidv5(namespace: string, name: string): string {
  const hex = namespace.replace(/-/g, "");
  if (!/^[0-9a-fA-F]{32}$/.test(hex)) {
    throw new CassetteError("ERR_INVALID_OPTION", `Cannot make a UUIDv5 as the namespace is not a UUID: current value is '${namespace}'`);
  }
  const ns = new Uint8Array(16);
  for (let i = 0; i < 16; i++) ns[i] = parseInt(hex.slice(2 * i, 2 * i + 2), 16);
  const h = createHash("sha1").update(ns).update(new TextEncoder().encode(name)).digest();
  h[6] = (h[6] & 0x0f) | 0x50; // version 5
  h[8] = (h[8] & 0x3f) | 0x80; // RFC variant
  const x = Array.from(h.subarray(0, 16), (b) => b.toString(16).padStart(2, "0")).join("");
  return `${x.slice(0, 8)}-${x.slice(8, 12)}-${x.slice(12, 16)}-${x.slice(16, 20)}-${x.slice(20)}`;
}

/**
 * The id of sample `key` in `dataset`. KEY is a manifest's `key` column, else the file's path
 * relative to the ingested folder, or `train/INDEX` / `t10k/INDEX` for idx files.
 *
 * @example
 * ```ts
 * import { sampleId } from "cassette";
 * console.log(sampleId("fashion-mnist", "train/0")); // 6ceecba5-6052-5b9e-9e8a-368b24047c2e (on every machine)
 * ```
 */
export function sampleId(dataset: string, key: string): string {
  if (!dataset || dataset.includes("/")) {
    throw new CassetteError("ERR_INVALID_OPTION", `Cannot make a sample id as the dataset name must be non-empty without '/': current value is '${dataset}'`);
  }
  if (!key) throw new CassetteError("ERR_INVALID_OPTION", `Cannot make a sample id in dataset '${dataset}' as the key is empty`);
  return uuidv5(SAMPLE_NAMESPACE, `${dataset}/${key}`);
}
