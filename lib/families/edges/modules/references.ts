import * as v from 'valibot';
import { ApiError } from '../../../conventions/errors.ts';
import { makeRef } from '../../../conventions/refs.ts';
import { existingIds } from '../../../engine/references.ts';
import { scopeOf } from '../../../engine/resource.ts';
import { backendRef, requireBackend } from '../../backends/index.ts';
import { certificateAuthorities, CERTIFICATE_AUTHORITY_KIND } from '../../certificate-authorities/index.ts';
import { ipPolicies, requirePolicy } from '../../ip-policies/index.ts';
import { EDGES_ERRORS } from '../errors.ts';
import { type ModuleSpec, at, enabled } from './spec.ts';

/** Modules that point at other records: backend, ip_restriction, mutual_tls. */

/**
 * The ids a module points at; left out means none. The vendor's Go client (omitempty) leaves an
 * empty list out, so a module it turns off arrives as `{"enabled": false}` alone.
 */
const idList = v.optional(v.array(v.string()), []);

export const BACKEND_MODULE: ModuleSpec = {
  name: 'backend',
  label: 'backend',
  schema: v.strictObject({ enabled, backend_id: v.string() }),
  async store(ctx, input: { enabled?: boolean; backend_id: string }, field) {
    await requireBackend(ctx, input.backend_id, at(field, 'backend_id'));
    return { enabled: input.enabled ?? true, backend_id: input.backend_id };
  },
  references: (stored) => [stored.backend_id as string],
  respond: (ctx, stored) => ({ enabled: stored.enabled, backend: backendRef(ctx, stored.backend_id as string) }),
};

export const IP_RESTRICTION_MODULE: ModuleSpec = {
  name: 'ip_restriction',
  label: 'IP restriction',
  schema: v.strictObject({ enabled, ip_policy_ids: idList }),
  async store(ctx, input: { enabled?: boolean; ip_policy_ids: string[] }, field) {
    const ids = await existingIds(input.ip_policy_ids, (id, index) => requirePolicy(ctx, id, `${at(field, 'ip_policy_ids')}[${index}]`, EDGES_ERRORS.EDGE_IP_POLICY_NOT_FOUND));
    return { enabled: input.enabled ?? true, ip_policy_ids: ids };
  },
  references: (stored) => stored.ip_policy_ids as string[],
  respond: (ctx, stored) => ({ enabled: stored.enabled, ip_policies: (stored.ip_policy_ids as string[]).map((id) => makeRef(ctx.baseUrl, ipPolicies.path, id)) }),
};

export const MUTUAL_TLS_MODULE: ModuleSpec = {
  name: 'mutual_tls',
  label: 'mutual TLS',
  schema: v.strictObject({ enabled, certificate_authority_ids: idList }),
  async store(ctx, input: { enabled?: boolean; certificate_authority_ids: string[] }, field) {
    const ids = await existingIds(input.certificate_authority_ids, async (id, index) => {
      if (!(await ctx.tx.get(scopeOf(ctx, CERTIFICATE_AUTHORITY_KIND), id))) {
        throw new ApiError(EDGES_ERRORS.EDGE_CA_NOT_FOUND, `${at(field, 'certificate_authority_ids')}[${index}]: certificate authority '${id}' was not found`, { id });
      }
    });
    return { enabled: input.enabled ?? true, certificate_authority_ids: ids };
  },
  references: (stored) => stored.certificate_authority_ids as string[],
  respond: (ctx, stored) => ({
    enabled: stored.enabled,
    certificate_authorities: (stored.certificate_authority_ids as string[]).map((id) => makeRef(ctx.baseUrl, certificateAuthorities.path, id)),
  }),
};
