import { z } from "@hono/zod-openapi";
import { USER_ID_MAX } from "../users/user.ts";

/**
 * A path parameter naming a row by its integer id (a user, a webhook, an
 * API key), as the document declares it. The route's `pathParam` step
 * parses it (`parseUserId`) and answers 404 where its steps put it.
 */
export const idParam = (name: string, example: number) =>
  z.string().openapi({
    param: { name, in: "path" },
    type: "integer",
    minimum: 1,
    maximum: USER_ID_MAX,
    example,
  });
