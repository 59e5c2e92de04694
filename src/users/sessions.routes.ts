/** A user's live sessions: listed, ended all at once, or one by one. */
import { z } from "@hono/zod-openapi";
import { adminRoute, outranked } from "../auth/guards.ts";
import { MSG } from "../http/messages.ts";
import { check, failure, json } from "../http/openapi.ts";
import { outcome, pathParam } from "../http/steps.ts";
import {
  EndedSchema,
  IdParam,
  parseSessionId,
  SessionParams,
  SessionSchema,
  tags,
} from "./users.schemas.ts";
import { RECHECK, userId, userNotFound } from "./user-steps.ts";

export const listSessions = adminRoute({
  permission: "users:sessions",
  operationId: "listSessions",
  method: "get",
  path: "/api/users/{id}/sessions",
  tags,
  summary: "A user's live sessions",
  description:
    "The sessions that still let the user in, newest first: never a token, `current` marks the caller's own.",
  request: { params: IdParam },
  responses: {
    200: json(z.array(SessionSchema), "The user's live sessions, newest first"),
  },
  steps: [
    userId,
    outcome("not_found", userNotFound),
    failure(MSG.listSessionsFailed),
  ],
});

export const endSessions = adminRoute({
  permission: "users:sessions",
  operationId: "endSessions",
  method: "delete",
  path: "/api/users/{id}/sessions",
  tags,
  summary: "End all of a user's sessions",
  description:
    "Ends every session of the user (the caller's own too, when the id is theirs): their next request answers 401. Recorded as `sessions.ended` `{count}` when any ended. " +
    RECHECK,
  request: { params: IdParam },
  responses: {
    200: json(EndedSchema, "Ended; `ended` counts the live sessions ended"),
  },
  steps: [
    userId,
    outranked,
    outcome("user_not_found", userNotFound),
    failure(MSG.endSessionsFailed),
  ],
});

export const endSession = adminRoute({
  permission: "users:sessions",
  operationId: "endSession",
  method: "delete",
  path: "/api/users/{id}/sessions/{sessionId}",
  tags,
  summary: "End one of a user's sessions",
  description: "Recorded as `sessions.ended` `{count: 1}`. " +
    RECHECK,
  request: { params: SessionParams },
  responses: {
    200: json(EndedSchema, "Ended (`ended` is 1)"),
  },
  steps: [
    userId,
    // A session id that is no UUID is passed on as null: no session has
    // it, answered after the user's own 404.
    pathParam("sessionId", parseSessionId),
    outranked,
    outcome("user_not_found", userNotFound),
    outcome(
      "session_not_found",
      check(
        404,
        MSG.sessionNotFound,
        "the user has no live session of this public id (also for another user's session, and an id that is no UUID)",
      ),
    ),
    failure(MSG.endSessionsFailed),
  ],
});
