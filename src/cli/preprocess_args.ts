/**
 * The flags of `cassette read --preprocess`: turned into the same PreprocessOptions a trainer
 * gives createPreprocessor, checked flag by flag so that a bad value names the flag, not the
 * option it becomes.
 */
import type { CropPolicy } from "../gpu/pack.ts";
import type { PreprocessOptions } from "../gpu/preprocess.ts";
import { FASHION_MNIST_MEAN, FASHION_MNIST_STD } from "../dataset/fashion_mnist.ts";
import { listOption, numberOption, usageError } from "./args.ts";
import { parseAugment } from "../decode/augment.ts";
import { CassetteError } from "../errors.ts";

/** Valued flags that only mean something with --preprocess. */
export const PREPROCESS_VALUED = ["size", "crop", "scale", "ratio", "resize", "flip", "augment", "mean", "std", "layout", "dump", "device"];
/** Plain flags of --preprocess. */
export const PREPROCESS_FLAGS = ["preprocess", "readback"];

export const preprocessHelp = `  --preprocess         decode (implies --decode), then run each batch through the GPU
                       preprocessing train.ts uses (crop, resize, flip, grey/RGB, normalize),
                       one upload and one dispatch per batch, on the WebGPU adapter
                       (ERR_NO_GPU_ADAPTER when there is none). With:
    --device gpu|cpu   where the tensor is made: gpu (default), or cpu: the same tensor
                       (same plans, within f32 rounding) made in the loader's thread, for a
                       machine without a GPU or a host tensor; the read workers still decode
                       only each plan's box
    --size N|WxH       output size in pixels (required): 224 for ImageNet-like sets, 28 for
                       Fashion-MNIST
    --crop resize|center|random-resized   resize (default, as train.ts): the whole image
                       stretched; center: torchvision Resize + CenterCrop; random-resized:
                       torchvision RandomResizedCrop
    --scale LO,HI --ratio LO,HI   random-resized's area share and aspect ratio (default
                       0.08,1 and 0.75,1.3333)
    --resize N         center: the shorter side scaled to N first (default: the shorter output side)
    --flip P           probability of a left-right mirror per image (default 0). Crops
                       and flips are drawn from (--seed, epoch, sample id), as in training
    --augment POLICY   per-sample geometric and colour ops and erasing in the same pass, drawn
                       from (--seed, epoch, sample id) too: comma-separated terms of trivial
                       (TrivialAugment: identity, shear, translate, rotate, brightness, color,
                       contrast, posterize, solarize), brightness|contrast|saturation|hue=V or
                       LO:HI (ColorJitter), jitter=V (brightness, contrast and saturation V),
                       solarize=P, posterize=P, erase=P (RandomErasing), rotate=D
                       (RandomRotation), degrees=D, translate=F, scale=LO:HI, shear=S
                       (RandomAffine), fill=V (what they bring in, 0..1), blur=K
                       (GaussianBlur, K taps, σ in 0.1..2), or photos
                       (trivial,erase=0.25). E.g. --augment photos or jitter=0.4,degrees=15
    --mean M[,M,M] --std S[,S,S]   per output channel, in 0..1 units; default with --grey
                       Fashion-MNIST's 0.286 / 0.353, else ImageNet's 0.485,0.456,0.406 /
                       0.229,0.224,0.225 (train.ts's); --mean 0 --std 1 leaves pixels / 255
    --layout nchw|nhwc tensor layout (default nchw)
    --readback         copy each batch's tensor back to host memory and wait for it, as a
                       DataLoader hands over host tensors. Default off: the tensor stays on the
                       device, where a cassette trainer reads it (the work is still waited for:
                       the preprocessor reuses its buffers 3 batches later, and the timing
                       ends when the queue is idle)
    --dump FILE        write the first batch's tensor as a NumPy .npy file (f32), and its ids
                       and labels in the report, to compare with another loader's`;

/** What --preprocess asks for: the preprocessor's options and what to do with each tensor. */
export interface PreprocessRequest {
  options: PreprocessOptions;
  /** Where the tensor is made (--device). */
  device: "gpu" | "cpu";
  readback: boolean;
  dump?: string;
}

/**
 * The preprocessing `cassette read` was asked for, or undefined without --preprocess (then
 * any of its flags is an error naming it). `grey` is --grey: one output channel.
 */
export function preprocessRequest(options: Map<string, string | true>, grey: boolean, seed: number | undefined): PreprocessRequest | undefined {
  if (!options.has("preprocess")) {
    const stray = [...PREPROCESS_VALUED, "readback"].find((k) => options.has(k));
    if (stray) usageError("read", `--${stray} needs --preprocess`);
    return undefined;
  }
  const bad = (why: string): never => usageError("read", why);
  const size = options.get("size");
  if (typeof size !== "string") bad("--preprocess needs --size N or WxH (the tensor's height and width)");
  const m = /^(\d+)(?:x(\d+))?$/i.exec(size as string);
  const width = m ? Number(m[1]) : NaN, height = m ? Number(m[2] ?? m[1]) : NaN;
  if (!(width >= 1 && width <= 65535 && height >= 1 && height <= 65535)) {
    bad(`--size must be N or WxH with whole numbers from 1 to 65535: current value is ${size}`);
  }
  const channels = grey ? 1 : 3;

  const crop = cropPolicy(options, bad);
  const flip = numberOption(options, "read", "flip") ?? 0;
  if (!(flip >= 0 && flip <= 1)) bad(`--flip must be a probability from 0 to 1: current value is ${flip}`);
  const layout = (options.get("layout") ?? "nchw") as "nchw" | "nhwc";
  if (layout !== "nchw" && layout !== "nhwc") bad(`--layout must be nchw or nhwc: current value is ${layout}`);

  // The defaults are train.ts's: Fashion-MNIST's statistics for one channel, ImageNet's for three.
  const mean = numbers(options, "mean", bad) ?? (grey ? [FASHION_MNIST_MEAN] : [0.485, 0.456, 0.406]);
  const std = numbers(options, "std", bad) ?? (grey ? [FASHION_MNIST_STD] : [0.229, 0.224, 0.225]);
  const perChannel = `one value per output channel (${channels}${grey ? ", as --grey makes one" : "; --grey makes one"})`;
  if (mean.length !== channels) bad(`--mean must have ${perChannel}: current value is ${mean.join(",")}`);
  if (std.length !== channels) bad(`--std must have ${perChannel}: current value is ${std.join(",")}`);
  if (std.some((s) => !(s > 0))) bad(`--std must be > 0 in every channel: current value is ${std.join(",")}`);

  const policy = options.get("augment");
  let augment;
  if (policy !== undefined) {
    if (typeof policy !== "string" || policy === "") bad("--augment needs a policy, e.g. trivial or jitter=0.4,erase=0.25");
    try {
      augment = parseAugment(policy as string);
    } catch (e) {
      if (e instanceof CassetteError) bad(`--augment: ${e.message}`);
      throw e;
    }
    if (augment.mix) bad(`--augment's mixup and cutmix mix a batch's labels into the targets a model trains on: train.ts --augment takes them: current value is ${policy}`);
  }

  const dump = options.get("dump");
  if (dump === "") bad("--dump needs a file name");
  const device = (options.get("device") ?? "gpu") as "gpu" | "cpu";
  if (device !== "gpu" && device !== "cpu") bad(`--device must be gpu or cpu: current value is ${device}`);
  if (device === "cpu" && options.has("readback")) bad("--readback needs --device gpu: a tensor made on the CPU is in host memory already");
  return {
    options: { width, height, channels, layout, crop, flip, mean, std, seed: seed ?? 0, ...(augment && { augment }) },
    device,
    readback: options.has("readback"),
    dump: typeof dump === "string" ? dump : undefined,
  };
}

function cropPolicy(options: Map<string, string | true>, bad: (why: string) => never): CropPolicy {
  const kind = options.get("crop") ?? "resize";
  const only = (flag: string, k: string) => options.has(flag) && kind !== k && bad(`--${flag} needs --crop ${k}: current --crop is ${kind}`);
  only("scale", "random-resized");
  only("ratio", "random-resized");
  only("resize", "center");
  if (kind === "resize") return { kind };
  if (kind === "center") {
    const v = options.get("resize");
    if (v === undefined) return { kind };
    const resize = Number(v);
    if (!(Number.isInteger(resize) && resize >= 1)) bad(`--resize must be a positive whole number: current value is ${v}`);
    return { kind, resize };
  }
  if (kind === "random-resized") {
    const scale = pair(options, "scale", bad);
    const ratio = pair(options, "ratio", bad);
    if (scale && !(scale[0] > 0 && scale[0] <= scale[1] && scale[1] <= 1)) bad(`--scale must be LO,HI with 0 < LO ≤ HI ≤ 1: current value is ${scale.join(",")}`);
    if (ratio && !(ratio[0] > 0 && ratio[0] <= ratio[1])) bad(`--ratio must be LO,HI with 0 < LO ≤ HI: current value is ${ratio.join(",")}`);
    return { kind, ...(scale && { scale }), ...(ratio && { ratio }) };
  }
  return bad(`--crop must be resize, center or random-resized: current value is ${kind}`);
}

function numbers(options: Map<string, string | true>, name: string, bad: (why: string) => never): number[] | undefined {
  const list = listOption(options, name);
  if (!list) return undefined;
  const xs = list.map(Number);
  if (xs.length === 0 || xs.some((x) => !Number.isFinite(x))) bad(`--${name} must be comma-separated numbers: current value is ${options.get(name)}`);
  return xs;
}

function pair(options: Map<string, string | true>, name: string, bad: (why: string) => never): [number, number] | undefined {
  const xs = numbers(options, name, bad);
  if (xs && xs.length !== 2) bad(`--${name} must be two numbers LO,HI: current value is ${options.get(name)}`);
  return xs as [number, number] | undefined;
}
