/**
 * What the delegation tests share: the answers docs/delegation.md gives,
 * written out, and two readers of the generated client's answers.
 */
import { assert } from "./support/assert.ts";

export const FORBIDDEN = { ok: false, status: 403, error: "Forbidden" };
export const CANNOT_GRANT = {
  ok: false,
  status: 403,
  error: "Cannot grant more than you hold",
};
export const OUTRANKED = {
  ok: false,
  status: 403,
  error: "Cannot act on a more privileged user",
};

/** What an answer says, as {ok, status, error} (the error's message, if any). */
export async function said(answer: Promise<{ ok: boolean; status: number }>) {
  const a = await answer as { ok: boolean; status: number; error?: string };
  return { ok: a.ok, status: a.status, error: a.error };
}

/** The data of an answer that must be a success. */
export async function dataOf<T>(
  answer: Promise<{ ok: true; data: T } | { ok: false }>,
) {
  const a = await answer;
  assert(a.ok, JSON.stringify(a));
  return a.data;
}
