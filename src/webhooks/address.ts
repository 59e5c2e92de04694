/**
 * Which addresses a webhook may reach: globally routable unicast ones
 * (isGloballyRoutable) that are none of the service's own host's, unless
 * WEBHOOK_ALLOW_PRIVATE=true. A webhook must not become a way into the
 * service's own network, its host or its cloud's metadata service.
 */
import { formatIp, isGloballyRoutable, parseIp } from "../http/ip.ts";

/** The host of a URL (`[::1]` or `::1`) as an IP address, or null for a name. */
export function ipLiteral(host: string): string | null {
  const bare = host.startsWith("[") && host.endsWith("]")
    ? host.slice(1, -1)
    : host;
  return parseIp(bare) ? bare : null;
}

/**
 * The addresses of the service's own host, in formatIp's form; read at
 * every check, since interfaces come and go (and one may be public).
 */
function ownAddresses(): Set<string> {
  const own = new Set<string>();
  for (const { address } of Deno.networkInterfaces()) {
    // A link-local address may carry its zone (`fe80::1%eth0`).
    const ip = parseIp(address.split("%")[0]);
    if (ip) own.add(formatIp(ip));
  }
  return own;
}

/** Whether a webhook may connect to this IP address. */
export function addressAllowed(ip: string, allowPrivate: boolean): boolean {
  if (allowPrivate) return true;
  const parsed = parseIp(ip);
  return parsed !== undefined && isGloballyRoutable(parsed) &&
    !ownAddresses().has(formatIp(parsed));
}

/** An `@` in the authority: user info, if only an empty one (`https://@host`). */
const USER_INFO = /^\s*[a-z][a-z0-9+.-]*:[/\\]*[^/\\?#]*@/i;

/**
 * A webhook URL as stored: http or https, no credentials, and, when its
 * host is an IP address (in any form the URL parser reads as one:
 * `2130706433`, `0x7f.1`, `[::ffff:7f00:1]`), an allowed one. Null when
 * refused.
 */
export function webhookUrl(text: string, allowPrivate: boolean): string | null {
  if (!URL.canParse(text)) return null;
  const url = new URL(text);
  if (url.protocol !== "http:" && url.protocol !== "https:") return null;
  if (USER_INFO.test(text) || url.username || !url.hostname) return null;
  const ip = ipLiteral(url.hostname);
  if (ip && !addressAllowed(ip, allowPrivate)) return null;
  url.hash = "";
  return url.href;
}
