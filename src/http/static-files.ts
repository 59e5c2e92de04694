import type { Context } from "hono";
import type { AppEnv } from "./env.ts";

/** A file the service answers as it is: its bytes, gzipped once, and tag. */
export interface StaticFile {
  body: Uint8Array<ArrayBuffer>;
  gzip: Uint8Array<ArrayBuffer>;
  etag: string;
}

/**
 * Files read once, on first use, each kept with its gzipped bytes and an
 * ETag of its content: the OpenAPI document, Swagger UI's bundle and the
 * console's files are large and never change while the service runs, so
 * they are compressed once, not on every request.
 */
export function staticFiles() {
  const cache = new Map<string, Promise<StaticFile>>();
  return (key: string, read: () => Promise<Uint8Array> | Uint8Array) => {
    let file = cache.get(key);
    if (!file) {
      file = Promise.resolve(read()).then(prepare);
      // A failed read (a missing file) is tried again on the next request.
      file.catch(() => cache.delete(key));
      cache.set(key, file);
    }
    return file;
  };
}

async function prepare(bytes: Uint8Array): Promise<StaticFile> {
  const body = new Uint8Array(bytes);
  const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", body));
  const etag = `"${
    Array.from(digest.slice(0, 12), (b) => b.toString(16).padStart(2, "0"))
      .join("")
  }"`;
  const gzip = new Uint8Array(
    await new Response(
      new Blob([body]).stream().pipeThrough(new CompressionStream("gzip")),
    ).arrayBuffer(),
  );
  return { body, gzip, etag };
}

/** Whether `Accept-Encoding` takes gzip (named, or `*`; a q of 0 refuses). */
function takesGzip(accept: string | undefined): boolean {
  if (!accept) return false;
  return accept.split(",").some((item) => {
    const [coding, ...params] = item.split(";");
    const name = coding.trim().toLowerCase();
    if (name !== "gzip" && name !== "*") return false;
    const q = params.map((p) => p.trim()).find((p) => /^q=/i.test(p));
    return q === undefined || Number(q.slice(2)) > 0;
  });
}

/**
 * The file's answer: 304 to a client holding this version, else its bytes,
 * gzipped when the client takes gzip. `Vary` tells caches the answer
 * depends on `Accept-Encoding`.
 */
export function answerFile(
  c: Context<AppEnv>,
  file: StaticFile,
  headers: Record<string, string>,
): Response {
  const all: Record<string, string> = {
    ...headers,
    etag: file.etag,
    vary: "Accept-Encoding",
  };
  if (c.req.header("if-none-match") === file.etag) {
    return c.body(null, 304, all);
  }
  if (takesGzip(c.req.header("accept-encoding"))) {
    all["content-encoding"] = "gzip";
    return c.body(file.gzip, 200, all);
  }
  return c.body(file.body, 200, all);
}
