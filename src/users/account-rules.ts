/**
 * The account rules: what a username, name, e-mail and password must be,
 * with the contract's message for each broken rule and when it is broken.
 * Defined once, here, and used by the API's routes (as their checks,
 * account-checks.ts), the recovery task and the first-admin bootstrap, so
 * none of them can make an account another would refuse.
 */
// zod as extended with `.openapi()`: the routes describe these very schemas.
import { z } from "@hono/zod-openapi";
import { type Message, MSG } from "../http/messages.ts";

export const codePoints = (s: string) => [...s].length;
export const utf8Bytes = (s: string) => new TextEncoder().encode(s).length;

/** bcrypt reads at most 72 bytes and stops at NUL: past either, two passwords would be one. */
export const BCRYPT_MAX_BYTES = 72;

/** Whether bcrypt sees this password whole, so that it matches only itself. */
export const bcryptSeesWhole = (password: string) =>
  !password.includes("\u0000") && utf8Bytes(password) <= BCRYPT_MAX_BYTES;

const CONTROL = /\p{Cc}/u;

/**
 * Characters that show as nothing, or not as themselves: controls, format
 * characters (zero-width space and joiners, soft hyphen, bidirectional
 * overrides), line and paragraph separators, private use, unassigned code
 * points, and lone surrogates (not characters at all).
 */
const INVISIBLE = /[\p{Cc}\p{Cf}\p{Zl}\p{Zp}\p{Co}\p{Cn}\p{Cs}]/u;

/**
 * Every script JavaScript's regular expressions know (ISO 15924 codes, as
 * V8 accepts them in `\p{Script_Extensions=...}`), but Common and Inherited,
 * which go with any script, and Unknown, which INVISIBLE already refuses.
 */
const SCRIPT_CODES =
  "Adlm Aghb Ahom Arab Armi Armn Avst Bali Bamu Bass Batk Beng Bhks Bopo " +
  "Brah Brai Bugi Buhd Cakm Cans Cari Cham Cher Chrs Copt Cpmn Cprt Cyrl " +
  "Deva Diak Dogr Dsrt Dupl Egyp Elba Elym Ethi Gara Geor Glag Gong Gonm " +
  "Goth Gran Grek Gujr Gukh Guru Hang Hani Hano Hatr Hebr Hira Hluw Hmng " +
  "Hmnp Hung Ital Java Kali Kana Kawi Khar Khmr Khoj Kits Knda Krai Kthi " +
  "Lana Laoo Latn Lepc Limb Lina Linb Lisu Lyci Lydi Mahj Maka Mand Mani " +
  "Marc Medf Mend Merc Mero Miao Mlym Modi Mong Mroo Mtei Mult Mymr Nagm " +
  "Nand Narb Nbat Newa Nkoo Nshu Ogam Olck Onao Orkh Orya Osge Osma Ougr " +
  "Palm Pauc Perm Phag Phli Phlp Phnx Plrd Prti Rjng Rohg Runr Samr Sarb " +
  "Saur Sgnw Shaw Shrd Sidd Sind Sinh Sogd Sogo Sora Soyo Sund Sunu Sylo " +
  "Syrc Tagb Takr Tale Talu Taml Tang Tavt Telu Tfng Tglg Thaa Thai Tibt " +
  "Tirh Tnsa Todr Toto Tutg Ugar Vaii Vith Wara Wcho Xpeo Xsux Yezi Yiii " +
  "Zanb";

let compiledScripts: { code: string; test: RegExp }[] | undefined;

/** Compiled when first needed, not at every start: one expression per script, which only a name outside ASCII needs. */
const allScripts = () =>
  compiledScripts ??= SCRIPT_CODES.split(" ").flatMap((code) => {
    // A script this engine does not know yet is simply not in the list.
    try {
      return [{ code, test: new RegExp(`^\\p{scx=${code}}$`, "u") }];
    } catch {
      return [];
    }
  });

const LATIN: ReadonlySet<string> = new Set(["Latn"]);
const ANY_SCRIPT = /^[\p{scx=Zyyy}\p{scx=Zinh}]$/u;

/**
 * UTS #39's writing systems that mix scripts by nature: Han with kana is
 * Japanese, Han with Hangul Korean, Han with Bopomofo Chinese.
 */
const AUGMENT: Record<string, string[]> = {
  Hani: ["Hanb", "Jpan", "Kore"],
  Hira: ["Jpan"],
  Kana: ["Jpan"],
  Hang: ["Kore"],
  Bopo: ["Hanb"],
};

/** A code point's scripts (Script_Extensions, augmented); undefined for Common and Inherited. */
function scriptsOf(char: string): ReadonlySet<string> | undefined {
  // ASCII, the usual case, without the walk through every script.
  if (char < "\u0080") return /[A-Za-z]/.test(char) ? LATIN : undefined;
  if (SCRIPTS_OF.has(char)) return SCRIPTS_OF.get(char);
  let scripts: Set<string> | undefined;
  if (!ANY_SCRIPT.test(char)) {
    scripts = new Set<string>();
    for (const { code, test } of allScripts()) {
      if (!test.test(char)) continue;
      scripts.add(code);
      for (const extra of AUGMENT[code] ?? []) scripts.add(extra);
    }
  }
  // Bounded: names draw on few code points, an attacker on many.
  if (SCRIPTS_OF.size < 10_000) SCRIPTS_OF.set(char, scripts);
  return scripts;
}

/** Code points already looked up: each costs a test against every script. */
const SCRIPTS_OF = new Map<string, ReadonlySet<string> | undefined>();

/** The scripts every one of these code points belongs to (all, when none has a script). */
function resolvedScripts(
  sets: ReadonlySet<string>[],
): ReadonlySet<string> | "all" {
  if (sets.length === 0) return "all";
  return sets.reduce((a, b) => new Set(a).intersection(b));
}

/**
 * UTS #39 "highly restrictive": one script (Common and Inherited go with
 * any), or Latin with Japanese, Korean or Chinese writing
 * (Latin + Han + Hiragana + Katakana, Latin + Han + Hangul,
 * Latin + Han + Bopomofo). So `José`, `山田太郎` and `Tanaka田中` pass,
 * Latin mixed with Cyrillic or Greek (`аdmin` with a Cyrillic `а`) does not.
 */
export function isHighlyRestrictive(text: string): boolean {
  const sets = [...text].map(scriptsOf).filter((s) => s !== undefined);
  const all = resolvedScripts(sets);
  if (all === "all" || all.size > 0) return true;
  const rest = resolvedScripts(sets.filter((s) => !s.has("Latn")));
  return rest !== "all" &&
    ["Jpan", "Kore", "Hanb"].some((code) => rest.has(code));
}

export const usernameFitsLength = (s: string) =>
  codePoints(s) <= 64 && !CONTROL.test(s);

export const usernameCharactersAllowed = (s: string) =>
  !INVISIBLE.test(s) && isHighlyRestrictive(s);

export const emailIsValid = (s: string) =>
  codePoints(s) <= 254 && /^[^\s@]+@[^\s@]+$/u.test(s) && !INVISIBLE.test(s);

/** Control characters (U+0000 among them), line and paragraph separators. */
const NAME_DISALLOWED = /[\p{Cc}\p{Zl}\p{Zp}]/u;

export const nameCharactersAllowed = (s: string) => !NAME_DISALLOWED.test(s);

/** A rule that ends its value's checks when it fails. */
const rule = (message: Message) => ({ message, abort: true });

export type AccountField = "username" | "name" | "email" | "password";

/**
 * A broken rule as the contract words it: its message, and when it is
 * answered (as the document states it: lower case, no final stop).
 */
export interface Broken<M extends Message = Message> {
  readonly message: M;
  readonly when: string;
}

const accountRule = <const M extends Message>(
  field: AccountField,
  ok: (value: string) => boolean,
  message: M,
  when: string,
) => ({ field, ok, message, when });

/**
 * The rules of a new account's fields, in the contract's check order once
 * every field is present (`All fields are required` comes first). Each
 * rule judges an already read (and, but for passwords, trimmed) string.
 */
export const ACCOUNT_RULES = [
  accountRule(
    "password",
    // Empty is the caller's own rule (required, or unchanged).
    (p) => p === "" || codePoints(p) >= 8,
    MSG.passwordTooShort,
    "the password is shorter than 8 characters (Unicode code points)",
  ),
  accountRule(
    "username",
    usernameFitsLength,
    MSG.usernameInvalid,
    "the username is longer than 64 characters or holds a control character",
  ),
  accountRule(
    "username",
    usernameCharactersAllowed,
    MSG.usernameCharacters,
    "the username holds an invisible or formatting character, or mixes confusable scripts (UTS #39 highly restrictive)",
  ),
  accountRule(
    "name",
    (n) => codePoints(n) <= 200,
    MSG.nameTooLong,
    "the name is longer than 200 characters",
  ),
  accountRule(
    "name",
    nameCharactersAllowed,
    MSG.nameCharacters,
    "the name holds a control character or a line or paragraph separator",
  ),
  accountRule(
    "email",
    emailIsValid,
    MSG.emailInvalid,
    "the e-mail is longer than 254 characters, is not one `@` with text on both sides, or holds whitespace, a control or an invisible character",
  ),
  accountRule(
    "password",
    (p) => utf8Bytes(p) <= BCRYPT_MAX_BYTES,
    MSG.passwordTooLong,
    "the password is longer than 72 bytes as UTF-8",
  ),
  accountRule(
    "password",
    (p) => !p.includes("\u0000"),
    MSG.passwordNul,
    "the password holds NUL (U+0000)",
  ),
];

/**
 * A field's rules as zod refinements, in the order of ACCOUNT_RULES. They
 * stop at the value's first broken rule, so no costly rule runs on a value
 * another rule already refused (a username of 20,000 characters is not
 * looked at character by character): each field answers at most one broken
 * rule, and the check order picks the one answered among the fields.
 */
const rulesOf = (field: AccountField) => <T extends z.ZodString>(s: T): T =>
  ACCOUNT_RULES.filter((r) => r.field === field)
    .reduce((value, r) => value.refine(r.ok, rule(r.message)), s);

export const usernameRules = rulesOf("username");
export const nameRules = rulesOf("name");
export const emailRules = rulesOf("email");
/** Every new password, on POST and PATCH alike. */
export const passwordRules = rulesOf("password");

/** Missing, `null`, empty or not a string: what comes before every rule. */
export const FIELDS_REQUIRED_RULE = {
  message: MSG.allFieldsRequired,
  when:
    "a field is missing, `null` or empty (the username, name and e-mail once trimmed: whitespace alone is empty), or the username, name, e-mail or password is not a string",
} as const satisfies Broken;

/** Surrounding whitespace is dropped; whitespace alone counts as empty. */
const requiredText = () =>
  z.string({ error: MSG.allFieldsRequired })
    .trim().min(1, rule(MSG.allFieldsRequired));

/** A new account's fields as POST /api/users takes them (role aside). */
export const NewAccountSchema = z.object({
  username: usernameRules(requiredText()),
  name: nameRules(requiredText()),
  email: emailRules(requiredText()),
  password: passwordRules(
    z.string({ error: MSG.allFieldsRequired }).min(1, MSG.allFieldsRequired),
  ),
});

export type NewAccount = z.infer<typeof NewAccountSchema>;

/**
 * A new account whose password may be absent, as an import gives it (with
 * a hash instead, or none at all): a password given meets every rule.
 */
export const ImportedAccountSchema = NewAccountSchema.extend({
  password: NewAccountSchema.shape.password.optional(),
});

/** The checks of a new account, as POST /api/users makes them (role aside). */
const CHECK_ORDER: readonly Message[] = [FIELDS_REQUIRED_RULE, ...ACCOUNT_RULES]
  .map((r) => r.message);

export type AccountCheck<A = NewAccount> =
  | { ok: true; account: A }
  | { ok: false; field: keyof NewAccount; message: Message };

/**
 * The fields checked as the API checks them, for callers outside HTTP: the
 * account as stored (trimmed), or the first broken rule in the contract's
 * order and the field that broke it.
 */
export function checkNewAccount(
  input: Record<keyof NewAccount, unknown>,
): AccountCheck;
export function checkNewAccount<S extends typeof ImportedAccountSchema>(
  input: Record<keyof NewAccount, unknown>,
  schema: S,
): AccountCheck<z.infer<S>>;
export function checkNewAccount(
  input: Record<keyof NewAccount, unknown>,
  schema: z.ZodType<unknown> = NewAccountSchema,
): AccountCheck<unknown> {
  const parsed = schema.safeParse(input);
  if (parsed.success) {
    return { ok: true, account: parsed.data };
  }
  const broken = new Set<string>(parsed.error.issues.map((i) => i.message));
  const message = CHECK_ORDER.find((m) => broken.has(m))!;
  const issue = parsed.error.issues.find((i) => i.message === message)!;
  return {
    ok: false,
    field: issue.path[0] as keyof NewAccount,
    message,
  };
}
