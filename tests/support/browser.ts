/**
 * A real Chromium for the browser tests: Debian's, driven by npm's
 * playwright-core (never a browser download), and what every page it opens
 * is watched for: requests to another origin, failed loads, script errors,
 * CSP violations; axe-core's accessibility rules on demand.
 */
import { type Browser, chromium, type Page } from "playwright-core";
import { createRequire } from "node:module";
import type { Tool } from "./conditions.ts";

export const CHROMIUM = "/usr/bin/chromium";

export const CHROMIUM_TOOL: Tool = {
  what: `Chromium at ${CHROMIUM}`,
  present: await Deno.stat(CHROMIUM).then(() => true, () => false),
  install: "apt-get install chromium, as .ci/install-extras does",
};

export async function launch(): Promise<Browser & AsyncDisposable> {
  const browser = await chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: [
      "--no-sandbox",
      "--disable-gpu",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
      "--no-first-run",
    ],
  });
  return Object.assign(browser, {
    [Symbol.asyncDispose]: () => browser.close(),
  });
}

/**
 * Chromium's virtual WebAuthn authenticator (DevTools protocol), attached
 * to the page: it makes and signs passkeys at once, user verified, as a
 * platform authenticator with a fingerprint would.
 */
export async function addVirtualAuthenticator(page: Page) {
  const cdp = await page.context().newCDPSession(page);
  await cdp.send("WebAuthn.enable");
  await cdp.send("WebAuthn.addVirtualAuthenticator", {
    options: {
      protocol: "ctap2",
      transport: "internal",
      hasResidentKey: true,
      hasUserVerification: true,
      isUserVerified: true,
      automaticPresenceSimulation: true,
    },
  });
  return cdp;
}

/** What went wrong on a page, in words, and every URL it requested. */
export interface Watched {
  requested: string[];
  problems: string[];
}

/**
 * Records every request of `page` and every problem: a failed request (but
 * `allowFailed` ones), a non-API answer of 400 or more, a script error, a
 * console error, a CSP violation.
 */
export async function watch(
  page: Page,
  { allowFailed = () => false }: { allowFailed?: (url: string) => boolean } =
    {},
): Promise<Watched> {
  const watched: Watched = { requested: [], problems: [] };
  page.on("request", (r) => watched.requested.push(r.url()));
  page.on("requestfailed", (r) => {
    // A page leaving aborts its open requests (the audit feed's stream).
    if (r.failure()?.errorText === "net::ERR_ABORTED") return;
    if (!allowFailed(r.url())) {
      watched.problems.push(`failed: ${r.url()} ${r.failure()?.errorText}`);
    }
  });
  page.on("response", (r) => {
    const api = new URL(r.url()).pathname.startsWith("/api/");
    if (!api && r.status() >= 400) {
      watched.problems.push(`${r.status()} ${r.url()}`);
    }
  });
  page.on(
    "pageerror",
    (e) => watched.problems.push(`page error: ${e.message}`),
  );
  page.on("console", (m) => {
    // Chromium logs every 4xx and dropped connection as "Failed to load".
    if (m.type() !== "error" || m.text().startsWith("Failed to load")) return;
    watched.problems.push(`console: ${m.text()}`);
  });
  await page.addInitScript({
    content: `document.addEventListener("securitypolicyviolation", (e) =>
      console.error("CSP violation: " + e.violatedDirective + " " + e.blockedURI));`,
  });
  return watched;
}

const AXE_SOURCE = Deno.readTextFileSync(
  createRequire(import.meta.url).resolve("axe-core/axe.min.js"),
);

/**
 * axe-core's WCAG 2 A and AA rules on the page as it stands: the serious
 * and critical findings, each as "rule: target" lines. axe is evaluated
 * through the browser's debugging protocol, which the page's CSP does not
 * govern, so the page's own policy stays as strict as served.
 */
export async function axeFindings(page: Page): Promise<string[]> {
  const loaded = await page.evaluate(() =>
    typeof (globalThis as { axe?: unknown }).axe === "object"
  );
  if (!loaded) await page.evaluate(AXE_SOURCE);
  const violations = await page.evaluate(async () => {
    const axe = (globalThis as unknown as {
      axe: {
        run(context: unknown, options: unknown): Promise<{
          violations: {
            id: string;
            impact: string | null;
            nodes: { target: unknown[] }[];
          }[];
        }>;
      };
    }).axe;
    const result = await axe.run(
      (globalThis as { document?: unknown }).document,
      {
        runOnly: {
          type: "tag",
          values: ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa", "wcag22aa"],
        },
      },
    );
    return result.violations.map((v) => ({
      id: v.id,
      impact: v.impact,
      targets: v.nodes.map((n) => JSON.stringify(n.target)),
    }));
  });
  return violations
    .filter((v) => v.impact === "serious" || v.impact === "critical")
    .map((v) => `${v.id} (${v.impact}): ${v.targets.join(" ")}`);
}

/** Expands an operation, presses "Try it out", optionally sets the body, and executes. */
export async function tryItOut(page: Page, operation: string, body?: unknown) {
  const op = page.locator(`#operations-${operation}`);
  if (!(await op.locator(".opblock-body").isVisible())) {
    await op.locator(".opblock-summary").first().click();
  }
  const tryOut = op.locator("button.try-out__btn");
  if ((await tryOut.textContent())?.trim() === "Try it out") {
    await tryOut.click();
  }
  if (body !== undefined) {
    await op.locator("textarea.body-param__text").fill(
      JSON.stringify(body, null, 2),
    );
  }
  // Execute again after an earlier run: clear the old answer first so the
  // next one read is this execution's.
  const clear = op.locator("button.btn-clear");
  if (await clear.isVisible()) await clear.click();
  await op.locator("button.execute").click();
  const live = op.locator(".live-responses-table .response");
  await live.waitFor();
  return {
    op,
    status: (await live.locator(".response-col_status").textContent())?.trim(),
    body: await live.locator(".response-col_description pre").first()
      .textContent(),
  };
}
