/**
 * One user, in tabs: Profile (who they are, where they come from, role,
 * access, deletion), Security (password, second factors, sessions, keys),
 * Roles (their assignments and groups) and Activity (the audit records
 * about them); each part shows only with the permission it needs. Every change sends the ETag
 * the page shows (If-Match): a change made meanwhile elsewhere answers 412,
 * and the page offers to reload rather than overwrite it. The page's
 * sections are in user/, one file each.
 */
import { useState } from "preact/hooks";
import type { Account } from "../../../clients/mod.ts";
import { useCan, useHoldsAny } from "../access.ts";
import {
  api,
  type Failure,
  type Reply,
  send,
  type UserDetail,
} from "../api.ts";
import { href, navigate } from "../router.ts";
import {
  ConfirmButton,
  Done,
  flash,
  Notice,
  Text,
  Time,
  Title,
  useOne,
} from "../ui.tsx";
import { Tabs } from "../tabs.tsx";
import {
  AccessForm,
  PasswordForm,
  ProfileForm,
  RoleForm,
} from "./user/account-forms.tsx";
import { UserAudit } from "./user/audit.tsx";
import { Keys } from "./user/keys.tsx";
import { UserRoles } from "./user/roles.tsx";
import { SecondFactors } from "./user/second-factors.tsx";
import { Sessions } from "./user/sessions.tsx";

/** Where the user came from, in words: the connection or provider by name. */
export function SourceText({ source }: { source: UserDetail["source"] }) {
  switch (source.type) {
    case "scim":
      return (
        <>
          Provisioned by <Text>{source.name}</Text> (SCIM)
        </>
      );
    case "sso":
      return (
        <>
          Signed up through <Text>{source.name}</Text>
        </>
      );
    case "import":
      return <>Import {source.id}</>;
    default:
      return <>Created here or through the API</>;
  }
}

interface Loaded {
  user: UserDetail;
  etag: string;
}

export function UserPage({ id, me }: { id: string; me: Account }) {
  const userId = Number(id);
  const one = useOne(
    (signal) =>
      send(
        () =>
          api.GET("/api/users/{id}", {
            params: { path: { id: userId } },
            signal,
          }),
        signal,
      ),
    id,
    { thing: "User", back: <a href={href("/users")}>Back to users</a> },
  );
  if (!one.ok) return one.page;
  const loaded = { user: one.data, etag: one.headers.get("etag") ?? "" };
  return <UserView loaded={loaded} me={me} reload={one.reload} />;
}

function UserView(
  { loaded, me, reload }: { loaded: Loaded; me: Account; reload: () => void },
) {
  const { user } = loaded;
  const can = useCan();
  const holdsAny = useHoldsAny();
  const [failure, setFailure] = useState<Failure>();
  const [done, setDone] = useState<string>();
  const [busy, setBusy] = useState(false);
  const [tab, setTab] = useState("profile");
  // Counts changes made here: the audit records reload after each.
  const [changes, setChanges] = useState(0);
  const changed = () => setChanges((n) => n + 1);

  /** Runs a change; afterwards the page shows the user as the API now has them. */
  const change = async (
    what: string,
    call: () => Promise<Reply<unknown>>,
    after?: () => void,
  ) => {
    setBusy(true);
    setFailure(undefined);
    setDone(undefined);
    const answer = await call();
    setBusy(false);
    if (!answer.ok) {
      // Deleted meanwhile: the reload shows the API's 404.
      if (answer.status === 404) reload();
      setFailure(answer);
      return;
    }
    setDone(what);
    after?.();
    changed();
    reload();
  };
  const path = {
    params: { path: { id: user.id }, header: { "if-match": loaded.etag } },
  };
  /** What the last action said goes once the person does something else. */
  const clearMessages = () => {
    if (done) setDone(undefined);
    if (failure && failure.status !== 412) setFailure(undefined);
  };
  const scim = user.scim;

  const profile = () => (
    <>
      <section aria-labelledby="profile">
        <h2 id="profile">Profile</h2>
        <dl class="facts">
          <dt>Username</dt>
          <dd>
            <Text>{user.username}</Text>
          </dd>
          <dt>E-mail</dt>
          <dd class="wrap">
            <Text>{user.email}</Text>
          </dd>
          <dt>Department</dt>
          <dd>{user.department ? <Text>{user.department}</Text> : "None"}</dd>
          <dt>Role</dt>
          <dd>{user.role}</dd>
          <dt>Created</dt>
          <dd>
            <Time iso={user.createdAt} />
          </dd>
          <dt>Last sign-in</dt>
          <dd>
            <Time iso={user.lastLoginAt} />
          </dd>
          <dt>Source</dt>
          <dd>
            <SourceText source={user.source} />
          </dd>
          {scim && (
            <>
              <dt>External id</dt>
              <dd class="wrap">
                {scim.externalId !== null
                  ? <Text>{scim.externalId}</Text>
                  : <span class="muted">none</span>}
              </dd>
              <dt>Groups</dt>
              <dd>
                {scim.groups.length === 0
                  ? <span class="muted">none</span>
                  : (
                    <ul class="plain">
                      {scim.groups.map((g) => (
                        <li key={g.id}>
                          <Text>{g.displayName}</Text>
                        </li>
                      ))}
                    </ul>
                  )}
              </dd>
            </>
          )}
          <dt>Status</dt>
          <dd>
            {user.disabled
              ? (
                <>
                  Disabled since <Time iso={user.disabled.since} />
                  {user.disabled.until && (
                    <>
                      {" "}until <Time iso={user.disabled.until} />
                    </>
                  )}
                  {user.disabled.reason && (
                    <>
                      : <Text>{user.disabled.reason}</Text>
                    </>
                  )}
                </>
              )
              : "Active"}
          </dd>
        </dl>
      </section>

      {can("users:update") && (
        <ProfileForm
          key={`profile-${loaded.etag}`}
          user={user}
          busy={busy}
          onSave={(body) =>
            change(
              "Profile saved.",
              () => send(() => api.PATCH("/api/users/{id}", { ...path, body })),
            )}
        />
      )}
      {/* Only an admin acting with every permission makes or unmakes admins. */}
      {me.role === "admin" && (
        <RoleForm
          key={loaded.etag}
          user={user}
          managedBy={scim?.connection.name}
          busy={busy}
          onSave={(role) =>
            change(`Role changed to ${role}.`, () =>
              send(() =>
                api.PATCH("/api/users/{id}", { ...path, body: { role } })
              ))}
        />
      )}
      {can("users:disable") && (
        <AccessForm
          user={user}
          busy={busy}
          onDisable={(reason, until) =>
            change("User disabled.", () =>
              send(() =>
                api.POST("/api/users/{id}/disable", {
                  params: { path: { id: user.id } },
                  body: { reason: reason || null, until: until || null },
                })
              ))}
          onEnable={() =>
            change("User enabled.", () =>
              send(() =>
                api.POST("/api/users/{id}/enable", {
                  params: { path: { id: user.id } },
                })
              ))}
        />
      )}
      {user.id !== me.id && can("users:delete") && (
        <section aria-labelledby="delete">
          <h2 id="delete">Delete</h2>
          <p>Deleting ends their sessions and removes their keys.</p>
          <ConfirmButton
            label="Delete user"
            question={`Delete ${user.username}?`}
            busy={busy}
            onConfirm={async () => {
              setBusy(true);
              setFailure(undefined);
              const answer = await send(() =>
                api.DELETE("/api/users/{id}", path)
              );
              setBusy(false);
              if (!answer.ok) return setFailure(answer);
              flash(`User ${user.username} deleted.`);
              navigate(href("/users"));
            }}
          />
        </section>
      )}
    </>
  );
  const security = () => (
    <>
      {can("users:password") && (
        <PasswordForm
          busy={busy}
          onSave={(password, clear) =>
            change("Password reset.", () =>
              send(() =>
                api.PATCH("/api/users/{id}", { ...path, body: { password } })
              ), clear)}
        />
      )}
      <SecondFactors
        user={user}
        self={user.id === me.id}
        busy={busy}
        onReset={can("users:factors")
          ? () =>
            change("Second factors reset.", () =>
              send(() =>
                api.DELETE("/api/users/{id}/mfa", {
                  params: { path: { id: user.id } },
                })
              ))
          : undefined}
      />
      {can("users:sessions") && (
        <Sessions
          userId={user.id}
          onChange={changed}
        />
      )}
      {/* Someone's own keys need any permission; another's, keys:manage. */}
      {(user.id === me.id ? holdsAny : can("keys:manage")) && (
        <Keys userId={user.id} onChange={changed} />
      )}
    </>
  );
  const roles = () => <UserRoles userId={user.id} onChange={changed} />;
  const activity = () => (
    <section aria-labelledby="records">
      <h2 id="records">Audit records</h2>
      <UserAudit key={changes} userId={user.id} />
    </section>
  );

  return (
    <>
      <p class="crumbs">
        <a href={href("/users")}>Users</a>
      </p>
      <Title>
        <Text>{user.name}</Text>
      </Title>
      {failure && (
        <Notice
          failure={failure}
          onRetry={failure.status === 412
            ? () => {
              setFailure(undefined);
              reload();
            }
            : undefined}
          retryLabel="Reload"
        >
          {failure.status === 412 && (
            <p>
              Someone changed this user meanwhile. Reload to see their change,
              then try again.
            </p>
          )}
        </Notice>
      )}
      {done && <Done>{done}</Done>}

      <div onInput={clearMessages} onClickCapture={clearMessages}>
        <Tabs
          label="About this user"
          selected={tab}
          onSelect={(t) => {
            clearMessages();
            setTab(t);
          }}
          tabs={[
            { id: "profile", title: "Profile", panel: profile },
            { id: "security", title: "Security", panel: security },
            ...can("roles:manage")
              ? [{ id: "roles", title: "Roles", panel: roles }]
              : [],
            ...can("audit:read")
              ? [{ id: "activity", title: "Activity", panel: activity }]
              : [],
          ]}
        />
      </div>
    </>
  );
}
