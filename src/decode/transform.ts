/**
 * Per-sample CPU transforms that run where the decoding runs (a decode or read worker), given
 * as a module rather than a closure: a closure cannot move to another thread, a module can be
 * imported by each worker. A transform module exports
 *
 *   export function transform(sample: TransformInput, options: unknown, ctx: TransformContext): Image | Promise<Image>
 *
 * and its result becomes the sample's `image`. `options` are the plain data given next to the
 * module's address (structured-cloned to each worker). Use a module for CPU-bound work
 * (crops, resizes, augmentations: they leave the training thread, and a slow one is put in the
 * slow lane, src/decode/pool.ts); a closure (`Loader({ transform: (s) => … })`) stays on the
 * loader's thread and suits work that awaits (a lookup) or is cheap.
 */
import { CassetteError } from "../errors.ts";
import type { DecodeOptions, Decoder, Image } from "./decoder.ts";
import { rng } from "../plan/rng.ts";

/** A transform given by module: the address of a module exporting `transform`, and its options. */
export interface TransformModule {
  /** Path (relative to the working directory) or URL (file:, https: where the runtime imports them) of the module. */
  module: string | URL;
  /** Plain data (structured-cloneable) handed to every call. */
  options?: unknown;
}

/** What a module transform is given: the sample as read, with its pixels when the read path decodes. */
export interface TransformInput {
  /** The sample's id. */
  id: string;
  /** The sample's label (the class; -1 where it has none). */
  label: number;
  /** The stored bytes (e.g. the JPEG). */
  data: Uint8Array;
  /** The decoded pixels, when the loader's `decode` is on. */
  image?: Image;
}

/** What the worker offers a transform. */
export interface TransformContext {
  /** The worker's own decoder (for a transform that decodes itself, e.g. at a scale chosen per sample). */
  decode(bytes: Uint8Array, options?: DecodeOptions): Image;
  /** Uniform in [0, 1): the worker's generator for augmentations. */
  random(): number;
}

/** A transform module's `transform` export: takes a sample (bytes, and pixels when decoded), the options, and the worker's context; returns the image to train on. */
export type TransformFn = (sample: TransformInput, options: unknown, ctx: TransformContext) => Image | Promise<Image>;

/** True for a `{ module, options }` transform (not a closure). */
export function isTransformModule(x: unknown): x is TransformModule {
  return typeof x === "object" && x !== null && "module" in x;
}

/** The module's address as a URL a worker can import: a path is taken from the working directory. */
export function transformUrl(t: TransformModule, cwd: string): string {
  const m = t.module;
  if (m instanceof URL) return m.href;
  if (typeof m !== "string" || m === "") {
    throw new CassetteError("ERR_INVALID_OPTION", `Cannot load a transform as 'module' must be a path or URL: current value is ${String(m)}`);
  }
  if (/^[a-z][a-z0-9+.-]*:/i.test(m) && !/^[a-z]:[\\/]/i.test(m)) return m;
  return new URL(m, `file://${cwd.endsWith("/") ? cwd : cwd + "/"}`).href;
}

/** Imports a transform module and checks that it exports `transform`, naming the module when not. */
export async function loadTransform(url: string): Promise<TransformFn> {
  let mod: Record<string, unknown>;
  try {
    // Dynamic by design: the module is the user's, named at run time by `transform.module`
    // (deno publish warns it cannot analyze this import; there is nothing in the package to rewrite).
    mod = await import(url);
  } catch (e) {
    throw new CassetteError("ERR_INVALID_OPTION", `Cannot load the transform module ${url}: ${(e as Error)?.message ?? e}`, { cause: e });
  }
  const fn = mod.transform ?? (mod.default as Record<string, unknown> | undefined)?.transform ?? mod.default;
  if (typeof fn !== "function") {
    throw new CassetteError("ERR_INVALID_OPTION", `Cannot use the transform module ${url} as it exports no function 'transform' (exports: ${Object.keys(mod).join(", ") || "none"})`);
  }
  return fn as TransformFn;
}

/** The image a transform answered, checked: a wrong shape is named with the sample. */
export function checkTransformed(x: unknown, id: string, url: string): Image {
  const i = x as Image;
  const ok = i && typeof i === "object" && Number.isInteger(i.width) && Number.isInteger(i.height) && i.width > 0 && i.height > 0 &&
    [1, 2, 3, 4].includes(i.channels) && i.data instanceof Uint8Array && i.data.length === i.width * i.height * i.channels;
  if (!ok) {
    throw new CassetteError("ERR_MALFORMED_INPUT", `The transform ${url} answered for sample ${id} something that is not an image ({ width, height, channels 1…4, data: Uint8Array of width × height × channels })`);
  }
  return { ...i, orientation: i.orientation ?? 1 };
}

/** A transform loaded in this thread, ready to run on each sample (DecodeSource without a pool, a read worker). */
export interface LoadedTransform {
  fn: TransformFn;
  url: string;
  options?: unknown;
  ctx: TransformContext;
}

/** Loads `url` here, with `decoder` for its ctx.decode and a generator seeded by `seed`. */
export async function loadTransformHere(url: string, options: unknown, decoder: Decoder, seed = 0): Promise<LoadedTransform> {
  const r = rng(seed, 0x7fff);
  return { fn: await loadTransform(url), url, options, ctx: { decode: (b, o) => decoder.decode(b, o), random: () => r.next() } };
}
