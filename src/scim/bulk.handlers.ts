import type { Context } from "hono";
import type { Config } from "../config.ts";
import type { Handlers } from "../http/endpoint.ts";
import type { AppEnv } from "../http/env.ts";
import { scimBase, sendScim } from "./answers.ts";
import {
  BULK_RESPONSE_SCHEMA,
  type RefusedOperation,
  type SingleRequest,
  singleRequest,
} from "./bulk.ts";
import type * as routes from "./bulk.routes.ts";
import type { UserBatch } from "./bulk-users.ts";
import { SCIM_MEDIA_TYPE, scimRefusalBody } from "./errors.ts";
import type { ScimUserState } from "../db/scim.ts";

type Handler<K extends keyof typeof routes> = Handlers<typeof routes>[K];

/**
 * Serves a single request (`POST /scim/v2/Users`, ...) as the service
 * would, with the connection information of the request it came in.
 */
export type ServeSingle = (
  req: Request,
  env: unknown,
) => Response | Promise<Response>;

export interface BulkDeps {
  config: Pick<Config, "TRUST_PROXY">;
  serve: ServeSingle;
  /** Runs of creations written together (bulk-users.ts). */
  users: UserBatch;
}

/** One operation's answer in the BulkResponse (RFC 7644 3.7.3). */
interface Answer {
  method?: string;
  bulkId?: string;
  location?: string;
  version?: string;
  status: string;
  response?: unknown;
}

/** The SCIM error a failed single request answered, if it is JSON. */
async function errorOf(res: Response): Promise<unknown> {
  const text = await res.text();
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

/** Headers of the Bulk request that its operations do not share. */
const OWN_HEADERS = [
  "content-length",
  "content-type",
  "if-match",
  "transfer-encoding",
];

/**
 * Each operation is sent, as its single request, to the routes that serve
 * that request alone (`serve`): the same steps, checks, handlers and audit
 * records, its own status. Only the bulkId references are the Bulk's own.
 */
export function createBulkHandlers({ config, serve, users }: BulkDeps) {
  /** The single request as the Bulk's client would have sent it. */
  const requestOf = (c: Context<AppEnv>, one: SingleRequest) => {
    const headers = new Headers(c.req.raw.headers);
    for (const name of OWN_HEADERS) headers.delete(name);
    if (one.version !== undefined) headers.set("if-match", one.version);
    const hasBody = one.method !== "DELETE" && one.data !== undefined;
    if (hasBody) headers.set("content-type", SCIM_MEDIA_TYPE);
    return new Request(new URL(`/scim/v2${one.path}`, c.req.url), {
      method: one.method,
      headers,
      ...hasBody && { body: JSON.stringify(one.data) },
    });
  };

  const refusal = (r: RefusedOperation): Answer => {
    const { status, body } = scimRefusalBody(r.refused);
    return {
      ...r.method !== undefined && { method: r.method },
      ...r.bulkId !== undefined && { bulkId: r.bulkId },
      status: String(status),
      response: body,
    };
  };

  /** Runs one operation; a POST's new id is kept under its bulkId. */
  const runOne = async (
    c: Context<AppEnv>,
    op: unknown,
    ids: Map<string, string>,
    base: string,
  ): Promise<Answer> => {
    const one = singleRequest(op, ids);
    if ("refused" in one) return refusal(one);
    const res = await serve(requestOf(c, one), c.env);
    const ok = res.status < 300;
    const location = one.method === "POST"
      ? res.headers.get("location") ?? undefined
      : `${base}${one.path}`;
    if (ok && one.method === "POST" && one.bulkId !== undefined && location) {
      ids.set(one.bulkId, location.slice(location.lastIndexOf("/") + 1));
    }
    const version = ok ? res.headers.get("etag") ?? undefined : undefined;
    // A failure's SCIM error is its answer's `response`; a success's body
    // is not repeated (RFC 7644 3.7.3 lets it be left out).
    let response: unknown;
    if (ok) await res.body?.cancel();
    else response = await errorOf(res);
    return {
      method: one.method,
      ...one.bulkId !== undefined && { bulkId: one.bulkId },
      ...location !== undefined && { location },
      ...version !== undefined && { version },
      status: String(res.status),
      ...response !== undefined && { response },
    };
  };

  /** Whether the operation's data names a bulkId (resolved only in order). */
  const refers = (op: unknown) => JSON.stringify(op).includes(`"bulkId:`);

  const bulk: Handler<"bulk"> = async (c, { bulk, connection }) => {
    const base = scimBase(c, config.TRUST_PROXY);
    const ids = new Map<string, string>();
    const answers: Answer[] = [];
    let errors = 0;
    /** Answers the operation; false once failOnErrors is reached. */
    const answered = (answer: Answer) => {
      answers.push(answer);
      return !(Number(answer.status) >= 400 &&
        ++errors === bulk.failOnErrors);
    };
    /** Creations waiting to be written together, in order. */
    let run: { op: unknown; bulkId?: string; state: ScimUserState }[] = [];
    const flush = async () => {
      if (run.length === 0) return true;
      const ops = run;
      run = [];
      const made = await users.create(
        c,
        connection,
        ops.map((o) => o.state),
        base,
      );
      for (const [i, o] of ops.entries()) {
        if (!made) {
          // None was written: each runs alone, as it would have.
          if (!answered(await runOne(c, o.op, ids, base))) return false;
          continue;
        }
        if (o.bulkId !== undefined) ids.set(o.bulkId, made[i].id);
        answered({
          method: "POST",
          ...o.bulkId !== undefined && { bulkId: o.bulkId },
          location: made[i].location,
          version: made[i].version,
          status: "201",
        });
      }
      return true;
    };
    for (const op of bulk.operations) {
      const one = refers(op) ? undefined : singleRequest(op, ids);
      const state = one && !("refused" in one) ? users.read(one) : undefined;
      if (state) {
        run.push({ op, bulkId: (one as SingleRequest).bulkId, state });
        continue;
      }
      if (!await flush() || !answered(await runOne(c, op, ids, base))) {
        break;
      }
    }
    await flush();
    return sendScim(c, 200, {
      schemas: [BULK_RESPONSE_SCHEMA],
      Operations: answers,
    });
  };

  return { bulk };
}
