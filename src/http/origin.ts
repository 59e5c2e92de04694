import type { Context } from "hono";
import { ipAddress } from "./ip.ts";

/** First value of a possibly comma-separated forwarded header. */
const forwarded = (c: Context, name: string) =>
  c.req.header(name)?.split(",")[0].trim() || undefined;

/** The scheme and host the client used: behind a trusted proxy, as it reports them. */
export function requestOrigin(c: Context, trustProxy: boolean): string {
  const url = new URL(c.req.url);
  const proto = (trustProxy && forwarded(c, "x-forwarded-proto")) ||
    url.protocol.slice(0, -1);
  const host = (trustProxy && forwarded(c, "x-forwarded-host")) || url.host;
  return `${proto}://${host}`;
}

/** Whether the client used HTTPS; runs on every request, so it parses no URL. */
export function isHttps(c: Context, trustProxy: boolean): boolean {
  const proto = trustProxy ? forwarded(c, "x-forwarded-proto") : undefined;
  return proto ? proto === "https" : c.req.url.startsWith("https:");
}

/**
 * The client's address (log, audit record, login throttle): the first
 * `X-Forwarded-For` hop when the proxy is trusted and that hop is an IPv4 or
 * IPv6 address, else the socket's peer; normalised either way.
 */
export function clientIp(c: Context, trustProxy: boolean): string | undefined {
  if (trustProxy) {
    const header = c.req.header("x-forwarded-for");
    if (header !== undefined) {
      const comma = header.indexOf(",");
      const hop = ipAddress(
        withoutOws(comma < 0 ? header : header.slice(0, comma)),
      );
      if (hop) return hop;
    }
  }
  const info = c.env as Deno.ServeHandlerInfo<Deno.NetAddr> | undefined;
  const peer = info?.remoteAddr?.hostname;
  // An IPv4 peer comes as dotted decimal already; an IPv6 one (or IPv4 on a
  // dual-stack socket) is written in ipAddress's one form.
  return peer?.includes(":") ? ipAddress(peer) ?? peer : peer;
}

/**
 * A list element without the whitespace around it, which in HTTP is spaces
 * and tabs only; in one pass (a regular expression anchored at the end
 * would try every position of a long run of spaces).
 */
function withoutOws(text: string): string {
  let start = 0;
  let end = text.length;
  while (start < end && (text[start] === " " || text[start] === "\t")) start++;
  while (end > start && (text[end - 1] === " " || text[end - 1] === "\t")) {
    end--;
  }
  return text.slice(start, end);
}
