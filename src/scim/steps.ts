/**
 * The steps of `/scim/v2` routes, each answering its checks as SCIM errors
 * (errors.ts): the connection's bearer token, a body of up to 4 MiB,
 * If-Match compared weakly (a list's parameters: list-query.ts). `scimRoute` declares a route with them.
 */
import type { RouteConfig } from "@hono/zod-openapi";
import type { Context } from "hono";
import type { Connection } from "../db/scim.ts";
import { entityTags } from "../http/conditional.ts";
import type { AppEnv } from "../http/env.ts";
import { MSG } from "../http/messages.ts";
import { route, type RouteDraft } from "../http/openapi.ts";
import { readText, TOO_LARGE, unstorableText } from "../http/body-text.ts";
import { passes, type Step } from "../http/steps.ts";
import { scimCheck, scimError, scimErrorForm } from "./errors.ts";
import { scimTokenHash } from "./token.ts";

/** Bodies under /scim/v2 may be this large (Group Push of thousands of members). */
export const SCIM_BODY_LIMIT_BYTES = 4 * 1024 * 1024;

export const unauthorised = scimCheck(
  401,
  MSG.scimUnauthorised,
  "no `Authorization: Bearer usc_...` of a live provisioning connection",
);

/** The connection whose token the request carries: 401 otherwise. */
export const scimToken = passes<"connection", Connection>(
  "connection",
  [unauthorised],
  async (c, { deps }) => {
    const hash = scimTokenHash(c.req.header("authorization"));
    const connection = hash && await deps.store.scim.connections.resolve(hash);
    return connection || scimError(c, 401, MSG.scimUnauthorised);
  },
);

export const tooLarge = scimCheck(
  413,
  MSG.scimTooLarge,
  "the body is larger than 4 MiB",
);
export const invalidSyntax = scimCheck(
  400,
  MSG.scimInvalidSyntax,
  "the body is not a JSON object, or its operations are malformed",
);

/**
 * The body as a JSON object of at most 4 MiB: TOO_LARGE past that, else
 * the 400 `invalidSyntax` of a body that is none.
 */
export async function scimObject(
  c: Context<AppEnv>,
): Promise<Record<string, unknown> | typeof TOO_LARGE | Response> {
  const text = await readText(c.req.raw, SCIM_BODY_LIMIT_BYTES);
  if (text === TOO_LARGE) return text;
  let value: unknown;
  try {
    value = text === undefined ? undefined : JSON.parse(text);
  } catch {
    value = undefined;
  }
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    return scimError(
      c,
      400,
      MSG.scimInvalidSyntax,
      "the body must be a JSON object",
    );
  }
  return value as Record<string, unknown>;
}

/** The body: JSON, an object, at most 4 MiB, text PostgreSQL can store. */
export const scimBody = passes<"body", Record<string, unknown>>(
  "body",
  [tooLarge, invalidSyntax],
  async (c) => {
    const value = await scimObject(c);
    if (value === TOO_LARGE) return scimError(c, 413, MSG.scimTooLarge);
    if (value instanceof Response) return value;
    const where = unstorableText(value);
    if (where) {
      // Said by the write's invalidValue check, as a value it cannot keep.
      return scimError(
        c,
        400,
        MSG.scimInvalidValue,
        `${where.join(".")} holds NUL or a lone surrogate`,
      );
    }
    return value;
  },
  {
    body: {
      required: true,
      content: {
        "application/scim+json": {
          schema: { type: "object", additionalProperties: true },
        },
        "application/json": {
          schema: { type: "object", additionalProperties: true },
        },
      },
    },
  },
);

export const invalidValue = scimCheck(
  400,
  MSG.scimInvalidValue,
  "a value has the wrong type or breaks an account rule (userName, name, e-mail, password), a member names no user, or a string holds NUL",
);
export const invalidFilter = scimCheck(
  400,
  MSG.scimInvalidFilter,
  "`filter` cannot be parsed, names an attribute that cannot be filtered on, compares a value of the wrong type or a date outside years 1 to 9999, holds a control character, or is past a limit: 4,096 characters, 100 comparisons, 20 levels of nesting",
);

/** The tags of If-Match, weak or strong alike (RFC 7644 3.14); undefined: no precondition. */
export const scimIfMatch = passes<"ifMatch", string[] | undefined>(
  "ifMatch",
  [],
  (c) => {
    const tags = entityTags(c.req.header("if-match"));
    if (tags === undefined || tags === "*") return undefined;
    if (tags === "malformed") return [];
    return tags.map((t) => t.tag);
  },
);

export const notFound = scimCheck(
  404,
  MSG.scimNotFound,
  "no such resource of this connection (a group of another connection included)",
);
/** An id that cannot name anything, answered before the body is read. */
export const noSuchId = scimCheck(
  404,
  MSG.scimNotFound,
  "the id cannot name a resource (not a positive integer)",
);
export const preconditionFailed = scimCheck(
  412,
  MSG.scimPreconditionFailed,
  "`If-Match` names none of the resource's current version (compared weakly)",
);
export const managedElsewhere = scimCheck(
  403,
  MSG.scimManagedElsewhere,
  "the user, or a member whose role the change would change, is read-only to this connection: another connection's, or an admin it did not make admin through its adminGroups",
);
export const uniqueness = scimCheck(
  409,
  MSG.scimUniqueness,
  "userName or the e-mail is another user's (canonical and confusable uniqueness), or externalId is taken in this connection",
);

/** A `/scim/v2` route: tag SCIM, the connection's bearer token first, errors as SCIM's. */
export const scimRoute = <
  const S extends readonly Step[],
  P extends string,
  R extends Omit<RouteDraft, "security" | "tags"> & { path: P },
>(config: R & { steps: S }) =>
  route({
    ...config,
    tags: ["SCIM"],
    security: [{ scimAuth: [] }],
    errorForm: scimErrorForm,
    steps: [scimToken, ...config.steps] as const,
  });

/** A `/scim/v2` discovery route: no token (RFC 7644 4). */
export const openScimRoute = <
  const S extends readonly Step[],
  P extends string,
  R extends Omit<RouteDraft, "security" | "tags"> & { path: P },
>(config: R & { steps: S }) =>
  route({
    ...config,
    tags: ["SCIM"],
    security: [],
    errorForm: scimErrorForm,
  });

/** A SCIM JSON response declaration. */
export const scimJson = (
  description: string,
  headers?: Record<string, { description: string; schema: { type: "string" } }>,
): RouteConfig["responses"][string] => ({
  description,
  content: {
    "application/scim+json": {
      schema: { type: "object", additionalProperties: true },
    },
  },
  ...headers && { headers },
});
