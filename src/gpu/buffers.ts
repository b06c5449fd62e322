/** Small helpers to move bytes to and from GPU buffers. */

/** A storage buffer holding `data` (padded to 4 bytes as WebGPU requires). */
export function uploadBuffer(device: GPUDevice, data: ArrayBufferView, usage: GPUBufferUsageFlags = GPUBufferUsage.STORAGE, label?: string): GPUBuffer {
  const size = Math.max(4, Math.ceil(data.byteLength / 4) * 4);
  const buffer = device.createBuffer({ label, size, usage: usage | GPUBufferUsage.COPY_DST, mappedAtCreation: true });
  new Uint8Array(buffer.getMappedRange()).set(new Uint8Array(data.buffer, data.byteOffset, data.byteLength));
  buffer.unmap();
  return buffer;
}

/** Copies `size` bytes of `buffer` (which needs COPY_SRC) back to the CPU. */
export async function readBuffer(device: GPUDevice, buffer: GPUBuffer, size = buffer.size): Promise<ArrayBuffer> {
  const padded = Math.ceil(size / 4) * 4;
  const staging = device.createBuffer({ size: padded, usage: GPUBufferUsage.COPY_DST | GPUBufferUsage.MAP_READ });
  const encoder = device.createCommandEncoder();
  encoder.copyBufferToBuffer(buffer, 0, staging, 0, padded);
  device.queue.submit([encoder.finish()]);
  await staging.mapAsync(GPUMapMode.READ);
  const copy = staging.getMappedRange().slice(0, size);
  staging.unmap();
  staging.destroy();
  return copy;
}
