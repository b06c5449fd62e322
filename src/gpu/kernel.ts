/**
 * Base of every WGSL kernel: the .wgsl text, an explicit bind-group layout, and a pipeline
 * cached per device under a key of every specialization (as tfjs's shaderKey): a compile takes
 * seconds on a CPU driver, so each specialization compiles once per device, never per dispatch.
 * Kernels are specialized with WGSL `override` constants, not by editing the source text; the
 * one exception is an element type, which no override can choose (gemm.ts's gemmSource).
 */
import { CassetteError } from "../errors.ts";

/** How a binding is used; index in the array = @binding number, all in @group(0). */
export type BindingKind = "uniform" | "read-only-storage" | "storage";

export interface KernelSpec {
  /** Name for errors and GPU debug labels, e.g. "preprocess/normalize_u8". */
  name: string;
  /** WGSL source, imported from shaders/ as text. */
  code: string;
  entryPoint?: string;
  bindings: readonly BindingKind[];
  /**
   * Device features the WGSL needs (e.g. "shader-f16" for `enable f16;`): compiling on a
   * device without one throws CassetteError ERR_UNSUPPORTED instead of a validation error.
   */
  features?: readonly GPUFeatureName[];
}

interface Compiled {
  pipeline: GPUComputePipeline;
  layout: GPUBindGroupLayout;
}

export class Kernel {
  readonly spec: KernelSpec;
  readonly #cache = new WeakMap<GPUDevice, Map<string, Promise<Compiled>>>();

  constructor(spec: KernelSpec) {
    this.spec = spec;
  }

  /** The pipeline for `device` and these override constants, compiled once. */
  compile(device: GPUDevice, constants: Record<string, number> = {}): Promise<Compiled> {
    let perDevice = this.#cache.get(device);
    if (!perDevice) this.#cache.set(device, (perDevice = new Map()));
    const key = JSON.stringify(Object.entries(constants).sort());
    let compiled = perDevice.get(key);
    if (!compiled) {
      compiled = this.#build(device, constants);
      perDevice.set(key, compiled);
      compiled.catch(() => perDevice!.delete(key)); // a failed compile is retried, not cached
    }
    return compiled;
  }

  async #build(device: GPUDevice, constants: Record<string, number>): Promise<Compiled> {
    const { name, code, bindings } = this.spec;
    for (const f of this.spec.features ?? []) {
      if (!device.features.has(f)) {
        throw new CassetteError(
          "ERR_UNSUPPORTED",
          `Cannot compile kernel ${name} as the device lacks the '${f}' feature: open it with requestDevice({ features: ["${f}"] }) on an adapter that has it`,
        );
      }
    }
    device.pushErrorScope("validation");
    const module = device.createShaderModule({ label: name, code });
    const layout = device.createBindGroupLayout({
      label: name,
      entries: bindings.map((type, binding) => ({ binding, visibility: GPUShaderStage.COMPUTE, buffer: { type } })),
    });
    const pipeline = device.createComputePipeline({
      label: name,
      layout: device.createPipelineLayout({ bindGroupLayouts: [layout] }),
      compute: { module, entryPoint: this.spec.entryPoint ?? "main", constants },
    });
    const error = await device.popErrorScope();
    if (error) {
      throw new CassetteError("ERR_GPU_KERNEL", `Cannot compile kernel ${name} (constants ${JSON.stringify(constants)}): ${error.message}`);
    }
    return { pipeline, layout };
  }

  /** Records one dispatch into `encoder`; buffers in binding order. */
  async encode(
    device: GPUDevice,
    encoder: GPUCommandEncoder,
    buffers: readonly GPUBuffer[],
    workgroups: readonly [number, number?, number?],
    constants?: Record<string, number>,
  ): Promise<void> {
    if (buffers.length !== this.spec.bindings.length) {
      throw new CassetteError(
        "ERR_INVALID_OPTION",
        `Cannot run kernel ${this.spec.name} as it takes ${this.spec.bindings.length} buffers: got ${buffers.length}`,
      );
    }
    this.spec.bindings.forEach((kind, i) => {
      const limit = kind === "uniform" ? device.limits.maxUniformBufferBindingSize : device.limits.maxStorageBufferBindingSize;
      if (buffers[i].size > limit) {
        throw new CassetteError(
          "ERR_INVALID_OPTION",
          `Cannot run kernel ${this.spec.name} as binding ${i} (${kind}) is ${buffers[i].size} bytes: the device allows ${limit}; split the batch`,
        );
      }
    });
    const { pipeline, layout } = await this.compile(device, constants);
    const bindGroup = device.createBindGroup({
      layout,
      entries: buffers.map((buffer, binding) => ({ binding, resource: { buffer } })),
    });
    const pass = encoder.beginComputePass({ label: this.spec.name });
    pass.setPipeline(pipeline);
    pass.setBindGroup(0, bindGroup);
    pass.dispatchWorkgroups(workgroups[0], workgroups[1] ?? 1, workgroups[2] ?? 1);
    pass.end();
  }
}

/**
 * Workgroup counts for `invocations` threads in groups of `size`, over x then y (x ≤ 65535,
 * the smallest maxComputeWorkgroupsPerDimension WebGPU allows); z is 1. A kernel recovers its
 * index as gid.x + gid.y · num_workgroups.x · size.
 */
export function grid(invocations: number, size: number): [number, number, number] {
  const groups = Math.max(1, Math.ceil(invocations / size));
  if (groups <= 65535) return [groups, 1, 1];
  return [65535, Math.ceil(groups / 65535), 1];
}
