/**
 * Reads the idx format of (Fashion-)MNIST (http://yann.lecun.com/exdb/mnist/): a big-endian
 * header (magic 0x0000080D, D dimensions, then D u32 sizes) and u8 data. `.gz` files are
 * gunzipped first. Debian's dataset-fashion-mnist puts them in /usr/share/datasets/fashion-mnist.
 */
import { gunzipSync } from "node:zlib";
import { runtime } from "../../runtime-adapters/index.ts";
import { CassetteError } from "../errors.ts";

export interface IdxArray {
  /** Sizes of each dimension, e.g. [60000, 28, 28]. */
  shape: number[];
  data: Uint8Array;
}

/** Parses an idx file's bytes (u8 data only, the type every MNIST file uses). */
export function parseIdx(bytes: Uint8Array, where = "idx"): IdxArray {
  if (bytes.length >= 2 && bytes[0] === 0x1f && bytes[1] === 0x8b) bytes = new Uint8Array(gunzipSync(bytes));
  if (bytes.length < 4 || bytes[0] !== 0 || bytes[1] !== 0) {
    throw new CassetteError("ERR_MALFORMED_INPUT", `Cannot read ${where} as it does not start with an idx magic number (0x0000TTDD) at offset 0`);
  }
  if (bytes[2] !== 0x08) {
    throw new CassetteError("ERR_UNSUPPORTED", `Cannot read ${where} as its element type 0x${bytes[2].toString(16)} is not u8 (0x08)`);
  }
  const dims = bytes[3];
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  if (dims === 0 || bytes.length < 4 + 4 * dims) {
    throw new CassetteError("ERR_MALFORMED_INPUT", `Cannot read ${where} as its header of ${dims} dimensions is truncated (file is ${bytes.length} bytes)`);
  }
  const shape = Array.from({ length: dims }, (_, i) => view.getUint32(4 + 4 * i));
  const size = shape.reduce((a, b) => a * b, 1);
  const start = 4 + 4 * dims;
  if (bytes.length - start !== size) {
    throw new CassetteError(
      "ERR_MALFORMED_INPUT",
      `Cannot read ${where} as shape [${shape}] needs ${size} data bytes after offset ${start}: the file has ${bytes.length - start}`,
    );
  }
  return { shape, data: bytes.subarray(start) };
}

export interface IdxSplit {
  /** "train" or "t10k": the key prefix of each sample (`train/INDEX`). */
  name: string;
  count: number;
  height: number;
  width: number;
  /** count × height × width grey bytes. */
  images: Uint8Array;
  labels: Uint8Array;
}

/** Reads `PREFIX{train,t10k}-{images-idx3,labels-idx1}-ubyte[.gz]` pairs that exist. */
export async function readIdxDataset(prefix: string): Promise<IdxSplit[]> {
  const splits: IdxSplit[] = [];
  for (const name of ["train", "t10k"]) {
    const images = await readFirst([`${prefix}${name}-images-idx3-ubyte.gz`, `${prefix}${name}-images-idx3-ubyte`]);
    const labels = await readFirst([`${prefix}${name}-labels-idx1-ubyte.gz`, `${prefix}${name}-labels-idx1-ubyte`]);
    if (!images || !labels) continue;
    const im = parseIdx(images.bytes, images.path);
    const lb = parseIdx(labels.bytes, labels.path);
    if (im.shape.length !== 3 || lb.shape.length !== 1 || im.shape[0] !== lb.shape[0]) {
      throw new CassetteError(
        "ERR_MALFORMED_INPUT",
        `Cannot pair ${images.path} (shape [${im.shape}]) with ${labels.path} (shape [${lb.shape}]): counts differ or shapes are not [N,H,W] and [N]`,
      );
    }
    splits.push({ name, count: im.shape[0], height: im.shape[1], width: im.shape[2], images: im.data, labels: lb.data });
  }
  if (splits.length === 0) {
    throw new CassetteError("ERR_INVALID_OPTION", `Cannot find idx files at '${prefix}': expected ${prefix}train-images-idx3-ubyte.gz and its labels`);
  }
  return splits;
}

async function readFirst(paths: string[]): Promise<{ path: string; bytes: Uint8Array } | undefined> {
  for (const path of paths) {
    try {
      return { path, bytes: await runtime.readFile(path) };
    } catch {
      // try the next spelling
    }
  }
  return undefined;
}
