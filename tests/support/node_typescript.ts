/**
 * TypeScript as a Node project compiles it: ES modules resolved the Node
 * way, only the standard and DOM libraries (no Deno or Node types), strict.
 */
import ts from "typescript";

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
