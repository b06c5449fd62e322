// A bump arena for one image at a time: the host asks for blocks with `alloc`, then calls
// `reset` before the next image. No per-object frees, nothing managed in the hot loops: the
// module is built with AssemblyScript's stub runtime, which never frees, and one reset per
// image is all the memory management a decode needs. Blocks are 16-byte aligned for v128 loads.

let top: usize = 0;
let base: usize = 0;

@inline function ensureBase(): void {
  if (base == 0) {
    base = (__heap_base + 15) & ~15;
    top = base;
  }
}

/** Returns a 16-byte-aligned block of `bytes`, growing memory as needed; 0 if it cannot. */
export function alloc(bytes: usize): usize {
  ensureBase();
  const ptr = top;
  const end = (ptr + bytes + 15) & ~15;
  const have = (<usize>memory.size()) << 16;
  if (end > have) {
    const pages = <i32>((end - have + 0xffff) >> 16);
    if (memory.grow(pages) < 0) return 0;
  }
  top = end;
  return ptr;
}

/** Frees every block at once. */
export function reset(): void {
  ensureBase();
  top = base;
}
