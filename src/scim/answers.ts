/**
 * How `/scim/v2` answers: JSON in SCIM's media type, lists as a
 * ListResponse, URLs under the base the client used.
 */
import type { Context } from "hono";
import type { AppEnv } from "../http/env.ts";
import { requestOrigin } from "../http/origin.ts";
import { SCIM_MEDIA_TYPE } from "./errors.ts";
import { LIST_SCHEMA } from "./schema.ts";

/** The base URL of `/scim/v2` as the client reached it (behind a trusted proxy, as it reports). */
export const scimBase = (c: Context<AppEnv>, trustProxy: boolean) =>
  `${requestOrigin(c, trustProxy)}/scim/v2`;

/** A SCIM JSON answer (the route declares it; the media type is SCIM's). */
export const sendScim = (
  c: Context<AppEnv>,
  status: 200 | 201,
  body: unknown,
  headers: Record<string, string> = {},
) =>
  c.body(JSON.stringify(body), status, {
    "content-type": SCIM_MEDIA_TYPE,
    ...headers,
  }) as never;

/** A ListResponse (RFC 7644 3.4.2); without `resources`, `totalResults` only. */
export const listResponse = (
  total: number,
  startIndex: number,
  resources: unknown[] | undefined,
) => ({
  schemas: [LIST_SCHEMA],
  totalResults: total,
  startIndex,
  itemsPerPage: resources?.length ?? 0,
  ...resources && { Resources: resources },
});

/**
 * A ListResponse of a page by cursor (RFC 9865): the cursors of the pages
 * beside it, where there are such pages; no `startIndex`.
 */
export const cursorListResponse = (
  total: number,
  resources: unknown[] | undefined,
  cursors: { next?: string; previous?: string },
) => ({
  schemas: [LIST_SCHEMA],
  totalResults: total,
  itemsPerPage: resources?.length ?? 0,
  ...cursors.previous && { previousCursor: cursors.previous },
  ...cursors.next && { nextCursor: cursors.next },
  ...resources && { Resources: resources },
});

/** Whether a projection (`attributes`, `excludedAttributes`) shows a group's members. */
export const showsMembers = (
  p: { attributes?: string[]; excluded?: string[] },
) =>
  !(p.excluded ?? []).some((a) => a.toLowerCase() === "members") &&
  (!p.attributes?.length ||
    p.attributes.some((a) => a.toLowerCase().startsWith("members")));
