// CRC-32 of chunk type and data (PNG §5.3, ISO 3309 / ITU-T V.42): the reflected polynomial
// 0xEDB88320, initial value and final XOR 0xFFFFFFFF.
//
// Slicing by four (Intel's "slicing-by-N"): T0 is the usual byte table, Tk[b] is the CRC of b
// followed by k zero bytes, so one 32-bit load advances four bytes with four lookups:
//
//   crc ^= next four bytes (little-endian)
//   crc  = T3[crc & 0xff] ^ T2[(crc >> 8) & 0xff] ^ T1[(crc >> 16) & 0xff] ^ T0[crc >> 24]

const TABLES: usize = memory.data(4 * 256 * 4, 16);
let built = false;

function build(): void {
  for (let n: u32 = 0; n < 256; n++) {
    let c = n;
    for (let k = 0; k < 8; k++) c = (c & 1) != 0 ? 0xedb88320 ^ (c >> 1) : c >> 1;
    store<u32>(TABLES + (<usize>n << 2), c);
  }
  for (let n: usize = 0; n < 256; n++) {
    let c = load<u32>(TABLES + (n << 2));
    for (let t: usize = 1; t < 4; t++) {
      c = load<u32>(TABLES + ((<usize>(c & 0xff)) << 2)) ^ (c >> 8);
      store<u32>(TABLES + (t << 10) + (n << 2), c);
    }
  }
  built = true;
}

/** CRC-32 of `len` bytes at `p` (the running value starts at 0). */
export function crc32(p: usize, len: usize): u32 {
  if (!built) build();
  let c: u32 = 0xffffffff;
  const end = p + len;
  while (p + 4 <= end) {
    c ^= load<u32>(p);
    c = load<u32>(TABLES + (3 << 10) + ((<usize>(c & 0xff)) << 2)) ^
      load<u32>(TABLES + (2 << 10) + ((<usize>((c >> 8) & 0xff)) << 2)) ^
      load<u32>(TABLES + (1 << 10) + ((<usize>((c >> 16) & 0xff)) << 2)) ^
      load<u32>(TABLES + ((<usize>(c >> 24)) << 2));
    p += 4;
  }
  while (p < end) {
    c = load<u32>(TABLES + ((<usize>((c ^ <u32>load<u8>(p)) & 0xff)) << 2)) ^ (c >> 8);
    p++;
  }
  return c ^ 0xffffffff;
}
