/**
 * A person's own sessions: seen and ended by the person, with a session,
 * as an admin sees and ends anyone's (users.routes.ts), without a
 * permission or a step-up: they are the person's own.
 */
import { z } from "@hono/zod-openapi";
import { MSG } from "../http/messages.ts";
import {
  check,
  failure,
  json,
  route,
  sessionOrKey,
  textHeader,
} from "../http/openapi.ts";
import { outcome, pathParam } from "../http/steps.ts";
import {
  EndedSchema,
  parseSessionId,
  SessionParams,
  SessionSchema,
} from "../users/users.schemas.ts";
import { ownSessionFor } from "./guards.ts";

const tags = ["auth"];

const ownSessions = ownSessionFor(
  "sessions are a person's, seen and ended with a session",
);

const OwnSessionParams = SessionParams.pick({ sessionId: true });

export const listOwnSessions = route({
  operationId: "listOwnSessions",
  method: "get",
  path: "/api/auth/sessions",
  tags,
  security: sessionOrKey,
  summary: "The caller's own live sessions",
  description:
    "Any role, with a session (an API key is refused: 403). The sessions that still let the caller in, newest first, as `GET /api/users/{id}/sessions` shows them: never a token, `current` marks the one of this request.",
  responses: {
    200: json(
      z.array(SessionSchema),
      "The caller's live sessions, newest first",
    ),
  },
  steps: [ownSessions, failure(MSG.listSessionsFailed)],
});

export const endOtherSessions = route({
  operationId: "endOtherSessions",
  method: "delete",
  path: "/api/auth/sessions",
  tags,
  security: sessionOrKey,
  summary: "End the caller's other sessions",
  description:
    "Any role, with a session (an API key is refused: 403). Ends every session of the caller but this one: their next request answers 401. Recorded as `sessions.ended` `{count}` (the person as actor and target) when any ended.",
  responses: {
    200: json(EndedSchema, "Ended; `ended` counts the live sessions ended"),
  },
  steps: [ownSessions, failure(MSG.endSessionsFailed)],
});

export const endOwnSession = route({
  operationId: "endOwnSession",
  method: "delete",
  path: "/api/auth/sessions/{sessionId}",
  tags,
  security: sessionOrKey,
  summary: "End one of the caller's own sessions",
  description:
    "Any role, with a session (an API key is refused: 403). Ends the caller's session of this public id; when it is the one of this request, the caller is signed out and the cookie cleared, as by `POST /api/auth/logout`. Recorded as `sessions.ended` `{count: 1}` (the person as actor and target).",
  request: { params: OwnSessionParams },
  responses: {
    200: json(EndedSchema, "Ended (`ended` is 1)", {
      "Set-Cookie": textHeader(
        "When the session ended is the request's own: `sid=; Max-Age=0; Path=/; HttpOnly; SameSite=Strict` (+ `Secure` over HTTPS)",
      ),
    }),
  },
  steps: [
    ownSessions,
    // A session id that is no UUID is passed on as null: no session has it.
    pathParam("sessionId", parseSessionId),
    outcome(
      "session_not_found",
      check(
        404,
        MSG.sessionNotFound,
        "the caller has no live session of this public id (also for another person's session, and an id that is no UUID)",
      ),
    ),
    failure(MSG.endSessionsFailed),
  ],
});
