import { z } from "@hono/zod-openapi";
import { canonicalJson } from "../audit/chain.ts";
import { sha256 } from "../auth/tokens.ts";
import { errorResponse } from "./errors.ts";
import { MSG } from "./messages.ts";
import { check } from "./openapi.ts";
import { guards } from "./steps.ts";

const HEADER = "idempotency-key";

/** 1..255 printable ASCII characters (0x20-0x7E). */
const VALID_KEY = /^[\x20-\x7E]{1,255}$/;

/**
 * The header as the document declares it. Its value is checked by
 * `idempotencyKey` (after 401/403, before the body), so the runtime schema
 * takes any string.
 */
export const IdempotencyKeyHeader = z.object({
  [HEADER]: z.string().optional().openapi({
    description:
      "1..255 printable ASCII characters (0x20-0x7E), else 400 `Invalid Idempotency-Key`; a fresh random value (a UUID) per intended request, reused for its retries. " +
      "Kept per caller (user id) for 24 hours once answered 201 or 409. The same key with the same body answers that answer again, unchanged, with `Idempotent-Replayed: true` (nothing is created, no audit record written); " +
      "with another body 422; while its first request still runs (on any instance) 409 `Request with this Idempotency-Key is in progress`. " +
      "400s and 500s are not kept: a retry runs again. " +
      "Bodies compare as the service reads them (keys sorted, fields trimmed, unknown fields dropped), without the password: a retry that differs only in its password replays the first answer.",
    minLength: 1,
    maxLength: 255,
    // No `example`: Swagger UI's "Try it out" would send it, and every
    // creation tried there would replay the first.
    pattern: "^[\\x20-\\x7E]{1,255}$",
  }),
});

/** The replay marker of a kept answer. */
export const REPLAYED_HEADER = {
  "Idempotent-Replayed": {
    description:
      "`true` on an answer kept for the request's `Idempotency-Key`, sent again",
    schema: { type: "string" as const, enum: ["true"] },
  },
};

/** 400 for a malformed Idempotency-Key, before the body is read. */
export const idempotencyKey = guards([
  check(
    400,
    MSG.invalidIdempotencyKey,
    "the `Idempotency-Key` header is not 1..255 printable ASCII characters",
  ),
], (c) => {
  const key = c.req.header(HEADER);
  return key !== undefined && !VALID_KEY.test(key)
    ? errorResponse(c, 400, MSG.invalidIdempotencyKey)
    : undefined;
});

/**
 * Runs a request that carries an Idempotency-Key at most once per caller
 * and key (draft-ietf-httpapi-idempotency-key-header), after its body's
 * checks. The request is its body as the service reads it (`input` of what
 * the steps passed on: validated, trimmed, unknown fields dropped, no
 * secret), fingerprinted as the SHA-256 of its canonical JSON (keys
 * sorted), so two bodies that ask for the same thing are one request
 * however their JSON is spelled. A kept answer is sent again; a key in use
 * with another body, or still running, answers its check. Once answered,
 * a 201 or 409 is kept; any other answer, and a failure, forgets the run
 * so a retry runs again.
 */
export const idempotentRun = (
  input: (got: Record<string, unknown>) => unknown,
) =>
  guards([
    check(
      422,
      MSG.idempotencyKeyReused,
      "the `Idempotency-Key` was used with a different body",
    ),
    check(
      409,
      MSG.idempotencyKeyInProgress,
      "the `Idempotency-Key`'s first request is still running (on any instance)",
    ),
  ], async (c, run) => {
    const { deps, got } = run;
    const key = c.req.header(HEADER);
    if (key === undefined) return;
    const { store, config } = deps;
    const userId = c.get("caller").account.id;
    const runId = crypto.randomUUID();
    const started = await store.idempotency.start(
      userId,
      key,
      sha256(canonicalJson(input(got))),
      runId,
      // A run counts as crashed once its deadline passed: past it, it can
      // no longer write.
      config.REQUEST_TIMEOUT_MS,
      c.get("writeBy"),
    );
    switch (started.outcome) {
      case "replay": {
        const { status, body, location } = started.answer;
        const headers: Record<string, string> = {
          "Content-Type": "application/json",
          "Idempotent-Replayed": "true",
        };
        if (location !== null) headers.Location = location;
        return c.body(body, status as 201 | 409, headers);
      }
      case "mismatch":
        return errorResponse(c, 422, MSG.idempotencyKeyReused);
      case "in_progress":
        return errorResponse(c, 409, MSG.idempotencyKeyInProgress);
    }
    run.finally(async (res) => {
      if (res?.status === 201 || res?.status === 409) {
        await store.idempotency.finish(userId, key, runId, {
          status: res.status,
          body: await res.clone().text(),
          location: res.headers.get("location"),
        });
      } else {
        await store.idempotency.release(userId, key, runId).catch(() => {});
      }
    });
  });
