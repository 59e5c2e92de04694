/**
 * The overview, where the console opens: counts of users, sign-ins per day
 * and webhook health from `GET /api/overview`. A section the person may not
 * read comes back null and is left out.
 */
import type { components } from "../../../clients/mod.ts";
import { api, send } from "../api.ts";
import { href } from "../router.ts";
import { Notice, Text, Time, Title, useLoad } from "../ui.tsx";

type Overview = components["schemas"]["Overview"];
type Day = components["schemas"]["OverviewSignInDay"];
type Hook = components["schemas"]["OverviewWebhook"];

export function OverviewPage() {
  const { reply, reload } = useLoad(
    (signal) => send(() => api.GET("/api/overview", { signal }), signal),
    "",
  );
  return (
    <>
      <Title>Overview</Title>
      {!reply && <p class="muted" role="status">Loading…</p>}
      {reply && !reply.ok && <Notice failure={reply} onRetry={reload} />}
      {reply?.ok && <Sections overview={reply.data} />}
    </>
  );
}

function Sections({ overview }: { overview: Overview }) {
  const { users, signIns, webhooks } = overview;
  return (
    <>
      <section aria-labelledby="users-heading">
        <h2 id="users-heading" class="visually-hidden">Users</h2>
        <ul class="stats">
          <Stat
            label="Users"
            value={users.total}
            link={href("/users")}
            linkLabel="All users"
          />
          <Stat
            label="Admins"
            value={users.admins}
            link={href("/users", { role: "admin" })}
            linkLabel="List admins"
          />
          <Stat
            label="Disabled"
            value={users.disabled}
            link={href("/users", { status: "disabled" })}
            linkLabel="List disabled users"
          />
          <Stat
            label="Admins without a second factor"
            value={users.unenrolledAdmins}
            warn={users.unenrolledAdmins > 0}
          />
        </ul>
      </section>
      <div class="grid">
        {signIns && <SignIns days={signIns} />}
        {webhooks && <WebhookHealth hooks={webhooks} />}
      </div>
    </>
  );
}

function Stat(
  { label, value, link, linkLabel, warn }: {
    label: string;
    value: number;
    link?: string;
    linkLabel?: string;
    warn?: boolean;
  },
) {
  return (
    <li class={warn ? "warn" : undefined}>
      <span class="label">{label}</span>
      <span class="value">{value.toLocaleString()}</span>
      {link && <a href={link}>{linkLabel}</a>}
    </li>
  );
}

/** Day `2026-11-25` as the reader's short date (the day is UTC's). */
const dayLabel = (date: string) =>
  new Date(`${date}T00:00:00Z`).toLocaleDateString(undefined, {
    day: "numeric",
    month: "short",
    timeZone: "UTC",
  });

const W = 560;
const H = 180;
const BOTTOM = 22;
const TOP = 8;

/**
 * Sign-ins per day as paired bars in an inline SVG (attributes, no inline
 * style: the CSP allows none); the same numbers as a table for those who
 * cannot see it.
 */
function SignIns({ days }: { days: Day[] }) {
  const most = Math.max(1, ...days.map((d) => Math.max(d.succeeded, d.failed)));
  const slot = W / days.length;
  const bar = Math.max(2, slot / 2 - 3);
  const height = (n: number) => (n / most) * (H - BOTTOM - TOP);
  const total = days.reduce(
    (sum, d) => [sum[0] + d.succeeded, sum[1] + d.failed],
    [0, 0],
  );
  return (
    <section class="card" aria-labelledby="signins-heading">
      <h2 id="signins-heading">Sign-ins, last {days.length} days</h2>
      <p>
        {total[0].toLocaleString()} succeeded, {total[1].toLocaleString()}{" "}
        failed.
      </p>
      <svg
        class="chart"
        viewBox={`0 0 ${W} ${H}`}
        role="img"
        aria-label={`Sign-ins per day: ${total[0]} succeeded and ${
          total[1]
        } failed over ${days.length} days; the table below has each day.`}
      >
        <line class="axis" x1="0" x2={W} y1={H - BOTTOM} y2={H - BOTTOM} />
        {days.map((d, i) => {
          const x = i * slot + 2;
          return (
            <g key={d.date}>
              <rect
                class="succeeded"
                x={x}
                width={bar}
                y={H - BOTTOM - height(d.succeeded)}
                height={height(d.succeeded)}
              />
              <rect
                class="failed"
                x={x + bar + 1}
                width={bar}
                y={H - BOTTOM - height(d.failed)}
                height={height(d.failed)}
              />
              {i % 2 === (days.length - 1) % 2 && (
                <text x={x} y={H - 6}>{dayLabel(d.date)}</text>
              )}
            </g>
          );
        })}
      </svg>
      <ul class="legend" aria-hidden="true">
        <li>Succeeded</li>
        <li class="failed">Failed</li>
      </ul>
      <details>
        <summary>Sign-ins per day as a table</summary>
        <table class="list signins">
          <thead>
            <tr>
              <th scope="col">Day</th>
              <th scope="col">Succeeded</th>
              <th scope="col">Failed</th>
            </tr>
          </thead>
          <tbody>
            {days.map((d) => (
              <tr key={d.date}>
                <td data-label="Day">
                  <time dateTime={d.date}>{dayLabel(d.date)}</time>
                </td>
                <td data-label="Succeeded">{d.succeeded}</td>
                <td data-label="Failed">{d.failed}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </details>
      <p>
        <a href={href("/audit", { action: "login.failed" })}>
          Failed sign-ins in the audit trail
        </a>
      </p>
    </section>
  );
}

const HEALTH: Record<Hook["health"], { label: string; badge: string }> = {
  ok: { label: "Delivering", badge: "badge" },
  failing: { label: "Failing", badge: "badge bad" },
  disabled: { label: "Disabled", badge: "badge warn" },
  idle: { label: "No deliveries yet", badge: "badge neutral" },
};

function WebhookHealth({ hooks }: { hooks: Hook[] }) {
  return (
    <section class="card" aria-labelledby="webhooks-heading">
      <h2 id="webhooks-heading">Webhooks</h2>
      {hooks.length === 0
        ? <p class="muted">No webhooks.</p>
        : (
          <ul class="health">
            {hooks.map((h) => (
              <li key={h.id}>
                <a href={href(`/webhooks/${h.id}`)} class="wrap">
                  <Text>{h.url}</Text>
                </a>
                <span>
                  <span class={HEALTH[h.health].badge}>
                    {HEALTH[h.health].label}
                  </span>{" "}
                  <span class="muted">
                    {h.lastAttemptAt && (
                      <>
                        last attempt <Time iso={h.lastAttemptAt} />
                      </>
                    )}
                  </span>
                </span>
              </li>
            ))}
          </ul>
        )}
    </section>
  );
}
