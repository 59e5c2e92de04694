import { meets } from "../auth/permissions.ts";
import type { Store } from "../db/store.ts";
import type { Handlers } from "../http/endpoint.ts";
import type * as routes from "./overview.routes.ts";

export interface OverviewDeps {
  store: Store;
}

type Handler<K extends keyof typeof routes> = Handlers<typeof routes>[K];

export function createOverviewHandlers({ store }: OverviewDeps) {
  /** As every read of the trail: what committed so far is sealed first. */
  const sealedSignIns = async () => {
    await store.audit.seal();
    return await store.overview.signInsPerDay();
  };

  /** Each section the caller may read, the others null; read side by side. */
  const get: Handler<"get"> = async (c) => {
    const { access } = c.get("caller");
    const [users, signIns, webhooks] = await Promise.all([
      store.overview.userCounts(),
      meets(access, ["audit:read"]) ? sealedSignIns() : null,
      meets(access, ["webhooks:manage"])
        ? store.overview.webhookHealth()
        : null,
    ]);
    return c.json({ users, signIns, webhooks }, 200);
  };

  return { get };
}
