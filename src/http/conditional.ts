/**
 * Entity tags in request headers (RFC 9110, sections 8.8.3 and 13.1): what
 * If-None-Match and If-Match hold, and how each compares. A header is read
 * exactly by its grammar, `"*" / #entity-tag`: a tag's quoted text is
 * compared as written, and a header that breaks the grammar anywhere is
 * malformed as a whole (not searched for something that looks like a tag).
 */

export interface EntityTag {
  /** The quoted text, quotes included: `"u14.5"`. */
  tag: string;
  weak: boolean;
}

/**
 * One element of the list and what ends it: optional whitespace, a tag and
 * optional whitespace or nothing (the grammar allows empty elements), then a
 * comma or the end. `W/` is case-sensitive; etagc is %x21 / %x23-7E /
 * obs-text. One run of whitespace per place, so a long run of spaces
 * costs one pass, not one per way of splitting it.
 */
const ELEMENT = /[ \t]*(?:(W\/)?("[\x21\x23-\x7e\x80-\xff]*")[ \t]*)?(,|$)/y;

/**
 * `*`, or the tags listed; undefined when absent, "malformed" when the
 * header is not `*` or a list of entity tags.
 */
export function entityTags(
  header: string | undefined,
): "*" | EntityTag[] | "malformed" | undefined {
  if (header === undefined) return undefined;
  if (/^[ \t]*\*[ \t]*$/.test(header)) return "*";
  const tags: EntityTag[] = [];
  for (let at = 0; at < header.length;) {
    ELEMENT.lastIndex = at;
    const m = ELEMENT.exec(header);
    if (!m) return "malformed";
    if (m[2] !== undefined) tags.push({ tag: m[2], weak: m[1] !== undefined });
    if (m[3] === "") break;
    at = ELEMENT.lastIndex;
  }
  return tags;
}

/**
 * If-None-Match holds the current tag (weak comparison): answer 304. A
 * malformed header counts as absent.
 */
export function noneMatch(header: string | undefined, current: string) {
  const tags = entityTags(header);
  if (tags === undefined || tags === "malformed") return false;
  return tags === "*" || tags.some((t) => t.tag === current);
}

/**
 * The strong tags of If-Match (a weak one never matches; a malformed header
 * holds none, so nothing matches), or undefined when there is no
 * precondition beyond the resource existing (absent, or `*`).
 */
export function ifMatchTags(header: string | undefined): string[] | undefined {
  const tags = entityTags(header);
  if (tags === undefined || tags === "*") return undefined;
  if (tags === "malformed") return [];
  return tags.filter((t) => !t.weak).map((t) => t.tag);
}
