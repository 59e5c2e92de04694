/**
 * The audit records about one user, newest first, a page at a time:
 * the trail's own list (audit-records.tsx) filtered to the user.
 */
import { useState } from "preact/hooks";
import { api, type AuditRecord, nextCursor, send } from "../../api.ts";
import { Notice, useLoad } from "../../ui.tsx";
import { AuditList } from "../audit-records.tsx";

const USER_AUDIT_PAGE = 20;

export function UserAudit({ userId }: { userId: number }) {
  const [records, setRecords] = useState<AuditRecord[]>([]);
  const [before, setBefore] = useState<number>();
  const { reply, reload } = useLoad(async (signal) => {
    const answer = await send(() =>
      api.GET("/api/audit", {
        params: {
          query: {
            targetId: userId,
            limit: USER_AUDIT_PAGE,
            ...(before ? { before } : {}),
          },
        },
        signal,
      }), signal);
    if (answer.ok) {
      setRecords((had) => before ? [...had, ...answer.data] : answer.data);
    }
    return answer;
  }, `${userId}:${before ?? ""}`);
  const more = reply?.ok ? nextCursor(reply.headers, "before") : undefined;
  return (
    <>
      {reply && !reply.ok && <Notice failure={reply} onRetry={reload} />}
      {records.length === 0 && reply?.ok && <p class="muted">No records.</p>}
      <AuditList records={records} />
      {more && (
        <button
          type="button"
          class="secondary"
          onClick={() => setBefore(Number(more))}
        >
          Older records
        </button>
      )}
    </>
  );
}
