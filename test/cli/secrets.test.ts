/**
 * A password typed into an address never comes back out: not in an error, not in --json, not in
 * a help-me line that repeats the address (the "passwords never appear in logs").
 * Each command is run as a user runs it, against places where it must fail, and everything it
 * prints is searched for the password.
 */
import * as assert from "uvu/assert";
import { test } from "../_support/harness.ts";
import { createServer, type AddressInfo } from "node:net";
import { readFileSync } from "node:fs";
import { cassette, startCassette } from "../_support/cli.ts";
import { NO_CASSANDRA, testCassandra } from "../_support/services.ts";
import { runtime } from "../../runtime-adapters/index.ts";

const SECRET = "Pw-7f3a9c-never-printed";

function clean(what: string, r: { code: number | null; out: string; err: string }): void {
  assert.ok(r.code !== 0, `${what}: fails (exit ${r.code})`);
  assert.ok(`${r.out}\n${r.err}`.trim().length > 0, `${what}: says something`);
  assert.not.ok(r.out.includes(SECRET) || r.err.includes(SECRET), `${what}: printed the password:\n${r.out}\n${r.err}`);
}

test("a password in a cassandra:// or http:// address is never printed by info, read, ingest or splits, in text or --json", () => {
  // Port 1: nothing listens, so every command fails after parsing the address.
  const cass = `cassandra://alice:${SECRET}@127.0.0.1:1/ks_secret`;
  const http = `http://alice:${SECRET}@127.0.0.1:1/fm`;
  clean("info", cassette("info", "--store", cass));
  clean("info --json", cassette("info", "--store", cass, "--json"));
  clean("read --json", cassette("read", "--store", cass, "--dataset", "d", "--json"));
  clean("ingest", cassette("ingest", "idx:/usr/share/datasets/fashion-mnist/", "--store", cass, "--dataset", "d", "--limit", "1"));
  clean("splits", cassette("splits", "--store", cass, "--dataset", "d", "--ratios", "1", "--out", "/tmp/never.json"));
  clean("read over http", cassette("read", "--store", http, "--json"));
  clean("a bad address", cassette("read", "--store", `cassandra://alice:${SECRET}@127.0.0.1:1/1bad`, "--dataset", "d"));
});

test("a wrong password for the test node: the error names the user, never the password", () => {
  const good = testCassandra("cassette_secret")!;
  const bad = good.replace(/\/\/[^@]*@/, `//cassandra:${SECRET}@`);
  for (const args of [["info", "--store", bad], ["read", "--store", bad, "--dataset", "d", "--json"]]) {
    const r = cassette(...args);
    clean(args[0], r);
    assert.match(r.err + r.out, /user 'cassandra'/, `${args[0]} names the user`);
  }
}, { skip: NO_CASSANDRA || (runtime.env("CASSETTE_TEST_CASSANDRA_AUTH") ? false : "the test node runs without authentication (started outside test/run.ts)") });

test("a password in an address is not in the process's command line while it runs (ps, /proc/PID/cmdline)", async () => {
  // A server that accepts and never speaks CQL: the command waits for it (its connect timeout).
  const server = createServer(() => {}).listen(0, "127.0.0.1");
  await new Promise((r) => server.once("listening", r));
  const port = (server.address() as AddressInfo).port;
  const child = startCassette("info", "--store", `cassandra://alice:${SECRET}@127.0.0.1:${port}/ks_secret`);
  try {
    let cmdline = "";
    for (let i = 0; i < 100 && !cmdline.startsWith("cassette "); i++) {
      await new Promise((r) => setTimeout(r, 100));
      cmdline = readFileSync(`/proc/${child.pid}/cmdline`, "utf8").replaceAll("\0", " ");
    }
    assert.ok(cmdline.startsWith("cassette info"), `the title is set: '${cmdline}'`);
    assert.not.ok(cmdline.includes(SECRET), `the command line shows the password: '${cmdline}'`);
    assert.match(cmdline, /alice:\*\*\*@/);
  } finally {
    child.kill("SIGKILL");
    server.close();
  }
}, { skip: runtime.name === "bun" ? "Bun keeps its command line whatever process.title says (the README says to give the password as CASSETTE_CASSANDRA_PASSWORD)" : false });
