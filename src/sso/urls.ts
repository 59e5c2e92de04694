/** What a provider's issuer and a sign-in's `returnTo` may be (docs/sso.md). */

/** Whether `host` (as URL.hostname gives it) is a loopback address or `localhost`. */
const isLoopback = (host: string) =>
  host === "localhost" || host === "[::1]" || /^127(\.\d{1,3}){3}$/.test(host);

/**
 * An issuer: an absolute `https` URL (or `http` on a loopback address, for
 * development), without credentials, query or fragment; at most 2048
 * characters.
 */
export function isIssuer(text: string): boolean {
  if (text.length > 2048 || !URL.canParse(text)) return false;
  const url = new URL(text);
  if (url.username || url.password || url.search || url.hash) return false;
  if (/[?#]/.test(text)) return false;
  return url.protocol === "https:" ||
    (url.protocol === "http:" && isLoopback(url.hostname));
}

/**
 * A `returnTo`: a path of this service (one `/` first, never `//` or `/\`,
 * which a browser takes for another host), at most 2048 characters, of
 * printable ASCII.
 */
export const isReturnPath = (text: string) =>
  text.length <= 2048 && /^\/(?![/\\])[\x21-\x7E]*$/.test(text) &&
  !text.includes("\\");
