/**
 * A response body read whole, at most `max` bytes: an announced length over it is refused
 * before a byte is read, and a body without one is cut as it arrives. `tooLarge(why)` makes
 * the caller's named error; the body is destroyed either way, so its connection is dropped.
 */
export async function readBoundedBody(
  body: AsyncIterable<unknown> & { destroy(): void },
  announced: number,
  max: number,
  tooLarge: (why: string) => Error,
): Promise<Uint8Array> {
  if (announced > max) {
    body.destroy();
    throw tooLarge(`its Content-Length announces ${announced} bytes`);
  }
  const chunks: Uint8Array[] = [];
  let n = 0;
  for await (const c of body) {
    const chunk = c as Uint8Array;
    n += chunk.length;
    if (n > max) {
      body.destroy();
      throw tooLarge(`more than ${max} bytes arrived`);
    }
    chunks.push(chunk);
  }
  const out = new Uint8Array(n);
  let at = 0;
  for (const c of chunks) out.set(c, at), at += c.length;
  return out;
}
