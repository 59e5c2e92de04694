/**
 * The account rules (account-rules.ts) as a route lists them: each broken
 * rule a 400 check of the route, in the rules' order. Made here, beside
 * the routes, so that the rules stay plain messages that the recovery
 * task and the bootstrap use without the HTTP layer.
 */
import { check } from "../http/openapi.ts";
import {
  ACCOUNT_RULES,
  type AccountField,
  FIELDS_REQUIRED_RULE,
} from "./account-rules.ts";

const checksOf = (rules: typeof ACCOUNT_RULES) =>
  rules.map((r) => check(400, r.message, r.when));

const checksOfField = (field: AccountField) =>
  checksOf(ACCOUNT_RULES.filter((r) => r.field === field));

/** The account rules as a route lists them: its checks, in their order. */
export const ACCOUNT_CHECKS = checksOf(ACCOUNT_RULES);

/** The name's rules alone, in the same order (a change of the name). */
export const NAME_CHECKS = checksOfField("name");

/** The e-mail's rules alone (a change of the e-mail). */
export const EMAIL_CHECKS = checksOfField("email");

/** The password's rules alone, in the same order (a password reset). */
export const PASSWORD_CHECKS = checksOfField("password");

/** Missing, `null`, empty or not a string: what comes before every rule. */
export const FIELDS_REQUIRED = check(
  400,
  FIELDS_REQUIRED_RULE.message,
  FIELDS_REQUIRED_RULE.when,
);
