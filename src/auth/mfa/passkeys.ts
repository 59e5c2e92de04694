/**
 * Passkeys (WebAuthn) through @simplewebauthn/server: the relying party is
 * PUBLIC_URL (its host name the RP id, its origin the expected origin).
 * Challenges are kept by the store, bound to the user and a purpose, and
 * taken back once: an assertion for another challenge, or a second use of
 * one, fails.
 */
import {
  type AuthenticationResponseJSON,
  generateAuthenticationOptions,
  generateRegistrationOptions,
  type RegistrationResponseJSON,
  verifyAuthenticationResponse,
  verifyRegistrationResponse,
} from "@simplewebauthn/server";
import type { ServedConfig } from "../../config.ts";
import type {
  ChallengePurpose,
  NewPasskey,
  StoredPasskey,
} from "../../db/mfa.ts";

/** How long a challenge waits for its answer. */
export const CHALLENGE_SECONDS = 300;

type Transports = NonNullable<
  RegistrationResponseJSON["response"]["transports"]
>;

/** Takes a challenge back from the store: true once, for its user and purpose. */
export type TakeChallenge = (
  purpose: ChallengePurpose,
  challenge: string,
) => Promise<boolean>;

export function createPasskeys(config: Pick<ServedConfig, "PUBLIC_URL">) {
  const origin = config.PUBLIC_URL;
  const rpID = new URL(origin).hostname;

  return {
    /** Options for `navigator.credentials.create`, never offering a credential the user has. */
    async registrationOptions(
      user: { id: number; username: string; name: string },
      existing: StoredPasskey[],
    ) {
      return await generateRegistrationOptions({
        rpName: `User admin (${new URL(origin).host})`,
        rpID,
        userName: user.username,
        userDisplayName: user.name,
        userID: new TextEncoder().encode(String(user.id)),
        attestationType: "none",
        excludeCredentials: existing.map((p) => ({
          id: p.credentialId,
          transports: p.transports as Transports,
        })),
        authenticatorSelection: {
          residentKey: "preferred",
          userVerification: "preferred",
        },
        timeout: CHALLENGE_SECONDS * 1000,
      });
    },

    /** The new passkey, or null when the response does not verify (its challenge taken either way). */
    async verifyRegistration(
      response: unknown,
      name: string,
      take: TakeChallenge,
    ): Promise<NewPasskey | null> {
      try {
        const verified = await verifyRegistrationResponse({
          response: response as RegistrationResponseJSON,
          expectedChallenge: (challenge) => take("register", challenge),
          expectedOrigin: origin,
          expectedRPID: rpID,
          requireUserVerification: false,
        });
        if (!verified.verified) return null;
        const { credential } = verified.registrationInfo;
        return {
          credentialId: credential.id,
          publicKey: credential.publicKey,
          counter: credential.counter,
          transports: credential.transports ?? [],
          name,
        };
      } catch {
        return null;
      }
    },

    /** Options for `navigator.credentials.get`, allowing the user's passkeys only. */
    async authenticationOptions(passkeys: StoredPasskey[]) {
      return await generateAuthenticationOptions({
        rpID,
        allowCredentials: passkeys.map((p) => ({
          id: p.credentialId,
          transports: p.transports as Transports,
        })),
        userVerification: "preferred",
        timeout: CHALLENGE_SECONDS * 1000,
      });
    },

    /**
     * The passkey of the user that signed the assertion and its new
     * counter, or null: not the user's passkey, another challenge, a
     * challenge used already, a bad signature or malformed input.
     */
    async verifyAuthentication(
      response: unknown,
      passkeys: StoredPasskey[],
      purpose: ChallengePurpose,
      take: TakeChallenge,
    ): Promise<{ passkey: StoredPasskey; counter: number } | null> {
      const id = (response as { id?: unknown } | null)?.id;
      const passkey = passkeys.find((p) => p.credentialId === id);
      if (!passkey) return null;
      try {
        const verified = await verifyAuthenticationResponse({
          response: response as AuthenticationResponseJSON,
          expectedChallenge: (challenge) => take(purpose, challenge),
          expectedOrigin: origin,
          expectedRPID: rpID,
          credential: {
            id: passkey.credentialId,
            publicKey: new Uint8Array(passkey.publicKey),
            counter: passkey.counter,
            transports: passkey.transports as Transports,
          },
          requireUserVerification: false,
        });
        return verified.verified
          ? { passkey, counter: verified.authenticationInfo.newCounter }
          : null;
      } catch {
        return null;
      }
    },
  };
}

export type Passkeys = ReturnType<typeof createPasskeys>;
