/**
 * Reading a request's body: as text, at most a limit, UTF-8 or nothing;
 * then as JSON; and refusing text PostgreSQL cannot store. Apart from the
 * steps (steps.ts) because SCIM's own body step reads with it too.
 */
import type { z } from "@hono/zod-openapi";

type Issue = z.core.$ZodIssue;

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

/**
 * Where a value holds text PostgreSQL cannot store: the path of its first
 * string (or object key) with NUL (U+0000) or a lone surrogate, which
 * neither `text` nor `jsonb` (an audit record's details) holds. Undefined
 * when every string can be stored. Only plain arrays and objects are
 * walked: what a schema's transforms make of a value is its own.
 */
export function unstorableText(
  value: unknown,
  path: PropertyKey[] = [],
): PropertyKey[] | undefined {
  if (typeof value === "string") return storable(value) ? undefined : path;
  if (Array.isArray(value)) {
    for (const [i, item] of value.entries()) {
      const found = unstorableText(item, [...path, i]);
      if (found) return found;
    }
  } else if (
    typeof value === "object" && value !== null &&
    Object.getPrototypeOf(value) === Object.prototype
  ) {
    for (const [key, item] of Object.entries(value as object)) {
      if (!storable(key)) return [...path, key];
      const found = unstorableText(item, [...path, key]);
      if (found) return found;
    }
  }
  return undefined;
}

const LONE_SURROGATE = /\p{Cs}/u;
const storable = (s: string) =>
  !s.includes("\u0000") && !LONE_SURROGATE.test(s);

/**
 * A schema's verdict on a value, refusing text PostgreSQL cannot store
 * (`unstorableText`) with the message the schema gives a body that is not
 * JSON at all (`null`): the endpoint's bad-body message. So no body rule
 * has to remember NUL, and none answers 500 for it.
 */
export async function parseStorable<T extends z.ZodType>(
  schema: T,
  value: unknown,
): Promise<
  { success: true; data: z.output<T> } | { success: false; issues: Issue[] }
> {
  const result = await schema.safeParseAsync(value);
  if (!result.success) return { success: false, issues: result.error.issues };
  const path = unstorableText(result.data);
  if (!path) return result;
  const verdict = await schema.safeParseAsync(null);
  const message = verdict.error?.issues[0]?.message ?? "text not storable";
  return {
    success: false,
    issues: [{ code: "custom", path, message, input: value }],
  };
}
