import { meets, type Reach, reachOf } from "../auth/permissions.ts";
import type { Store } from "../db/store.ts";
import type { Handlers } from "../http/endpoint.ts";
import type * as routes from "./overview.routes.ts";

export interface OverviewDeps {
  store: Store;
}

type Handler<K extends keyof typeof routes> = Handlers<typeof routes>[K];

export function createOverviewHandlers({ store }: OverviewDeps) {
  /** As every read of the trail: what committed so far is sealed first. */
  const sealedSignIns = async (reach: Reach) => {
    await store.audit.seal();
    return await store.overview.signInsPerDay(reach);
  };

  /**
   * Each section the caller may read, the others null; read side by side.
   * A caller whose permission reaches some groups' members counts only them.
   */
  const get: Handler<"get"> = async (c) => {
    const { access } = c.get("caller");
    const [users, signIns, webhooks] = await Promise.all([
      store.overview.userCounts(reachOf(access, "users:read")),
      meets(access, ["audit:read"])
        ? sealedSignIns(reachOf(access, "audit:read"))
        : null,
      meets(access, ["webhooks:manage"])
        ? store.overview.webhookHealth()
        : null,
    ]);
    return c.json({ users, signIns, webhooks }, 200);
  };

  return { get };
}
