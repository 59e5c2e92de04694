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
