import * as v from 'valibot';
import type { OperationContext } from '../../../engine/context.ts';
import { fail } from '../../../conventions/errors.ts';
import { coded, refusedField, zeroIsUnset } from '../../../conventions/fields.ts';
import { EDGES_ERRORS } from '../errors.ts';
import { type ModuleSpec, type StoredModule, at, enabled } from './spec.ts';

/** TLS termination, on TLS edges and (always at the edge) on HTTPS edges. */

export const TLS_VERSIONS = ['1.2', '1.3'] as const;
const TERMINATE_AT = ['edge', 'upstream'] as const;

const minVersion = v.optional(
  v.nullable(v.picklist(TLS_VERSIONS, (issue) => coded(EDGES_ERRORS.TLS_VERSION_UNSUPPORTED, `${JSON.stringify(issue.input)} is not a supported TLS version; supported: ${TLS_VERSIONS.join(', ')} (null: the service default, 1.2)`))),
);

const respondTermination = (_ctx: OperationContext, stored: StoredModule) => ({ enabled: stored.enabled, terminate_at: stored.terminate_at, min_version: stored.min_version });

/**
 * TLS termination on TLS edges. `upstream` passes TLS through to the agent or application, so a
 * minimum version cannot apply (it must be null) and modules that need the decrypted traffic are
 * refused on the edge (see tls.ts). `min_version` null means the service default, TLS 1.2.
 */
export const TLS_TERMINATION_MODULE: ModuleSpec = {
  name: 'tls_termination',
  label: 'TLS termination',
  schema: v.strictObject({
    enabled,
    terminate_at: zeroIsUnset(v.picklist(TERMINATE_AT, (issue) => coded(EDGES_ERRORS.TERMINATE_AT_INVALID, `${JSON.stringify(issue.input)} is not valid; must be either 'edge' or 'upstream'`))),
    min_version: minVersion,
  }),
  store(_ctx, input: { enabled?: boolean; terminate_at?: 'edge' | 'upstream'; min_version?: string | null }, field) {
    const terminateAt = input.terminate_at ?? 'edge';
    const version = input.min_version ?? null;
    if (terminateAt === 'upstream' && version !== null) {
      fail('INVALID_FIELD', `${at(field, 'min_version')}: must be null when terminate_at is upstream (TLS is then terminated by the upstream, not the edge; got ${JSON.stringify(version)})`);
    }
    return { enabled: input.enabled ?? true, terminate_at: terminateAt, min_version: version };
  },
  respond: respondTermination,
};

/** TLS termination on HTTPS edges: always at the edge, so `terminate_at` may not be sent (7109). */
export const HTTPS_TLS_TERMINATION_MODULE: ModuleSpec = {
  name: 'tls_termination',
  label: 'TLS termination',
  schema: v.strictObject({
    enabled,
    min_version: minVersion,
    terminate_at: refusedField('may not be set on an HTTPS edge: HTTPS edges always terminate TLS at the edge', EDGES_ERRORS.TERMINATE_AT_ON_HTTPS_EDGE),
  }),
  store: (_ctx, input: { enabled?: boolean; min_version?: string | null }) => ({ enabled: input.enabled ?? true, terminate_at: 'edge', min_version: input.min_version ?? null }),
  respond: respondTermination,
};
