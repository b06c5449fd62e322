/** CRC-32 as PNG and zlib compute it (ISO 3309; PNG specification, Annex D). */

let table: Uint32Array | undefined;

/** The CRC-32 of `a` followed by `b` (when given), as one run of bytes. */
export function crc32(a: Uint8Array, b?: Uint8Array): number {
  if (!table) {
    table = new Uint32Array(256);
    for (let n = 0; n < 256; n++) {
      let c = n;
      for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
      table[n] = c >>> 0;
    }
  }
  let c = 0xffffffff;
  for (const x of a) c = table[(c ^ x) & 0xff] ^ (c >>> 8);
  if (b) for (const x of b) c = table[(c ^ x) & 0xff] ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
}
