/**
 * Replaces the key that signs the known-device cookie (`did`): every device
 * cookie issued so far stops counting, and each device is known again after
 * its next successful login. Every instance picks the new key up within
 * DEVICE_KEY_TTL_MS (src/auth/devices.ts), without a restart.
 *
 *   deno task rotate-device-key
 *
 * Uses the same DATABASE_URL / DATA_DIR as the service (stop the service
 * first when it runs on the embedded database: PGlite has one owner at a
 * time).
 */
import { newDeviceKey } from "../auth/tokens.ts";
import { createStore } from "../db/store.ts";
import { NO_DEADLINE } from "../db/write.ts";
import { runAsProcess, type TaskMain, withTaskDatabase } from "./task.ts";

export const rotateDeviceKey: TaskMain = (_args, env, out) =>
  withTaskDatabase(env, out, 1, async (db) => {
    try {
      await createStore(db.sql).deviceKey.replace(newDeviceKey(), NO_DEADLINE);
      out.log("Device key replaced: earlier device cookies no longer count.");
      return 0;
    } catch (e) {
      out.error(`Failed: ${(e as Error).message}`);
      return 1;
    }
  });

if (import.meta.main) await runAsProcess(rotateDeviceKey);
