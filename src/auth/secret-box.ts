/**
 * Secrets the service must give back to someone else (an identity
 * provider's client secret), kept at rest sealed with AES-256-GCM under the
 * key of the `secret_key` row (migration 030): a 12-byte random IV, then
 * the ciphertext and its tag. The additional data binds a sealed value to
 * what it belongs to, so one cannot be copied onto another row.
 */
const IV_BYTES = 12;

const importKey = (raw: Uint8Array) =>
  crypto.subtle.importKey("raw", raw as BufferSource, "AES-GCM", false, [
    "encrypt",
    "decrypt",
  ]);

const utf8 = new TextEncoder();

export async function seal(
  key: Uint8Array,
  plain: string,
  boundTo: string,
): Promise<Uint8Array> {
  const iv = crypto.getRandomValues(new Uint8Array(IV_BYTES));
  const sealed = await crypto.subtle.encrypt(
    { name: "AES-GCM", iv, additionalData: utf8.encode(boundTo) },
    await importKey(key),
    utf8.encode(plain),
  );
  const out = new Uint8Array(IV_BYTES + sealed.byteLength);
  out.set(iv);
  out.set(new Uint8Array(sealed), IV_BYTES);
  return out;
}

export async function open(
  key: Uint8Array,
  sealed: Uint8Array,
  boundTo: string,
): Promise<string> {
  const plain = await crypto.subtle.decrypt(
    {
      name: "AES-GCM",
      iv: sealed.subarray(0, IV_BYTES) as BufferSource,
      additionalData: utf8.encode(boundTo),
    },
    await importKey(key),
    sealed.subarray(IV_BYTES) as BufferSource,
  );
  return new TextDecoder().decode(plain);
}
