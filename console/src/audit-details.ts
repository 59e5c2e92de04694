/**
 * An audit record's details in words ("role viewer → admin", "fields:
 * name, email"), from the shapes docs/audit.md lists per action. A shape
 * not known here (an older record, a new field) falls back to
 * "key: value" pairs, never to raw JSON.
 */
import type { AuditRecord } from "./api.ts";

type Details = Record<string, unknown>;

const str = (v: unknown): string | undefined =>
  typeof v === "string" ? v : typeof v === "number" ? String(v) : undefined;

const list = (v: unknown): string[] | undefined =>
  Array.isArray(v) ? v.map((x) => str(x) ?? words(x)) : undefined;

/** `{id, name}` as its name, quoted. */
const named = (v: unknown): string | undefined => {
  if (v && typeof v === "object" && "name" in v) {
    const name = str((v as { name: unknown }).name);
    if (name !== undefined) return `“${name}”`;
  }
  return undefined;
};

const REASONS: Record<string, string> = {
  wrong_password: "wrong password",
  unknown_user: "unknown username",
  disabled: "account disabled",
  identity_provider_only: "password sign-in is off for this user",
  state: "the sign-in expired or was replayed",
  cancelled: "cancelled at the identity provider",
  provider_error: "the identity provider refused",
  token: "the identity provider's token was not valid",
  unavailable: "the identity provider could not be reached",
  domain: "e-mail domain not allowed",
  no_account: "no account for this identity",
};

const METHODS: Record<string, string> = {
  password: "password",
  totp: "authenticator code",
  passkey: "passkey",
  recovery_code: "recovery code",
  oidc: "identity provider",
};

const reason = (v: unknown) => {
  const s = str(v);
  return s === undefined ? undefined : REASONS[s] ?? s.replaceAll("_", " ");
};

const join = (parts: (string | undefined | false)[]) =>
  parts.filter((p): p is string => !!p).join("; ");

/** The readable text of a record's details; "" when there are none. */
export function describeDetails(record: AuditRecord): string {
  const d = record.details as Details;
  if (Object.keys(d).length === 0) return "";
  return known(record.action, d) ?? words(d);
}

function known(action: string, d: Details): string | undefined {
  const provider = named(d.provider);
  switch (action) {
    case "user.created":
      return str(d.role) && `role ${d.role}`;
    case "user.role_changed":
      return str(d.from) && str(d.to) && `role ${d.from} → ${d.to}`;
    case "user.updated":
    case "role.updated":
    case "group.updated": {
      const changed = list(d.changed);
      const what = named({ name: d.name ?? d.displayName });
      return changed &&
        join([what, `fields: ${changed.join(", ") || "none"}`]);
    }
    case "login.succeeded": {
      const methods = list(d.methods);
      return methods && join([
        `with ${methods.map((m) => METHODS[m] ?? m).join(" + ")}`,
        provider && `provider ${provider}`,
      ]);
    }
    case "login.failed":
    case "login.refused":
      return join([reason(d.reason), provider && `provider ${provider}`]) ||
        undefined;
    case "login.throttled":
      return str(d.retryAfter) && `retry after ${d.retryAfter} s`;
    case "login.second_factor_failed":
      return str(d.purpose) &&
        (d.purpose === "step_up" ? "at a step-up" : "at sign-in");
    case "admin.bootstrapped":
      return str(d.source) &&
        (d.source === "environment"
          ? "password from the environment"
          : "generated password");
    case "admin.recovered":
      return str(d.outcome) &&
        (d.outcome === "created" ? "admin created" : "password reset");
    case "user.disabled": {
      const until = str(d.until);
      return join([
        str(d.reason) ? `reason: ${d.reason}` : "no reason given",
        until ? `until ${new Date(until).toLocaleString()}` : "until enabled",
      ]);
    }
    case "user.enabled":
      return d.expired === true ? "the disable ran out" : undefined;
    case "sessions.ended":
      return str(d.count) &&
        `${d.count} session${d.count === 1 ? "" : "s"} ended`;
    case "key.created":
    case "key.revoked":
      return str(d.name) !== undefined
        ? join([`key “${d.name}”`, str(d.reason) && `reason: ${d.reason}`])
        : undefined;
    case "webhook.created":
    case "webhook.deleted":
    case "webhook.enabled":
      return str(d.url);
    case "webhook.disabled":
      return str(d.url) && join([
        `${d.url}`,
        str(d.heldRecordId) && `gave up at record ${d.heldRecordId}`,
      ]);
    case "mfa.enrolled":
    case "mfa.removed":
      return str(d.method) && (METHODS[d.method as string] ?? str(d.method));
    case "sso.linked":
      return provider && join([
        `provider ${provider}`,
        str(d.by) &&
        (d.by === "created" ? "account created" : `matched by ${d.by}`),
      ]);
    case "sso.provider_created":
    case "sso.provider_updated":
    case "sso.provider_deleted":
      return provider;
    case "role.created":
    case "role.deleted": {
      const permissions = list(d.permissions);
      return str(d.name) && join([
        `“${d.name}”`,
        permissions && `permissions: ${permissions.join(", ") || "none"}`,
      ]);
    }
    case "assignment.created":
    case "assignment.deleted":
      return str(d.role) && join([
        `role “${d.role}”`,
        str(d.group) && `to group “${d.group}”`,
        str(d.reason) && `reason: ${d.reason}`,
      ]);
    case "group.created":
    case "group.deleted":
      return str(d.displayName) && `“${d.displayName}”`;
    case "group.members_changed": {
      const added = list(d.added) ?? [];
      const removed = list(d.removed) ?? [];
      return str(d.displayName) && join([
        `“${d.displayName}”`,
        added.length > 0 && `added users ${added.join(", ")}`,
        removed.length > 0 && `removed users ${removed.join(", ")}`,
      ]);
    }
    case "connection.created":
    case "connection.updated":
    case "connection.deleted":
      return str(d.name) && `“${d.name}”`;
    case "scim.user_linked": {
      const connection = named(d.connection);
      return connection && `by connection ${connection}`;
    }
    case "password.upgraded":
      return str(d.from) && `from ${d.from}`;
    case "import.started":
      return str(d.total) && join([
        `${d.total} rows`,
        d.dryRun === true && "dry run",
        str(d.onConflict) && `on conflict: ${d.onConflict}`,
      ]);
    case "import.finished":
      return str(d.status) && join([
        `${d.status}`,
        typeof d.counts === "object" && d.counts !== null && words(d.counts),
      ]);
    case "users.exported":
      return str(d.count) && join([
        `${d.count} users`,
        d.passwordHashes === true && "with password hashes",
      ]);
  }
  return undefined;
}

/** Any value as "key: value" words, nested objects in parentheses. */
function words(v: unknown): string {
  if (v === null || v === undefined) return "none";
  if (typeof v !== "object") return String(v);
  if (Array.isArray(v)) return v.map(words).join(", ");
  const name = named(v);
  if (name) return name;
  return Object.entries(v as Details)
    .map(([k, x]) =>
      `${k}: ${
        x && typeof x === "object" && !Array.isArray(x)
          ? `(${words(x)})`
          : words(x)
      }`
    )
    .join(", ");
}
