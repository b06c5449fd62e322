/** Bytes `start` to `end` (inclusive; default: its end) of a whole body: what a server that ignored a Range request sent, cut to the range asked for. */
export async function* skipped(body: AsyncIterable<Uint8Array>, start: number, end = Infinity): AsyncGenerator<Uint8Array> {
  let at = 0;
  for await (const c of body) {
    const from = Math.max(0, start - at), to = Math.min(c.length, end + 1 - at);
    at += c.length;
    if (from < to) yield c.subarray(from, to);
    if (at > end) return;
  }
}
