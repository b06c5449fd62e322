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
