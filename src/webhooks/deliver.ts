/**
 * One webhook request: signed by the `standardwebhooks` library, sent by
 * undici's HTTP/1.1 client to an address checked first. undici's connector
 * is handed the connection's target after the check: the host name is
 * resolved here, every address it has is checked, and the socket is opened
 * to the checked address itself (for https the TLS handshake still names
 * and verifies the host). A name that resolves elsewhere between the check
 * and the connection (DNS rebinding) cannot redirect it. Redirects are not
 * followed: a 3xx fails. A connection may be kept for the next delivery to
 * the same URL (`kept`); each new connection is checked again.
 */
import { lookup } from "node:dns/promises";
import { Webhook } from "standardwebhooks";
import { buildConnector, Client } from "undici";
import { addressAllowed, ipLiteral } from "./address.ts";

/** The first bytes of a response body that an attempt keeps. */
export const EXCERPT_BYTES = 256;
/** Body bytes read to leave a connection reusable; a longer answer closes it. */
const DRAIN_BYTES = 64 * 1024;

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
  /** Bounds resolving, connecting and the whole answer together. */
  timeoutMs: number;
  allowPrivate: boolean;
  /** Aborts the attempt (the service stops). */
  signal?: AbortSignal;
  /** Seconds since the epoch; now by default. */
  now?: () => number;
  /** Certificate authorities for https instead of the system's (tests). */
  caCerts?: string[];
  /**
   * Where a connection is kept between deliveries to the same URL (HTTP/1.1
   * keep-alive). Close it with `closeKept` when done.
   */
  kept?: KeptConnection;
}

/** The three headers that sign `body` (Standard Webhooks, `v1` HMAC-SHA256). */
export function signatureHeaders(
  signer: Webhook,
  id: string,
  timestamp: number,
  body: string,
): Record<string, string> {
  return {
    "webhook-id": id,
    "webhook-timestamp": String(timestamp),
    "webhook-signature": signer.sign(id, new Date(timestamp * 1000), body),
  };
}

/** A new secret: `whsec_` + base64 of 32 random bytes. */
export function newSecret(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(32));
  return `whsec_${btoa(String.fromCharCode(...bytes))}`;
}

/**
 * The client of one URL, kept between deliveries to it, and the signer of
 * its secret (which decodes the key once, not once a message).
 */
export interface KeptConnection {
  url?: string;
  client?: Client;
  signer?: { secret: string; webhook: Webhook };
}

/** Closes the connection; a request still under way on it fails at once. */
export function closeKept(kept: KeptConnection) {
  kept.client?.destroy().catch(() => {});
  kept.client = kept.url = undefined;
}

const signerOf = (kept: KeptConnection, secret: string) => {
  if (kept.signer?.secret !== secret) {
    kept.signer = { secret, webhook: new Webhook(secret) };
  }
  return kept.signer.webhook;
};

class Refused extends Error {}

/** The addresses of `host`, each checked; throws Refused when one is not allowed. */
async function checkedAddresses(
  host: string,
  allowPrivate: boolean,
): Promise<string[]> {
  const literal = ipLiteral(host);
  const addresses = literal
    ? [literal]
    : (await lookup(host, { all: true, verbatim: true })).map((a) => a.address);
  if (addresses.length === 0) throw new Error(`cannot resolve ${host}`);
  // Every address, not only the one connected to: a name with one refused
  // address is refused whole.
  const refused = addresses.find((a) => !addressAllowed(a, allowPrivate));
  if (refused) throw new Refused(`address not allowed: ${refused}`);
  return addresses;
}

/**
 * A client for the URL's origin whose every connection goes to an address
 * of its host checked just before (for https with the host's name for SNI
 * and certificate verification).
 */
function clientFor(url: URL, options: DeliveryOptions): Client {
  const connect = buildConnector({
    ca: options.caCerts,
    timeout: options.timeoutMs,
    allowH2: false,
  });
  const host = url.hostname;
  const name = ipLiteral(host) ? undefined : host;
  return new Client(url.origin, {
    allowH2: false,
    // The attempt's own deadline bounds the answer.
    headersTimeout: 0,
    bodyTimeout: 0,
    connect(opts, callback) {
      checkedAddresses(host, options.allowPrivate).then(
        ([address]) =>
          connect({ ...opts, hostname: address, servername: name }, callback),
        (e) => callback(e, null),
      );
    },
  });
}

const utf8 = new TextDecoder();

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
  // One timer, cleared at the end: AbortSignal.timeout's would stay until
  // it fires, one per delivery. A stop aborts nothing here: it closes the
  // kept connections (closeKept), which ends a request under way.
  const deadline = new AbortController();
  const signal = deadline.signal;
  const timer = setTimeout(() => deadline.abort(), options.timeoutMs);
  const kept = options.kept ?? {};
  try {
    if (options.signal?.aborted) throw new Error("stopping");
    const url = new URL(d.url);
    if (kept.client && kept.url !== d.url) closeKept(kept);
    kept.url = d.url;
    const client = kept.client ??= clientFor(url, options);
    const timestamp = Math.floor(options.now?.() ?? Date.now() / 1000);
    const request = {
      path: `${url.pathname}${url.search}`,
      method: "POST" as const,
      headers: {
        "content-type": "application/json",
        "user-agent": "user-admin-webhooks",
        ...signatureHeaders(signerOf(kept, d.secret), d.id, timestamp, d.body),
      },
      body: d.body,
      signal,
    };
    let response;
    try {
      response = await client.request(request);
    } catch (e) {
      // A kept connection the receiver closed as the request went out: once
      // more, on a new one (undici opens it).
      if (!isClosedUnderfoot(e) || signal.aborted) throw e;
      response = await client.request(request);
    }
    const status = response.statusCode;
    const excerpt = await readExcerpt(response.body);
    const ok = status >= 200 && status < 300;
    return done({
      ok,
      status,
      error: ok
        ? null
        : status >= 300 && status < 400
        ? "redirect not followed"
        : "HTTP status not 2xx",
      responseExcerpt: excerpt,
    });
  } catch (e) {
    const error = options.signal?.aborted
      ? "aborted: the service stopped"
      : signal.aborted
      ? `no answer within ${options.timeoutMs} ms`
      : e instanceof Refused
      ? e.message
      : `${(e as Error).name}: ${(e as Error).message}`.slice(0, 200);
    // A connection in an unknown state is not kept.
    closeKept(kept);
    return done({ ok: false, status: null, error, responseExcerpt: null });
  } finally {
    clearTimeout(timer);
    if (!options.kept) closeKept(kept);
  }
}

const isClosedUnderfoot = (e: unknown) =>
  ["UND_ERR_SOCKET", "ECONNRESET", "EPIPE"].includes(
    (e as { code?: string }).code ?? "",
  );

/**
 * The first EXCERPT_BYTES of the body, as text. A short body is read whole,
 * so that its connection can carry the next delivery; a longer one is cut
 * (its connection closed).
 */
async function readExcerpt(
  body: AsyncIterable<Uint8Array> & { destroy(): unknown },
): Promise<string | null> {
  const start = new Uint8Array(EXCERPT_BYTES);
  let size = 0;
  let read = 0;
  for await (const chunk of body) {
    const take = Math.min(chunk.length, EXCERPT_BYTES - size);
    start.set(chunk.subarray(0, take), size);
    size += take;
    read += chunk.length;
    if (read > DRAIN_BYTES) {
      body.destroy();
      break;
    }
  }
  return size
    ? utf8.decode(start.subarray(0, size)).replace(/\uFFFD+$/, "")
    : null;
}
