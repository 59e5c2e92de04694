// Deno's @std/assert lives on JSR, which this project cannot reach; node:assert
// gives the same checks with clear diffs.
import { strict } from "node:assert";

export function assert(value: unknown, message?: string): asserts value {
  strict.ok(value, message);
}
export const assertEquals = <T>(actual: T, expected: T, message?: string) =>
  strict.deepStrictEqual(actual, expected, message);
export const assertNotEquals = <T>(actual: T, expected: T, message?: string) =>
  strict.notDeepStrictEqual(actual, expected, message);
export const assertMatch = (
  actual: string,
  pattern: RegExp,
  message?: string,
) => strict.match(actual, pattern, message);
