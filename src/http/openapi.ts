import { z } from "@hono/zod-openapi";
import { type Message, MSG } from "./messages.ts";

/** A JSON response declaration. */
export const json = <T extends z.ZodType>(schema: T, description: string) => ({
  description,
  content: { "application/json": { schema } },
});

/**
 * An error response declaration. Its schema names the exact messages the
 * status can carry, so the generated client types know them too.
 */
export const errors = (
  description: string,
  ...messages: [Message, ...Message[]]
) => ({
  description,
  content: {
    "application/json": {
      schema: z.object({ error: z.enum(messages) }),
      examples: Object.fromEntries(
        messages.map((m) => [m, { value: { error: m } }]),
      ),
    },
  },
});

/** What every route behind a session answers before its own checks. */
export const sessionErrors = {
  401: errors("No valid session cookie", MSG.unauthorised),
};

export const adminErrors = {
  ...sessionErrors,
  403: errors(
    "The caller is not an admin, or the request came from a foreign Origin",
    MSG.forbidden,
  ),
};

export const bodyTooLarge = {
  413: errors("The body is larger than 64 KiB", MSG.bodyTooLarge),
};

export const cookieAuth = [{ cookieAuth: [] }];
