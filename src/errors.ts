/**
 * Every error cassette throws on purpose is a `CassetteError` with a stable `code`
 * (as undici's UND_ERR_* codes): scripts match on the code, people read the message. Messages say
 * what could not be done, why, and name the value, option, id or byte offset involved.
 *
 * @example
 * ```ts
 * import { CassetteError } from "./errors.ts";
 * const e = new CassetteError("ERR_INVALID_OPTION", "Cannot read as 'batch' must be a positive integer: current value is 0");
 * console.assert(e.code === "ERR_INVALID_OPTION" && e instanceof Error);
 * ```
 */
export type ErrorCode =
  /** An option or argument has a value that cannot work. */
  | "ERR_INVALID_OPTION"
  /** No WebGPU adapter (no Vulkan/Metal/D3D12 driver, or lavapipe missing). */
  | "ERR_NO_GPU_ADAPTER"
  /** The adapter exists but refused to give a device, or the device was lost. */
  | "ERR_GPU_DEVICE"
  /** A WGSL kernel failed to compile or validate. */
  | "ERR_GPU_KERNEL"
  /** The store cannot be reached (Cassandra down, wrong host or port, timeout). */
  | "ERR_STORE_UNREACHABLE"
  /** The store answered with an error (bad keyspace, schema, query). */
  | "ERR_STORE"
  /** A store address (`sqlite:…`, `cassandra://…`) cannot be parsed. */
  | "ERR_STORE_ADDRESS"
  /** Input data (idx file, JPEG, manifest) is malformed. */
  | "ERR_MALFORMED_INPUT"
  /**
   * Input is well formed but uses a feature cassette does not support, or a kernel needs a
   * device feature (e.g. `shader-f16`) that the device was not opened with.
   */
  | "ERR_UNSUPPORTED"
  /** The current runtime lacks something cassette needs (no adapter, too old). */
  | "ERR_RUNTIME"
  /** A store's answer is over its size limit (an HTTP sample over `maxSampleBytes`, labels.json over `maxLabelsBytes`). */
  | "ERR_TOO_LARGE"
  /** A server's answer breaks its own framing (more bytes than its Content-Length announced). */
  | "ERR_BAD_RESPONSE"
  /** A redirect that is not followed: to another origin, or one too many. */
  | "ERR_REDIRECT"
  /** Credentials would be sent in the clear (Basic auth over plain http://) and that was not allowed. */
  | "ERR_INSECURE_AUTH"
  /** A TLS server's certificate is not trusted (no CA given signs it, or it does not name the host). */
  | "ERR_TLS_UNTRUSTED"
  /** The store refused the credentials (an S3 signature, an unknown or expired key, no permission), or none were found. */
  | "ERR_STORE_AUTH"
  /** The store refused a signed request's time: this machine's clock is too far from the server's. */
  | "ERR_CLOCK_SKEW"
  /**
   * A loader state cannot resume on another number of ranks alone: one rank's state does not
   * say what the other ranks handed over. Merge every rank's state (`mergeStates`) first.
   */
  | "ERR_PARTIAL_STATE";

/** Every error cassette throws on purpose: `code` says what kind (a bad option, a store, a malformed input, …), the message names the value and where. */
export class CassetteError extends Error {
  /** What kind of error it is: a stable name a program can test. */
  readonly code: ErrorCode;
  /** An error of kind `code` with its message (and the error that caused it, if any). */
  constructor(code: ErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = "CassetteError";
    this.code = code;
  }
}
