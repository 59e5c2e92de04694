/**
 * Webhooks: the endpoints the audit trail is delivered to, a new one's
 * secret (shown this once), and each endpoint's delivery attempts.
 */
import { useState } from "preact/hooks";
import type { CreatedWebhook } from "../../../clients/mod.ts";
import { ACTIONS } from "../actions.ts";
import {
  api,
  type AuditAction,
  type Failure,
  send,
  type Webhook,
} from "../api.ts";
import { href, navigate } from "../router.ts";
import {
  ConfirmButton,
  Done,
  Field,
  Notice,
  onSubmit,
  Secret,
  Text,
  Time,
  Title,
  useLoad,
} from "../ui.tsx";

export function Webhooks() {
  const { reply, reload } = useLoad(
    (signal) => send(() => api.GET("/api/webhooks", { signal }), signal),
    "",
  );
  const [created, setCreated] = useState<CreatedWebhook>();
  return (
    <>
      <Title>Webhooks</Title>
      {created && (
        <Secret
          label={`Signing secret of ${created.url}`}
          value={created.secret}
          onDismiss={() => setCreated(undefined)}
        />
      )}
      {reply && !reply.ok && <Notice failure={reply} onRetry={reload} />}
      {reply?.ok && reply.data.length === 0 && (
        <p class="muted">
          No webhooks.
        </p>
      )}
      {reply?.ok && reply.data.length > 0 && (
        <ul class="cards">
          {reply.data.map((w) => (
            <li key={w.id}>
              <p>
                <a href={href(`/webhooks/${w.id}`)} class="wrap">
                  <Text>{w.url}</Text>
                </a>{" "}
                <Status hook={w} />
              </p>
              {w.description && (
                <p>
                  <Text>{w.description}</Text>
                </p>
              )}
              <p class="muted">
                {w.actions ? w.actions.join(", ") : "All actions"}
              </p>
            </li>
          ))}
        </ul>
      )}
      <CreateWebhook
        onCreated={(hook) => {
          setCreated(hook);
          reload();
        }}
      />
    </>
  );
}

/** Health as deliveries tell it, not merely whether delivery is switched on. */
export function healthText(hook: Webhook): string {
  if (hook.health === "disabled") return "disabled";
  if (hook.health === "healthy") return "healthy";
  const n = hook.failures;
  return `failing (${n} consecutive ${n === 1 ? "failure" : "failures"}${
    hook.lastError ? `, last error: ${hook.lastError}` : ""
  })`;
}

function Status({ hook }: { hook: Webhook }) {
  const tone = hook.health === "healthy"
    ? ""
    : hook.health === "failing"
    ? " failing"
    : " off";
  return (
    <span class={`badge health${tone}`} data-health={hook.health}>
      {healthText(hook)}
    </span>
  );
}

/** The API's refusal of a private or loopback target, with the setting that allows one. */
const PRIVATE_HINT =
  "Loopback, private and link-local addresses are refused unless the service runs with WEBHOOK_ALLOW_PRIVATE=true (a receiver on the same host or network).";

function CreateWebhook(
  { onCreated }: { onCreated: (w: CreatedWebhook) => void },
) {
  const [url, setUrl] = useState("");
  const [description, setDescription] = useState("");
  const [actions, setActions] = useState<AuditAction[]>([]);
  const [busy, setBusy] = useState(false);
  const [failure, setFailure] = useState<Failure>();
  const create = async () => {
    setBusy(true);
    setFailure(undefined);
    const answer = await send(() =>
      api.POST("/api/webhooks", {
        body: {
          url,
          ...(description ? { description } : {}),
          ...(actions.length ? { actions } : {}),
        },
      })
    );
    setBusy(false);
    if (!answer.ok) return setFailure(answer);
    setUrl("");
    setDescription("");
    setActions([]);
    onCreated(answer.data);
  };
  const toggle = (a: AuditAction, on: boolean) =>
    setActions(on ? [...actions, a] : actions.filter((x) => x !== a));
  return (
    <section aria-labelledby="new-webhook">
      <h2 id="new-webhook">New webhook</h2>
      {failure && <Notice failure={failure} />}
      {failure?.error === "Invalid webhook" && (
        <p class="muted" id="hook-url-private">{PRIVATE_HINT}</p>
      )}
      <form onSubmit={onSubmit(create)}>
        <Field label="URL" id="hook-url" hint="http or https">
          <input
            id="hook-url"
            inputMode="url"
            aria-describedby="hook-url-hint"
            value={url}
            onInput={(e) => setUrl(e.currentTarget.value)}
          />
        </Field>
        <Field label="Description" id="hook-description">
          <input
            id="hook-description"
            dir="auto"
            value={description}
            onInput={(e) => setDescription(e.currentTarget.value)}
          />
        </Field>
        <fieldset class="actions-pick">
          <legend>Actions (none chosen: all)</legend>
          {ACTIONS.map((a) => (
            <label key={a}>
              <input
                type="checkbox"
                checked={actions.includes(a)}
                onChange={(e) => toggle(a, e.currentTarget.checked)}
              />{" "}
              {a}
            </label>
          ))}
        </fieldset>
        <button type="submit" disabled={busy}>Create webhook</button>
      </form>
    </section>
  );
}

export function WebhookPage({ id }: { id: string }) {
  const hookId = Number(id);
  const path = { params: { path: { id: hookId } } };
  const hook = useLoad(
    (signal) =>
      send(() => api.GET("/api/webhooks/{id}", { ...path, signal }), signal),
    id,
  );
  const deliveries = useLoad(
    (signal) =>
      send(() =>
        api.GET("/api/webhooks/{id}/deliveries", {
          params: { path: { id: hookId }, query: { limit: 100 } },
          signal,
        }), signal),
    id,
  );
  const [failure, setFailure] = useState<Failure>();
  const [done, setDone] = useState<string>();

  if (!hook.reply) return <p role="status">Loading…</p>;
  if (!hook.reply.ok) {
    return (
      <>
        <Title>Webhook</Title>
        <Notice failure={hook.reply} onRetry={hook.reload} />
        <p>
          <a href={href("/webhooks")}>Back to webhooks</a>
        </p>
      </>
    );
  }
  const w = hook.reply.data;
  const enable = async () => {
    setFailure(undefined);
    const answer = await send(() =>
      api.POST("/api/webhooks/{id}/enable", path)
    );
    if (!answer.ok) return setFailure(answer);
    setDone("Webhook enabled.");
    hook.reload();
  };
  const test = async () => {
    setFailure(undefined);
    setDone(undefined);
    const answer = await send(() => api.POST("/api/webhooks/{id}/test", path));
    if (!answer.ok) return setFailure(answer);
    setDone(
      `Test event queued (delivery ${answer.data.deliveryId}): refresh the deliveries to see its outcome.`,
    );
    deliveries.reload();
  };
  const retry = async () => {
    setFailure(undefined);
    setDone(undefined);
    const answer = await send(() => api.POST("/api/webhooks/{id}/retry", path));
    if (!answer.ok) return setFailure(answer);
    setDone("The failing delivery is being retried now.");
    hook.reload();
    deliveries.reload();
  };
  const remove = async () => {
    setFailure(undefined);
    const answer = await send(() => api.DELETE("/api/webhooks/{id}", path));
    if (!answer.ok) return setFailure(answer);
    navigate(href("/webhooks"));
  };

  return (
    <>
      <p class="crumbs">
        <a href={href("/webhooks")}>Webhooks</a>
      </p>
      <Title>
        <span class="wrap">
          <Text>{w.url}</Text>
        </span>
      </Title>
      {failure && <Notice failure={failure} />}
      {done && <Done>{done}</Done>}
      <dl class="facts">
        <dt>Health</dt>
        <dd>
          <Status hook={w} />
          {w.disabledAt && (
            <>
              {" "}since <Time iso={w.disabledAt} />
            </>
          )}
        </dd>
        <dt>Description</dt>
        <dd>
          <Text>{w.description ?? "—"}</Text>
        </dd>
        <dt>Actions</dt>
        <dd>{w.actions ? w.actions.join(", ") : "All actions"}</dd>
        <dt>Created</dt>
        <dd>
          <Time iso={w.createdAt} />
        </dd>
        <dt>Failures in a row</dt>
        <dd>{w.failures}</dd>
        <dt>Next attempt</dt>
        <dd>
          <Time iso={w.nextAttemptAt} />
        </dd>
        <dt>Last delivered</dt>
        <dd>
          <Time iso={w.lastDeliveredAt} />
        </dd>
        <dt>Delivered up to record</dt>
        <dd>{w.lastRecordId}</dd>
      </dl>
      <div class="actions">
        <button type="button" class="secondary" onClick={test}>
          Send a test event
        </button>
        {w.health === "failing" && (
          <button type="button" onClick={retry}>Retry now</button>
        )}
        {w.status === "disabled" && (
          <button type="button" onClick={enable}>Enable webhook</button>
        )}
        <ConfirmButton
          label="Delete webhook"
          question="Delete this webhook?"
          onConfirm={remove}
        />
      </div>
      <section aria-labelledby="deliveries-h">
        <h2 id="deliveries-h">Deliveries</h2>
        {deliveries.reply && !deliveries.reply.ok && (
          <Notice failure={deliveries.reply} onRetry={deliveries.reload} />
        )}
        {deliveries.reply?.ok && deliveries.reply.data.length === 0 && (
          <p class="muted">No delivery attempts yet.</p>
        )}
        {deliveries.reply?.ok && deliveries.reply.data.length > 0 && (
          <table class="list">
            <caption class="visually-hidden">
              Delivery attempts, newest first
            </caption>
            <thead>
              <tr>
                <th scope="col">When</th>
                <th scope="col">Record</th>
                <th scope="col">Attempt</th>
                <th scope="col">Outcome</th>
                <th scope="col">Answer</th>
              </tr>
            </thead>
            <tbody>
              {deliveries.reply.data.map((d) => (
                <tr key={d.id}>
                  <td data-label="When">
                    <Time iso={d.at} />
                  </td>
                  <td data-label="Record">
                    {d.type === "webhook.test" ? "test event" : d.recordId}
                  </td>
                  <td data-label="Attempt">{d.attempt}</td>
                  <td data-label="Outcome">{d.outcome}</td>
                  <td data-label="Answer" class="wrap">
                    {d.status ?? ""} {d.error ?? ""} ({d.durationMs} ms)
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        )}
        <button type="button" class="secondary" onClick={deliveries.reload}>
          Refresh
        </button>
      </section>
    </>
  );
}
