/**
 * What a BulkRequest (RFC 7644 3.7) says, read before any operation runs:
 * its operations, `failOnErrors`, and each operation as the single request
 * it stands for, with its `bulkId:` references resolved.
 */
import { type Refusal, refuse } from "../refusal.ts";
import { SCIM_BODY_LIMIT_BYTES } from "./steps.ts";

/** What ServiceProviderConfig.bulk advertises, and the Bulk route enforces. */
export const BULK_MAX_OPERATIONS = 1000;
export const BULK_MAX_PAYLOAD_BYTES = SCIM_BODY_LIMIT_BYTES;

export const BULK_RESPONSE_SCHEMA =
  "urn:ietf:params:scim:api:messages:2.0:BulkResponse";

type Json = Record<string, unknown>;

export interface BulkRequest {
  operations: unknown[];
  /** Operations after this many failures are not run. */
  failOnErrors?: number;
}

const isObject = (v: unknown): v is Json =>
  typeof v === "object" && v !== null && !Array.isArray(v);

/** `name` of `o`, its spelling in any case (SCIM's attribute names are case-insensitive). */
const field = (o: Json, name: string) => {
  const lower = name.toLowerCase();
  const key = Object.keys(o).find((k) => k.toLowerCase() === lower);
  return key === undefined ? undefined : o[key];
};

/**
 * The BulkRequest of a body; "tooMany" past maxOperations, or the words
 * of what is malformed.
 */
export function readBulkRequest(body: Json): BulkRequest | "tooMany" | string {
  const operations = field(body, "Operations");
  if (!Array.isArray(operations)) return "Operations must be a list";
  const failOnErrors = field(body, "failOnErrors");
  if (
    failOnErrors !== undefined &&
    !(Number.isSafeInteger(failOnErrors) && (failOnErrors as number) > 0)
  ) return "failOnErrors must be a positive integer";
  if (operations.length > BULK_MAX_OPERATIONS) return "tooMany";
  return {
    operations,
    ...failOnErrors !== undefined && { failOnErrors: failOnErrors as number },
  };
}

export type BulkMethod = "POST" | "PUT" | "PATCH" | "DELETE";

/** An operation as the single request it stands for. */
export interface SingleRequest {
  method: BulkMethod;
  /** Under `/scim/v2`: `/Users`, `/Groups` (POST), or one of them (`/Users/{id}`). */
  path: string;
  data?: unknown;
  version?: string;
  bulkId?: string;
}

/** An operation refused before it runs, and what of it the answer repeats. */
export interface RefusedOperation {
  refused: Refusal<"invalidSyntax" | "invalidValue">;
  method?: string;
  bulkId?: string;
}

const METHODS = new Set<string>(["POST", "PUT", "PATCH", "DELETE"]);
const PATH = /^\/(Users|Groups)(?:\/([^/?#]+))?$/;
const REFERENCE = "bulkId:";
/** What an `If-Match` header can carry. */
const HEADER_TEXT = /^[\t\x20-\x7e]*$/;

/**
 * The single request operation `op` stands for, each `bulkId:<id>` in its
 * path or its data replaced by the id `ids` maps it to (the resources
 * earlier POSTs of the request made), or why it cannot run.
 */
export function singleRequest(
  op: unknown,
  ids: ReadonlyMap<string, string>,
): SingleRequest | RefusedOperation {
  const syntax = (
    detail: string,
    seen: Omit<RefusedOperation, "refused"> = {},
  ): RefusedOperation => ({
    refused: refuse("invalidSyntax", detail),
    ...seen,
  });
  if (!isObject(op)) return syntax("an operation must be an object");
  const rawMethod = field(op, "method");
  const method = typeof rawMethod === "string"
    ? rawMethod.toUpperCase()
    : undefined;
  const bulkId = field(op, "bulkId");
  const seen = {
    ...method !== undefined && { method },
    ...typeof bulkId === "string" && { bulkId },
  };
  if (method === undefined || !METHODS.has(method)) {
    return syntax("method must be POST, PUT, PATCH or DELETE", seen);
  }
  if (bulkId !== undefined && typeof bulkId !== "string") {
    return syntax("bulkId must be a string", seen);
  }
  const version = field(op, "version");
  if (
    version !== undefined &&
    !(typeof version === "string" && HEADER_TEXT.test(version))
  ) return syntax("version must be an entity tag", seen);
  const rawPath = field(op, "path");
  const match = typeof rawPath === "string" ? PATH.exec(rawPath) : null;
  if (
    !match || (method === "POST") !== (match[2] === undefined) ||
    match[2] === "." || match[2] === ".."
  ) {
    return syntax(
      "path must be /Users or /Groups for a POST, /Users/{id} or /Groups/{id} otherwise",
      seen,
    );
  }
  const unresolved = (ref: string): RefusedOperation => ({
    refused: refuse("invalidValue", `Unresolved bulkId: ${ref}`),
    ...seen,
  });
  let id: string | undefined = match[2];
  if (id?.startsWith(REFERENCE)) {
    const ref = id.slice(REFERENCE.length);
    id = ids.get(ref);
    if (id === undefined) return unresolved(ref);
  }
  // Encoded, so that the id stays one segment of the URL, as sent.
  const path = id === undefined
    ? `/${match[1]}`
    : `/${match[1]}/${encodeURIComponent(id)}`;
  const data = field(op, "data");
  let missing: string | undefined;
  const resolved = method === "DELETE" ? undefined : resolve(data, (ref) => {
    const id = ids.get(ref);
    missing ??= id === undefined ? ref : undefined;
    return id;
  });
  if (missing !== undefined) return unresolved(missing);
  return {
    method: method as BulkMethod,
    path,
    ...resolved !== undefined && { data: resolved },
    ...version !== undefined && { version },
    ...bulkId !== undefined && { bulkId },
  };
}

/**
 * `value` with every string that is `bulkId:<id>` replaced by what `lookup`
 * makes of `<id>` (RFC 7644 3.7.2: a reference may stand in any value, a
 * group's members' included).
 */
function resolve(
  value: unknown,
  lookup: (ref: string) => string | undefined,
): unknown {
  if (typeof value === "string") {
    return value.startsWith(REFERENCE)
      ? lookup(value.slice(REFERENCE.length)) ?? value
      : value;
  }
  if (Array.isArray(value)) return value.map((v) => resolve(v, lookup));
  if (isObject(value)) {
    // Defined, not assigned: a key `__proto__` stays a key.
    return Object.fromEntries(
      Object.entries(value).map(([k, v]) => [k, resolve(v, lookup)]),
    );
  }
  return value;
}
