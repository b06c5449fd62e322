import * as assert from "uvu/assert";
import { test } from "../_support/harness.ts";
import { assertCassetteError } from "../_support/expect.ts";
import { createDecoder } from "../../src/decode/decoders.ts";
import { formatOf } from "../../src/util/signature.ts";

const text = new TextEncoder();

test("each decoder says what a file that is not its format is, by its first bytes", async () => {
  const cases: [Uint8Array, RegExp][] = [
    [text.encode("hello, this is text\n"), /starts with 68 65 6C 6C 6F 2C 20 74 \("hello, t"\), text/],
    [text.encode("GIF89a\x01\x00\x01\x00"), /starts with 47 49 46 38 39 61 01 00 \("GIF89a\.\."\), a GIF file/],
    [Uint8Array.of(0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 3), /starts with 1F 8B 08 00 00 00 00 00 \("\.\.\.\.\.\.\.\."\), gzip data/],
  ];
  for (const format of ["jpeg", "png", "auto"] as const) {
    const d = await createDecoder(format);
    try {
      for (const [bytes, words] of cases) {
        try {
          d.decode(bytes);
          assert.unreachable("should throw");
        } catch (e) {
          assertCassetteError(e, format === "auto" && words.source.includes("GIF") ? "ERR_UNSUPPORTED" : "ERR_MALFORMED_INPUT", words);
        }
      }
    } finally {
      d.close();
    }
  }
});

test("formatOf: text is printable UTF-8 (a character cut at the end still counts); binary noise is nothing", () => {
  const e = (s: string) => text.encode(s);
  assert.is(formatOf(e("<!doctype html><p>404")), "text");
  assert.is(formatOf(e("naïve café").subarray(0, 3)), "text", "a 2-byte character cut after its lead byte");
  assert.is(formatOf(Uint8Array.of(0xff)), undefined);
  assert.is(formatOf(Uint8Array.of(0x00, 0x01, 0x02, 0x41)), undefined);
  assert.is(formatOf(new Uint8Array(0)), undefined);
  assert.is(formatOf(e("%PDF-1.7")), "a PDF file");
});
