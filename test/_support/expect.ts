/**
 * Assertions on cassette's errors, shared by the tests so that each case says only what it
 * expects: the error's class, its code and what its message must name.
 */
import * as assert from "uvu/assert";
import { CassetteError } from "../../src/errors.ts";

/** Asserts that `e` is a CassetteError with `code` and a message matching `re`; returns it. */
export function assertCassetteError(e: unknown, code: string, re: RegExp): CassetteError {
  assert.instance(e, CassetteError);
  const err = e as CassetteError;
  assert.is(err.code, code, err.message);
  assert.match(err.message, re);
  return err;
}

/** Awaits `p`, which must fail with a CassetteError with `code` and a message matching `re`. */
export async function expectError(p: Promise<unknown>, code: string, re: RegExp): Promise<CassetteError> {
  try {
    await p;
  } catch (e) {
    return assertCassetteError(e, code, re);
  }
  return assert.unreachable(`should fail with ${code}`) as never;
}

/** Asserts that every sample of batch `b` is an id of `want` with its label and bytes as stored. */
export function assertAsStored(b: { ids: string[]; labels: Int32Array; data: Uint8Array; offsets: Uint32Array }, want: Map<string, { label: number; data: Uint8Array }>): void {
  b.ids.forEach((id, i) => {
    const s = want.get(id);
    assert.ok(s, `an id of the dataset: ${id}`);
    assert.is(b.labels[i], s!.label, `label of ${id}`);
    const got = b.data.subarray(b.offsets[i], b.offsets[i + 1]);
    assert.ok(got.length === s!.data.length && got.every((x, k) => x === s!.data[k]), `bytes of ${id}`);
  });
}

/**
 * Reads epoch `epoch` of `loader` and asserts that it hands over each of `ids` exactly once,
 * every sample with its label and bytes as in `want`.
 */
export async function assertEpochAsStored(
  loader: { epoch(e: number): AsyncIterable<{ ids: string[]; labels: Int32Array; data: Uint8Array; offsets: Uint32Array }> },
  epoch: number,
  ids: readonly string[],
  want: Map<string, { label: number; data: Uint8Array }>,
  what = `epoch ${epoch}`,
): Promise<void> {
  const seen: string[] = [];
  for await (const b of loader.epoch(epoch)) {
    assertAsStored(b, want);
    seen.push(...b.ids);
  }
  assert.is(seen.length, ids.length, `${what}: nothing lost`);
  assert.is(new Set(seen).size, ids.length, `${what}: nothing twice`);
  for (const id of seen) assert.ok(ids.includes(id), `${what}: ${id} is one of the ids asked for`);
}

/**
 * Reads epoch `epoch` of `loader`, checking every batch against `want`; calls `onBatch(n)`
 * after the n-th batch (a test's fault goes there). Returns the ids in the order handed over.
 */
export async function readEpochAsStored(
  loader: { epoch(e: number): AsyncIterable<{ ids: string[]; labels: Int32Array; data: Uint8Array; offsets: Uint32Array }> },
  want: Map<string, { label: number; data: Uint8Array }>,
  onBatch?: (n: number) => Promise<void>,
  epoch = 0,
): Promise<string[]> {
  const seen: string[] = [];
  let n = 0;
  for await (const b of loader.epoch(epoch)) {
    assertAsStored(b, want);
    seen.push(...b.ids);
    await onBatch?.(++n);
  }
  return seen;
}
