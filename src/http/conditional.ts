/**
 * Entity tags in request headers (RFC 9110, section 8.8.3 and 13.1): what
 * If-None-Match and If-Match hold, and how each compares.
 */

/** `*`, or the tags listed (with their `W/` when weak); undefined when absent. */
export function entityTags(
  header: string | undefined,
): "*" | { tag: string; weak: boolean }[] | undefined {
  if (header === undefined) return undefined;
  if (header.trim() === "*") return "*";
  // A tag's quoted text may hold commas, so the list is read tag by tag.
  return [...header.matchAll(/(W\/)?("[\x21\x23-\x7e\x80-\xff]*")/g)].map(
    (m) => ({ tag: m[2], weak: m[1] !== undefined }),
  );
}

/** If-None-Match holds the current tag (weak comparison): answer 304. */
export function noneMatch(header: string | undefined, current: string) {
  const tags = entityTags(header);
  if (tags === undefined) return false;
  return tags === "*" || tags.some((t) => t.tag === current);
}

/**
 * The strong tags of If-Match (a weak one never matches), or undefined when
 * there is no precondition beyond the resource existing (absent, or `*`).
 */
export function ifMatchTags(header: string | undefined): string[] | undefined {
  const tags = entityTags(header);
  if (tags === undefined || tags === "*") return undefined;
  return tags.filter((t) => !t.weak).map((t) => t.tag);
}
