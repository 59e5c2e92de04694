/** Something that counts work while it runs (a Prometheus gauge, say). */
export interface InFlight {
  inc(): void;
  dec(): void;
}

/**
 * The store with every call counted while it runs, its values unchanged. postgres.js shows no
 * count of the connections it has lent out, so this is the honest stand-in:
 * each store call holds one pool connection at a time (a transaction holds
 * one throughout), or waits for one when all DATABASE_POOL_MAX are busy. A
 * streamed list counts as one call from its first read to its last batch or
 * its abandonment, though it holds a connection only while each batch's
 * statement runs (user-list.ts): between batches it counts with none held.
 */
export function countInFlight<T extends object>(
  store: T,
  inFlight: InFlight,
): T {
  const wrap = (value: unknown): unknown => {
    if (typeof value === "function") {
      return (...args: unknown[]) => {
        const result = value(...args);
        if (isNativePromise(result)) {
          inFlight.inc();
          return result.finally(() => inFlight.dec());
        }
        if (isAsyncIterable(result)) return countIteration(result, inFlight);
        return result;
      };
    }
    if (value && typeof value === "object") {
      return Object.fromEntries(
        Object.entries(value).map(([k, v]) => [k, wrap(v)]),
      );
    }
    return value;
  };
  return wrap(store) as T;
}

/**
 * A promise of the language's own: what an async store call returns. A
 * postgres.js query or fragment is a Promise subclass that runs as a
 * statement once anything calls its `then`, `catch` or `finally`; one
 * returned as a value (a compiled SCIM filter, say) is passed on untouched.
 */
const isNativePromise = (v: unknown): v is Promise<unknown> =>
  v instanceof Promise && Object.getPrototypeOf(v) === Promise.prototype;

const isAsyncIterable = (v: unknown): v is AsyncIterable<unknown> =>
  typeof (v as AsyncIterable<unknown>)?.[Symbol.asyncIterator] === "function";

function countIteration<T>(
  iterable: AsyncIterable<T>,
  inFlight: InFlight,
): AsyncIterable<T> {
  return {
    [Symbol.asyncIterator]() {
      const inner = iterable[Symbol.asyncIterator]();
      let counting = false;
      let finished = false;
      const stop = () => {
        if (counting) inFlight.dec();
        counting = false;
        finished = true;
      };
      return {
        async next() {
          if (!counting && !finished) {
            counting = true;
            inFlight.inc();
          }
          try {
            const step = await inner.next();
            if (step.done) stop();
            return step;
          } catch (e) {
            stop();
            throw e;
          }
        },
        async return(value?: unknown) {
          stop();
          return await inner.return?.(value) ??
            { done: true as const, value: undefined as T };
        },
      };
    },
  };
}
