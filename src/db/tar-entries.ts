/**
 * PGlite's dump of its data directory names each entry from the root
 * (`/base/1/112`): tar strips the leading slash with a warning, and a tool
 * that does not would write outside the directory it was asked to unpack
 * into. The backup rewrites those names relative (`base/1/112`) as it
 * streams, block by block, touching nothing else.
 */
const BLOCK = 512;

/** A header's name as relative: its leading slashes dropped (`/` alone becomes `./`). */
function relativeName(header: Uint8Array) {
  const ustar = new TextDecoder().decode(header.subarray(257, 262)) === "ustar";
  // A long name's first part is in `prefix` (ustar), else all in `name`.
  const [start, length] = ustar && header[345] !== 0 ? [345, 155] : [0, 100];
  const field = header.subarray(start, start + length);
  let slashes = 0;
  while (slashes < length && field[slashes] === 0x2f) slashes++;
  if (slashes === 0) return false;
  if (slashes === length || field[slashes] === 0) {
    field.fill(0);
    field.set([0x2e, 0x2f]); // "./"
  } else {
    field.copyWithin(0, slashes);
    field.fill(0, length - slashes);
  }
  return true;
}

/** The header's checksum written again (the sum of its bytes, the field counted as spaces). */
function checksum(header: Uint8Array) {
  header.fill(0x20, 148, 156);
  let sum = 0;
  for (const b of header) sum += b;
  header.set(
    new TextEncoder().encode(sum.toString(8).padStart(6, "0") + "\0 "),
    148,
  );
}

/** The size of an entry's content, padded to whole blocks. */
function contentBlocks(header: Uint8Array) {
  const octal = new TextDecoder().decode(header.subarray(124, 136))
    .replace(/[\0 ]+/g, "");
  const size = octal === "" ? 0 : parseInt(octal, 8);
  if (!Number.isSafeInteger(size)) throw new Error("tar: unreadable size");
  return Math.ceil(size / BLOCK) * BLOCK;
}

/** A tar archive's entries named relative; everything else passes as it is. */
export function relativeTarEntries(): TransformStream<Uint8Array, Uint8Array> {
  let pending = new Uint8Array(0);
  /** Content bytes still to pass through before the next header. */
  let content = 0;
  return new TransformStream({
    transform(chunk, out) {
      const bytes = pending.length === 0 ? chunk : concat(pending, chunk);
      let at = 0;
      while (bytes.length - at >= BLOCK) {
        if (content > 0) {
          const whole = Math.floor((bytes.length - at) / BLOCK) * BLOCK;
          const skip = Math.min(content, whole);
          content -= skip;
          at += skip;
          continue;
        }
        const header = bytes.subarray(at, at + BLOCK);
        if (header.some((b) => b !== 0)) {
          if (relativeName(header)) checksum(header);
          content = contentBlocks(header);
        }
        at += BLOCK;
      }
      out.enqueue(bytes.slice(0, at));
      pending = bytes.slice(at);
    },
    flush(out) {
      if (pending.length > 0) out.enqueue(pending);
    },
  });
}

function concat(a: Uint8Array, b: Uint8Array) {
  const both = new Uint8Array(a.length + b.length);
  both.set(a);
  both.set(b, a.length);
  return both;
}
