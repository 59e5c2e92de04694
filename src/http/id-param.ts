import { z } from "@hono/zod-openapi";
import { parseUserId, USER_ID_MAX } from "../users/user.ts";

/**
 * A path parameter naming a row by its integer id (a user, a webhook, an
 * API key), documented as that integer. Anything that cannot be an id
 * (`abc`, `1.5`, `-1`, out of range) becomes null, which the handler
 * answers with 404 at the point the route's checks put it.
 */
export const idParam = (name: string, example: number) =>
  z.string().transform(parseUserId).openapi({
    param: { name, in: "path" },
    type: "integer",
    minimum: 1,
    maximum: USER_ID_MAX,
    example,
  });
