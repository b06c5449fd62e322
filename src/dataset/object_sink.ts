/**
 * Where an export's objects go: every write of `cassette export --format webdataset` goes
 * through `ObjectSink.put(name, bytes)`, which is atomic (the object is whole under its name
 * or absent). `folderSink(dir)` is the folder implementation: a temporary name, then a rename,
 * as `cassette export` writes its files. Another destination (an S3 bucket and prefix: a
 * single PUT, or a multipart upload completed at the end, is atomic in the same sense) is one
 * more implementation of this interface; nothing else in the export changes.
 */
import { mkdir, open, readdir, rename, rm } from "node:fs/promises";
import { join } from "node:path";
import { runtime } from "../../runtime-adapters/index.ts";
import { CassetteError } from "../errors.ts";

/** Prefix of temporary files: the same as src/source/files/file.ts's PART_PREFIX (never a final name). */
export const PART_PREFIX = ".cassette-part-";

/** Where an export's objects go: a folder or an S3 bucket, each object written whole or not at all. */
export interface ObjectSink {
  /** Where it writes, for messages (`DIR`, later `s3://BUCKET/PREFIX`). */
  readonly where: string;
  /** Names of the complete objects there (temporary parts are never listed). */
  list(): Promise<string[]>;
  /** An object's bytes in chunks (a resumed export checks what a shard already holds). */
  read(name: string): AsyncIterable<Uint8Array>;
  /** Writes `data` as `name`, atomically: a reader sees the whole object or none. */
  put(name: string, data: Uint8Array): Promise<void>;
}

/**
 * `dir` as an ObjectSink (made when missing). Parts left by an interrupted run are removed:
 * one writer per folder at a time.
 */
export async function folderSink(dir: string): Promise<ObjectSink> {
  await mkdir(dir, { recursive: true });
  const names = await readdir(dir);
  await Promise.all(names.filter((n) => n.startsWith(PART_PREFIX)).map((n) => rm(join(dir, n), { force: true })));
  return {
    where: dir,
    list: async () => (await readdir(dir)).filter((n) => !n.startsWith(PART_PREFIX)),
    read: (name) => readChunks(join(dir, name)),
    put: async (name, data) => {
      const part = join(dir, `${PART_PREFIX}${name}-${Math.random().toString(36).slice(2, 10)}`);
      try {
        await runtime.writeFile(part, data);
        await rename(part, join(dir, name));
      } catch (e) {
        await rm(part, { force: true }).catch(() => {});
        throw new CassetteError("ERR_RUNTIME", `Cannot write ${join(dir, name)}: ${(e as Error).message}`, { cause: e });
      }
    },
  };
}

/** A file's bytes in chunks of `chunk` bytes (1 MiB), one buffer at a time. */
export async function* readChunks(path: string, chunk = 1 << 20): AsyncGenerator<Uint8Array> {
  const f = await open(path, "r");
  try {
    for (;;) {
      const buf = new Uint8Array(chunk);
      const { bytesRead } = await f.read(buf, 0, chunk, null);
      if (bytesRead === 0) return;
      yield bytesRead === chunk ? buf : buf.subarray(0, bytesRead);
    }
  } finally {
    await f.close();
  }
}
