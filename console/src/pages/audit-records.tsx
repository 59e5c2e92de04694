/**
 * Audit records as the console draws them: the trail's table, and a
 * user's own trail as a list of lines.
 */
import { Component } from "preact";
import { actionLabel } from "../actions.ts";
import { describeDetails } from "../audit-details.ts";
import type { AuditRecord } from "../api.ts";
import { href } from "../router.ts";
import { Text, Time } from "../ui.tsx";

/** Audit records, newest first, one row each. */
export function AuditTable({ records }: { records: AuditRecord[] }) {
  if (records.length === 0) return null;
  return (
    <table class="list audit">
      <thead>
        <tr>
          <th scope="col">Time</th>
          <th scope="col">Action</th>
          <th scope="col">Actor</th>
          <th scope="col">Target</th>
          <th scope="col">Client address</th>
          <th scope="col">Details</th>
        </tr>
      </thead>
      <tbody>
        {records.map((r) => <AuditRow key={r.id} record={r} />)}
      </tbody>
    </table>
  );
}

/**
 * One record's row. A record never changes, so its row is drawn once: a
 * burst redraws only the rows it adds, not the hundreds already shown.
 */
class AuditRow extends Component<{ record: AuditRecord }> {
  override shouldComponentUpdate(next: { record: AuditRecord }) {
    return next.record !== this.props.record;
  }

  override render() {
    const r = this.props.record;
    return (
      <tr data-id={r.id}>
        <td data-label="Time" class="when">
          <Time iso={r.time} />
        </td>
        <td data-label="Action">
          <span class="action" data-action={r.action}>
            {actionLabel(r.action)}
          </span>
        </td>
        <td data-label="Actor">
          <span>
            {r.actor ? <Party party={r.actor} /> : <NoActor record={r} />}
            {r.via && (
              <>
                {" "}
                <span class="via">via {r.via}</span>
              </>
            )}
          </span>
        </td>
        <td data-label="Target">
          {r.target
            ? <Party party={r.target} />
            : <span class="muted">none</span>}
        </td>
        <td data-label="Client address">
          {r.clientAddress
            ? <span class="mono wrap">{r.clientAddress}</span>
            : <span class="muted">none</span>}
        </td>
        <td data-label="Details" class="details">
          <Text>{describeDetails(r)}</Text>
        </td>
      </tr>
    );
  }
}

/** Audit records, newest first, each in one line of words (a user's own trail). */
export function AuditList({ records }: { records: AuditRecord[] }) {
  if (records.length === 0) return null;
  return (
    <ol class="records">
      {records.map((r) => (
        <li key={r.id}>
          <span class="when">
            <Time iso={r.time} />
          </span>{" "}
          <code class="action" title={actionLabel(r.action)}>{r.action}</code>
          {" "}
          <span class="who">
            {r.actor ? <Party party={r.actor} /> : <NoActor record={r} />}
            {r.target && (
              <>
                {" → "}
                <Party party={r.target} />
              </>
            )}
          </span>
          {r.via && <span class="via">via {r.via}</span>}
          {Object.keys(r.details).length > 0 && (
            <span class="details">{describeDetails(r)}</span>
          )}
          <span class="visually-hidden">Record {r.id}</span>
        </li>
      ))}
    </ol>
  );
}

/**
 * Who acted when no person did: the service itself (no door), a SCIM
 * connection (named in its details), or no one signed in (a login attempt).
 */
function NoActor({ record }: { record: AuditRecord }) {
  if (record.via === null) return <span class="muted">service</span>;
  const connection = record.details.connection as
    | { name?: unknown }
    | undefined;
  if (record.via === "scim" && typeof connection?.name === "string") {
    return (
      <span>
        connection <Text>{connection.name}</Text>
      </span>
    );
  }
  return <span class="muted">anonymous</span>;
}

function Party({ party }: { party: { id: number; username: string } }) {
  return (
    <a href={href(`/users/${party.id}`)}>
      <Text>{party.username}</Text>
    </a>
  );
}
