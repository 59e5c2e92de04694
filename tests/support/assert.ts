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

/**
 * Awaits `fn()` and fails unless it rejects with an instance of `ErrorClass`
 * whose message includes `messageIncludes` (when given); returns the error.
 * A rejection of another kind fails the test instead of passing it.
 */
export async function assertRejects<E extends Error>(
  fn: () => PromiseLike<unknown>,
  // deno-lint-ignore no-explicit-any
  ErrorClass: abstract new (...args: any[]) => E,
  messageIncludes?: string,
  message?: string,
): Promise<E> {
  const prefix = message ? `${message}: ` : "";
  try {
    await fn();
  } catch (error) {
    if (!(error instanceof ErrorClass)) {
      throw new strict.AssertionError({
        message: `${prefix}expected a rejection with ${ErrorClass.name}, got ${
          Deno.inspect(error)
        }`,
      });
    }
    if (
      messageIncludes !== undefined && !error.message.includes(messageIncludes)
    ) {
      throw new strict.AssertionError({
        message: `${prefix}expected the error message to include ${
          JSON.stringify(messageIncludes)
        }, got ${JSON.stringify(error.message)}`,
      });
    }
    return error;
  }
  throw new strict.AssertionError({
    message: `${prefix}expected a rejection with ${ErrorClass.name}`,
  });
}
