/**
 * Labels beyond one integer: what a dataset's spec says its label is, how a label given at
 * ingest is checked and stored, and what a reader gets back.
 *
 *   kind     given at ingest (SampleInput.label)        data table's label column   a reader's Fetched
 *   int      a non-negative integer                     INTEGER / int               label
 *   ints     class numbers (multi-label), any order     BLOB / list<int>            label = smallest (-1: none),
 *                                                                                   target = multi-hot f32 × classes
 *   floats   `length` finite numbers                    BLOB / list<float>          label = -1, target = f32 × length
 *   blob     bytes (a PNG or JPEG mask, say)            BLOB / blob                 label = -1, target = the bytes
 *
 * SQLite's BLOBs hold ints as int32 and floats as float32, little-endian; Cassandra's columns
 * are its own list types, so cqlsh shows them. The metadata tables (by_uuid, by_nat) keep an
 * integer `label`: the class above, which splits balance on. A blob label is decoded by the
 * read path with the image's decoder (Sample.mask) and cropped and flipped with the image on the
 * GPU (src/gpu/preprocess.ts), the way cassandra-dali-plugin stores segmentation masks.
 */
import { CassetteError } from "../errors.ts";

/** The kind of label a dataset's samples carry: one class, several classes, a float vector, or a blob such as a mask. */
export type LabelSpec =
  /** One class per sample; `classes[i]` names class i when known. */
  | { kind: "int"; classes?: string[] }
  /** Several classes per sample (multi-label); `classes` names them all, and counts them. */
  | { kind: "ints"; classes: string[] }
  /** A vector of `length` floats per sample (regression targets, soft labels). */
  | { kind: "floats"; length: number }
  /** Bytes per sample: a mask image (PNG or JPEG) the read path decodes with the image. */
  | { kind: "blob" };

/** What a sample's label may be given as, by kind. */
export type LabelValue = number | readonly number[] | Float32Array | Uint8Array;

/** A label as the data table holds it: an integer, a list (Cassandra), or bytes. */
export type StoredLabel = number | readonly number[] | Uint8Array;

/** Checks `label` (in a spec); errors name what is wrong. */
export function checkLabelSpec(label: LabelSpec | undefined, bad: (why: string) => never): void {
  const kind = (label as { kind?: unknown } | undefined)?.kind;
  if (kind === "int") return void checkClasses(label as { classes?: unknown }, false, bad);
  if (kind === "ints") return void checkClasses(label as { classes?: unknown }, true, bad);
  if (kind === "floats") {
    const n = (label as { length?: unknown }).length;
    if (!(Number.isInteger(n) && (n as number) >= 1 && (n as number) <= 65536)) bad(`its float label's 'length' must be an integer from 1 to 65536: current value is ${n}`);
    return;
  }
  if (kind === "blob") return;
  bad(`its label kind must be 'int', 'ints', 'floats' or 'blob': current value is ${JSON.stringify(kind)}`);
}

function checkClasses(l: { classes?: unknown }, required: boolean, bad: (why: string) => never): void {
  if (l.classes === undefined && !required) return;
  if (!Array.isArray(l.classes) || l.classes.some((c) => typeof c !== "string") || (required && l.classes.length === 0)) {
    bad(`its label's 'classes' must be ${required ? "a non-empty" : "an"} array of class names: current value is ${JSON.stringify(l.classes)?.slice(0, 80)}`);
  }
}

/**
 * The label to store for a sample given `value`, checked against the spec: the data table's
 * value (SQLite's form: an integer or bytes) and the class the metadata tables keep.
 */
export function storedLabel(spec: LabelSpec, value: LabelValue, where: string): { stored: number | Uint8Array; cls: number } {
  const bad = (why: string): never => {
    throw new CassetteError("ERR_INVALID_OPTION", `Cannot store ${where} as its label ${why}`);
  };
  const show = (v: unknown) => (ArrayBuffer.isView(v) ? `${v.constructor.name}(${(v as Uint8Array).length})` : JSON.stringify(v)?.slice(0, 80));
  switch (spec.kind) {
    case "int":
      if (typeof value !== "number" || !Number.isInteger(value) || value < 0 || value > 2 ** 31 - 1) {
        bad(`must be a non-negative 32-bit integer: current value is ${show(value)}`);
      }
      return { stored: value as number, cls: value as number };
    case "ints": {
      if (!Array.isArray(value) && !(value instanceof Int32Array)) bad(`must be a list of class numbers (kind 'ints'): current value is ${show(value)}`);
      const n = spec.classes.length;
      const list = [...new Set(Array.from(value as ArrayLike<number>))].sort((a, b) => a - b);
      for (const c of list) if (!(Number.isInteger(c) && c >= 0 && c < n)) bad(`must list classes from 0 to ${n - 1} (the dataset's ${n}): current value is ${show(value)}`);
      return { stored: new Uint8Array(Int32Array.from(list).buffer), cls: list.length ? list[0] : -1 };
    }
    case "floats": {
      if (!Array.isArray(value) && !(value instanceof Float32Array)) bad(`must be a list of ${spec.length} numbers (kind 'floats'): current value is ${show(value)}`);
      const v = value as ArrayLike<number>;
      if (v.length !== spec.length) bad(`must hold ${spec.length} numbers: current value has ${v.length}`);
      const f = Float32Array.from(v);
      for (let i = 0; i < f.length; i++) if (!Number.isFinite(f[i])) bad(`must hold finite 32-bit floats: value ${i} is ${v[i]}`);
      return { stored: new Uint8Array(f.buffer), cls: -1 };
    }
    case "blob":
      if (!(value instanceof Uint8Array) || value.length === 0) bad(`must be non-empty bytes (kind 'blob'): current value is ${show(value)}`);
      return { stored: value as Uint8Array, cls: -1 };
  }
}

/** Cassandra's value for a stored label: a list for ints and floats, the bytes for a blob. */
export function cqlLabel(spec: LabelSpec, stored: number | Uint8Array): number | number[] | Uint8Array {
  if (spec.kind === "ints") return Array.from(view(stored as Uint8Array, Int32Array));
  if (spec.kind === "floats") return Array.from(view(stored as Uint8Array, Float32Array));
  return stored;
}

/**
 * What a reader hands on for a stored label (either store's form): the class, and for the
 * other kinds the target (see the file's table). A value that does not fit the spec is
 * ERR_MALFORMED_INPUT naming `where` (a row written by something else).
 */
export function readLabel(spec: LabelSpec, stored: unknown, where: string): { label: number; target?: Float32Array | Uint8Array } {
  const bad = (why: string): never => {
    throw new CassetteError("ERR_MALFORMED_INPUT", `Cannot read the label of ${where} as ${why}`);
  };
  if (spec.kind === "int") {
    if (typeof stored !== "number") bad(`the dataset's labels are integers: current value is ${typeof stored}`);
    return { label: stored as number };
  }
  if (spec.kind === "blob") {
    if (!(stored instanceof Uint8Array)) bad(`the dataset's labels are bytes: current value is ${typeof stored}`);
    const b = stored as Uint8Array; // a plain view, as the sample's bytes (a driver answers Buffers)
    return { label: -1, target: new Uint8Array(b.buffer, b.byteOffset, b.byteLength) };
  }
  const list: ArrayLike<number> = stored instanceof Uint8Array
    ? (stored.length % 4 !== 0 ? bad(`its ${stored.length} bytes are not whole 32-bit values`) : spec.kind === "ints" ? view(stored, Int32Array) : view(stored, Float32Array))
    : Array.isArray(stored) ? stored : stored == null ? [] : bad(`the dataset's labels are lists: current value is ${typeof stored}`);
  if (spec.kind === "floats") {
    if (list.length !== spec.length) bad(`the dataset's float labels hold ${spec.length} values: this one holds ${list.length}`);
    return { label: -1, target: Float32Array.from(list) };
  }
  const n = spec.classes.length;
  const hot = new Float32Array(n);
  let first = -1;
  for (let i = 0; i < list.length; i++) {
    const c = list[i];
    if (!(Number.isInteger(c) && c >= 0 && c < n)) bad(`class ${c} is not one of the dataset's ${n}`);
    hot[c] = 1;
    if (first < 0 || c < first) first = c;
  }
  return { label: first, target: hot };
}

/** The class names of a dataset whose labels are classes (int, ints), when it names them. */
export function labelClasses(spec: LabelSpec): string[] | undefined {
  return spec.kind === "int" || spec.kind === "ints" ? spec.classes : undefined;
}

/** The class a label value counts under (ingest's per-label figures): see the file's table. */
export function labelClass(value: LabelValue): number {
  if (typeof value === "number") return value;
  if (Array.isArray(value) || value instanceof Int32Array) return value.length ? Math.min(...value) : -1;
  return -1;
}

/** The width of a reader's float target (classes or length), or 0 where the label has none. */
export function targetWidth(spec: LabelSpec): number {
  return spec.kind === "ints" ? spec.classes.length : spec.kind === "floats" ? spec.length : 0;
}

/** Little-endian values of `bytes` as `T` (copied when unaligned; this machine is little-endian). */
function view<T extends Int32Array<ArrayBuffer> | Float32Array<ArrayBuffer>>(bytes: Uint8Array, T: { new (b: ArrayBuffer, o: number, n: number): T; new (n: number): T }): T {
  const n = bytes.length >> 2;
  if (bytes.byteOffset % 4 === 0) return new T(bytes.buffer as ArrayBuffer, bytes.byteOffset, n);
  const out = new T(n);
  new Uint8Array(out.buffer).set(bytes.subarray(0, n * 4));
  return out;
}
