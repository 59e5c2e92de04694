/**
 * One webhook request: signed as the Standard Webhooks specification says,
 * sent over HTTP/1.1 to an address checked first. The host name is resolved
 * here, every address it has is checked, and the connection goes to the
 * checked address itself (for https the TLS handshake still names and
 * verifies the host): a name that resolves elsewhere between the check
 * and the connection (DNS rebinding) cannot redirect it. fetch resolves on
 * its own, so it is not used. Redirects are not followed: a 3xx fails. A
 * connection may be kept for the next delivery to the same URL (`kept`),
 * pinned to the address checked when it opened.
 */
import { createHmac } from "node:crypto";
import { addressAllowed, ipLiteral } from "./address.ts";

/** The first bytes of a response body that an attempt keeps. */
export const EXCERPT_BYTES = 256;

export interface Delivery {
  url: string;
  /** `whsec_` + base64 of the key. */
  secret: string;
  /** The `webhook-id`: the same for every attempt at one message. */
  id: string;
  body: string;
}

export interface DeliveryOutcome {
  ok: boolean;
  status: number | null;
  error: string | null;
  responseExcerpt: string | null;
  durationMs: number;
}

export interface DeliveryOptions {
  timeoutMs: number;
  allowPrivate: boolean;
  /** Aborts the attempt (the service stops). */
  signal?: AbortSignal;
  /** Seconds since the epoch; now by default. */
  now?: () => number;
  /** Certificate authorities for https instead of the system's (tests). */
  caCerts?: string[];
  /**
   * Where a connection is kept between deliveries to the same URL by one
   * worker (HTTP/1.1 keep-alive): it stays pinned to the address checked
   * when it was opened. Close it with `closeKept` when done.
   */
  kept?: KeptConnection;
}

/** The three headers that sign `body` (Standard Webhooks, `v1` HMAC-SHA256). */
export function signatureHeaders(
  secret: string,
  id: string,
  timestamp: number,
  body: string,
): Record<string, string> {
  const key = Uint8Array.from(
    atob(secret.replace(/^whsec_/, "")),
    (c) => c.charCodeAt(0),
  );
  const signature = createHmac("sha256", key)
    .update(`${id}.${timestamp}.${body}`).digest("base64");
  return {
    "webhook-id": id,
    "webhook-timestamp": String(timestamp),
    "webhook-signature": `v1,${signature}`,
  };
}

/** A new secret: `whsec_` + base64 of 32 random bytes. */
export function newSecret(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(32));
  return `whsec_${btoa(String.fromCharCode(...bytes))}`;
}

/** A connection left open after a delivery, for the next one to the same URL. */
export interface KeptConnection {
  url?: string;
  conn?: Deno.Conn;
}

export function closeKept(kept: KeptConnection) {
  try {
    kept.conn?.close();
  } catch { /* closed already */ }
  kept.conn = kept.url = undefined;
}

class Refused extends Error {}

const encoder = new TextEncoder();
const latin1 = new TextDecoder("latin1");
const utf8 = new TextDecoder();

/** The addresses of `host`, each checked; throws Refused when one is not allowed. */
async function checkedAddresses(
  host: string,
  allowPrivate: boolean,
): Promise<string[]> {
  const literal = ipLiteral(host);
  let addresses: string[];
  if (literal) {
    addresses = [literal];
  } else {
    const answers = await Promise.allSettled([
      Deno.resolveDns(host, "A"),
      Deno.resolveDns(host, "AAAA"),
    ]);
    addresses = answers.flatMap((a) => a.status === "fulfilled" ? a.value : []);
    if (addresses.length === 0) throw new Error(`cannot resolve ${host}`);
  }
  // Every address, not only the one connected to: a name with one refused
  // address is refused whole.
  const refused = addresses.find((a) => !addressAllowed(a, allowPrivate));
  if (refused) throw new Refused(`address not allowed: ${refused}`);
  return addresses;
}

/** POSTs one signed message; never throws. */
export async function deliver(
  d: Delivery,
  options: DeliveryOptions,
): Promise<DeliveryOutcome> {
  const started = performance.now();
  const done = (o: Omit<DeliveryOutcome, "durationMs">): DeliveryOutcome => ({
    ...o,
    durationMs: Math.round(performance.now() - started),
  });
  let conn: Deno.Conn | undefined;
  let keep = false;
  let reused = false;
  const kept = options.kept;
  if (kept?.conn && kept.url === d.url) {
    conn = kept.conn;
    reused = true;
    kept.conn = kept.url = undefined;
  } else if (kept) {
    closeKept(kept);
  }
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    try {
      conn?.close();
    } catch { /* closed already */ }
  }, options.timeoutMs);
  const abort = () => {
    try {
      conn?.close();
    } catch { /* closed already */ }
  };
  options.signal?.addEventListener("abort", abort);
  try {
    const url = new URL(d.url);
    if (!reused) conn = await connect(url, options);
    if (timedOut || options.signal?.aborted) throw new Error("timeout");
    const timestamp = Math.floor(options.now?.() ?? Date.now() / 1000);
    const body = encoder.encode(d.body);
    const headers = {
      Host: url.host,
      "Content-Type": "application/json",
      "Content-Length": String(body.byteLength),
      "User-Agent": "user-admin-webhooks",
      ...signatureHeaders(d.secret, d.id, timestamp, d.body),
    };
    const head = `POST ${url.pathname}${url.search} HTTP/1.1\r\n` +
      Object.entries(headers).map(([k, v]) => `${k}: ${v}\r\n`).join("") +
      "\r\n";
    // Head and body in one write.
    const headBytes = encoder.encode(head);
    const request = new Uint8Array(headBytes.length + body.length);
    request.set(headBytes);
    request.set(body, headBytes.length);
    await writeAll(conn!, request);
    const response = await readResponse(conn!);
    const ok = response.status >= 200 && response.status < 300;
    keep = ok && response.reusable && kept !== undefined;
    return done({
      ok,
      status: response.status,
      error: ok
        ? null
        : response.status >= 300 && response.status < 400
        ? "redirect not followed"
        : "HTTP status not 2xx",
      responseExcerpt: response.excerpt,
    });
  } catch (e) {
    if (reused && !timedOut && !options.signal?.aborted) {
      // The kept connection was closed by the receiver meanwhile: once
      // more on a new one.
      try {
        conn?.close();
      } catch { /* closed already */ }
      conn = undefined;
      clearTimeout(timer);
      options.signal?.removeEventListener("abort", abort);
      return await deliver(d, options);
    }
    const error = timedOut
      ? `no answer within ${options.timeoutMs} ms`
      : options.signal?.aborted
      ? "aborted: the service stopped"
      : e instanceof Refused
      ? e.message
      : `${(e as Error).name}: ${(e as Error).message}`.slice(0, 200);
    return done({ ok: false, status: null, error, responseExcerpt: null });
  } finally {
    clearTimeout(timer);
    options.signal?.removeEventListener("abort", abort);
    if (keep && kept && conn) {
      kept.conn = conn;
      kept.url = d.url;
    } else {
      try {
        conn?.close();
      } catch { /* closed already */ }
    }
  }
}

/**
 * A connection to the URL's host on an address checked first; for https the
 * TLS handshake on it names and verifies the host.
 */
async function connect(url: URL, options: DeliveryOptions): Promise<Deno.Conn> {
  const host = url.hostname;
  const addresses = await withTimeout(
    checkedAddresses(host, options.allowPrivate),
    options.timeoutMs,
  );
  const port = Number(url.port) || (url.protocol === "https:" ? 443 : 80);
  const tcp = await withTimeout(
    Deno.connect({ hostname: addresses[0], port }),
    options.timeoutMs,
  );
  if (url.protocol !== "https:") return tcp;
  try {
    // The checked address's connection, with the host's name for SNI and
    // certificate verification.
    return await withTimeout(
      Deno.startTls(tcp, {
        hostname: ipLiteral(host) ?? host,
        caCerts: options.caCerts,
      }),
      options.timeoutMs,
    );
  } catch (e) {
    try {
      tcp.close();
    } catch { /* closed already */ }
    throw e;
  }
}

function withTimeout<T>(p: Promise<T>, ms: number): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  return Promise.race([
    p,
    new Promise<T>((_, reject) => {
      timer = setTimeout(() => reject(new Error("timeout")), ms);
    }),
  ]).finally(() => clearTimeout(timer));
}

async function writeAll(conn: Deno.Conn, bytes: Uint8Array) {
  let written = 0;
  while (written < bytes.length) {
    written += await conn.write(bytes.subarray(written));
  }
}

/** Head and at most EXCERPT_BYTES of body: what an attempt keeps. */
const HEAD_LIMIT = 16 * 1024;

/**
 * Reads the status line, the headers and the start of the body; the rest
 * is not read (the connection is closed).
 */
async function readResponse(
  conn: Deno.Conn,
): Promise<{ status: number; excerpt: string | null; reusable: boolean }> {
  const buffer = new Uint8Array(HEAD_LIMIT + EXCERPT_BYTES);
  let size = 0;
  let headEnd = -1;
  let contentLength = Infinity;
  let chunked = false;
  let closing = false;
  let status = 0;
  for (;;) {
    let n: number | null;
    try {
      n = await conn.read(buffer.subarray(size));
    } catch (e) {
      // The status came: the rest of the body is only an excerpt.
      if (headEnd >= 0) break;
      throw e;
    }
    if (n === null) break;
    size += n;
    if (headEnd < 0) {
      const text = latin1.decode(buffer.subarray(0, size));
      const at = text.indexOf("\r\n\r\n");
      if (at < 0) {
        if (size >= HEAD_LIMIT) throw new Error("response head too large");
        continue;
      }
      headEnd = at + 4;
      const lines = text.slice(0, at).split("\r\n");
      const match = /^HTTP\/1\.[01] ([0-9]{3})/.exec(lines[0]);
      if (!match) throw new Error("not an HTTP/1.1 response");
      status = Number(match[1]);
      // 1xx interim answers (100 Continue) are skipped.
      if (status >= 100 && status < 200) {
        buffer.copyWithin(0, headEnd, size);
        size -= headEnd;
        headEnd = -1;
        continue;
      }
      // No body follows these, whatever the headers say.
      if (status === 204 || status === 304) contentLength = 0;
      for (const line of lines.slice(1)) {
        const [name, ...rest] = line.split(":");
        const value = rest.join(":").trim().toLowerCase();
        if (name.toLowerCase() === "content-length" && contentLength !== 0) {
          contentLength = Number(value);
        }
        if (name.toLowerCase() === "transfer-encoding") {
          chunked = value.includes("chunked");
        }
        if (name.toLowerCase() === "connection") {
          closing = value.includes("close");
        }
      }
    }
    const bodyBytes = size - headEnd;
    // A body that fits is read whole, so that the connection can serve
    // the next delivery; a longer one only as far as the excerpt.
    if (bodyBytes >= contentLength) break;
    if (
      headEnd + contentLength > buffer.length &&
      bodyBytes >= EXCERPT_BYTES
    ) break;
    if (chunked && bodyBytes >= EXCERPT_BYTES + 16) break;
    if (size >= buffer.length) break;
  }
  if (headEnd < 0) throw new Error("connection closed before an answer");
  let body: Uint8Array = buffer.subarray(headEnd, size);
  if (chunked) body = dechunk(body);
  const excerpt = body.subarray(0, Math.min(EXCERPT_BYTES, contentLength));
  return {
    status,
    reusable: !chunked && !closing && size - headEnd === contentLength,
    excerpt: excerpt.length
      ? utf8.decode(excerpt).replace(/\uFFFD+$/, "")
      : null,
  };
}

/** The data of the complete or partial chunks at the start of a chunked body. */
function dechunk(bytes: Uint8Array): Uint8Array {
  const out: number[] = [];
  let at = 0;
  while (at < bytes.length) {
    const lineEnd = bytes.indexOf(0x0a, at);
    if (lineEnd < 0) break;
    const size = parseInt(
      utf8.decode(bytes.subarray(at, lineEnd)).trim(),
      16,
    );
    if (!(size > 0)) break;
    const start = lineEnd + 1;
    out.push(...bytes.subarray(start, Math.min(start + size, bytes.length)));
    at = start + size + 2;
  }
  return new Uint8Array(out);
}
