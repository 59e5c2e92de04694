import type { Context } from "hono";

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

/** The client's address for the log: the proxy's word for it only when trusted. */
export function clientIp(c: Context, trustProxy: boolean): string | undefined {
  const info = c.env as Deno.ServeHandlerInfo<Deno.NetAddr> | undefined;
  return (trustProxy && forwarded(c, "x-forwarded-for")) ||
    info?.remoteAddr?.hostname;
}
