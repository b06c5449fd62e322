// The state of one image: what the markers said (frame header B.2.2, tables B.2.4, restart
// interval B.2.4.4, APPn facts) and the geometry the decoder derived from it. Plain globals and
// static records (memory.data), nothing managed: the arena in ../common/memory.ts owns the heap.
//
// Component record (one per frame component, 17 of 32 × i32 used = 128 bytes):
//
//   ┌────┬───┬───┬────┬────┬────┬────┬────┬──────┬───────┬────────┬────┬──────┬────┬────┬──────┐
//   │ ID │ H │ V │ TQ │ TD │ TA │ BW │ BH │ COEF │ PLANE │ STRIDE │ BS │ PRED │ CW │ CH │ SEEN │
//   └────┴───┴───┴────┴────┴────┴────┴────┴──────┴───────┴────────┴────┴──────┴────┴────┴──────┘
//   then RMASK
//   ID/H/V/TQ   from SOF: identifier, sampling factors, quantization table
//   TD/TA       from the current SOS: DC and AC Huffman tables
//   BW × BH     blocks, padded to whole MCUs (A.2.4)
//   COEF        64 × i16 per block, natural order (index v·8 + u, see idct.ts)
//   PLANE       samples after the IDCT, STRIDE bytes a row, BS × BS samples a block: BH rows of
//               blocks, or a ring of at least two MCU rows when rows leave as the scan goes
//               (decoder.ts), a power of two: sample row y is at row y & RMASK (−1: whole plane)
//   PRED        DC predictor (F.2.1.3.1)
//   CW × CH     meaningful samples in PLANE (the rest is MCU padding)
//   SEEN        1 once a scan has carried this component
//   CSZ         bytes per stored block in COEF (scan.ts, planStorage)

export const MAX_COMPONENTS = 4;
export const COMP: usize = memory.data(MAX_COMPONENTS * 128, 16);

export const F_ID = 0;
export const F_H = 1;
export const F_V = 2;
export const F_TQ = 3;
export const F_TD = 4;
export const F_TA = 5;
export const F_BW = 6;
export const F_BH = 7;
export const F_COEF = 8;
export const F_PLANE = 9;
export const F_STRIDE = 10;
export const F_BS = 11;
export const F_PRED = 12;
export const F_CW = 13;
export const F_CH = 14;
export const F_SEEN = 15;
export const F_RMASK = 16;
export const F_CSZ = 17;

@inline export function cget(c: i32, f: i32): i32 {
  return load<i32>(COMP + (<usize>c << 7) + (<usize>f << 2));
}
@inline export function cset(c: i32, f: i32, v: i32): void {
  store<i32>(COMP + (<usize>c << 7) + (<usize>f << 2), v);
}

// Quantization tables (B.2.4.1): 4 × 64 u16 in natural order (row-major, v·8 + u).
export const QUANT: usize = memory.data(4 * 64 * 2, 16);
export let quantDefined: i32 = 0; // bit t set once table t is defined

// The input.
export let src: usize = 0;
export let srcEnd: usize = 0;

// Frame header (B.2.2).
export let sofMarker: i32 = 0; // 0xC0…0xCF, 0 before any SOF
export let precision: i32 = 0;
export let width: i32 = 0;
export let height: i32 = 0;
export let ncomp: i32 = 0;
export let hmax: i32 = 1;
export let vmax: i32 = 1;
export let mcusX: i32 = 0;
export let mcusY: i32 = 0;
export let progressive: bool = false;
export let sofOffset: i32 = 0;

// Define restart interval (B.2.4.4): MCUs per interval, 0 = none.
export let restartInterval: i32 = 0;

// Application segments.
export let jfif: bool = false; //        APP0 "JFIF\0" (colour space YCbCr)
export let adobeTransform: i32 = -1; //  APP14 "Adobe": 0 = none (RGB/CMYK), 1 = YCbCr, 2 = YCCK
export let orientation: i32 = 1; //      APP1 Exif tag 0x0112, 1…8

// Current scan (B.2.3).
/** Grey output of a YCbCr file: only the luma planes are transformed (decoder.ts, MODE_GREY). */
export let lumaOnly: bool = false;
export let scanCount: i32 = 0;
export let scanNs: i32 = 0;
export const SCAN_COMP: usize = memory.data(4 * 4, 16); // frame component index of each scan component
export let ss: i32 = 0;
export let se: i32 = 0;
export let ah: i32 = 0;
export let al: i32 = 0;

@inline export function scanComp(i: i32): i32 {
  return load<i32>(SCAN_COMP + (<usize>i << 2));
}

export function resetFrame(): void {
  quantDefined = 0;
  sofMarker = 0;
  precision = 0;
  width = 0;
  height = 0;
  ncomp = 0;
  hmax = 1;
  vmax = 1;
  mcusX = 0;
  mcusY = 0;
  progressive = false;
  sofOffset = 0;
  restartInterval = 0;
  jfif = false;
  adobeTransform = -1;
  orientation = 1;
  scanCount = 0;
  scanNs = 0;
  lumaOnly = false;
  memory.fill(COMP, 0, MAX_COMPONENTS * 128);
}

/** Offset of `p` from the start of the input, for error reports. */
@inline export function offsetOf(p: usize): i32 {
  return <i32>(p - src);
}
