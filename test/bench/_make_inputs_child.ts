// A child for inputs.test.ts: makeInputs on the script given, as a benchmark calls it.
import { makeInputs } from "../../bench/_lib/inputs.ts";
import { runtime } from "../../runtime-adapters/index.ts";

makeInputs("jpeg.bench.ts", runtime.args()[0], "run `bash bench/jpeg/make_inputs.sh` once where there is a network");
console.log("inputs made");
