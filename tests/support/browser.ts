/**
 * Debian's Chromium driven by playwright-core, as the browser tests use it:
 * launched headless, and Swagger UI's "Try it out" pressed as a person would.
 */
import { type Browser, chromium, type Page } from "playwright-core";

const CHROMIUM = "/usr/bin/chromium";
export const CHROMIUM_TOOL = {
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
