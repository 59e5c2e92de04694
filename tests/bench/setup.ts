/**
 * What the bench's scripts (bench.ts, after_idle.ts) set up alike: a
 * database of their own on the PostgreSQL server, and a session of the
 * admin they start the service with.
 */
import postgres from "postgres";

/** BENCH_DATABASE_URL, else DATABASE_URL, else the local server. */
export const benchServerUrl = Deno.env.get("BENCH_DATABASE_URL") ??
  Deno.env.get("DATABASE_URL") ??
  "postgres://postgres@127.0.0.1:5432/postgres";

/**
 * A new database named `<prefix>_<uuid>` on `benchServerUrl`, with a
 * connection to it; disposing closes that and drops the database.
 */
export async function scratchDatabase(prefix: string) {
  const name = `${prefix}_${crypto.randomUUID().replaceAll("-", "")}`;
  const admin = postgres(benchServerUrl, { max: 1, onnotice: () => {} });
  await admin`create database ${admin(name)}`;
  const url = new URL(benchServerUrl);
  url.pathname = `/${name}`;
  const sql = postgres(url.href, { max: 1, onnotice: () => {} });
  return {
    url: url.href,
    sql,
    [Symbol.asyncDispose]: async () => {
      await sql.end();
      await admin`drop database if exists ${admin(name)} with (force)`;
      await admin.end();
    },
  };
}

/** Logs in: the session token of the `sid` cookie. */
export async function sessionToken(
  baseUrl: string,
  credentials: { username: string; password: string },
): Promise<string> {
  const res = await fetch(`${baseUrl}/api/auth/login`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(credentials),
  });
  await res.body?.cancel();
  const sid = /sid=([^;]+)/.exec(res.headers.get("set-cookie") ?? "")?.[1];
  if (res.status !== 200 || !sid) throw new Error(`login: ${res.status}`);
  return sid;
}
