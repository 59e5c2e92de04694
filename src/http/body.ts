import type { MiddlewareHandler } from "hono";
import type { AppEnv } from "./env.ts";
import { ApiError } from "./errors.ts";
import { MSG } from "./messages.ts";

export const BODY_LIMIT_BYTES = 64 * 1024;

const utf8 = new TextDecoder("utf-8", { fatal: true });

/**
 * Reads the body as JSON whatever its Content-Type says, at most 64 KiB,
 * and hands it on as `application/json`, so the route's zod schema is the one
 * judge of its shape. A body that is not JSON is handed on as `null`, which
 * the schema rejects with the route's own message, unless the contract makes
 * an unparseable body a failure of the endpoint (`malformed: "failure"`).
 */
export const jsonBody = (
  { malformed }: { malformed: "invalid" | "failure" } = {
    malformed: "invalid",
  },
): MiddlewareHandler<AppEnv> =>
async (c, next) => {
  const raw = c.req.raw;
  const text = await readText(raw, BODY_LIMIT_BYTES);
  const parsable = text !== undefined && isJson(text);
  if (!parsable && malformed === "failure") {
    throw new ApiError(500, c.get("failure"));
  }
  const headers = new Headers(raw.headers);
  headers.set("content-type", "application/json");
  headers.delete("content-length");
  c.req.raw = new Request(raw.url, {
    method: raw.method,
    headers,
    body: parsable ? text : "null",
  });
  await next();
};

function isJson(text: string) {
  try {
    JSON.parse(text);
    return true;
  } catch {
    return false;
  }
}

/** The body as text; undefined when it is not UTF-8. Stops reading past the limit. */
async function readText(req: Request, limit: number) {
  const declared = Number(req.headers.get("content-length") ?? 0);
  if (declared > limit) throw new ApiError(413, MSG.bodyTooLarge);
  if (!req.body) return "";
  const chunks: Uint8Array[] = [];
  let size = 0;
  for await (const chunk of req.body) {
    size += chunk.byteLength;
    if (size > limit) throw new ApiError(413, MSG.bodyTooLarge);
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
