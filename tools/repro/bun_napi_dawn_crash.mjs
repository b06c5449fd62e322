// Minimal reproducer: Bun 1.4.5 + npm `webgpu` 0.6.2 (dawn.node, N-API) on lavapipe.
//   node tools/repro/bun_napi_dawn_crash.mjs          -> iter 0/1/2 ok
//   bun  tools/repro/bun_napi_dawn_crash.mjs          -> "panic(main thread): Segmentation fault at address 0x28"
// A dispatch that keeps llvmpipe busy for more than a few tens of ms, followed by awaiting
// queue.onSubmittedWorkDone() (same with buffer.mapAsync(), awaited or polled via mapState),
// crashes Bun. Tiny dispatches (argv[2] = 1 or 64 workgroups) usually pass.
const m = await import('webgpu'); Object.assign(globalThis, m.globals); const gpu = m.create([]);
const wg = +(process.argv[2] ?? 1024);
const adapter = await gpu.requestAdapter();
const device = await adapter.requestDevice();
const module = device.createShaderModule({ code: `@group(0) @binding(0) var<storage, read_write> a: array<f32>;
@compute @workgroup_size(64) fn main(@builtin(global_invocation_id) g: vec3u) {
  var s = 0.0; for (var i = 0u; i < 2000u; i++) { s += sin(f32(i + g.x)); } a[g.x] = s; }` });
const pipe = device.createComputePipeline({ layout: 'auto', compute: { module, entryPoint: 'main' } });
const buf = device.createBuffer({ size: 4 * 64 * wg, usage: GPUBufferUsage.STORAGE });
const bg = device.createBindGroup({ layout: pipe.getBindGroupLayout(0), entries: [{ binding: 0, resource: { buffer: buf } }] });
for (let i = 0; i < 3; i++) {
  const t0 = performance.now();
  const enc = device.createCommandEncoder();
  const p = enc.beginComputePass(); p.setPipeline(pipe); p.setBindGroup(0, bg); p.dispatchWorkgroups(wg); p.end();
  device.queue.submit([enc.finish()]);
  await device.queue.onSubmittedWorkDone();
  console.log('iter', i, 'ok', (performance.now() - t0).toFixed(0), 'ms');
}
process.exit(0);
