/**
 * Reading a request body: as text, at most a limit, UTF-8 or nothing; then
 * as JSON. The `body` step (steps.ts) is what routes use.
 */
export const BODY_LIMIT_BYTES = 64 * 1024;

const utf8 = new TextDecoder("utf-8", { fatal: true });
export const TOO_LARGE = Symbol("too large");
export const NOT_JSON = Symbol("not JSON");

export function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return NOT_JSON;
  }
}

/**
 * The body as text; undefined when it is not UTF-8, TOO_LARGE past the
 * limit (declared or read: it stops reading there).
 */
export async function readText(req: Request, limit: number) {
  const declared = Number(req.headers.get("content-length") ?? 0);
  if (declared > limit) return TOO_LARGE;
  if (!req.body) return "";
  const chunks: Uint8Array[] = [];
  let size = 0;
  for await (const chunk of req.body) {
    size += chunk.byteLength;
    if (size > limit) return TOO_LARGE;
    chunks.push(chunk);
  }
  const bytes = new Uint8Array(size);
  let offset = 0;
  for (const chunk of chunks) {
    bytes.set(chunk, offset);
    offset += chunk.byteLength;
  }
  try {
    return utf8.decode(bytes);
  } catch {
    return undefined;
  }
}
