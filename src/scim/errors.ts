/**
 * SCIM's error answers (RFC 7644 3.12): `schemas`, `status` as a string,
 * `scimType` where RFC 7644 names one, `detail` in words; media type
 * application/scim+json; a 401 says `WWW-Authenticate: Bearer`. Every SCIM
 * route declares this form (`errorForm`), so its checks, its outcomes and
 * its 500 answer so, and the document shows them so.
 */
import { z } from "@hono/zod-openapi";
import type { Context } from "hono";
import type { AppEnv } from "../http/env.ts";
import { type Message, MSG } from "../http/messages.ts";
import { type Check, check, type ErrorForm } from "../http/openapi.ts";
import type { Refusal } from "../refusal.ts";

export const SCIM_MEDIA_TYPE = "application/scim+json";
export const ERROR_SCHEMA = "urn:ietf:params:scim:api:messages:2.0:Error";

export type ScimType =
  | "invalidFilter"
  | "tooMany"
  | "uniqueness"
  | "mutability"
  | "invalidSyntax"
  | "invalidPath"
  | "noTarget"
  | "invalidValue"
  | "invalidVers"
  | "sensitive"
  // RFC 9865's, of cursor pagination.
  | "invalidCursor"
  | "expiredCursor";

/** The scimType each message answers with. */
const SCIM_TYPES: Partial<Record<Message, ScimType>> = {
  [MSG.scimInvalidFilter]: "invalidFilter",
  [MSG.scimInvalidValue]: "invalidValue",
  [MSG.scimInvalidSyntax]: "invalidSyntax",
  [MSG.scimInvalidPath]: "invalidPath",
  [MSG.scimNoTarget]: "noTarget",
  [MSG.scimMutability]: "mutability",
  [MSG.scimUniqueness]: "uniqueness",
  [MSG.scimInvalidCursor]: "invalidCursor",
  [MSG.scimExpiredCursor]: "expiredCursor",
};

/** A SCIM check: its message is the `detail` unless the step says more. */
export const scimCheck = <
  const S extends 400 | 401 | 403 | 404 | 409 | 412 | 413,
>(
  status: S,
  message: Message,
  when: string,
) =>
  check(
    status,
    message,
    when,
    status === 401
      ? {
        "WWW-Authenticate": {
          description: "`Bearer`: the token scheme",
          schema: { type: "string" },
        },
      }
      : undefined,
  );

/** The error body of SCIM. */
export const ScimErrorSchema = z.object({
  schemas: z.array(z.literal(ERROR_SCHEMA)),
  status: z.string().openapi({ example: "400" }),
  scimType: z.string().optional(),
  detail: z.string(),
}).openapi("ScimError");

/**
 * The answer to a failed check with a particular `detail` (a refusal's
 * words): said by the step or endpoint before it answers, rendered by the
 * form.
 */
export function scimError(
  c: Context<AppEnv>,
  status: number,
  message: Message,
  detail?: string,
): Response {
  if (detail !== undefined) c.set("errorDetail", detail);
  return scimErrorForm.respond(c, status, message);
}

/** The check a SCIM refusal answers where no route's outcome names it (a step's, a Bulk operation's). */
const REFUSED = {
  invalidValue: [400, MSG.scimInvalidValue],
  invalidFilter: [400, MSG.scimInvalidFilter],
  invalidSyntax: [400, MSG.scimInvalidSyntax],
} as const satisfies Partial<Record<Refusal["reason"], [number, Message]>>;

/** A refusal of these reasons has its check without a route's. */
export type CheckedRefusal = Refusal<keyof typeof REFUSED>;

/** The status and SCIM error body of a refusal: its reason's check, its detail in words. */
export const scimRefusalBody = (refusal: CheckedRefusal) => {
  const [status, message] = REFUSED[refusal.reason];
  return { status, body: scimErrorBody(status, message, refusal.detail) };
};

/** A step's refusal in SCIM's form: its reason's check, its detail in words. */
export const scimRefused = (
  c: Context<AppEnv>,
  refusal: CheckedRefusal,
): Response => {
  const [status, message] = REFUSED[refusal.reason];
  return scimError(c, status, message, refusal.detail);
};

/** A SCIM error body: `message`'s scimType, `detail` (else the message) in words. */
export const scimErrorBody = (
  status: number,
  message: Message,
  detail: string = message,
) => {
  const scimType = SCIM_TYPES[message];
  return {
    schemas: [ERROR_SCHEMA],
    status: String(status),
    ...scimType && { scimType },
    detail,
  };
};

export const scimErrorForm: ErrorForm = {
  respond(c, status, message, headers) {
    const detail = (c as Context<AppEnv>).get("errorDetail");
    return c.body(
      JSON.stringify(scimErrorBody(status, message, detail)),
      status as 400,
      {
        ...headers,
        "content-type": SCIM_MEDIA_TYPE,
        ...status === 401 && { "www-authenticate": 'Bearer realm="scim"' },
      },
    );
  },
  document(status: number, checks: readonly Check[]) {
    const examples = Object.fromEntries(
      checks.map((c) => [c.message, {
        summary: c.when,
        value: scimErrorBody(status, c.message),
      }]),
    );
    const headers = Object.assign({}, ...checks.map((c) => c.headers ?? {}));
    return {
      description: checks.map((c) => c.when).join("; ").replace(
        /^./,
        (x) => x.toUpperCase(),
      ),
      ...Object.keys(headers).length > 0 && { headers },
      content: { [SCIM_MEDIA_TYPE]: { schema: ScimErrorSchema, examples } },
    };
  },
};
