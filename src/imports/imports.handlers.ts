import { reachOf } from "../auth/permissions.ts";
import type { TypedResponse } from "hono";
import type { Config } from "../config.ts";
import type { ImportOwner } from "../db/imports.ts";
import type { Store } from "../db/store.ts";
import { callerWrites } from "../http/caller-write.ts";
import type { Handlers } from "../http/endpoint.ts";
import { jsonArrayBody } from "../http/json-array.ts";
import type * as routes from "./imports.routes.ts";
import { formatOf } from "./imports.routes.ts";
import { IMPORT_LIMITS, readImport } from "./read.ts";
import { isRefusal, refuse, refusedFor } from "../refusal.ts";

export interface ImportDeps {
  store: Store;
  config: Pick<Config, "TRUST_PROXY">;
  /** Tells this instance's import worker a job is queued (it also polls). */
  queued?: () => void;
}

type Handler<K extends keyof typeof routes> = Handlers<typeof routes>[K];

const encoder = new TextEncoder();
const NEWLINE = encoder.encode("\n");

export function createImportHandlers(
  { store, config, queued = () => {} }: ImportDeps,
) {
  const callerWrite = callerWrites(config.TRUST_PROXY);

  /**
   * The body streams into the database batch by batch, so memory holds one
   * batch however large the file; a body past its limit is discarded
   * whole. The job is queued (and recorded) once every record is stored.
   */
  const create: Handler<"create"> = async (c, { caller, query }) => {
    const declared = Number(c.req.header("content-length") ?? 0);
    if (declared > IMPORT_LIMITS.bytes) return refuse("too_large");
    const format = formatOf(c.req.header("content-type"))!;
    const { account, keyId } = caller;
    const owner: ImportOwner = {
      actor: keyId === undefined
        ? { id: account.id, username: account.username }
        : { id: account.id, username: account.username, keyId },
      // The job's records, from import.started on, came through the import.
      context: { ...callerWrite(c).context, via: "import" },
    };
    const options = {
      onConflict: query.onConflict ?? "fail",
      dryRun: query.dryRun ?? false,
    };
    const id = await store.imports.begin(
      owner,
      options,
      caller.session ?? null,
    );
    let total = 0;
    // One batch stored while the next is read: the body is read on while
    // the database works, and at most two batches are held.
    let storing: Promise<void> = Promise.resolve();
    try {
      const body = c.req.raw.body ?? new Blob([]).stream();
      for await (const batch of readImport(body, format)) {
        await storing;
        storing = store.imports.addRecords(id, batch);
        // Awaited at the next turn or below; never left unheard.
        storing.catch(() => {});
        total += batch.length;
      }
      await storing;
    } catch (e) {
      await storing.catch(() => {});
      await store.imports.discard(id).catch(() => {});
      if (refusedFor(e, ["too_large"])) return e;
      throw e;
    }
    // The uploader checked again now the body is in: one who lost the
    // right to write meanwhile is refused, and the job ends `failed`.
    const queuedJob = await store.imports.queue(
      id,
      total,
      owner,
      options,
      caller,
    );
    if (isRefusal(queuedJob)) return queuedJob;
    queued();
    return c.json({ id, status: "queued" as const }, 202, {
      Location: `/api/imports/${id}`,
    });
  };

  const get: Handler<"get"> = async (c, { id }) => {
    const found = await store.imports.get(id);
    return found ? c.json(found, 200) : refuse("not_found");
  };

  const cancel: Handler<"cancel"> = async (c, { id }) => {
    const outcome = await store.imports.cancel(id);
    return isRefusal(outcome) ? outcome : c.json(outcome, 200);
  };

  const errors: Handler<"errors"> = async (c, { id }) => {
    if (!await store.imports.get(id)) return refuse("not_found");
    const body = await jsonArrayBody(
      store.imports.errorsJson(id),
      (cause) =>
        c.get("log").error("import errors stream failed after the first byte", {
          requestId: c.get("requestId"),
          cause,
        }),
    );
    return c.body(body, 200, {
      "Content-Type": "application/json",
    }) as unknown as TypedResponse<
      { line: number; error: string }[],
      200,
      "json"
    >;
  };

  /**
   * Recorded before the first line (with the count at that moment), so no
   * hash leaves unrecorded; then streamed batch by batch as the client
   * reads: no statement or connection is held between batches.
   */
  const exportUsers: Handler<"exportUsers"> = async (c, { query }) => {
    const { include, sort, ...filter } = query;
    const passwordHashes = include === "passwordHash";
    const reach = reachOf(c.get("caller").access, "users:export");
    const recorded = await store.imports.recordExport(
      passwordHashes,
      callerWrite(c),
      { ...filter, reach },
    );
    if (recorded !== "recorded") return recorded;
    const batches = store.imports.exportNdjson(passwordHashes, {
      ...filter,
      reach,
    }, sort)[
      Symbol.asyncIterator
    ]();
    let newline = false;
    const body = new ReadableStream<Uint8Array>({
      async pull(controller) {
        if (newline) {
          newline = false;
          controller.enqueue(NEWLINE);
          return;
        }
        try {
          const next = await batches.next();
          if (next.done) return controller.close();
          controller.enqueue(encoder.encode(next.value));
          newline = true;
        } catch (cause) {
          c.get("log").error("export stream failed", {
            requestId: c.get("requestId"),
            cause,
          });
          controller.error(cause);
        }
      },
      async cancel() {
        await batches.return?.();
      },
    }, { highWaterMark: 0 });
    return c.body(body, 200, {
      "Content-Type": "application/x-ndjson",
    }) as never;
  };

  return { create, get, cancel, errors, exportUsers };
}
