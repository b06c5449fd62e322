/** CPU reference of shaders/preprocess/normalize_u8.wgsl. */
export function normalizeRef(bytes: Uint8Array, channels: number, mean: readonly number[], std: readonly number[]): Float32Array {
  const out = new Float32Array(bytes.length);
  for (let i = 0; i < bytes.length; i++) {
    const c = i % channels;
    out[i] = (bytes[i] / 255 - mean[c]) / std[c];
  }
  return out;
}
