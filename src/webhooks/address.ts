/**
 * Which addresses a webhook may reach. Loopback, private (RFC 1918, ULA),
 * link-local, CGNAT, unspecified, multicast, reserved and cloud metadata
 * addresses are refused unless WEBHOOK_ALLOW_PRIVATE=true: a webhook must
 * not become a way into the service's own network.
 */

/** An IPv4 address as four numbers, or null. */
function ipv4(text: string): number[] | null {
  const parts = text.split(".");
  if (parts.length !== 4) return null;
  const bytes = parts.map((p) => (/^[0-9]{1,3}$/.test(p) ? Number(p) : NaN));
  return bytes.every((b) => b >= 0 && b <= 255) ? bytes : null;
}

/** An IPv6 address (without brackets) as eight 16-bit groups, or null. */
function ipv6(text: string): number[] | null {
  if (!text.includes(":")) return null;
  // A dotted IPv4 tail (::ffff:10.0.0.1) is written as its two groups.
  const lastColon = text.lastIndexOf(":");
  const dotted = ipv4(text.slice(lastColon + 1));
  const hex = dotted
    ? `${text.slice(0, lastColon + 1)}${
      ((dotted[0] << 8) | dotted[1]).toString(16)
    }:${((dotted[2] << 8) | dotted[3]).toString(16)}`
    : text;
  const halves = hex.split("::");
  if (halves.length > 2) return null;
  const group = (g: string) =>
    /^[0-9a-f]{1,4}$/i.test(g) ? parseInt(g, 16) : NaN;
  const split = (s: string) => (s === "" ? [] : s.split(":").map(group));
  const left = split(halves[0]);
  const right = halves.length === 2 ? split(halves[1]) : [];
  const missing = 8 - left.length - right.length;
  if (halves.length === 1 ? missing !== 0 : missing < 1) return null;
  const groups = [
    ...left,
    ...Array(halves.length === 2 ? missing : 0).fill(0),
    ...right,
  ];
  return groups.every((g) => g >= 0 && g <= 0xffff) ? groups : null;
}

const inV4 = (b: number[], net: number[], bits: number) => {
  const value = (x: number[]) =>
    ((x[0] << 24) >>> 0) + (x[1] << 16) + (x[2] << 8) + x[3];
  const mask = bits === 0 ? 0 : (~0 << (32 - bits)) >>> 0;
  return ((value(b) & mask) >>> 0) === ((value(net) & mask) >>> 0);
};

const REFUSED_V4: [number[], number][] = [
  [[0, 0, 0, 0], 8], // "this network", unspecified
  [[10, 0, 0, 0], 8], // private
  [[100, 64, 0, 0], 10], // CGNAT
  [[127, 0, 0, 0], 8], // loopback
  [[169, 254, 0, 0], 16], // link-local, metadata (169.254.169.254)
  [[172, 16, 0, 0], 12], // private
  [[192, 0, 0, 0], 24], // IETF protocol assignments
  [[192, 168, 0, 0], 16], // private
  [[198, 18, 0, 0], 15], // benchmarking
  [[224, 0, 0, 0], 4], // multicast
  [[240, 0, 0, 0], 4], // reserved, broadcast
];

function refusedV4(b: number[]): boolean {
  return REFUSED_V4.some(([net, bits]) => inV4(b, net, bits));
}

function refusedV6(g: number[]): boolean {
  const zeros = (n: number) => g.slice(0, n).every((x) => x === 0);
  if (zeros(8)) return true; // ::
  if (zeros(7) && g[7] === 1) return true; // ::1
  // IPv4-mapped (::ffff:a.b.c.d), IPv4-compatible (::a.b.c.d) and NAT64
  // (64:ff9b::a.b.c.d): judged as the IPv4 address inside.
  const v4 = [g[6] >> 8, g[6] & 0xff, g[7] >> 8, g[7] & 0xff];
  if (zeros(5) && (g[5] === 0xffff || g[5] === 0)) return refusedV4(v4);
  if (g[0] === 0x64 && g[1] === 0xff9b && g.slice(2, 6).every((x) => !x)) {
    return refusedV4(v4);
  }
  if ((g[0] & 0xfe00) === 0xfc00) return true; // ULA fc00::/7 (fd00:ec2::254)
  if ((g[0] & 0xffc0) === 0xfe80) return true; // link-local
  if ((g[0] & 0xffc0) === 0xfec0) return true; // site-local (deprecated)
  if ((g[0] & 0xff00) === 0xff00) return true; // multicast
  return false;
}

/** The host of a URL (`[::1]` or `::1`) as an IP address, or null for a name. */
export function ipLiteral(host: string): string | null {
  const bare = host.startsWith("[") && host.endsWith("]")
    ? host.slice(1, -1)
    : host;
  return ipv4(bare) || ipv6(bare) ? bare : null;
}

/** Whether a webhook may connect to this IP address. */
export function addressAllowed(ip: string, allowPrivate: boolean): boolean {
  if (allowPrivate) return true;
  const v4 = ipv4(ip);
  if (v4) return !refusedV4(v4);
  const v6 = ipv6(ip);
  return v6 !== null && !refusedV6(v6);
}

/** An `@` in the authority: user info, if only an empty one (`https://@host`). */
const USER_INFO = /^\s*[a-z][a-z0-9+.-]*:[/\\]*[^/\\?#]*@/i;

/**
 * A webhook URL as stored: http or https, no credentials, and, when its
 * host is an IP address, an allowed one. Null when refused.
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
