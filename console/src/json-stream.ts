/**
 * Reading the start of a streamed JSON array without the rest: a page
 * shows the first of perhaps a million records, and waits for no more.
 */

/**
 * The first `limit` objects of a streamed JSON array of flat objects,
 * reading no further than they need (the rest of the body is cancelled).
 */
export async function firstElements<T>(
  body: ReadableStream<Uint8Array>,
  limit: number,
): Promise<T[]> {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  const found: T[] = [];
  let element = "";
  let depth = 0;
  let inString = false;
  let escaped = false;
  try {
    while (found.length < limit) {
      const { done, value } = await reader.read();
      if (done) break;
      for (const ch of decoder.decode(value, { stream: true })) {
        if (depth === 0) {
          if (ch === "{") {
            depth = 1;
            element = ch;
          }
          continue;
        }
        element += ch;
        if (inString) {
          if (escaped) escaped = false;
          else if (ch === "\\") escaped = true;
          else if (ch === '"') inString = false;
        } else if (ch === '"') inString = true;
        else if (ch === "{") depth++;
        else if (ch === "}" && --depth === 0) {
          found.push(JSON.parse(element));
          if (found.length === limit) break;
        }
      }
    }
  } finally {
    await reader.cancel().catch(() => {});
  }
  return found;
}
