import type { PackLayout } from "./pack.ts";
export interface JpegCoefficients { kind: "jpeg-coefficients"; width: number; height: number }
export function isCoefficientImage(x: unknown): x is JpegCoefficients { return (x as JpegCoefficients).kind === "jpeg-coefficients"; }
export function coefficientImageShape(x: JpegCoefficients) { return { width: x.width, height: x.height, channels: 3 }; }
export interface CoefficientPlan { uploadBytes: number; planeBytes: number; write(dst: Uint8Array): void }
export function planCoefficients(_i: readonly unknown[], _p: PackLayout): CoefficientPlan | undefined { return undefined; }
export async function encodeCoefficients(..._a: unknown[]): Promise<void> {}
