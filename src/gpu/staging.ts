/**
 * A ring of upload slots, reused batch after batch, so that the hot path neither allocates
 * GPU memory nor waits on `mapAsync` once warmed up.
 *
 * NOTE [ Staging ring ]
 *
 *        CPU writes batch i+1            GPU queue, in order
 *   ┌──────────────────────────┐   ┌──────────────────────────────────────────────┐
 *   │ slot k+1: staging mapped │   │ copy i → target(k); kernels of batch i; …     │
 *   └──────────────────────────┘   └──────────────────────────────────────────────┘
 *   slot k:   staging ──copyBufferToBuffer──► its own targets ("input", "output", …)
 *             after submit: mapAsync(WRITE) starts; it resolves once the GPU has read the
 *             staging buffer, long before the ring comes back round to slot k.
 *
 * Each slot owns one MAP_WRITE | COPY_SRC staging buffer and any named device buffers its user
 * asks for (`slot.target(name, bytes, usage)`), so the work of batch i never shares a buffer
 * with batch i+1 and the CPU can pack i+1 while the GPU runs i. A slot's buffers are only
 * replaced when a batch needs more room than they have (then 25 % more than asked for); the
 * `allocations` counter lets tests check that a steady state allocates nothing.
 */
import { CassetteError } from "../errors.ts";

export interface StagingSlot {
  /** Position in the ring. */
  readonly index: number;
  /** The mapped staging memory: write the batch into it, then `commit`. */
  readonly bytes: Uint8Array;
  /**
   * A device buffer owned by this slot, at least `bytes` long, created on first use and
   * replaced only when too small. Same name and usage every time for the same role.
   */
  target(name: string, bytes: number, usage: GPUBufferUsageFlags): GPUBuffer;
}

interface Slot {
  index: number;
  staging: GPUBuffer | undefined;
  ready: Promise<void>;
  inUse: boolean;
  targets: Map<string, GPUBuffer>;
}

export interface StagingRingOptions {
  /** Slots in the ring: batches that may be in flight at once (default 3). */
  depth?: number;
  /** Debug label prefix. */
  label?: string;
}

export class StagingRing {
  readonly device: GPUDevice;
  readonly depth: number;
  readonly #label: string;
  readonly #slots: Slot[];
  #next = 0;
  #allocations = 0;

  constructor(device: GPUDevice, options: StagingRingOptions = {}) {
    const depth = options.depth ?? 3;
    if (!(Number.isInteger(depth) && depth >= 1)) {
      throw new CassetteError("ERR_INVALID_OPTION", `Cannot create a staging ring as 'depth' must be a positive integer: current value is ${depth}`);
    }
    this.device = device;
    this.depth = depth;
    this.#label = options.label ?? "staging";
    this.#slots = Array.from({ length: depth }, (_, index) => ({ index, staging: undefined, ready: Promise.resolve(), inUse: false, targets: new Map() }));
  }

  /** GPU buffers created so far (staging and targets); constant once the ring is warm. */
  get allocations(): number {
    return this.#allocations;
  }

  /**
   * The next slot, its staging buffer mapped and at least `bytes` long. Waits only when the
   * GPU has not yet consumed this slot's previous upload (the ring is `depth` batches ahead).
   */
  async acquire(bytes: number): Promise<StagingSlot> {
    const slot = this.#slots[this.#next];
    if (slot.inUse) {
      throw new CassetteError("ERR_INVALID_OPTION", `Cannot acquire staging slot ${slot.index} as it is still acquired: commit and submit it first`);
    }
    slot.inUse = true;
    this.#next = (this.#next + 1) % this.depth;
    await slot.ready;
    const size = Math.max(4, Math.ceil(bytes / 4) * 4);
    if (!slot.staging || slot.staging.size < size) {
      slot.staging?.destroy();
      slot.staging = this.device.createBuffer({
        label: `${this.#label}[${slot.index}]`,
        size: grow(size, this.device.limits.maxBufferSize),
        usage: GPUBufferUsage.MAP_WRITE | GPUBufferUsage.COPY_SRC,
        mappedAtCreation: true,
      });
      this.#allocations++;
    }
    const mapped = new Uint8Array(slot.staging.getMappedRange(0, size));
    const target = (name: string, n: number, usage: GPUBufferUsageFlags): GPUBuffer => {
      const need = Math.max(4, Math.ceil(n / 4) * 4);
      let b = slot.targets.get(name);
      if (!b || b.size < need || b.usage !== usage) {
        b?.destroy();
        b = this.device.createBuffer({ label: `${this.#label}[${slot.index}].${name}`, size: grow(need, this.device.limits.maxStorageBufferBindingSize), usage });
        slot.targets.set(name, b);
        this.#allocations++;
      }
      return b;
    };
    return { index: slot.index, bytes: mapped, target };
  }

  /**
   * Unmaps the slot's staging buffer and records copies of its byte ranges into device buffers
   * (which need COPY_DST). Submit `encoder`, then call `submitted(slot)`.
   */
  commit(s: StagingSlot, encoder: GPUCommandEncoder, copies: readonly { from: number; to: GPUBuffer; at?: number; bytes: number }[]): void {
    const slot = this.#slots[s.index];
    slot.staging!.unmap();
    for (const c of copies) {
      const n = Math.ceil(c.bytes / 4) * 4;
      if (n > 0) encoder.copyBufferToBuffer(slot.staging!, c.from, c.to, c.at ?? 0, n);
    }
  }

  /** After `queue.submit`: starts remapping the staging buffer for the slot's next turn. */
  submitted(s: StagingSlot): void {
    const slot = this.#slots[s.index];
    slot.inUse = false;
    // No await here: the mapping resolves in the background once the copy has run.
    slot.ready = slot.staging!.mapAsync(GPUMapMode.WRITE);
    slot.ready.catch(() => {});
  }

  /** Gives a slot back without submitting it (the batch failed before `commit`). */
  abandon(s: StagingSlot): void {
    const slot = this.#slots[s.index];
    if (!slot.inUse) return;
    if (slot.staging) {
      if (slot.staging.mapState === "mapped") slot.staging.unmap();
      slot.ready = slot.staging.mapAsync(GPUMapMode.WRITE);
      slot.ready.catch(() => {});
    }
    slot.inUse = false;
  }

  /** Destroys every buffer of the ring. */
  destroy(): void {
    for (const slot of this.#slots) {
      slot.staging?.destroy();
      for (const b of slot.targets.values()) b.destroy();
      slot.targets.clear();
      slot.staging = undefined;
    }
  }
}

/**
 * Room for a batch 25 % larger than this one, in 256-byte steps, but never past `limit` (a
 * buffer the kernel could not bind) unless the batch itself needs it (then the kernel says so).
 */
function grow(bytes: number, limit: number): number {
  return Math.max(bytes, Math.min(Math.ceil((bytes * 1.25) / 256) * 256, Math.floor(limit / 4) * 4));
}
