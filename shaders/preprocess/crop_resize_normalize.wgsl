// crop_resize_normalize: a batch of u8 HWC images of different sizes → one f32 tensor.
// Per output pixel: the sample of shaders/preprocess/sample.wgsl (crop box, mirror, resample,
// gray→RGB), RGB→gray where the tensor has one channel, then out = v * scale[c] + bias[c] where
// scale = 1 / (255 * std) and bias = -mean / std (torchvision's ToTensor + Normalize).
//
// Bindings: sample.wgsl's (params, src, dst).
// Dispatch: (ceil(outW·outH / 64), batch, 1) workgroups of 64: x walks the output pixels of one
//   image in row order (so NCHW writes are contiguous), y is the image; see src/gpu/preprocess.ts.

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
  let pixel = gid.x;
  if (pixel >= params.outW * params.outH) {
    return;
  }
  let b = gid.y;
  let v = outChannels(b, sample(b, pixel));
  put(b, pixel, v * params.scale.xyz + params.bias.xyz);
}
