const encoder = new TextEncoder();

/**
 * A JSON array body from batches of elements already serialised as JSON.
 * A list that ends with its first batch goes out as one string; a longer
 * one is streamed, batch by batch, as the client reads. Up to the first byte a
 * failure still becomes the endpoint's own error response; after it, a
 * failure can only cut the body short, which `onError` hears of. A client
 * that goes away closes the source (and its database cursor).
 */
export async function jsonArrayBody(
  batches: AsyncIterable<string[]>,
  onError: (cause: unknown) => void,
): Promise<string | ReadableStream<Uint8Array>> {
  const source = batches[Symbol.asyncIterator]();
  const head: string[] = [];
  for (let i = 0; i < 2; i++) {
    const next = await source.next();
    if (next.done) return `[${head.join(",")}]`;
    head.push(...next.value);
  }
  let empty = head.length === 0;
  const encode = (rows: string[], prefix = "") => {
    if (rows.length === 0) return encoder.encode(prefix);
    const text = prefix + (empty ? "" : ",") + rows.join(",");
    empty = false;
    return encoder.encode(text);
  };
  return new ReadableStream<Uint8Array>({
    start(controller) {
      controller.enqueue(encoder.encode(`[${head.join(",")}`));
    },
    async pull(controller) {
      try {
        const next = await source.next();
        if (next.done) {
          controller.enqueue(encoder.encode("]"));
          controller.close();
        } else {
          controller.enqueue(encode(next.value));
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
