/**
 * Python's round(), which torchvision's crops use (RandomResizedCrop.get_params' sides,
 * CenterCrop's offsets): halves go to the even neighbour, negative ones too.
 *
 * @example
 * ```ts
 * import { roundHalfEven } from "./round.ts";
 * console.log([0.5, 1.5, 2.5, -2.5, 2.4].map(roundHalfEven).join(" ")); // 0 2 2 -2 2
 * ```
 */
export function roundHalfEven(x: number): number {
  const r = Math.round(x);
  return Math.abs(x % 1) === 0.5 && r % 2 !== 0 ? r - 1 : r;
}
