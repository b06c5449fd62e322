/**
 * A benchmark whose inputs cannot be made (the jpeg bench's first run without a network) ends
 * with one plain line naming the script, its reason and what to run: no stack trace, no colour.
 */
import * as assert from "uvu/assert";
import { spawnSync } from "node:child_process";
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import process from "node:process";
import { test } from "../_support/harness.ts";
import { runtime } from "../../runtime-adapters/index.ts";

test("inputs that need a download, without a network: one line saying what failed and what to run, exit 1", () => {
  const dir = mkdtempSync(join(tmpdir(), "cassette-inputs-"));
  try {
    // apt-get as it fails offline; the real fetch script around it.
    writeFileSync(join(dir, "apt-get"), "#!/bin/sh\necho 'E: Failed to fetch http://deb.debian.org/…' >&2\nexit 100\n");
    chmodSync(join(dir, "apt-get"), 0o755);
    const script = join(dir, "inputs.sh");
    writeFileSync(script, `set -e\nbash ${runtime.cwd()}/tools/fetch_deb_file.sh python3-sklearn usr/x.jpg ${dir}/x.jpg\necho made\n`);
    const [cmd, ...pre] = runtime.scriptCommand("test/bench/_make_inputs_child.ts", [script]);
    const r = spawnSync(cmd, pre, { encoding: "utf8", timeout: 60_000, env: { ...process.env, PATH: `${dir}:${process.env.PATH}`, FORCE_COLOR: "1" } });
    assert.is(r.status, 1, r.stderr);
    assert.is(r.stdout, "");
    assert.is(
      r.stderr,
      `jpeg.bench.ts: Cannot make the benchmark's inputs as ${script} failed (fetch_deb_file.sh: apt-get download python3-sklearn failed (run apt-get update?)): ` +
        "run `bash bench/jpeg/make_inputs.sh` once where there is a network [ERR_RUNTIME]\n",
    );
    writeFileSync(script, "echo fine\n");
    const ok = spawnSync(cmd, pre, { encoding: "utf8", timeout: 60_000 });
    assert.is(ok.status, 0, ok.stderr);
    assert.is(ok.stdout, "fine\ninputs made\n");
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
