/**
 * The packed package as TypeScript and the ecosystem's checkers see it (issue 38). One `npm
 * pack` of this checkout (after `bun build.ts`: dist/ and dist/types/), then:
 *   - attw (@arethetypeswrong/cli) on the tarball with its `esm-only` profile: every subpath's
 *     types resolve and match the JavaScript under node16 (from ESM) and bundler. The profile
 *     leaves out node10 and a CommonJS `require`, which is what ESM only means: the `node16`
 *     profile fails on exactly that ("CJS resolves to ESM"), and the README says so;
 *   - publint on the tarball, with --strict (its warnings fail too);
 *   - tsc (the pinned `typescript`) on a consumer in a scratch project whose
 *     node_modules/cassette is the unpacked tarball and whose other packages are the package's
 *     dependencies (linked from this checkout) and @types/node: under node16 and bundler
 *     resolution, and as `tsc --init` sets a project up (nodenext), the consumer's deliberate
 *     errors, and no others in cassette's declarations;
 *   - the program build.ts emits the declarations from (tsconfig.types.json) checks clean, so
 *     no name in them was inferred from something tsc could not see;
 *   - `require("cassette")` fails with Node's ERR_REQUIRE_ASYNC_MODULE, as the README says.
 * The tools are Node programs run as child processes: what they report does not depend on the
 * runtime running this file, so it runs once, under Bun.
 */
import * as assert from "uvu/assert";
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { afterAll, test } from "../_support/harness.ts";
import { runtime } from "../../runtime-adapters/index.ts";

const ROOT = runtime.cwd();
const BIN = join(ROOT, "node_modules/.bin");
const skip = runtime.name !== "bun" && "the checkers are Node programs whatever runs this file: checked once, under Bun";
const scratch = mkdtempSync(join(tmpdir(), "cassette-package-checks-"));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

/** Runs a tool of node_modules/.bin; its output, stdout then stderr. */
function tool(name: string, args: string[], cwd = ROOT): { status: number | null; output: string } {
  const bin = join(BIN, name);
  assert.ok(existsSync(bin), `${bin} not found: \`npm install\` (typescript, @arethetypeswrong/cli and publint are devDependencies)`);
  const r = spawnSync(bin, args, { cwd, encoding: "utf8", timeout: 120_000, env: { ...process.env, NO_COLOR: "1", FORCE_COLOR: "0" } });
  return { status: r.status, output: `${r.stdout}${r.stderr}${r.error ? `\n${r.error.message}` : ""}` };
}

let packed: { tarball: string; project: string } | undefined;
/** The tarball of this checkout, and a scratch project with it unpacked as node_modules/cassette. */
function pack(): { tarball: string; project: string } {
  if (packed) return packed;
  assert.ok(existsSync(join(ROOT, "dist/types/src/mod.d.ts")), "dist/types/ not built: run `bun build.ts` first");
  const dir = join(scratch, "pack"), project = join(scratch, "project");
  mkdirSync(dir);
  const r = spawnSync("npm", ["pack", "--pack-destination", dir, "--loglevel=error"], { cwd: ROOT, encoding: "utf8", timeout: 120_000 });
  assert.is(r.status, 0, `npm pack exited ${r.status}:\n${r.stdout}${r.stderr}`);
  const tarball = join(dir, readdirSync(dir).find((n) => n.endsWith(".tgz"))!);
  const modules = join(project, "node_modules");
  mkdirSync(join(modules, "cassette"), { recursive: true });
  const untar = spawnSync("tar", ["-xzf", tarball, "-C", join(modules, "cassette"), "--strip-components=1"], { encoding: "utf8" });
  assert.is(untar.status, 0, `tar exited ${untar.status}: ${untar.stderr}`);
  // What `npm install` of the tarball would put beside it (the versions this checkout has), and
  // the @types/node a Node project brings itself: nothing else, so a declaration that needs a
  // devDependency fails here.
  const pkg = JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8"));
  for (const name of [...Object.keys(pkg.dependencies ?? {}), "@types/node"]) {
    mkdirSync(dirname(join(modules, name)), { recursive: true });
    symlinkSync(join(ROOT, "node_modules", name), join(modules, name));
  }
  writeFileSync(join(project, "package.json"), JSON.stringify({ name: "consumer", version: "1.0.0", private: true, type: "module" }));
  return (packed = { tarball, project });
}

test("attw --profile esm-only: every subpath's types resolve under node16 and bundler", () => {
  const { tarball } = pack();
  // --no-definitely-typed: nothing fetched from the registry (cassette has no @types package).
  const r = tool("attw", [tarball, "--profile", "esm-only", "--no-definitely-typed", "--format", "ascii", "--no-emoji"]);
  assert.is(r.status, 0, `attw found problems:\n${r.output}`);
  for (const sub of ["cassette", "cassette/decode", "cassette/read", "cassette/gpu", "cassette/train", "cassette/dataset"]) {
    assert.ok(r.output.includes(`"${sub}"`), `attw checked ${sub}:\n${r.output}`);
  }
}, { timeoutMs: 180_000, skip });

test("the packed declarations: one per subpath, where its types condition points, relative specifiers in .js", () => {
  const { project } = pack();
  const pkg = JSON.parse(readFileSync(join(project, "node_modules/cassette/package.json"), "utf8"));
  for (const [sub, conditions] of Object.entries(pkg.exports as Record<string, { types: string }>)) {
    assert.match(conditions.types, /^\.\/dist\/types\/.*\.d\.ts$/, `${sub}'s types condition`);
    assert.ok(existsSync(join(project, "node_modules/cassette", conditions.types)), `${sub}: ${conditions.types} is in the tarball`);
  }
  const tsSpecifiers: string[] = [];
  const walk = (dir: string) => {
    for (const e of readdirSync(dir, { withFileTypes: true })) {
      const p = join(dir, e.name);
      if (e.isDirectory()) walk(p);
      else if (e.name.endsWith(".d.ts")) {
        for (const m of readFileSync(p, "utf8").matchAll(/(?:\bfrom\s*|\bimport\s*\(\s*)["'](\.\.?\/[^"']+\.ts)["']/g)) tsSpecifiers.push(`${p}: ${m[1]}`);
      }
    }
  };
  walk(join(project, "node_modules/cassette/dist/types"));
  assert.equal(tsSpecifiers, [], "relative specifiers ending .ts in the declarations");
}, { timeoutMs: 180_000, skip });

test("publint --strict on the packed package: no errors, no warnings", () => {
  const r = tool("publint", ["run", pack().tarball, "--strict"]);
  assert.is(r.status, 0, `publint:\n${r.output}`);
  assert.match(r.output, /All good!/, r.output);
}, { timeoutMs: 180_000, skip });

/**
 * The consumer: typed uses of `cassette` and `cassette/train`, and two lines a type error each
 * (marked `// error TS…`). If the declarations did not resolve, the imports would be `any` (with
 * skipLibCheck) or errors, and the marked lines would not be the only ones tsc reports.
 */
const CONSUMER = `import { Loader, requestDevice, type LoaderOptions } from "cassette";
import { createModel, type Sequential } from "cassette/train";

const options: LoaderOptions = { store: "sqlite:fm.sqlite", dataset: "fm", ids: ["a", "b"], batchSize: 8 };
export const loader: Loader = new Loader(options);
export const batches: AsyncIterableIterator<{ items: unknown[] }, undefined> = loader.epoch(0);
const device: GPUDevice = await requestDevice();
export const model: Sequential = createModel(device, "cnn", { seed: 1 });
export const wrong = new Loader({ store: "sqlite:fm.sqlite", ids: [], batchSize: "8" }); // error TS2322
export const wrongModel = createModel(device, "cnn", { seed: "1" }); // error TS2322
`;

const NODE16 = { module: "node16", moduleResolution: "node16" };
const BUNDLER = { module: "esnext", moduleResolution: "bundler" };
/**
 * The consumer's compiler options. With skipLibCheck off, cassette's own declarations are
 * checked too; that needs lib.dom, which @webgpu/types is written against (its interfaces extend
 * EventTarget, take BufferSource, …). A Node project without lib.dom is the third: its GPUDevice
 * comes from the @webgpu/types each entry names.
 */
const CONSUMERS: Record<string, Record<string, unknown>> = {
  "node16": { ...NODE16, lib: ["es2022", "dom"], skipLibCheck: false },
  "bundler": { ...BUNDLER, lib: ["es2022", "dom"], skipLibCheck: false },
  "node16 without lib.dom (skipLibCheck)": { ...NODE16, lib: ["es2022"], skipLibCheck: true },
};

/**
 * tsc in `dir` with `tsconfig` must report exactly the consumer's marked lines, and nothing in
 * cassette's declarations. Errors elsewhere are other packages' own: TypeScript ≥ 6's lib.dom
 * declares WebGPU as @webgpu/types does (duplicate identifiers), which skipLibCheck hides.
 */
function compileConsumer(dir: string, tsconfig: string, what: string) {
  writeFileSync(join(dir, "consumer.ts"), CONSUMER);
  const r = tool("tsc", ["-p", tsconfig, "--noEmit", "--pretty", "false"], dir);
  // One diagnostic per line that starts with a file; continuation lines are indented.
  const at = (l: string) => l.replace(/\(\d+,\d+\).*/, "");
  const ours = r.output.split("\n")
    .filter((l) => /^\S.*\(\d+,\d+\): error TS\d+/.test(l))
    .filter((l) => at(l) === "consumer.ts" || /^(\.\.\/)*node_modules\/cassette\//.test(at(l)));
  const want = CONSUMER.split("\n").flatMap((l, i) => (/\/\/ error (TS\d+)$/.test(l) ? [`${i + 1} ${/TS\d+$/.exec(l)![0]}`] : []));
  const got = ours.map((l) => {
    const m = /^consumer\.ts\((\d+),\d+\): error (TS\d+)/.exec(l);
    return m ? `${m[1]} ${m[2]}` : l;
  });
  assert.equal(got, want, `tsc (${what}) should report exactly the consumer's marked lines:\n${r.output}`);
}

for (const [[mode, settings], n] of Object.entries(CONSUMERS).map((e, i) => [e, i] as const)) {
  test(`tsc, moduleResolution ${mode}: a consumer of the installed package sees its types`, () => {
    const { project } = pack();
    const options = { target: "es2022", types: ["node"], strict: true, ...settings };
    writeFileSync(join(project, `tsconfig.${n}.json`), JSON.stringify({ compilerOptions: options, files: ["consumer.ts"] }, null, 2));
    compileConsumer(project, `tsconfig.${n}.json`, mode);
  }, { timeoutMs: 120_000, skip });
}

test("tsc, a new project as `tsc --init` sets it up (nodenext, types: [], strict options): sees the types", () => {
  const dir = join(pack().project, "init"); // its node_modules and package.json ("type": "module") are the project's
  mkdirSync(dir);
  const init = tool("tsc", ["--init"], dir);
  assert.is(init.status, 0, `tsc --init:\n${init.output}`);
  compileConsumer(dir, "tsconfig.json", "tsc --init");
}, { timeoutMs: 120_000, skip });

test("tsconfig.types.json's program (what the declarations are emitted from) checks clean under tsc", () => {
  const r = tool("tsc", ["-p", "tsconfig.types.json", "--noCheck", "false", "--noEmit", "--pretty", "false"]);
  assert.is(r.status, 0, `tsc -p tsconfig.types.json:\n${r.output}`);
}, { timeoutMs: 120_000, skip });

test("require(\"cassette\") from CommonJS fails with Node's one-line ERR_REQUIRE_ASYNC_MODULE (ESM only)", () => {
  const { project } = pack();
  writeFileSync(join(project, "require.cjs"), `require("cassette");\n`);
  const r = spawnSync(join(BIN, "node"), ["require.cjs"], { cwd: project, encoding: "utf8", timeout: 60_000 });
  assert.is.not(r.status, 0, `require("cassette") loaded:\n${r.stdout}`);
  assert.match(r.stderr, /ERR_REQUIRE_ASYNC_MODULE/, r.stderr);
  assert.match(r.stderr, /require\(\) cannot be used on an ESM graph with top-level await\. Use import\(\) instead\./, r.stderr);
}, { timeoutMs: 60_000, skip });
