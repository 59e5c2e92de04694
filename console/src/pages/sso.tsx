/**
 * Identity providers people sign in with (OpenID Connect): added with the
 * client id and secret the provider gave, the secret never shown again;
 * changed, deleted. Each shows the redirect URI to register at the
 * provider.
 */
import { useState } from "preact/hooks";
import type { components } from "../../../clients/mod.ts";
import { api, type Failure, send } from "../api.ts";
import {
  ConfirmButton,
  Done,
  Field,
  Notice,
  onSubmit,
  Text,
  Time,
  Title,
  useLoad,
} from "../ui.tsx";

type Provider = components["schemas"]["IdentityProvider"];
type Link = Provider["link"];

/** One domain a line (or separated by commas); blanks dropped. */
const domainsOf = (text: string) =>
  text.split(/[\n,]/).map((d) => d.trim()).filter((d) => d !== "");

const LINKS: { value: Link; label: string }[] = [
  {
    value: "email",
    label: "By its SCIM connection's user, else by verified e-mail",
  },
  { value: "externalId", label: "Only by its SCIM connection's user" },
  { value: "none", label: "Never to an existing account" },
];

export function SsoProviders() {
  const { reply, reload } = useLoad(
    (signal) => send(() => api.GET("/api/sso/providers", { signal }), signal),
    "",
  );
  return (
    <>
      <Title>Sign-in providers</Title>
      <p>
        People sign in with their organisation's identity provider (OpenID
        Connect): the sign-in page offers a button for each provider here.
      </p>
      {reply && !reply.ok && <Notice failure={reply} onRetry={reload} />}
      {reply?.ok && reply.data.length === 0 && (
        <p class="muted">No identity providers.</p>
      )}
      {reply?.ok && reply.data.length > 0 && (
        <ul class="cards">
          {reply.data.map((p) => (
            <ProviderItem key={p.id} provider={p} onChange={reload} />
          ))}
        </ul>
      )}
      <ProviderForm onSaved={reload} />
    </>
  );
}

function ProviderItem(
  { provider, onChange }: { provider: Provider; onChange: () => void },
) {
  const [editing, setEditing] = useState(false);
  const [failure, setFailure] = useState<Failure>();
  const path = { params: { path: { id: provider.id } } };
  const remove = async () => {
    setFailure(undefined);
    const answer = await send(() =>
      api.DELETE("/api/sso/providers/{id}", path)
    );
    if (!answer.ok) return setFailure(answer);
    onChange();
  };
  return (
    <li>
      <p>
        <strong>
          <Text>{provider.name}</Text>
        </strong>{" "}
        <span class="muted">
          added <Time iso={provider.createdAt} />
        </span>
      </p>
      <dl>
        <dt>Issuer</dt>
        <dd>
          <code>
            <Text>{provider.issuer}</Text>
          </code>
        </dd>
        <dt>Redirect URI to register</dt>
        <dd>
          <code>{provider.redirectUri}</code>
        </dd>
        <dt>Client id</dt>
        <dd>
          <code>
            <Text>{provider.clientId}</Text>
          </code>
        </dd>
        <dt>Allowed e-mail domains</dt>
        <dd>
          {provider.allowedDomains.length
            ? <Text>{provider.allowedDomains.join(", ")}</Text>
            : <span class="muted">any</span>}
        </dd>
        <dt>Existing accounts</dt>
        <dd>{LINKS.find((l) => l.value === provider.link)?.label}</dd>
        <dt>New people</dt>
        <dd>
          {provider.createUsers ? "become viewers" : "are refused"}
        </dd>
        <dt>Password sign-in of its people</dt>
        <dd>{provider.passwordLogin ? "allowed" : "refused"}</dd>
      </dl>
      {failure && <Notice failure={failure} />}
      {editing
        ? (
          <ProviderForm
            provider={provider}
            onSaved={() => {
              setEditing(false);
              onChange();
            }}
            onCancel={() => setEditing(false)}
          />
        )
        : (
          <div class="actions">
            <button
              type="button"
              class="secondary"
              onClick={() => setEditing(true)}
            >
              Edit {provider.name}
            </button>
            <ConfirmButton
              label="Delete provider"
              question={`Delete ${provider.name}? Its people can no longer sign in with it.`}
              onConfirm={remove}
            />
          </div>
        )}
    </li>
  );
}

/** A new provider's form, or an existing one's (its secret left empty keeps it). */
function ProviderForm(
  { provider, onSaved, onCancel }: {
    provider?: Provider;
    onSaved: () => void;
    onCancel?: () => void;
  },
) {
  const id = provider ? `provider-${provider.id}` : "provider-new";
  const [name, setName] = useState(provider?.name ?? "");
  const [issuer, setIssuer] = useState(provider?.issuer ?? "");
  const [clientId, setClientId] = useState(provider?.clientId ?? "");
  const [clientSecret, setClientSecret] = useState("");
  const [domains, setDomains] = useState(
    provider?.allowedDomains.join("\n") ?? "",
  );
  const [link, setLink] = useState<Link>(provider?.link ?? "email");
  const [createUsers, setCreateUsers] = useState(
    provider?.createUsers ?? false,
  );
  const [passwordLogin, setPasswordLogin] = useState(
    provider?.passwordLogin ?? true,
  );
  const [busy, setBusy] = useState(false);
  const [failure, setFailure] = useState<Failure>();
  const [done, setDone] = useState<string>();
  const save = async () => {
    setBusy(true);
    setFailure(undefined);
    setDone(undefined);
    const fields = {
      name,
      issuer,
      clientId,
      allowedDomains: domainsOf(domains),
      link,
      createUsers,
      passwordLogin,
    };
    const answer = await send(() =>
      provider
        ? api.PATCH("/api/sso/providers/{id}", {
          params: { path: { id: provider.id } },
          body: clientSecret ? { ...fields, clientSecret } : fields,
        })
        : api.POST("/api/sso/providers", {
          body: { ...fields, clientSecret },
        })
    );
    setBusy(false);
    if (!answer.ok) return setFailure(answer);
    setClientSecret("");
    if (!provider) {
      setName("");
      setIssuer("");
      setClientId("");
      setDomains("");
      setDone(`${answer.data.name} added.`);
    }
    onSaved();
  };
  const form = (
    <form onSubmit={onSubmit(save)}>
      {failure && <Notice failure={failure} />}
      {done && <Done>{done}</Done>}
      <Field label="Name" id={`${id}-name`}>
        <input
          id={`${id}-name`}
          dir="auto"
          value={name}
          onInput={(e) => setName(e.currentTarget.value)}
        />
      </Field>
      <Field label="Issuer URL" id={`${id}-issuer`}>
        <input
          id={`${id}-issuer`}
          type="url"
          value={issuer}
          onInput={(e) => setIssuer(e.currentTarget.value)}
        />
      </Field>
      <Field label="Client id" id={`${id}-client-id`}>
        <input
          id={`${id}-client-id`}
          value={clientId}
          onInput={(e) => setClientId(e.currentTarget.value)}
        />
      </Field>
      <Field
        label="Client secret"
        id={`${id}-client-secret`}
        hint={provider
          ? "Leave empty to keep the current one"
          : "Kept encrypted; never shown again"}
      >
        <input
          id={`${id}-client-secret`}
          type="password"
          autocomplete="off"
          aria-describedby={`${id}-client-secret-hint`}
          value={clientSecret}
          onInput={(e) => setClientSecret(e.currentTarget.value)}
        />
      </Field>
      <Field
        label="Allowed e-mail domains"
        id={`${id}-domains`}
        hint="One a line; none: any"
      >
        <textarea
          id={`${id}-domains`}
          rows={2}
          aria-describedby={`${id}-domains-hint`}
          value={domains}
          onInput={(e) => setDomains(e.currentTarget.value)}
        />
      </Field>
      <Field label="Existing accounts are found" id={`${id}-link`}>
        <select
          id={`${id}-link`}
          value={link}
          onChange={(e) => setLink(e.currentTarget.value as Link)}
        >
          {LINKS.map((l) => (
            <option key={l.value} value={l.value}>
              {l.label}
            </option>
          ))}
        </select>
      </Field>
      <p>
        <label>
          <input
            type="checkbox"
            checked={createUsers}
            onChange={(e) => setCreateUsers(e.currentTarget.checked)}
          />{" "}
          Create a viewer for a person without an account
        </label>
      </p>
      <p>
        <label>
          <input
            type="checkbox"
            checked={passwordLogin}
            onChange={(e) => setPasswordLogin(e.currentTarget.checked)}
          />{" "}
          Its people may also sign in with a password
        </label>
      </p>
      <div class="actions">
        <button type="submit" disabled={busy}>
          {provider ? "Save" : "Add provider"}
        </button>
        {onCancel && (
          <button type="button" class="secondary" onClick={onCancel}>
            Cancel
          </button>
        )}
      </div>
    </form>
  );
  return provider ? form : (
    <section aria-labelledby="new-provider">
      <h2 id="new-provider">New provider</h2>
      {form}
    </section>
  );
}
