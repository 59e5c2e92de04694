import type { z } from "@hono/zod-openapi";
import type { Context, MiddlewareHandler } from "hono";
import type { AppEnv } from "./env.ts";
import { errorResponse } from "./errors.ts";
import { MSG } from "./messages.ts";
import type { Malformed } from "./openapi.ts";

export const BODY_LIMIT_BYTES = 64 * 1024;

const utf8 = new TextDecoder("utf-8", { fatal: true });
const TOO_LARGE = Symbol("too large");
const NOT_JSON = Symbol("not JSON");

/**
 * Reads the body once, as JSON whatever its Content-Type says, at most
 * 64 KiB, and hands the schema's verdict to the handler as the validated
 * `json` (`c.req.valid("json")`), so the route's schema is the one judge of
 * its shape. A body that is not JSON is judged as `null`, which the schema
 * rejects with the route's own message, unless the contract makes an
 * unparseable body a failure of the endpoint (`malformed: "failure"`).
 */
export const readJsonBody = (
  schema: z.ZodType,
  malformed: Malformed,
  invalid: (c: Context<AppEnv>, issues: z.core.$ZodIssue[]) => Response,
): MiddlewareHandler<AppEnv> =>
async (c, next) => {
  const text = await readText(c.req.raw, BODY_LIMIT_BYTES);
  if (text === TOO_LARGE) return errorResponse(c, 413, MSG.bodyTooLarge);
  const value = text === undefined ? NOT_JSON : parseJson(text);
  if (value === NOT_JSON && malformed === "failure") {
    // A failure of the endpoint (its 500), logged with its cause by the
    // error handler as every 500 is; the body itself is never logged.
    throw new Error(
      `request body is not ${text === undefined ? "UTF-8" : "JSON"}`,
    );
  }
  const result = await schema.safeParseAsync(value === NOT_JSON ? null : value);
  if (!result.success) return invalid(c, result.error.issues);
  c.req.addValidatedData("json", result.data as object);
  await next();
};

/**
 * The body for a handler that judges it itself (`handlerBody`), read as
 * readJsonBody reads it: `undefined` when there is none (empty),
 * "too_large" past 64 KiB, "not_json" when it is not UTF-8 JSON.
 */
export async function readJsonValue(
  req: Request,
): Promise<{ value: unknown } | "too_large" | "not_json"> {
  const text = await readText(req, BODY_LIMIT_BYTES);
  if (text === TOO_LARGE) return "too_large";
  if (text === undefined) return "not_json";
  if (text.trim() === "") return { value: undefined };
  const value = parseJson(text);
  return value === NOT_JSON ? "not_json" : { value };
}

function parseJson(text: string): unknown {
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
async function readText(req: Request, limit: number) {
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
