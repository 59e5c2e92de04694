/**
 * What the client's Node tests need: Node and npm on PATH, and TypeScript
 * compiling as a Node project. Apart from conditions.ts, so that only these
 * tests pay for finding out whether the tools run (npm starts a Node
 * program of its own just to print its version).
 */
import ts from "typescript";
import type { Tool } from "./conditions.ts";

const runs = (command: string) =>
  new Deno.Command(command, {
    args: ["--version"],
    stdout: "null",
    stderr: "null",
  }).output().then((o) => o.success, () => false);

/** Node on PATH: the client's Node tests need it. */
export const NODE: Tool = {
  what: "`node` on PATH",
  present: await runs("node"),
  install: ".ci/run needs Node for npm, so it is there in CI",
};

/** Node and npm on PATH: the npm package test installs the package with npm. */
export const NODE_AND_NPM: Tool = {
  what: "`node` and `npm` on PATH",
  present: NODE.present && await runs("npm"),
  install: "npm comes with Node; .ci/run uses npm, so both are there in CI",
};

/**
 * TypeScript as a Node project compiles it: ES modules resolved the Node
 * way, only the standard and DOM libraries (no Deno or Node types), strict.
 */
export const NODE_PROJECT: ts.CompilerOptions = {
  module: ts.ModuleKind.NodeNext,
  moduleResolution: ts.ModuleResolutionKind.NodeNext,
  target: ts.ScriptTarget.ES2022,
  lib: ["lib.es2022.d.ts", "lib.dom.d.ts", "lib.dom.iterable.d.ts"],
  types: [],
  strict: true,
};

/** The compiler's diagnostics as the messages it would print. */
export const diagnosticMessages = (diagnostics: readonly ts.Diagnostic[]) =>
  diagnostics.map((d) => ts.flattenDiagnosticMessageText(d.messageText, "\n"));
