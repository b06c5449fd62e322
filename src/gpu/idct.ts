/**
 * The hybrid JPEG path (like nvJPEG's): the CPU stops after entropy decoding
 * (`JpegDecoder.decodeCoefficients`), the GPU does the rest and writes pixels straight into the
 * preprocessing input, in two dispatches recorded before the preprocessing kernel:
 *
 *   shaders/preprocess/idct_planes.wgsl   dequantize + 8×8 IDCT (T.81 A.3.3) + level shift, in
 *                                         the WASM decoder's integer arithmetic (islow):
 *                                         blocks → one u8 sample plane per component
 *   shaders/preprocess/ycbcr_rgb.wgsl     chroma upsampling (the decoder's triangle filter)
 *                                         + YCbCr→RGB (JFIF): planes → packed u8 HWC pixels
 *
 * Two kernels rather than one: the triangle filter reads chroma samples across block and MCU
 * edges, which a one-block-per-thread IDCT cannot see; a plane in between makes both passes
 * plain gathers. The IDCT is the WASM decoder's own integer one (libjpeg's islow: the same
 * products, shifts and saturation), and upsampling and colour use the decoder's integer
 * formulas, so the pixels are the CPU decoder's full decode exactly (test/gpu/idct.test.ts
 * checks equality on the fixture corpus and on fresh cjpeg files of every sampling, and the
 * planes against the scalar islow reference on random blocks).
 *
 * NOTE [ Coefficient upload ]  one storage buffer, array<u32>, built by `planCoefficients`:
 *
 *   ┌────────┬──────────────────┬────────────────────┬──────────────┬──────────────────────┐
 *   │ header │ component records│ image records      │ quant tables │ coefficient blocks    │
 *   │ 8 w    │ 8 w each         │ 32 w each          │ 64 w each    │ 32 w each (2 i16 / w) │
 *   └────────┴──────────────────┴────────────────────┴──────────────┴──────────────────────┘
 *   header:     components, blocks, images, output words, component records at, image records at
 *   component:  FIRST_BLOCK │ BLOCKS_W │ BLOCKS_H │ COEF_WORD │ QUANT_WORD │ PLANE_BYTE │ STRIDE │ –
 *   image:      FIRST_WORD │ WIDTH │ HEIGHT │ CHANNELS │ COLOR (0 gray, 1 YCbCr, 2 RGB) │
 *               DST_BYTE │ COMPONENTS │ ORIGIN_X | ORIGIN_Y << 16 │ then per component (≤ 3) 8 words:
 *               PLANE_BYTE │ STRIDE │ RX │ RY │ CW │ CH │ WX │ WY
 *   A region's image (JpegCoefficients.region) is WIDTH × HEIGHT pixels from (ORIGIN_X,
 *   ORIGIN_Y) of its frame, and each component's plane holds its window of blocks, whose first
 *   sample is (WX, WY) of the component; the colour pass reads the frame's coordinates, so the
 *   pixels are the whole decode's there.
 *   Blocks are the decoder's: raster order within a component, 64 coefficients each in natural
 *   order (v·8 + u); quant tables natural order. FIRST_BLOCK and FIRST_WORD are running sums, so
 *   a thread finds its component or image by binary search.
 *
 * The planes (a scratch buffer of the staging slot) hold each component's whole padded block
 * grid, BLOCKS_W·8 bytes a row.
 */
import idctCode from "../../shaders/preprocess/idct_planes.wgsl" with { type: "text" };
import colorCode from "../../shaders/preprocess/ycbcr_rgb.wgsl" with { type: "text" };
import { CassetteError } from "../errors.ts";
import { isDctImage } from "../decode/decoder.ts";
import type { JpegCoefficients } from "../decode/jpeg.ts";
import { isJpegScan, type JpegScan } from "../decode/jpeg_scan.ts";
import { grid, Kernel } from "./kernel.ts";
import type { FrameBox, PackLayout } from "./pack.ts";

export type { JpegCoefficients } from "../decode/jpeg.ts";

const idctKernel = new Kernel({ name: "preprocess/idct_planes", code: idctCode, bindings: ["read-only-storage", "storage"] });
const colorKernel = new Kernel({ name: "preprocess/ycbcr_rgb", code: colorCode, bindings: ["read-only-storage", "read-only-storage", "storage"] });
const WORKGROUP = 64;
const HEADER = 8, COMP_WORDS = 8, IMAGE_WORDS = 32;
const COLOR = { gray: 0, ycbcr: 1, rgb: 2 } as const;

/** True for the decoder's coefficient output (as opposed to decoded pixels). */
export function isCoefficientImage(x: object): x is JpegCoefficients {
  return isDctImage(x); // one test of the two shapes, the decoder seam's
}

/**
 * The pixels a coefficient image becomes: 1 channel for gray, 3 for YCbCr and RGB; a region's
 * box, with its frame (the whole image), when only a region's blocks are held.
 */
export function coefficientImageShape(img: JpegCoefficients | JpegScan): { width: number; height: number; channels: number; frame?: FrameBox } {
  if (!(img.colorSpace in COLOR)) {
    throw new CassetteError(
      "ERR_UNSUPPORTED",
      `Cannot run the GPU IDCT on a ${img.colorSpace} JPEG as only gray, YCbCr and RGB are supported: decode it on the CPU`,
    );
  }
  const channels = img.colorSpace === "gray" ? 1 : 3;
  const r = "region" in img ? img.region : undefined;
  if (!r) return { width: img.width, height: img.height, channels };
  return { width: r.width, height: r.height, channels, frame: { x: r.x, y: r.y, width: img.width, height: img.height } };
}

/** A batch's coefficient images, laid out for upload (NOTE [ Coefficient upload ]). */
export interface CoefficientPlan {
  /** Bytes of the coefficient upload that the CPU writes (all but the scan images' blocks). */
  uploadBytes: number;
  /** Bytes of the coefficient buffer: the upload, then the scan images' blocks (the GPU's to fill). */
  bufferBytes: number;
  /** Bytes of the sample-plane scratch buffer. */
  planeBytes: number;
  blocks: number;
  words: number;
  /** The scan images (`decode: "gpu"`): batch index, first component record, each component's first coefficient word. */
  scans: { scan: JpegScan; index: number; component: number; words: number[] }[];
  /** Writes the upload into `dst` (uploadBytes long). */
  write(dst: Uint8Array): void;
}

/**
 * Lays out the coefficient and scan images of a batch (undefined when it holds none). `pack`
 * gives where each image's pixels go in the preprocessing input, so the colour pass writes
 * them there. A scan image's blocks come after the upload, for the Huffman decode to write
 * (src/gpu/huffman.ts).
 */
export function planCoefficients(images: readonly object[], pack: PackLayout): CoefficientPlan | undefined {
  const jpegs: Array<[JpegCoefficients | JpegScan, number]> = [];
  images.forEach((img, i) => {
    if (isCoefficientImage(img) || isJpegScan(img)) jpegs.push([img, i]);
  });
  if (jpegs.length === 0) return undefined;
  let comps = 0, blocks = 0, words = 0, planeBytes = 0, scanBlocks = 0;
  for (const [img, i] of jpegs) {
    const n = img.components.length;
    const want = img.colorSpace === "gray" ? 1 : 3;
    if (n !== want) {
      throw new CassetteError("ERR_MALFORMED_INPUT", `Cannot run the GPU IDCT on image ${i} as a ${img.colorSpace} JPEG needs ${want} components: current value is ${n}`);
    }
    comps += n;
    for (const c of img.components) {
      if ("coefficients" in c && (c.coefficients.length !== c.blocksW * c.blocksH * 64 || c.quant.length !== 64)) {
        throw new CassetteError(
          "ERR_MALFORMED_INPUT",
          `Cannot run the GPU IDCT on image ${i} as component ${c.id} must hold blocksW·blocksH·64 coefficients and 64 quantizers: current value is ${c.coefficients.length} and ${c.quant.length}`,
        );
      }
      blocks += c.blocksW * c.blocksH;
      if (isJpegScan(img)) scanBlocks += c.blocksW * c.blocksH;
      planeBytes += c.blocksW * c.blocksH * 64;
    }
    const out = coefficientImageShape(img);
    words += Math.ceil((out.width * out.height * want) / 4);
  }
  const compAt = HEADER;
  const imageAt = compAt + comps * COMP_WORDS;
  const quantAt = imageAt + jpegs.length * IMAGE_WORDS;
  const coefAt = quantAt + comps * 64;
  const uploadWords = coefAt + (blocks - scanBlocks) * 32;
  // Where each scan image's blocks go: after the upload, component by component.
  const scans: CoefficientPlan["scans"] = [];
  let comp = 0, tail = uploadWords;
  for (const [img, i] of jpegs) {
    if (isJpegScan(img)) {
      const at: number[] = [];
      for (const c of img.components) {
        at.push(tail);
        tail += c.blocksW * c.blocksH * 32;
      }
      scans.push({ scan: img, index: i, component: comp, words: at });
    }
    comp += img.components.length;
  }
  return {
    uploadBytes: uploadWords * 4,
    bufferBytes: tail * 4,
    planeBytes: Math.max(4, planeBytes),
    blocks,
    words,
    scans,
    write(dst: Uint8Array) {
      const u = new Uint32Array(dst.buffer, dst.byteOffset, uploadWords);
      const s16 = new Int16Array(dst.buffer, dst.byteOffset, uploadWords * 2);
      u.set([comps, blocks, jpegs.length, words, compAt, imageAt, 0, 0], 0);
      let comp = 0, block = 0, word = 0, plane = 0, coef = coefAt, scan = 0;
      jpegs.forEach(([img, i], k) => {
        const hmax = Math.max(...img.components.map((c) => c.h));
        const vmax = Math.max(...img.components.map((c) => c.v));
        const out = coefficientImageShape(img);
        const channels = out.channels;
        const rec = imageAt + k * IMAGE_WORDS;
        const origin = ((out.frame?.x ?? 0) | ((out.frame?.y ?? 0) << 16)) >>> 0;
        u.set([word, out.width, out.height, channels, COLOR[img.colorSpace as keyof typeof COLOR], pack.offsets[i], img.components.length, origin], rec);
        const tail = isJpegScan(img) ? scans[scan++].words : undefined;
        img.components.forEach((c, j) => {
          const cr = compAt + comp * COMP_WORDS;
          const q = quantAt + comp * 64;
          const at = tail ? tail[j] : coef;
          const stride = c.blocksW * 8;
          u.set([block, c.blocksW, c.blocksH, at, q, plane, stride, 0], cr);
          u.set(c.quant, q);
          if ("coefficients" in c) {
            s16.set(c.coefficients, coef * 2);
            coef += c.blocksW * c.blocksH * 32;
          }
          const window = "blockX" in c ? [(c.blockX ?? 0) * 8, (c.blockY ?? 0) * 8] : [0, 0];
          u.set([plane, stride, hmax / c.h, vmax / c.v, c.width, c.height, window[0], window[1]], rec + 8 + j * 8);
          comp++;
          block += c.blocksW * c.blocksH;
          plane += c.blocksW * c.blocksH * 64;
        });
        word += Math.ceil((out.width * out.height * channels) / 4);
      });
    },
  };
}

/**
 * Records both passes: `coef` holds the upload, `planes` is scratch (planeBytes), and `dst` the
 * preprocessing input, whose coefficient images' pixel ranges get written.
 */
export async function encodeCoefficients(
  device: GPUDevice,
  encoder: GPUCommandEncoder,
  plan: CoefficientPlan,
  coef: GPUBuffer,
  planes: GPUBuffer,
  dst: GPUBuffer,
): Promise<void> {
  await idctKernel.encode(device, encoder, [coef, planes], grid(plan.blocks, WORKGROUP));
  await colorKernel.encode(device, encoder, [coef, planes, dst], grid(plan.words, WORKGROUP));
}

/** Compiles both pipelines for `device` ahead of the first batch. */
export async function compileCoefficientKernels(device: GPUDevice): Promise<void> {
  await Promise.all([idctKernel.compile(device), colorKernel.compile(device)]);
}
