/**
 * A person's words for the device a session came from, read from its
 * login's User-Agent: "Firefox on Linux". Only the common browsers and
 * systems are named; anything else shows its first product token, so a
 * script's session reads as what it calls itself ("curl").
 */

/** Most specific first: Edge and Opera also say Chrome, Chrome also says Safari. */
const BROWSERS: [RegExp, string][] = [
  [/\bEdg(e|A|iOS)?\//, "Edge"],
  [/\b(OPR|Opera)\//, "Opera"],
  [/\b(Firefox|FxiOS)\//, "Firefox"],
  [/\bSamsungBrowser\//, "Samsung Internet"],
  [/\b(Chrome|CriOS|Chromium|HeadlessChrome)\//, "Chrome"],
  [/\bVersion\/[\d.]+.*\bSafari\//, "Safari"],
];

const SYSTEMS: [RegExp, string][] = [
  [/\bWindows\b/, "Windows"],
  [/\bAndroid\b/, "Android"],
  [/\b(iPhone|iPad|iPod)\b/, "iOS"],
  [/\bCrOS\b/, "ChromeOS"],
  [/\bMac OS X\b|\bMacintosh\b/, "macOS"],
  [/\bLinux\b/, "Linux"],
];

const first = (agent: string, known: [RegExp, string][]) =>
  known.find(([pattern]) => pattern.test(agent))?.[1];

export function deviceOf(userAgent: string | null): string {
  if (!userAgent) return "Unknown device";
  const browser = first(userAgent, BROWSERS);
  const system = first(userAgent, SYSTEMS);
  if (browser && system) return `${browser} on ${system}`;
  if (browser || system) return (browser ?? system)!;
  return /^[^\s/;()]+/.exec(userAgent)?.[0] ?? "Unknown device";
}
