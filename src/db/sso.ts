/**
 * Signing in with an identity provider (docs/sso.md): the providers admins
 * configure, the sign-ins sent to a provider and not yet back, and which
 * account a provider's subject signs in to.
 */
import type { PendingQuery, Row, Sql, TransactionSql } from "postgres";
import { NO_PASSWORD } from "../accounts/fields.ts";
import type { AuditParty } from "../audit/chain.ts";
import {
  type AuditContext,
  auditEvents,
  type ProviderRef,
} from "../audit/events.ts";
import { open, seal } from "../auth/secret-box.ts";
import { lowerCaseKey } from "../users/canonical.ts";
import type { Account } from "../users/user.ts";
import { createAccountWrites, recordAll } from "./account-writes.ts";
import { recordAudit } from "./audit.ts";
import { iso } from "./time.ts";
import { accountColumns, isUniqueViolation } from "./user-rows.ts";
import type { CallerRefusal, CallerWrite, WriteBy, Writer } from "./write.ts";
import { type Refusal, refuse } from "../refusal.ts";

export type ProviderLink = "externalId" | "email" | "none";

/** A provider as the API shows it: never its client secret. */
export interface SsoProvider {
  id: number;
  name: string;
  issuer: string;
  clientId: string;
  scopes: string[];
  usernameClaim: "preferred_username" | "email";
  allowedDomains: string[];
  link: ProviderLink;
  createUsers: boolean;
  passwordLogin: boolean;
  mfaAcr: string | null;
  scimConnectionId: number | null;
  createdAt: string;
}

/** What a provider is made of, its secret in clear (sealed before it is kept). */
export type ProviderFields = Omit<SsoProvider, "id" | "createdAt"> & {
  clientSecret: string;
};

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

/** The secret is bound to its row: a sealed value copied to another row does not open. */
const boundTo = (id: number) => `sso_provider:${id}`;

export function createSsoStore(sql: Sql, { transaction, asCaller }: Writer) {
  const accounts = createAccountWrites(sql);
  const shown = sql`p.id, p.name, p.issuer, p.client_id as "clientId",
    p.scopes, p.username_claim as "usernameClaim",
    p.allowed_domains as "allowedDomains", p.link,
    p.create_users as "createUsers", p.password_login as "passwordLogin",
    p.mfa_acr as "mfaAcr", p.scim_connection_id as "scimConnectionId",
    ${iso(sql, "p.created_at")} as "createdAt"`;

  let key: Uint8Array | undefined;
  /** The sealing key: one row, made by migration 030, read once. */
  const secretKey = async () => {
    if (key) return key;
    const [row] = await sql<{ key: Uint8Array }[]>`
      select key from secret_key where singleton`;
    return key = new Uint8Array(row.key);
  };

  /** Whether a live SCIM connection has this id. */
  const connectionLive = async (tx: TransactionSql, id: number | null) => {
    if (id === null) return true;
    const [row] = await tx`
      select 1 from scim_connections where id = ${id} and revoked_at is null
      for share`;
    return row !== undefined;
  };

  const userOf = (tx: TransactionSql, where: PendingQuery<Row[]>) =>
    tx<SignInUser[]>`
      select ${accountColumns(tx, "u")},
        u.password_version as "passwordVersion"
      from users u where ${where}`;

  return {
    providers: {
      async create(
        p: ProviderFields,
        write: CallerWrite,
      ): Promise<SsoProvider | Refusal<"invalidValue"> | CallerRefusal> {
        const k = await secretKey();
        return await asCaller(write, "share", async (tx, actor) => {
          if (!await connectionLive(tx, p.scimConnectionId)) {
            return refuse("invalidValue", "scimConnectionId");
          }
          const [{ id }] = await tx<{ id: number }[]>`
            insert into sso_providers (name, issuer, client_id, client_secret,
              scopes, username_claim, allowed_domains, link, create_users,
              password_login, mfa_acr, scim_connection_id)
            values (${p.name}, ${p.issuer}, ${p.clientId}, ${new Uint8Array()},
              ${p.scopes}::text[], ${p.usernameClaim},
              ${p.allowedDomains}::text[], ${p.link}, ${p.createUsers},
              ${p.passwordLogin}, ${p.mfaAcr}, ${p.scimConnectionId})
            returning id`;
          const sealed = await seal(k, p.clientSecret, boundTo(id));
          const [row] = await tx<SsoProvider[]>`
            update sso_providers p set client_secret = ${sealed}
            where p.id = ${id} returning ${shown}`;
          await recordAudit(
            tx,
            auditEvents.ssoProvider(
              "sso.provider_created",
              actor,
              row,
              write.context,
            ),
          );
          return row;
        });
      },

      async list(): Promise<SsoProvider[]> {
        return await sql<SsoProvider[]>`
          select ${shown} from sso_providers p order by p.id`;
      },

      /** What the sign-in page shows of each provider: no configuration. */
      async listPublic(): Promise<{ id: number; name: string }[]> {
        return await sql<{ id: number; name: string }[]>`
          select id, name from sso_providers order by id`;
      },

      async get(id: number): Promise<SsoProvider | undefined> {
        const [row] = await sql<SsoProvider[]>`
          select ${shown} from sso_providers p where p.id = ${id}`;
        return row;
      },

      /** The provider with its secret opened, for a sign-in. */
      async forSignIn(
        id: number,
      ): Promise<(SsoProvider & { clientSecret: string }) | undefined> {
        const [row] = await sql<
          (SsoProvider & { sealed: Uint8Array })[]
        >`
          select ${shown}, p.client_secret as sealed
          from sso_providers p where p.id = ${id}`;
        if (!row) return undefined;
        const { sealed, ...provider } = row;
        const clientSecret = await open(
          await secretKey(),
          new Uint8Array(sealed),
          boundTo(id),
        );
        return { ...provider, clientSecret };
      },

      async update(
        id: number,
        change: Partial<ProviderFields>,
        write: CallerWrite,
      ): Promise<
        | SsoProvider
        | Refusal<"not_found" | "invalidValue">
        | CallerRefusal
      > {
        const k = await secretKey();
        const sealed = change.clientSecret === undefined
          ? null
          : await seal(k, change.clientSecret, boundTo(id));
        return await asCaller(write, "share", async (tx, actor) => {
          if (
            change.scimConnectionId !== undefined &&
            !await connectionLive(tx, change.scimConnectionId)
          ) {
            return refuse("invalidValue", "scimConnectionId");
          }
          const set = <T>(v: T | undefined, column: string) =>
            v === undefined ? sql`` : sql`, ${sql(column)} = ${v as string}`;
          // Set first to a column no change names, so each field given is
          // assigned once after it.
          const [row] = await tx<SsoProvider[]>`
            update sso_providers p set created_at = p.created_at
              ${set(change.name, "name")}
              ${set(change.issuer, "issuer")}
              ${set(change.clientId, "client_id")}
              ${
            change.scopes === undefined
              ? sql``
              : sql`, scopes = ${change.scopes}::text[]`
          }
              ${set(change.usernameClaim, "username_claim")}
              ${
            change.allowedDomains === undefined
              ? sql``
              : sql`, allowed_domains = ${change.allowedDomains}::text[]`
          }
              ${set(change.link, "link")}
              ${set(change.createUsers, "create_users")}
              ${set(change.passwordLogin, "password_login")}
              ${set(change.mfaAcr, "mfa_acr")}
              ${set(change.scimConnectionId, "scim_connection_id")}
              ${sealed ? sql`, client_secret = ${sealed}` : sql``}
            where p.id = ${id} returning ${shown}`;
          if (!row) return refuse("not_found");
          await recordAudit(
            tx,
            auditEvents.ssoProvider(
              "sso.provider_updated",
              actor,
              row,
              write.context,
            ),
          );
          return row;
        });
      },

      /** Deletes the provider, its links and its pending sign-ins. */
      async remove(
        id: number,
        write: CallerWrite,
      ): Promise<"deleted" | Refusal<"not_found"> | CallerRefusal> {
        return await asCaller(write, "share", async (tx, actor) => {
          const [row] = await tx<ProviderRef[]>`
            delete from sso_providers where id = ${id} returning id, name`;
          if (!row) return refuse("not_found");
          await recordAudit(
            tx,
            auditEvents.ssoProvider(
              "sso.provider_deleted",
              actor,
              row,
              write.context,
            ),
          );
          return "deleted";
        });
      },
    },

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
