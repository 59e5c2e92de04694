/**
 * The users list's query parameters (`GET /api/users`), and the filters a
 * count and an export take from them.
 */
import { z } from "@hono/zod-openapi";
import { decodeCursor, DEFAULT_SORT, LIST_SORTS } from "./listing.ts";
import { codePoints } from "./account-rules.ts";
import { ROLES } from "./user.ts";

/** A text query parameter: 1..max characters, no NUL (no stored text holds one). */
export const textParam = (max: number) =>
  z.string().refine(
    (s) => codePoints(s) >= 1 && codePoints(s) <= max && !s.includes("\u0000"),
  );

/**
 * The list's optional parameters, in the order they are checked. A bad
 * value answers 400 `Invalid query parameter: <name>` (after 401/403);
 * unknown parameters are ignored; a repeated one is a bad value.
 */
// No `example`s on these: Swagger UI's "Try it out" would fill them in,
// so a plain "list users" there would send a search.
export const ListQuerySchema = z.object({
  limit: z.string()
    .regex(/^[0-9]{1,4}$/)
    .transform(Number)
    .refine((n) => n >= 1 && n <= 1000)
    .optional()
    .openapi({
      type: "integer",
      minimum: 1,
      maximum: 1000,
      description:
        'At most this many users, in list order. When more match, the answer\'s `Link` header names the next page (`rel="next"`). Without it every match is returned.',
    }),
  sort: z.enum(LIST_SORTS).optional().openapi({
    description:
      "The list's order: `createdAt` (the default: oldest first), `-createdAt` (newest first), `username` (A to Z under the canonical key that makes usernames unique, compared by code point), `-username` (Z to A), `lastLoginAt` (the longest since signing in first), `-lastLoginAt` (the latest sign-in first); by last sign-in, users who never signed in come after the rest either way. Ties by id. Read from an index in that order, so every page costs the same at a million users. A sign-in moves its user in the `lastLoginAt` orders: a walk by pages meets someone who signs in during it twice or not at all.",
  }),
  after: z.string()
    .transform((text, ctx) => {
      const cursor = decodeCursor(text);
      if (!cursor) {
        ctx.addIssue({ code: "custom", message: "not a cursor of a link" });
        return z.NEVER;
      }
      return cursor;
    })
    .optional()
    .openapi({
      type: "string",
      description:
        "The opaque cursor of a `next` link: continue after that user, in the same `sort` (a cursor of another order is a bad value). Only ever take it from a link.",
    }),
  role: z.enum(ROLES).optional()
    .openapi({ description: "Only users with this role." }),
  status: z.enum(["active", "disabled"]).optional().openapi({
    description:
      "`disabled`: only users disabled now; `active`: only users who may sign in (a disable whose `until` has passed counts as active).",
  }),
  q: textParam(100).optional().openapi({
    minLength: 1,
    maxLength: 100,
    description:
      "1..100 characters: users whose username, name or e-mail contains it, compared after Unicode NFKC and lower case, so case does not matter.",
  }),
  username: textParam(254).optional().openapi({
    minLength: 1,
    maxLength: 254,
    description:
      "Exact lookup under the canonical key that makes usernames unique (`Alice` finds `alice`, `STRASSE` finds `straße`): an array of zero or one user.",
  }),
  email: textParam(254).optional().openapi({
    minLength: 1,
    maxLength: 254,
    description:
      "Exact lookup under the canonical key that makes e-mails unique: an array of zero or one user.",
  }),
  include: z.enum(["state"]).optional().openapi({
    description:
      "`state`: each item also carries `disabled`, `lastLoginAt`, `mfaEnabled` and `source` (a few indexed lookups per user; what a list screen shows).",
  }),
}).superRefine((query, ctx) => {
  // A cursor is a place in one order: another's continues nothing.
  if (query.after && query.after.sort !== (query.sort ?? DEFAULT_SORT)) {
    ctx.addIssue({
      code: "custom",
      path: ["after"],
      message: "a cursor of another sort",
    });
  }
});

/** The filters of a count and an export: the list's, as it takes them. */
export const FilterQueryShape = {
  role: ListQuerySchema.shape.role,
  status: ListQuerySchema.shape.status,
  q: ListQuerySchema.shape.q,
};

export const CountQuerySchema = z.object(FilterQueryShape);

export const UserCountSchema = z.object({
  count: z.number().int().openapi({ example: 1234 }),
  exact: z.boolean().openapi({
    description:
      "True when `count` is exact: up to 10,000 matching users are counted. Past that it is the database's estimate (at least 10,001), to be shown as one.",
  }),
}).openapi("UserCount");
