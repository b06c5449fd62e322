/** `1 epoch`, `2 epochs`: a count with its noun in the number the count asks for. */
export function count(n: number, one: string, many = `${one}s`): string {
  return `${n} ${n === 1 ? one : many}`;
}
