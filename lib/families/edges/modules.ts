import * as v from 'valibot';
import type { OperationContext } from '../../engine/context.ts';
import { fail } from '../../conventions/errors.ts';
import { type Schema } from '../../conventions/fields.ts';
import type { ModuleSpec, StoredModule } from './modules/spec.ts';

/**
 * The edge modules: one spec per module (modules/: its request "mutate" schema, how it is checked
 * and stored, the ids it points at, its response shape), and what edges and routes do with a set of
 * specs (below): their bodies, PATCH rules, references and responses, and the module endpoints
 * (module-endpoints.ts) are all derived from the specs, so a module is described once.
 */

export type { ModuleSpec, StoredModule } from './modules/spec.ts';
export { DEFAULT_COOKIE_PREFIX } from './modules/spec.ts';
export { BACKEND_MODULE, IP_RESTRICTION_MODULE, MUTUAL_TLS_MODULE } from './modules/references.ts';
export { HTTPS_TLS_TERMINATION_MODULE, TLS_TERMINATION_MODULE } from './modules/tls.ts';
export { policyModule, trafficPolicyModule } from './modules/policy.ts';
export { CIRCUIT_BREAKER_MODULE, COMPRESSION_MODULE, REQUEST_HEADERS_MODULE, RESPONSE_HEADERS_MODULE, USER_AGENT_FILTER_MODULE, WEBHOOK_VERIFICATION_MODULE, WEBSOCKET_TCP_CONVERTER_MODULE } from './modules/http.ts';
export { OAUTH_MODULE, OIDC_MODULE, SAML_MODULE } from './modules/identity.ts';

/** The modules of an edge or route as stored: every module key, `null` when unset. */
export type StoredModules = Record<string, StoredModule | null>;

/**
 * Body schema entries for a set: each module optional, `null` allowed (unset on create; refused on
 * PATCH).
 */
export function moduleFields(specs: readonly ModuleSpec[]): Record<string, Schema> {
  return Object.fromEntries(specs.map((spec) => [spec.name, v.optional(v.nullable(spec.schema))]));
}

/** Stores the modules of a create body; absent and null modules are unset. */
export async function storeModules(ctx: OperationContext, specs: readonly ModuleSpec[], input: Record<string, unknown>): Promise<StoredModules> {
  refuseBothReplacements(specs, input);
  const out: StoredModules = {};
  for (const spec of specs) out[spec.name] = input[spec.name] == null ? null : await spec.store(ctx, input[spec.name], spec.name);
  return out;
}

/** A body may set `policy` or `traffic_policy`, not both: they are one policy in two dialects. */
function refuseBothReplacements(specs: readonly ModuleSpec[], body: Record<string, unknown>): void {
  for (const spec of specs) {
    if (spec.replaces && body[spec.name] != null && body[spec.replaces] != null) {
      fail('INVALID_FIELD', `${spec.name}: send either ${spec.replaces} (the 0.11.0 clients' form) or ${spec.name}, not both; an edge or route has one traffic policy`);
    }
  }
}

/**
 * What setting module `name` unsets besides: the module it replaced, or the one that replaced it.
 */
export function displacedModules(specs: readonly ModuleSpec[], name: string, stored: StoredModule | null): StoredModules {
  if (!stored) return {};
  const other = specs.find((spec) => spec.name === name)?.replaces ?? specs.find((spec) => spec.replaces === name)?.name;
  return other && specs.some((spec) => spec.name === other) ? { [other]: null } : {};
}

/**
 * The modules a PATCH replaces: absent ones are left as they are, present ones are replaced whole,
 * and `null` is refused, because modules are removed only through their own DELETE endpoint.
 */
export async function patchModules(ctx: OperationContext, specs: readonly ModuleSpec[], patch: Record<string, unknown>, endpoint: string): Promise<StoredModules> {
  refuseBothReplacements(specs, patch);
  const out: StoredModules = {};
  for (const spec of specs) {
    const value = patch[spec.name];
    if (value === undefined) continue;
    if (value === null) fail('INVALID_FIELD', `${spec.name}: a module cannot be removed by an update; use DELETE ${endpoint}/${spec.name}`);
    out[spec.name] = await spec.store(ctx, value, spec.name);
    Object.assign(out, displacedModules(specs, spec.name, out[spec.name] ?? null));
  }
  return out;
}

/** The ids every set module of a record points at. */
export function moduleReferences(specs: readonly ModuleSpec[], record: Readonly<Record<string, unknown>>): string[] {
  return specs.flatMap((spec) => {
    const stored = record[spec.name] as StoredModule | null | undefined;
    return stored && spec.references ? spec.references(stored) : [];
  });
}

/** Every module key of a record in its response shape, `null` when unset. */
export function moduleResponses(ctx: OperationContext, specs: readonly ModuleSpec[], record: Readonly<Record<string, unknown>>, holderId: string): Record<string, unknown> {
  return Object.fromEntries(
    specs.map((spec) => {
      const stored = record[spec.name] as StoredModule | null | undefined;
      return [spec.name, stored ? spec.respond(ctx, stored, holderId) : null];
    }),
  );
}
