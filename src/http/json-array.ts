const encoder = new TextEncoder();
const COMMA = encoder.encode(",");
const CLOSE = encoder.encode("]");

/**
 * Some elements of a JSON array, each already serialised as JSON: as
 * strings, or as one text of elements already joined by commas, or as
 * that text's UTF-8 bytes (never empty).
 */
export type JsonBatch = string[] | string | Uint8Array<ArrayBuffer>;

const textOf = (batch: string[] | string) =>
  typeof batch === "string" ? batch : batch.join(",");
const bytesOf = (batch: JsonBatch) =>
  batch instanceof Uint8Array ? batch : encoder.encode(textOf(batch));
const isEmpty = (batch: JsonBatch) => batch.length === 0;

/** `[`, the batches joined by commas, and `]` (`close`), as one text or, with bytes among them, bytes. */
function joined(head: JsonBatch[], close: boolean) {
  if (!head.some((b) => b instanceof Uint8Array)) {
    const text = `[${
      head.map((b) => textOf(b as string[] | string)).join(",")
    }`;
    return close ? `${text}]` : text;
  }
  const parts = head.map(bytesOf);
  let size = 1 + Math.max(0, parts.length - 1) + (close ? 1 : 0);
  for (const part of parts) size += part.length;
  const out = new Uint8Array(size);
  out[0] = 0x5b; // [
  let at = 1;
  for (let i = 0; i < parts.length; i++) {
    if (i > 0) out[at++] = 0x2c; // ,
    out.set(parts[i], at);
    at += parts[i].length;
  }
  if (close) out[at] = 0x5d; // ]
  return out;
}

/**
 * A JSON array body from batches of elements already serialised as JSON.
 * A list that ends with its first batch goes out in one piece (a text, or
 * bytes when the batches are bytes); a longer one is streamed, batch by
 * batch, as the client reads. Up to the first byte a failure still becomes
 * the endpoint's own error response; after it, a failure can only cut the
 * body short, which `onError` hears of. A client that goes away closes the
 * source.
 */
export async function jsonArrayBody(
  batches: AsyncIterable<JsonBatch>,
  onError: (cause: unknown) => void,
): Promise<string | Uint8Array<ArrayBuffer> | ReadableStream<Uint8Array>> {
  const source = batches[Symbol.asyncIterator]();
  const head: JsonBatch[] = [];
  for (let i = 0; i < 2; i++) {
    const next = await source.next();
    if (next.done) return joined(head, true);
    if (!isEmpty(next.value)) head.push(next.value);
  }
  let empty = head.length === 0;
  return new ReadableStream<Uint8Array>({
    start(controller) {
      const first = joined(head, false);
      controller.enqueue(
        typeof first === "string" ? encoder.encode(first) : first,
      );
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
          controller.enqueue(bytesOf(next.value));
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
