// A child for quiet_stderr.test.ts: opens a GPU device, prints a line to stderr of its own, exits.
import { requestDevice } from "../../src/gpu/device.ts";

const device = await requestDevice();
console.error("opened a device");
device.destroy();
