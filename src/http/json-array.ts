const encoder = new TextEncoder();

/**
 * A JSON array body streamed from batches of elements already serialised as
 * JSON. The first batch is read before this returns, so a failure up to then
 * still becomes the endpoint's own error response; a later failure can only
 * cut the body short, which `onError` hears of. A client that goes away
 * closes the source (and its database cursor).
 */
export async function jsonArrayStream(
  batches: AsyncIterable<string[]>,
  onError: (cause: unknown) => void,
): Promise<ReadableStream<Uint8Array>> {
  const source = batches[Symbol.asyncIterator]();
  const first = await source.next();
  let empty = true;
  const encode = (rows: string[], prefix = "") => {
    if (rows.length === 0) return encoder.encode(prefix);
    const text = prefix + (empty ? "" : ",") + rows.join(",");
    empty = false;
    return encoder.encode(text);
  };
  return new ReadableStream<Uint8Array>({
    start(controller) {
      if (first.done) {
        controller.enqueue(encoder.encode("[]"));
        controller.close();
      } else {
        controller.enqueue(encode(first.value, "["));
      }
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
