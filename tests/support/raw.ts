/**
 * One HTTP/1.1 exchange over a raw TCP socket, for requests fetch will not
 * send: stalled or trickled bodies, oversized request lines, odd framing.
 */
export interface RawOptions {
  /** Pause after each part, to play a slow client. */
  pauseMs?: number;
  /** Give up reading after this long (the socket is closed). */
  readMs?: number;
}

export async function rawHttp(
  port: number,
  parts: (string | Uint8Array)[],
  { pauseMs = 0, readMs = 10_000 }: RawOptions = {},
): Promise<RawResponse> {
  const conn = await Deno.connect({ hostname: "127.0.0.1", port });
  const encoder = new TextEncoder();
  const chunks: Uint8Array[] = [];
  try {
    for (const part of parts) {
      const bytes = typeof part === "string" ? encoder.encode(part) : part;
      // The server may answer and close before it has read everything.
      if (!await writeAll(conn, bytes)) break;
      if (pauseMs) await new Promise((r) => setTimeout(r, pauseMs));
    }
    const timer = setTimeout(() => conn.close(), readMs);
    try {
      const buf = new Uint8Array(64 * 1024);
      while (!complete(chunks)) {
        const n = await conn.read(buf).catch(() => null);
        if (n === null) break;
        chunks.push(buf.slice(0, n));
      }
    } finally {
      clearTimeout(timer);
    }
  } finally {
    try {
      conn.close();
    } catch { /* already closed */ }
  }
  return parse(new TextDecoder().decode(concat(chunks)));
}

export interface RawResponse {
  /** 0 when nothing came back. */
  status: number;
  headers: Headers;
  body: string;
}

async function writeAll(conn: Deno.Conn, bytes: Uint8Array) {
  try {
    let written = 0;
    while (written < bytes.length) {
      written += await conn.write(bytes.subarray(written));
    }
    return true;
  } catch {
    return false;
  }
}

function complete(chunks: Uint8Array[]) {
  const text = new TextDecoder().decode(concat(chunks));
  const end = text.indexOf("\r\n\r\n");
  if (end < 0) return false;
  const length = /\r\ncontent-length: *(\d+)/i.exec(text.slice(0, end));
  return length !== null &&
    new TextEncoder().encode(text.slice(end + 4)).length >= Number(length[1]);
}

function parse(text: string): RawResponse {
  const end = text.indexOf("\r\n\r\n");
  if (end < 0) return { status: 0, headers: new Headers(), body: text };
  const [status, ...lines] = text.slice(0, end).split("\r\n");
  const headers = new Headers();
  for (const line of lines) {
    const i = line.indexOf(":");
    headers.append(line.slice(0, i).trim(), line.slice(i + 1).trim());
  }
  return {
    status: Number(status.split(" ")[1]),
    headers,
    body: text.slice(end + 4),
  };
}

function concat(chunks: Uint8Array[]) {
  const out = new Uint8Array(chunks.reduce((n, c) => n + c.length, 0));
  let offset = 0;
  for (const c of chunks) {
    out.set(c, offset);
    offset += c.length;
  }
  return out;
}
