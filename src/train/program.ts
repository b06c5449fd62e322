/**
 * The ops in src/train/ops/ plan dispatches as plain values (kernel, constants, bindings,
 * workgroups, uniform bytes); a Program compiles a list of them once — pipelines, uniform
 * buffers and bind groups — so that recording a training step is only setPipeline /
 * setBindGroup / dispatch in one compute pass (WebGPU orders the dispatches of a pass and
 * makes each one's writes visible to the next).
 */
import type { Kernel } from "../gpu/kernel.ts";
import { CassetteError } from "../errors.ts";
import { Tensor } from "./tensor.ts";

/**
 * A binding: a tensor view, a whole buffer, uniform bytes the Program uploads once, or null for
 * an input the kernel's constants say it will not read (bound to a small placeholder, because
 * WebGPU forbids binding the output a second time as an input).
 */
export type Binding = Tensor | GPUBuffer | { uniform: ArrayBuffer } | null;

export interface Dispatch {
  kernel: Kernel;
  bindings: Binding[];
  workgroups: readonly [number, number, number];
  constants?: Record<string, number>;
}

/** A uniform binding of u32 and f32 fields (padded to 16 bytes, as WGSL wants). */
export function uniforms(fields: readonly (number | { f32: number })[]): { uniform: ArrayBuffer } {
  const words = Math.ceil(Math.max(1, fields.length) / 4) * 4;
  const buf = new ArrayBuffer(words * 4);
  const u = new Uint32Array(buf), f = new Float32Array(buf);
  fields.forEach((v, i) => {
    if (typeof v === "number") u[i] = v >>> 0;
    else f[i] = v.f32;
  });
  return { uniform: buf };
}

interface Step {
  pipeline: GPUComputePipeline;
  group: GPUBindGroup;
  workgroups: readonly [number, number, number];
}

export class Program {
  readonly #steps: Step[];
  readonly #owned: GPUBuffer[];

  private constructor(steps: Step[], owned: GPUBuffer[]) {
    this.#steps = steps;
    this.#owned = owned;
  }

  /** Compiles every dispatch (pipelines are cached per kernel and constants across programs). */
  static async build(device: GPUDevice, dispatches: readonly Dispatch[], label = "train"): Promise<Program> {
    const placeholder = device.createBuffer({ label: `${label}/unused`, size: 16, usage: GPUBufferUsage.STORAGE });
    const owned: GPUBuffer[] = [placeholder];
    const maxGroups = device.limits.maxComputeWorkgroupsPerDimension;
    const steps = await Promise.all(dispatches.map(async (d): Promise<Step> => {
      const { kernel, bindings, workgroups } = d;
      const kinds = kernel.spec.bindings;
      if (bindings.length !== kinds.length) {
        throw new CassetteError("ERR_INVALID_OPTION", `Cannot run kernel ${kernel.spec.name} as it takes ${kinds.length} bindings: got ${bindings.length}`);
      }
      if (workgroups.some((g) => g > maxGroups)) {
        throw new CassetteError(
          "ERR_INVALID_OPTION",
          `Cannot run kernel ${kernel.spec.name} as its grid [${workgroups}] exceeds the device's ${maxGroups} workgroups per dimension: use a smaller batch`,
        );
      }
      const { pipeline, layout } = await kernel.compile(device, d.constants);
      const entries = bindings.map((b, binding): GPUBindGroupEntry => {
        if (b === null) return { binding, resource: { buffer: placeholder } };
        if (b instanceof Tensor) return { binding, resource: b.binding() };
        if ("uniform" in b) {
          const buf = device.createBuffer({ label: `${label}/${kernel.spec.name}/params`, size: b.uniform.byteLength, usage: GPUBufferUsage.UNIFORM | GPUBufferUsage.COPY_DST });
          device.queue.writeBuffer(buf, 0, b.uniform);
          owned.push(buf);
          return { binding, resource: { buffer: buf } };
        }
        return { binding, resource: { buffer: b } };
      });
      const limit = device.limits.maxStorageBufferBindingSize;
      for (const e of entries) {
        const r = e.resource as GPUBufferBinding;
        const size = r.size ?? r.buffer.size;
        if (size > limit) {
          throw new CassetteError("ERR_INVALID_OPTION", `Cannot run kernel ${kernel.spec.name} as binding ${e.binding} is ${size} bytes: the device allows ${limit}; use a smaller batch`);
        }
      }
      return { pipeline, group: device.createBindGroup({ label: kernel.spec.name, layout, entries }), workgroups };
    }));
    return new Program(steps, owned);
  }

  /** Records every dispatch, in order, into one compute pass of `encoder`. */
  encode(encoder: GPUCommandEncoder): void {
    const pass = encoder.beginComputePass();
    for (const s of this.#steps) {
      pass.setPipeline(s.pipeline);
      pass.setBindGroup(0, s.group);
      pass.dispatchWorkgroups(s.workgroups[0], s.workgroups[1], s.workgroups[2]);
    }
    pass.end();
  }

  /** Records, submits and waits (tests and one-off runs). */
  async run(device: GPUDevice): Promise<void> {
    const encoder = device.createCommandEncoder();
    this.encode(encoder);
    device.queue.submit([encoder.finish()]);
    await device.queue.onSubmittedWorkDone();
  }

  /** Frees the uniform buffers this program made (tensors belong to their owners). */
  destroy(): void {
    for (const b of this.#owned) b.destroy();
  }
}
