import * as v from 'valibot';
import type { ControlOperationSpec, OperationContext } from '../../engine/context.ts';
import { ApiError, ERRORS } from '../../conventions/errors.ts';
import { description, metadata, refusedField } from '../../conventions/fields.ts';
import { claimUnique, releaseUnique } from '../../engine/indexes.ts';
import { defineResource, type BaseRecord } from '../../engine/resource.ts';
import { INSTANCE_SCOPE } from '../../store.ts';
import { isDnsName } from '../../conventions/acl.ts';
import { applyCertificatePolicy, CertificatePolicyInput, certificateStatus, MANAGED_CERTIFICATE_STORED, provisioningControlOperation, type ManagedCertificateFields } from './certificate-management.ts';
import { DOMAINS_ERRORS } from './errors.ts';

/**
 * Agent ingresses (/agent_ingresses): a domain the customer owns, delegated to the service by NS
 * records, from which regional agent connection domains are generated. Domains are unique across
 * the whole instance (a unique index in the instance scope) and cannot change. `uri` is a path, as the
 * spec says.
 *
 * A `certificate_management_policy` (default key type rsa) starts a simulated provisioning job
 * (./certificate-management.ts).
 */

/** Domains are unique instance-wide: a unique index in the instance scope, held by `<account>/<ingress id>`. */
const holderOf = (account: string, id: string) => `${account}/${id}`;

export interface AgentIngressRecord extends BaseRecord, ManagedCertificateFields {
  readonly domain: string;
}

const IngressCreate = v.strictObject({
  description: v.optional(description),
  metadata: v.optional(metadata),
  domain: v.string(),
  certificate_management_policy: v.optional(CertificatePolicyInput),
});

const IngressUpdate = v.strictObject({
  description: v.optional(description),
  metadata: v.optional(metadata),
  certificate_management_policy: v.optional(CertificatePolicyInput),
  domain: refusedField('cannot be changed; delete the agent ingress and create one for the new domain'),
});

function validDomain(ctx: OperationContext, input: string): string {
  const domain = input.trim().toLowerCase().replace(/\.$/, '');
  const ipLike = /^[\d.]+$/.test(domain) || domain.includes(':');
  if (ipLike || !isDnsName(domain) || !domain.includes('.')) {
    throw new ApiError(DOMAINS_ERRORS.INGRESS_DOMAIN_INVALID, `domain: ${JSON.stringify(input)} is not a valid domain name (letters, digits and hyphens; labels of at most 63 characters; at most 253 in all; not an IP address)`);
  }
  const zone = ctx.services.simulation.serviceZone;
  if (domain === zone || domain.endsWith(`.${zone}`)) {
    throw new ApiError(DOMAINS_ERRORS.INGRESS_DOMAIN_NOT_THIRD_PARTY, `domain: ${domain} belongs to the service's own zone ${zone}; use a domain you own`);
  }
  return domain;
}

export const agentIngresses = defineResource<AgentIngressRecord, typeof IngressCreate, typeof IngressUpdate>({
  name: 'agent_ingresses',
  label: 'agent ingress',
  prefix: 'agin',
  listKey: 'ingresses',
  filterable: true,
  event: 'agent_ingress',
  createSchema: IngressCreate,
  updateSchema: IngressUpdate,
  storedFields: MANAGED_CERTIFICATE_STORED,
  async create(ctx, input, base) {
    const domain = validDomain(ctx, input.domain);
    if (await claimUnique(ctx.tx, INSTANCE_SCOPE, agentIngresses.kind, 'domain', domain, holderOf(ctx.account, base.id))) {
      throw new ApiError(DOMAINS_ERRORS.INGRESS_DOMAIN_EXISTS, `domain: ${domain} is already an agent ingress`, { domain });
    }
    return { ...base, domain, ...applyCertificatePolicy(ctx, undefined, input.certificate_management_policy, 'rsa') };
  },
  update(ctx, record, patch) {
    if (patch.certificate_management_policy === undefined) return record;
    return { ...record, ...applyCertificatePolicy(ctx, record, patch.certificate_management_policy, 'rsa') };
  },
  toResponse: (ctx, record, base) => ({
    ...base,
    uri: `/agent_ingresses/${record.id}`,
    domain: record.domain,
    ns_targets: [...ctx.services.simulation.ingressNameServers],
    region_domains: ctx.services.simulation.regions.map((region) => `tunnel.${region}.${record.domain}`),
    certificate_management_policy: record.certificate_management_policy,
    certificate_management_status: certificateStatus(record, ctx.clock.now()),
  }),
  async beforeDelete(ctx, record) {
    await releaseUnique(ctx.tx, INSTANCE_SCOPE, agentIngresses.kind, 'domain', record.domain, holderOf(ctx.account, record.id));
  },
});

/** Control plane: decide how the current provisioning job of an agent ingress ends. */
export const AGENT_INGRESS_CONTROL_OPERATIONS: readonly ControlOperationSpec[] = [
  provisioningControlOperation(agentIngresses, (record) => `the NS records of ${record.domain} do not point at the ns_targets`),
];
