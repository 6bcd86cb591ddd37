import * as v from 'valibot';
import { operatorIn, type ControlOperation, type OperationContext } from '../context.ts';
import { formatTime } from '../conventions/clock.ts';
import { ApiError, ERRORS, fail } from '../conventions/errors.ts';
import { coded, description, metadata, parseInput, refusedField, zeroIsUnset } from '../conventions/fields.ts';
import { claimUnique, releaseUnique } from '../indexes.ts';
import { defineResource, emitAudit, respond, type BaseRecord } from '../resource.ts';
import { INSTANCE_SCOPE } from '../store.ts';
import { isDnsName } from './acl.ts';

/**
 * Agent ingresses (/agent_ingresses): a domain the customer owns, delegated to the service by NS
 * records, from which regional agent connection domains are generated. Domains are unique across
 * the whole instance (a unique index in the instance scope) and cannot change. `uri` is a path, as the
 * spec says.
 *
 * With a `certificate_management_policy`, a provisioning job starts (on create, and whenever the
 * policy is set again). The control plane decides how it ends: success (the job clears,
 * `renews_at` = now + 60 days), INTERNAL_ERROR (temporary: retried at `retries_at`, 5 minutes
 * later, when a new attempt starts) or DNS_ERROR (permanent until the policy is set again).
 */

const INGRESS_KIND = 'agent_ingress';
/** Domains are unique instance-wide: a unique index in the instance scope, held by `<account>/<ingress id>`. */
const holderOf = (account: string, id: string) => `${account}/${id}`;
const RETRY_SECONDS = 5 * 60;
const RENEW_AFTER_SECONDS = 60 * 24 * 3600;

interface ProvisioningJob {
  readonly error_code: 'INTERNAL_ERROR' | 'DNS_ERROR' | null;
  readonly msg: string;
  readonly started_at: string;
  readonly retries_at: string | null;
}

export interface AgentIngressRecord extends BaseRecord {
  readonly domain: string;
  readonly certificate_management_policy: { authority: string; private_key_type: 'rsa' | 'ecdsa' } | null;
  readonly renews_at: string | null;
  readonly provisioning_job: ProvisioningJob | null;
}

const CertPolicy = v.nullable(
  v.strictObject({
    authority: zeroIsUnset(v.string()),
    private_key_type: zeroIsUnset(v.picklist(['rsa', 'ecdsa'], (issue) => `must be rsa or ecdsa (got ${JSON.stringify(issue.input)})`)),
  }),
);

const IngressCreate = v.strictObject({
  description: v.optional(description),
  metadata: v.optional(metadata),
  domain: v.string(),
  certificate_management_policy: v.optional(CertPolicy),
});

const IngressUpdate = v.strictObject({
  description: v.optional(description),
  metadata: v.optional(metadata),
  certificate_management_policy: v.optional(CertPolicy),
  domain: refusedField('cannot be changed; delete the agent ingress and create one for the new domain'),
});

function validDomain(ctx: OperationContext, input: string): string {
  const domain = input.trim().toLowerCase().replace(/\.$/, '');
  const ipLike = /^[\d.]+$/.test(domain) || domain.includes(':');
  if (ipLike || !isDnsName(domain) || !domain.includes('.')) {
    throw new ApiError(ERRORS.INGRESS_DOMAIN_INVALID, `domain: ${JSON.stringify(input)} is not a valid domain name (letters, digits and hyphens; labels of at most 63 characters; at most 253 in all; not an IP address)`);
  }
  const zone = ctx.services.simulation.serviceZone;
  if (domain === zone || domain.endsWith(`.${zone}`)) {
    throw new ApiError(ERRORS.INGRESS_DOMAIN_NOT_THIRD_PARTY, `domain: ${domain} belongs to the service's own zone ${zone}; use a domain you own`);
  }
  return domain;
}

function validPolicy(ctx: OperationContext, policy: v.InferOutput<typeof CertPolicy> | undefined): AgentIngressRecord['certificate_management_policy'] {
  if (!policy) return null;
  const supported = ctx.services.simulation.certificateAuthority;
  const authority = policy.authority ?? supported;
  if (authority !== supported) fail('INVALID_FIELD', `certificate_management_policy.authority: the only supported authority is ${supported} (got ${JSON.stringify(authority)})`);
  return { authority, private_key_type: policy.private_key_type ?? 'rsa' };
}

function newJob(ctx: OperationContext): ProvisioningJob {
  return { error_code: null, msg: 'provisioning a certificate', started_at: formatTime(ctx.clock.now()), retries_at: null };
}

/** The job as of now: a temporary failure whose retry time has passed is a new attempt. */
function currentJob(record: AgentIngressRecord, now: Date): ProvisioningJob | null {
  const job = record.provisioning_job;
  if (job?.error_code === 'INTERNAL_ERROR' && job.retries_at && new Date(job.retries_at).getTime() <= now.getTime()) {
    return { error_code: null, msg: 'retrying certificate provisioning', started_at: job.retries_at, retries_at: null };
  }
  return job;
}

export const agentIngresses = defineResource<AgentIngressRecord, typeof IngressCreate, typeof IngressUpdate>({
  name: 'agent_ingresses',
  label: 'agent ingress',
  kind: INGRESS_KIND,
  prefix: 'agin',
  path: '/agent_ingresses',
  listKey: 'ingresses',
  event: 'agent_ingress',
  createSchema: IngressCreate,
  updateSchema: IngressUpdate,
  async create(ctx, input, base) {
    const domain = validDomain(ctx, input.domain);
    if (await claimUnique(ctx.tx, INSTANCE_SCOPE, INGRESS_KIND, 'domain', domain, holderOf(ctx.account, base.id))) {
      throw new ApiError(ERRORS.INGRESS_DOMAIN_EXISTS, `domain: ${domain} is already an agent ingress`, { domain });
    }
    const policy = validPolicy(ctx, input.certificate_management_policy);
    return { ...base, domain, certificate_management_policy: policy, renews_at: null, provisioning_job: policy ? newJob(ctx) : null };
  },
  update(ctx, record, patch) {
    if (patch.certificate_management_policy === undefined) return record;
    const policy = validPolicy(ctx, patch.certificate_management_policy);
    return { ...record, certificate_management_policy: policy, renews_at: policy ? record.renews_at : null, provisioning_job: policy ? newJob(ctx) : null };
  },
  toResponse: (ctx, record, base) => ({
    ...base,
    uri: `/agent_ingresses/${record.id}`,
    domain: record.domain,
    ns_targets: [...ctx.services.simulation.ingressNameServers],
    region_domains: ctx.services.simulation.regions.map((region) => `tunnel.${region}.${record.domain}`),
    certificate_management_policy: record.certificate_management_policy,
    certificate_management_status: record.certificate_management_policy
      ? { renews_at: record.renews_at, provisioning_job: currentJob(record, ctx.clock.now()) }
      : null,
  }),
  async beforeDelete(ctx, record) {
    await releaseUnique(ctx.tx, INSTANCE_SCOPE, INGRESS_KIND, 'domain', record.domain, holderOf(ctx.account, record.id));
  },
});

const OUTCOMES = ['success', 'INTERNAL_ERROR', 'DNS_ERROR'] as const;
const ProvisioningBody = v.strictObject({
  outcome: v.picklist(OUTCOMES, (issue) => `must be one of ${OUTCOMES.join(', ')} (got ${JSON.stringify(issue.input)})`),
  msg: v.optional(v.string()),
});

/** Control plane: decide how the current provisioning job of an agent ingress ends. */
export const AGENT_INGRESS_CONTROL_OPERATIONS: readonly ControlOperation[] = [
  {
    id: 'control.agent_ingresses.provisioning',
    method: 'POST',
    path: '/accounts/:account_id/agent_ingresses/:id/provisioning',
    status: 200,
    body: ProvisioningBody,
    summary: "Finish an agent ingress's certificate provisioning job: success, INTERNAL_ERROR (retried) or DNS_ERROR",
    async run(instance, input) {
      const body = parseInput(ProvisioningBody, input.body ?? {});
      const account = input.params.account_id!;
      const scope = { account, kind: INGRESS_KIND };
      return instance.perform(operatorIn(account), async (ctx) => {
        const { tx, clock } = ctx;
        const record = (await tx.get(scope, input.params.id!)) as AgentIngressRecord | undefined;
        if (!record) fail('NOT_FOUND', `agent ingress '${input.params.id}' was not found in account '${account}'`);
        const now = clock.now();
        const job = currentJob(record, now);
        if (!record.certificate_management_policy || !job || job.error_code !== null) {
          fail('CONFLICT', `agent ingress '${record.id}' has no certificate provisioning job in progress`);
        }
        const at = formatTime(now);
        const next: AgentIngressRecord =
          body.outcome === 'success'
            ? { ...record, provisioning_job: null, renews_at: formatTime(new Date(now.getTime() + RENEW_AFTER_SECONDS * 1000)) }
            : {
                ...record,
                provisioning_job: {
                  error_code: body.outcome,
                  msg: body.msg ?? (body.outcome === 'DNS_ERROR' ? `the NS records of ${record.domain} do not point at the ns_targets` : 'a temporary error; provisioning will be retried'),
                  started_at: job.started_at,
                  retries_at: body.outcome === 'INTERNAL_ERROR' ? formatTime(new Date(now.getTime() + RETRY_SECONDS * 1000)) : null,
                },
              };
        await tx.put(scope, next);
        emitAudit(ctx, agentIngresses, 'updated', respond(ctx, agentIngresses, next));
        return { id: record.id, outcome: body.outcome, decided_at: at };
      });
    },
  },
];
