/**
 * IP addresses: which texts are one, the one form each is written in, which
 * are globally routable, and the block a client is counted under. Parsed
 * and classified by ipaddr.js; node:net's `isIP` decides first which texts
 * are addresses, since ipaddr.js also reads forms no client sends as one
 * (`0x7f.1`, `010.0.0.1`, zones).
 */
import ipaddr from "ipaddr.js";
import { isIP } from "node:net";

export type Ip = ipaddr.IPv4 | ipaddr.IPv6;

/** The longest text form of an IPv6 address (with an IPv4 tail). */
const IPV6_TEXT_MAX = 45;

/**
 * An address written as RFC 4291 and dotted decimal write them (IPv4
 * without leading zeros), or undefined. Brackets, ports and zones are not
 * part of an address.
 */
export function parseIp(text: string): Ip | undefined {
  if (text.length > IPV6_TEXT_MAX) return undefined;
  const kind = isIP(text);
  if (kind === 4) return ipaddr.IPv4.parse(text);
  if (kind !== 6 || text.includes("%")) return undefined;
  // ipaddr.js reads `::a.b.c.d` (that form alone) as `::ffff:a.b.c.d`;
  // written `0::a.b.c.d`, as the address it is.
  const spelled = text.startsWith("::") && !text.includes(":", 2)
    ? `0${text}`
    : text;
  return ipaddr.IPv6.isValid(spelled) ? ipaddr.IPv6.parse(spelled) : undefined;
}

/**
 * An address in one form: IPv4 as dotted decimal; IPv6 as RFC 5952 writes
 * it (lower case, no leading zeros, the longest run of zero groups as `::`);
 * IPv4-mapped IPv6 (`::ffff:a.b.c.d`, in any spelling) as its IPv4 address,
 * so one client is one address however it arrives.
 */
export function formatIp(ip: Ip): string {
  if (ip instanceof ipaddr.IPv4) return ip.toString();
  return ip.isIPv4MappedAddress()
    ? ip.toIPv4Address().toString()
    : ip.toRFC5952String();
}

/** `text` as an address in one form (formatIp), or undefined when it is none. */
export function ipAddress(text: string): string | undefined {
  const ip = parseIp(text);
  return ip && formatIp(ip);
}

/** IPv4-compatible IPv6 (`::a.b.c.d`, deprecated by RFC 4291), which ipaddr.js calls unicast. */
const IPV4_COMPATIBLE = ipaddr.IPv6.parseCIDR("::/96");

/**
 * Whether an address is globally routable unicast: ipaddr.js's `unicast`
 * range, which leaves out loopback, private, CGNAT, link-local, ULA,
 * unspecified, multicast, broadcast, reserved, documentation, benchmarking,
 * IPv4-mapped and -translated, NAT64, 6to4 and Teredo; and not
 * IPv4-compatible. Every address that reaches an IPv4 one through a
 * translation is refused: the IPv4 address is judged by itself.
 */
export function isGloballyRoutable(ip: Ip): boolean {
  if (ip.range() !== "unicast") return false;
  return ip instanceof ipaddr.IPv4 || !ip.match(IPV4_COMPATIBLE);
}

/** The bits of an IPv6 address one subscriber is usually given (RFC 6177). */
const IPV6_SUBSCRIBER_BITS = 64;

/**
 * The block a client address counts under for failed logins: an IPv6
 * address's /64 (one subscriber's, rotated through freely), written
 * `2001:db8:1:2::/64`; an IPv4 address, or any other text, as itself.
 */
export function countedBlock(address: string): string {
  const ip = parseIp(address);
  if (!(ip instanceof ipaddr.IPv6) || ip.isIPv4MappedAddress()) return address;
  const network = ipaddr.IPv6.networkAddressFromCIDR(
    `${ip.toRFC5952String()}/${IPV6_SUBSCRIBER_BITS}`,
  );
  return `${network.toRFC5952String()}/${IPV6_SUBSCRIBER_BITS}`;
}
