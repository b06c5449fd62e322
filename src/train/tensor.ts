/**
 * A Tensor is a view of f32 (or u32, or f16) values in a GPUBuffer: buffer, byte offset, shape.
 * Parameters of a model live in one buffer (a TensorArena) so that the optimizer updates them
 * all in one dispatch; activations get a buffer each.
 */
import { CassetteError } from "../errors.ts";

/**
 * Element type; every training kernel computes in f32, labels and indices are u32. f16 (two
 * values per 32-bit word) is the storage of the f16 GEMM's operands (ops/gemm_f16.ts), made
 * by cast_f16.wgsl.
 */
export type DType = "f32" | "u32" | "f16";

/** Bytes that `size` values of `dtype` take in a binding: f16 rounds up to whole 4-byte words. */
export function bytesOf(size: number, dtype: DType): number {
  return dtype === "f16" ? Math.ceil(size / 2) * 4 : size * 4;
}

export class Tensor {
  readonly buffer: GPUBuffer;
  /** Byte offset in `buffer`: a multiple of the device's minStorageBufferOffsetAlignment. */
  readonly offset: number;
  readonly shape: readonly number[];
  readonly dtype: DType;
  /** Number of elements. */
  readonly size: number;

  constructor(buffer: GPUBuffer, shape: readonly number[], offset = 0, dtype: DType = "f32") {
    if (shape.some((d) => !Number.isInteger(d) || d < 1)) {
      throw new CassetteError("ERR_INVALID_OPTION", `Cannot make a tensor as every dimension must be a positive integer: current shape is [${shape}]`);
    }
    this.buffer = buffer;
    this.offset = offset;
    this.shape = shape;
    this.dtype = dtype;
    this.size = shape.reduce((a, b) => a * b, 1);
    if (offset + this.bytes > buffer.size) {
      throw new CassetteError(
        "ERR_INVALID_OPTION",
        `Cannot make a tensor of shape [${shape}] at byte ${offset} as the buffer holds ${buffer.size} bytes`,
      );
    }
  }

  /** Bytes of the view: WebGPU storage bindings are whole 4-byte words, so an odd f16 count pads. */
  get bytes(): number {
    return bytesOf(this.size, this.dtype);
  }

  /** The same values under another shape of the same size (flatten, reshape). */
  reshape(shape: readonly number[]): Tensor {
    const size = shape.reduce((a, b) => a * b, 1);
    if (size !== this.size) {
      throw new CassetteError("ERR_INVALID_OPTION", `Cannot reshape [${this.shape}] (${this.size} values) to [${shape}] (${size} values)`);
    }
    return new Tensor(this.buffer, shape, this.offset, this.dtype);
  }

  /** The bind-group resource for this view. */
  binding(): GPUBufferBinding {
    return { buffer: this.buffer, offset: this.offset, size: this.bytes };
  }
}

/**
 * Usage of every buffer the training code makes: STORAGE | COPY_SRC | COPY_DST, WebGPU's fixed
 * values, written out because the GPUBufferUsage global may not exist yet at import time (Node).
 */
export const TENSOR_USAGE = 0x80 | 0x04 | 0x08;

/** A new zero-filled tensor in a buffer of its own. */
export function createTensor(device: GPUDevice, shape: readonly number[], label?: string, dtype: DType = "f32"): Tensor {
  const size = shape.reduce((a, b) => a * b, 1);
  const buffer = device.createBuffer({ label, size: Math.max(4, bytesOf(size, dtype)), usage: TENSOR_USAGE });
  return new Tensor(buffer, shape, 0, dtype);
}

/** A tensor holding `data`; a Uint16Array holds f16 bit patterns (an "f16" tensor). */
export function tensorFrom(device: GPUDevice, data: Float32Array | Uint32Array | Int32Array | Uint16Array, shape: readonly number[], label?: string): Tensor {
  const dtype = data instanceof Float32Array ? "f32" : data instanceof Uint16Array ? "f16" : "u32";
  const t = createTensor(device, shape, label, dtype);
  if (data.length !== t.size) {
    throw new CassetteError("ERR_INVALID_OPTION", `Cannot upload ${data.length} values as a tensor of shape [${shape}] (${t.size} values)`);
  }
  if (data instanceof Uint16Array && data.length % 2 === 1) {
    // writeBuffer copies whole 4-byte words: an odd count of f16 values gets a zero pad.
    const padded = new Uint16Array(data.length + 1);
    padded.set(data);
    data = padded;
  }
  // writeBuffer takes views of plain ArrayBuffers only: a view of shared memory is copied first.
  const plain = data.buffer instanceof ArrayBuffer ? data.buffer : data.slice().buffer;
  device.queue.writeBuffer(t.buffer, 0, plain, plain === data.buffer ? data.byteOffset : 0, data.byteLength);
  return t;
}

/**
 * Packs many tensors into one buffer, each at an aligned offset, so that one dispatch can sweep
 * them all (optimizer steps) and a save is one read-back. Gaps between tensors stay zero.
 */
export class TensorArena {
  readonly #align: number;
  readonly #entries: { shape: readonly number[]; offset: number }[] = [];
  #bytes = 0;

  constructor(device: GPUDevice) {
    this.#align = Math.max(16, device.limits.minStorageBufferOffsetAlignment);
  }

  /** Reserves room for a tensor; returns its index (tensors exist after `allocate`). */
  reserve(shape: readonly number[]): number {
    const size = shape.reduce((a, b) => a * b, 1);
    const offset = this.#bytes;
    this.#bytes = Math.ceil((offset + size * 4) / this.#align) * this.#align;
    return this.#entries.push({ shape, offset }) - 1;
  }

  /** Total bytes (a multiple of the alignment). */
  get bytes(): number {
    return Math.max(this.#align, this.#bytes);
  }

  /** One buffer for every reserved tensor. */
  allocate(device: GPUDevice, label?: string): { buffer: GPUBuffer; tensors: Tensor[] } {
    const buffer = device.createBuffer({ label, size: this.bytes, usage: TENSOR_USAGE });
    return { buffer, tensors: this.#entries.map((e) => new Tensor(buffer, e.shape, e.offset)) };
  }
}
