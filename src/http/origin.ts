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
  // dual-stack socket) is written in the one form below.
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

/** The longest text form of an IPv6 address (with an IPv4 tail). */
const IPV6_TEXT_MAX = 45;

/**
 * An IPv4 or IPv6 address in one form, or undefined when the text is not
 * one: IPv4 as dotted decimal without leading zeros; IPv6 as RFC 5952 writes
 * it (lower case, no leading zeros, the longest run of zero groups as `::`);
 * an IPv4-mapped IPv6 address (`::ffff:a.b.c.d`, in any spelling) as its
 * IPv4 address, so one client is one address however it arrives. Ports,
 * brackets and zones are not part of an address.
 */
export function ipAddress(text: string): string | undefined {
  if (text.length > IPV6_TEXT_MAX) return undefined;
  if (!text.includes(":")) return ipv4(text)?.join(".");
  const groups = ipv6(text);
  if (!groups) return undefined;
  if (groups.slice(0, 5).every((g) => g === 0) && groups[5] === 0xffff) {
    return [groups[6] >> 8, groups[6] & 0xff, groups[7] >> 8, groups[7] & 0xff]
      .join(".");
  }
  // The longest run of two or more zero groups (the first of equals) is `::`.
  let start = -1;
  let length = 1;
  for (let i = 0; i < 8; i++) {
    let j = i;
    while (j < 8 && groups[j] === 0) j++;
    if (j - i > length) [start, length] = [i, j - i];
    i = Math.max(i, j);
  }
  const hex = groups.map((g) => g.toString(16));
  if (start < 0) return hex.join(":");
  return `${hex.slice(0, start).join(":")}::${
    hex.slice(start + length).join(":")
  }`;
}

const IPV4_PART = /^(?:0|[1-9][0-9]{0,2})$/;

/** Dotted decimal's four bytes; a leading zero (octal to some parsers) is refused. */
function ipv4(text: string): number[] | undefined {
  const parts = text.split(".");
  if (parts.length !== 4) return undefined;
  const bytes = [];
  for (const part of parts) {
    if (!IPV4_PART.test(part) || Number(part) > 255) return undefined;
    bytes.push(Number(part));
  }
  return bytes;
}

const IPV6_GROUP = /^[0-9a-fA-F]{1,4}$/;

/** The eight 16-bit groups of an IPv6 address (RFC 4291 section 2.2). */
function ipv6(text: string): number[] | undefined {
  let tail: number[] = [];
  let hexPart = text;
  const lastColon = text.lastIndexOf(":");
  if (text.includes(".", lastColon)) {
    const bytes = ipv4(text.slice(lastColon + 1));
    if (!bytes) return undefined;
    tail = [(bytes[0] << 8) | bytes[1], (bytes[2] << 8) | bytes[3]];
    // `::a.b.c.d` keeps its `::`; `x:...:a.b.c.d` drops the separator.
    hexPart = text.slice(0, lastColon + 1);
    if (!hexPart.endsWith("::")) hexPart = hexPart.slice(0, -1);
  }
  const halves = hexPart.split("::");
  if (halves.length > 2) return undefined;
  const groupsOf = (half: string) => {
    if (half === "") return [];
    const parts = half.split(":");
    return parts.every((p) => IPV6_GROUP.test(p))
      ? parts.map((p) => parseInt(p, 16))
      : undefined;
  };
  const head = groupsOf(halves[0]);
  const rest = halves.length === 2 ? groupsOf(halves[1]) : [];
  if (!head || !rest) return undefined;
  const given = head.length + rest.length + tail.length;
  if (halves.length === 1 ? given !== 8 : given > 7) return undefined;
  return [...head, ...Array(8 - given).fill(0), ...rest, ...tail];
}
