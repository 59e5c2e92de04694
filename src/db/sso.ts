/**
 * Signing in with an identity provider (docs/sso.md): the providers admins
 * configure (sso-providers.ts), the sign-ins sent to a provider and not yet
 * back, and which account a provider's subject signs in to.
 */
import type { PendingQuery, Row, Sql, TransactionSql } from "postgres";
import { NO_PASSWORD } from "../accounts/fields.ts";
import type { AuditParty } from "../audit/chain.ts";
import {
  type AuditContext,
  auditEvents,
  type ProviderRef,
} from "../audit/events.ts";
import { lowerCaseKey } from "../users/canonical.ts";
import type { Account } from "../users/user.ts";
import { createAccountWrites, recordAll } from "./account-writes.ts";
import { recordAudit } from "./audit.ts";
import { createSsoProviders, type SsoProvider } from "./sso-providers.ts";
import { accountColumns, isUniqueViolation } from "./user-rows.ts";
import type { WriteBy, Writer } from "./write.ts";

/** A pending sign-in, as the callback takes it back. */
export interface PendingSignIn {
  nonce: string;
  codeVerifier: string;
  returnTo: string;
  /** Whether it was still within its time when taken. */
  live: boolean;
}

/** Who the provider says signed in (the ID token's claims the service reads). */
export interface ProviderIdentity {
  subject: string;
  /** The e-mail, when the provider vouches for it (`email_verified`). */
  verifiedEmail?: string;
  /** A new account's fields, when one may be made for the subject. */
  newAccount?: { username: string; name: string; email: string };
}

/** The account a sign-in lands on, as the session's write takes it. */
export type SignInUser = Account & { passwordVersion: number };

export function createSsoStore(sql: Sql, writer: Writer) {
  const { transaction } = writer;
  const accounts = createAccountWrites(sql);
  const userOf = (tx: TransactionSql, where: PendingQuery<Row[]>) =>
    tx<SignInUser[]>`
      select ${accountColumns(tx, "u")},
        u.password_version as "passwordVersion"
      from users u where ${where}`;

  return {
    providers: createSsoProviders(sql, writer),

    pending: {
      async create(
        stateHash: Uint8Array,
        providerId: number,
        p: { nonce: string; codeVerifier: string; returnTo: string },
        seconds: number,
        writeBy: WriteBy,
      ): Promise<void> {
        await transaction(writeBy, async (tx) => {
          await tx`
            insert into sso_pending (state_hash, provider_id, nonce,
              code_verifier, return_to, expires_at)
            values (${stateHash}, ${providerId}, ${p.nonce},
              ${p.codeVerifier}, ${p.returnTo},
              now() + make_interval(secs => ${seconds}))`;
        });
      },

      /** Takes the pending sign-in of this state: at most once, by one instance. */
      async take(
        stateHash: Uint8Array,
        providerId: number,
        writeBy: WriteBy,
      ): Promise<PendingSignIn | undefined> {
        return await transaction(writeBy, async (tx) => {
          const [row] = await tx<PendingSignIn[]>`
            delete from sso_pending
            where state_hash = ${stateHash} and provider_id = ${providerId}
            returning nonce, code_verifier as "codeVerifier",
              return_to as "returnTo", expires_at > now() as live`;
          return row;
        });
      },

      /** Deletes the sign-ins whose time ran out; answers how many. */
      async sweep(): Promise<number> {
        const { count } = await sql`
          delete from sso_pending where expires_at <= now()`;
        return count;
      },
    },

    /**
     * The account the provider's subject signs in to, in one transaction:
     * the one linked before; else the SCIM connection's user whose
     * `externalId` is the subject; else (link `email`) the user of the
     * verified e-mail; else a new viewer (`createUsers`, made through the
     * one write path, with no password) when its username and e-mail are
     * free. A link found or made is kept and recorded (`sso.linked`), so
     * the subject alone finds the account afterwards. None: undefined.
     */
    async accountFor(
      provider: SsoProvider,
      who: ProviderIdentity,
      context: AuditContext,
      writeBy: WriteBy,
    ): Promise<SignInUser | undefined> {
      return await transaction(writeBy, async (tx) => {
        const [linked] = await userOf(
          tx,
          sql`u.id = (select user_id from sso_links
            where provider_id = ${provider.id}
              and subject = ${who.subject})`,
        );
        if (linked) return linked;
        const link = async (
          user: SignInUser,
          by: "externalId" | "email" | "created",
          db: TransactionSql = tx,
        ) => {
          const made = await db`
            insert into sso_links (provider_id, subject, user_id, created)
            values (${provider.id}, ${who.subject}, ${user.id},
              ${by === "created"})
            on conflict do nothing returning 1`;
          if (made.length === 0) {
            // A sign-in of the same subject linked it meanwhile; else the
            // account is another subject's of this provider already.
            const [same] = await userOf(
              db,
              sql`u.id = (select user_id from sso_links
                where provider_id = ${provider.id}
                  and subject = ${who.subject} and user_id = ${user.id})`,
            );
            return same;
          }
          await recordAudit(
            db,
            auditEvents.ssoLinked(user, provider, by, context),
          );
          return user;
        };
        if (provider.scimConnectionId !== null && provider.link !== "none") {
          const [owned] = await userOf(
            tx,
            sql`u.id = (select l.user_id from scim_user_links l
              join scim_connections c on c.id = l.connection_id
              where l.connection_id = ${provider.scimConnectionId}
                and c.revoked_at is null
                and l.external_id = ${who.subject})`,
          );
          if (owned) return await link(owned, "externalId");
        }
        if (provider.link === "email" && who.verifiedEmail !== undefined) {
          const [mailed] = await userOf(
            tx,
            sql`u.email_key = ${lowerCaseKey(who.verifiedEmail)}`,
          );
          if (mailed) return await link(mailed, "email");
        }
        if (!provider.createUsers || !who.newAccount) return undefined;
        try {
          return await tx.savepoint(async (sp) => {
            const made = await accounts.create(sp, {
              ...who.newAccount!,
              role: "viewer",
              passwordHash: NO_PASSWORD,
            }, { actor: null, context });
            await recordAll(sp, made.events);
            const [user] = await userOf(sp, sql`u.id = ${made.user.id}`);
            return await link(user, "created", sp);
          });
        } catch (e) {
          // The username or e-mail is another account's.
          if (isUniqueViolation(e)) return undefined;
          throw e;
        }
      });
    },

    /** A record of a sign-in that ended without a session, on its own. */
    async recordFailure(
      user: AuditParty | null,
      reason: string,
      provider: ProviderRef,
      context: AuditContext,
      writeBy: WriteBy,
    ) {
      await transaction(writeBy, (tx) =>
        recordAudit(
          tx,
          auditEvents.ssoFailed(user, reason, provider, context),
        ));
    },
  };
}

export type SsoStore = ReturnType<typeof createSsoStore>;
