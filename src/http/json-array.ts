const encoder = new TextEncoder();
const COMMA = encoder.encode(",");
const CLOSE = encoder.encode("]");

/**
 * Some elements of a JSON array, each already serialised as JSON: as
 * strings, or as one text of elements already joined by commas (never
 * empty).
 */
export type JsonBatch = string[] | string;

const textOf = (batch: JsonBatch) =>
  typeof batch === "string" ? batch : batch.join(",");
const isEmpty = (batch: JsonBatch) => batch.length === 0;

/**
 * A JSON array body from batches of elements already serialised as JSON.
 * A list that ends with its first batch goes out as one string; a longer
 * one is streamed, batch by batch, as the client reads. Up to the first byte a
 * failure still becomes the endpoint's own error response; after it, a
 * failure can only cut the body short, which `onError` hears of. A client
 * that goes away closes the source.
 */
export async function jsonArrayBody(
  batches: AsyncIterable<JsonBatch>,
  onError: (cause: unknown) => void,
): Promise<string | ReadableStream<Uint8Array>> {
  const source = batches[Symbol.asyncIterator]();
  const head: string[] = [];
  for (let i = 0; i < 2; i++) {
    const next = await source.next();
    if (next.done) return `[${head.join(",")}]`;
    if (!isEmpty(next.value)) head.push(textOf(next.value));
  }
  let empty = head.length === 0;
  return new ReadableStream<Uint8Array>({
    start(controller) {
      controller.enqueue(encoder.encode(`[${head.join(",")}`));
    },
    async pull(controller) {
      try {
        // Until something is written: a pull that enqueues nothing is not called again.
        while (true) {
          const next = await source.next();
          if (next.done) {
            controller.enqueue(CLOSE);
            controller.close();
            return;
          }
          if (isEmpty(next.value)) continue;
          if (!empty) controller.enqueue(COMMA);
          controller.enqueue(encoder.encode(textOf(next.value)));
          empty = false;
          return;
        }
      } catch (cause) {
        onError(cause);
        controller.error(cause);
      }
    },
    async cancel() {
      await source.return?.();
    },
  }, { highWaterMark: 0 });
}
