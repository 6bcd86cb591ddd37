/**
 * A value made on its first use and kept. The modules that wrap a library which only some requests
 * need (YAML, CEL, RE2, sshpk) load it through this on their first call, with
 * `createRequire(import.meta.url)('…')`, instead of importing it at the top: a server that never
 * reads a policy or an SSH key does not pay for those libraries at start-up (docs/benchmarks.md).
 * Loading is synchronous because the first call can come from inside a synchronous validation; a
 * library that is ESM only is loaded by require() too (Node >= 20.19, package.json engines).
 */
export function onFirstUse<T>(make: () => T): () => T {
  let made: { value: T } | undefined;
  return () => (made ??= { value: make() }).value;
}
