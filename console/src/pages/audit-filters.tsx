/**
 * The audit trail's filters: the API's, as the address holds them (so a
 * view can be linked), the form that sets them, and which records sealed
 * since the page opened they keep.
 */
import { useState } from "preact/hooks";
import { ACTIONS, isAction, LABELS } from "../actions.ts";
import type { AuditAction, AuditRecord } from "../api.ts";
import { href, navigate } from "../router.ts";
import { Field, onSubmit } from "../ui.tsx";

/** The API's filters, as the address holds them. */
export interface Filters {
  action?: AuditAction;
  actorId?: string;
  targetId?: string;
  /** ISO 8601, as the API takes it. */
  since?: string;
  until?: string;
}

export const FILTER_NAMES = [
  "action",
  "actorId",
  "targetId",
  "since",
  "until",
] as const;

export function filtersOf(query: URLSearchParams): Filters {
  const action = query.get("action");
  const text = (name: string) => query.get(name) || undefined;
  return {
    action: isAction(action) ? action : undefined,
    actorId: text("actorId"),
    targetId: text("targetId"),
    since: text("since"),
    until: text("until"),
  };
}

/** Whether a record sealed after the page opened is one the filters keep. */
export function keeps(f: Filters, r: AuditRecord) {
  return (!f.action || r.action === f.action) &&
    (!f.actorId || String(r.actor?.id) === f.actorId) &&
    (!f.targetId || String(r.target?.id) === f.targetId) &&
    (!f.since || r.time >= new Date(f.since).toISOString()) &&
    (!f.until || r.time < new Date(f.until).toISOString());
}

/** An `until` already past (or unreadable): no new record can match. */
export const closed = (f: Filters) =>
  f.until !== undefined && !(new Date(f.until).getTime() > Date.now());

/** The filters as the API's query takes them (ids as numbers). */
export function apiFilters(f: Filters) {
  const id = (s: string | undefined) =>
    s === undefined ? undefined : (Number(s) as number);
  return Object.fromEntries(
    Object.entries({
      action: f.action,
      // A value the API refuses is sent as it is, so its 400 names it.
      actorId: f.actorId && /^\d+$/.test(f.actorId) ? id(f.actorId) : f.actorId,
      targetId: f.targetId && /^\d+$/.test(f.targetId)
        ? id(f.targetId)
        : f.targetId,
      since: f.since,
      until: f.until,
    }).filter(([, v]) => v !== undefined),
  ) as {
    action?: AuditAction;
    actorId?: number;
    targetId?: number;
    since?: string;
    until?: string;
  };
}

/** `2026-11-25T10:00:00.000Z` as a datetime-local value in the reader's zone. */
function localValue(iso: string | undefined): string {
  if (!iso) return "";
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return "";
  const pad = (n: number) => String(n).padStart(2, "0");
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}T${
    pad(d.getHours())
  }:${pad(d.getMinutes())}`;
}

/** A datetime-local value (the reader's zone) as the API's ISO time. */
function isoValue(local: string): string | undefined {
  if (!local) return undefined;
  const d = new Date(local);
  return Number.isNaN(d.getTime()) ? undefined : d.toISOString();
}

export function FilterForm({ filters }: { filters: Filters }) {
  const [actorId, setActorId] = useState(filters.actorId ?? "");
  const [targetId, setTargetId] = useState(filters.targetId ?? "");
  const [since, setSince] = useState(localValue(filters.since));
  const [until, setUntil] = useState(localValue(filters.until));
  const apply = (change: Partial<Filters> = {}) =>
    navigate(
      href("/audit", {
        action: filters.action,
        actorId: actorId.trim() || undefined,
        targetId: targetId.trim() || undefined,
        since: isoValue(since),
        until: isoValue(until),
        ...change,
      }),
    );
  const any = FILTER_NAMES.some((n) => filters[n] !== undefined);
  return (
    <form
      class="filters audit-filters"
      role="search"
      aria-label="Filter the audit trail"
      onSubmit={onSubmit(() => apply())}
    >
      <Field label="Action" id="action">
        <select
          id="action"
          value={filters.action ?? ""}
          onChange={(e) =>
            apply({
              action: (e.currentTarget.value || undefined) as
                | AuditAction
                | undefined,
            })}
        >
          <option value="">All actions</option>
          {ACTIONS.map((a) => <option key={a} value={a}>{LABELS[a]}</option>)}
        </select>
      </Field>
      <Field label="Actor (user id)" id="actorId">
        <input
          id="actorId"
          inputMode="numeric"
          autoComplete="off"
          value={actorId}
          onInput={(e) => setActorId(e.currentTarget.value)}
        />
      </Field>
      <Field label="Target (user id)" id="targetId">
        <input
          id="targetId"
          inputMode="numeric"
          autoComplete="off"
          value={targetId}
          onInput={(e) => setTargetId(e.currentTarget.value)}
        />
      </Field>
      <Field label="From" id="since">
        <input
          id="since"
          type="datetime-local"
          value={since}
          onInput={(e) => setSince(e.currentTarget.value)}
        />
      </Field>
      <Field label="Before" id="until">
        <input
          id="until"
          type="datetime-local"
          value={until}
          onInput={(e) => setUntil(e.currentTarget.value)}
        />
      </Field>
      <div class="actions">
        <button type="submit">Apply filters</button>
        {any && (
          <a class="button secondary" href={href("/audit")}>Clear filters</a>
        )}
      </div>
    </form>
  );
}
