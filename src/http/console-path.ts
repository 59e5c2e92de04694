/**
 * Where the admin console lives: apart from its files (console.ts), as the
 * security headers of every answer (security-headers.ts) ask it too.
 */
export const CONSOLE_PATH = "/admin";

/** Whether a path is the console's (its page and files carry page headers). */
export const isConsolePath = (path: string) =>
  path === CONSOLE_PATH || path.startsWith(`${CONSOLE_PATH}/`);
