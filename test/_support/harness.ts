/**
 * The test harness: every `*.test.ts` file registers tests with `test()`, and
 * `test/_support/main.ts` runs one file in one runtime and reports counts to `test/run.ts`.
 *
 * Assertions come from `uvu/assert`. A test is an async function; it fails when it throws.
 * Skips carry a reason: they are listed with why, never silent.
 */
export interface TestOptions {
  /** Skip with this reason (printed in the report). */
  skip?: string | false;
  /** Fail the test if it runs longer than this (default 120 s): a hang is a failure, not a stall. */
  timeoutMs?: number;
}

export interface TestCase {
  name: string;
  fn: () => unknown | Promise<unknown>;
  options: TestOptions;
}

const registered: TestCase[] = [];

/** Registers a test in the current file. */
export function test(name: string, fn: () => unknown | Promise<unknown>, options: TestOptions = {}): void {
  registered.push({ name, fn, options });
}

/** The tests registered so far (used by main.ts). */
export function registeredTests(): readonly TestCase[] {
  return registered;
}

/** Functions that run after the file's tests, even when some failed (close devices, servers). */
const cleanups: Array<() => unknown | Promise<unknown>> = [];
export function afterAll(fn: () => unknown | Promise<unknown>): void {
  cleanups.push(fn);
}
export function registeredCleanups(): readonly (() => unknown | Promise<unknown>)[] {
  return cleanups;
}
