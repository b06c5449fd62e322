// The canary: this test must fail. test/run.ts counts it as passed only when it fails, which
// proves the harness reports failures (as uvu's *.fails.js do): a harness that cannot fail
// proves nothing.
import * as assert from "uvu/assert";
import { test } from "./_support/harness.ts";

test("canary: an assertion that is false fails the run", () => {
  assert.is(1 + 1, 3);
});
