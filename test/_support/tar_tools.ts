/**
 * Real tar tools for the interoperability tests: GNU tar and Python's tarfile (stdlib), run
 * through files (Deno's spawnSync can stall on large piped data), and the `webdataset`
 * package from the virtual environment the set-up builds (tools/python/webdataset.sh). Each
 * `NO_…` says why a tool is absent, for the test's skip reason; the webdataset package is not
 * optional: its check fails, naming the set-up step, where it is missing.
 */
import { spawnSync } from "node:child_process";
import { homedir } from "node:os";
import { join } from "node:path";
import process from "node:process";

/** Runs `cmd args`, throwing with its stderr when it fails; its stdout. */
export function sh(cmd: string, args: string[], opts: { cwd?: string } = {}): string {
  const r = spawnSync(cmd, args, { encoding: "utf8", cwd: opts.cwd, maxBuffer: 64 << 20 });
  if (r.status !== 0) throw new Error(`${cmd} ${args.join(" ")} failed (${r.status}): ${r.stderr || r.error}`);
  return r.stdout;
}

function missing(cmd: string, args: string[], what: string): string | false {
  const r = spawnSync(cmd, args, { encoding: "utf8" });
  return r.status === 0 ? false : `${what} is not installed (${cmd} ${args.join(" ")} failed)`;
}

/** A skip reason when GNU tar is absent, else false. */
export const NO_GNU_TAR = missing("tar", ["--version"], "GNU tar");
/** A skip reason when python3 is absent, else false. */
export const NO_PYTHON = missing("python3", ["-c", "import tarfile, json, hashlib"], "python3");

/** The Python with `webdataset` installed, as tools/python/webdataset.sh builds it. */
export const WDS_PYTHON = join(process.env.CASSETTE_CACHE ?? join(homedir(), ".cache", "cassette"), "wds-venv", "bin", "python");
/** Why the webdataset package cannot be run, else false. */
export const NO_WEBDATASET = missing(WDS_PYTHON, ["-c", "import webdataset"], "the webdataset package (bash tools/setup.sh, or bash tools/python/webdataset.sh, installs it)");

/** Python's tarfile's view of an archive: each regular file's name, size and SHA-1, in order. */
export function pythonTarList(path: string): { name: string; size: number; sha1: string }[] {
  const script = `
import tarfile, json, hashlib, sys
out = []
with tarfile.open(sys.argv[1], "r:") as t:
    for m in t:
        if m.isreg():
            out.append({"name": m.name, "size": m.size, "sha1": hashlib.sha1(t.extractfile(m).read()).hexdigest()})
print(json.dumps(out))`;
  return JSON.parse(sh("python3", ["-c", script, path]));
}

/**
 * Writes a tar with Python's tarfile in `format` ("pax", "gnu" or "ustar"): each entry of the
 * JSON file `spec` ({ name, file } where file holds its bytes), plus a directory and a symlink.
 */
export function pythonTarWrite(out: string, specFile: string, format: "pax" | "gnu" | "ustar"): void {
  const script = `
import tarfile, json, sys, io
fmt = {"pax": tarfile.PAX_FORMAT, "gnu": tarfile.GNU_FORMAT, "ustar": tarfile.USTAR_FORMAT}[sys.argv[3]]
with tarfile.open(sys.argv[1], "w", format=fmt) as t:
    d = tarfile.TarInfo("somedir"); d.type = tarfile.DIRTYPE; t.addfile(d)
    l = tarfile.TarInfo("somedir/link"); l.type = tarfile.SYMTYPE; l.linkname = "x"; t.addfile(l)
    for e in json.load(open(sys.argv[2])):
        data = open(e["file"], "rb").read()
        i = tarfile.TarInfo(e["name"]); i.size = len(data); i.mtime = 1700000000
        t.addfile(i, io.BytesIO(data))`;
  sh("python3", ["-c", script, out, specFile, format]);
}

/**
 * webdataset's grouping as a small Python script: `base_plus_ext` and `group_by_keys` of
 * webdataset/tariterators.py (lower-cased suffixes, meta entries skipped), over Python's
 * tarfile: [{ key, files: { ext: sha1 } }] per shard, in order.
 */
export function pythonGroup(paths: string[]): { key: string; files: Record<string, string> }[] {
  const script = `
import tarfile, json, hashlib, re, sys
out = []
for p in sys.argv[1:]:
    cur = None
    with tarfile.open(p, "r:") as t:
        for m in t:
            if not m.isreg() or re.match(r"__[^/]*__($|/)", m.name):
                continue
            g = re.match(r"^((?:.*/|)[^.]+)[.]([^/]*)$", m.name)
            if not g:
                continue
            key, ext = g.group(1), g.group(2).lower()
            if cur is None or cur["key"] != key:
                if cur: out.append(cur)
                cur = {"key": key, "files": {}}
            cur["files"][ext] = hashlib.sha1(t.extractfile(m).read()).hexdigest()
    if cur: out.append(cur)
print(json.dumps(out))`;
  return JSON.parse(sh("python3", ["-c", script, ...paths]));
}

/** The real webdataset package's samples of `url` (a brace pattern): [{ key, files: { ext: sha1 } }]. */
export function webdatasetGroup(url: string): { key: string; files: Record<string, string> }[] {
  const script = `
import json, hashlib, sys
import webdataset as wds
out = []
for s in wds.WebDataset(sys.argv[1], shardshuffle=False, empty_check=False):
    out.append({"key": s["__key__"], "files": {k: hashlib.sha1(v).hexdigest() for k, v in s.items() if not k.startswith("__")}})
print(json.dumps(out))`;
  return JSON.parse(sh(WDS_PYTHON, ["-c", script, url]));
}
