// The zlib wrapper around the deflate data (RFC 1950 §2.2): a two-byte header, the deflate
// stream (inflate.ts), and the Adler-32 of the inflated bytes, big-endian.
import { inflate, consumed, written } from "./inflate";
import { fileOffset } from "./chunks";
import { fail, E_BAD_ADLER, E_BAD_ZLIB_HEADER, E_TOO_LITTLE_DATA, E_TRUNCATED } from "./errors";

/** Adler-32 (RFC 1950 §8.2): sums mod 65521, reduced every 5552 bytes (NMAX, before s2 can overflow u32). */
export function adler32(p: usize, len: usize): u32 {
  let a: u32 = 1, b: u32 = 0;
  const end = p + len;
  while (p < end) {
    const stop = min(end, p + 5552);
    while (p + 4 <= stop) {
      a += load<u8>(p); b += a;
      a += load<u8>(p + 1); b += a;
      a += load<u8>(p + 2); b += a;
      a += load<u8>(p + 3); b += a;
      p += 4;
    }
    while (p < stop) {
      a += load<u8>(p); b += a;
      p++;
    }
    a %= 65521;
    b %= 65521;
  }
  return (b << 16) | a;
}

/**
 * Inflates the zlib stream at `src` (`len` bytes) into exactly `dstLen` bytes at `dst`.
 * Returns 0 or an error code.
 */
export function inflateZlib(src: usize, len: i32, dst: usize, dstLen: usize): i32 {
  if (len < 2) return fail(E_TRUNCATED, fileOffset(len));
  const cmf = <u32>load<u8>(src);
  const flg = <u32>load<u8>(src + 1);
  // CM 8 (deflate) with a window of at most 32 KiB (CINFO ≤ 7), the check bits, and no preset
  // dictionary (PNG §10.1 allows none).
  if ((cmf & 15) != 8 || (cmf >> 4) > 7) return fail(E_BAD_ZLIB_HEADER, fileOffset(0), 0x78, cmf);
  if (((cmf << 8) | flg) % 31 != 0 || (flg & 0x20) != 0) return fail(E_BAD_ZLIB_HEADER, fileOffset(1), 0, flg);
  const rc = inflate(src + 2, <usize>(len - 2), dst, dstLen);
  if (rc != 0) return rc;
  const end = 2 + <i32>consumed();
  if (written() < dstLen) return fail(E_TOO_LITTLE_DATA, fileOffset(end), <i64>dstLen, <i64>written());
  if (end + 4 > len) return fail(E_TRUNCATED, fileOffset(len));
  const storedSum = bswap<u32>(load<u32>(src + end));
  const sum = adler32(dst, dstLen);
  if (storedSum != sum) return fail(E_BAD_ADLER, fileOffset(end), sum, storedSum);
  return 0;
}
