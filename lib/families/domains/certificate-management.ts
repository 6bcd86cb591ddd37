import * as v from 'valibot';
import { operatorIn, type ControlOperationSpec, type Instance, type OperationContext } from '../../engine/context.ts';
import { formatTime } from '../../conventions/clock.ts';
import { fail } from '../../conventions/errors.ts';
import { parseInput, rfc3339, zeroIsUnset } from '../../conventions/fields.ts';
import { replaceRecord, type BaseRecord, type ResourceDefinition } from '../../engine/resource.ts';

/**
 * Automatic certificate management, shared by agent ingresses and reserved domains: a
 * `certificate_management_policy` ({authority, private_key_type}) and the simulated ACME issuance
 * it starts, answered as `certificate_management_status` ({renews_at, provisioning_job}).
 *
 * A provisioning job starts when a policy is set (on create, and whenever it is set again). A test
 * decides how it ends through the control plane: success (the job clears, `renews_at` = now + 60
 * days), INTERNAL_ERROR (temporary: retried at `retries_at`, 5 minutes later, when a new attempt
 * starts) or DNS_ERROR (permanent until the policy is set again). Times come from the instance
 * clock, so tests move through retries without sleeping.
 */

const RETRY_SECONDS = 5 * 60;
const RENEW_AFTER_SECONDS = 60 * 24 * 3600;

export type PrivateKeyType = 'rsa' | 'ecdsa';

export interface CertificatePolicy {
  readonly authority: string;
  readonly private_key_type: PrivateKeyType;
}

export interface ProvisioningJob {
  readonly error_code: 'INTERNAL_ERROR' | 'DNS_ERROR' | null;
  readonly msg: string;
  readonly started_at: string;
  readonly retries_at: string | null;
}

/** The stored-record schema of the status fields (the policy is checked as the create body checks it). */
export const MANAGED_CERTIFICATE_STORED = {
  renews_at: v.nullable(rfc3339),
  provisioning_job: v.nullable(
    v.strictObject({ error_code: v.nullable(v.picklist(['INTERNAL_ERROR', 'DNS_ERROR'])), msg: v.string(), started_at: rfc3339, retries_at: v.nullable(rfc3339) }),
  ),
};

/** The stored fields of a record whose certificates can be managed. */
export interface ManagedCertificateFields {
  readonly certificate_management_policy: CertificatePolicy | null;
  readonly renews_at: string | null;
  readonly provisioning_job: ProvisioningJob | null;
}

/** The request shape of a policy: both fields optional (`""` counts as not sent); `null` = none. */
export const CertificatePolicyInput = v.nullable(
  v.strictObject({
    authority: zeroIsUnset(v.string()),
    private_key_type: zeroIsUnset(v.picklist(['rsa', 'ecdsa'], (issue) => `must be rsa or ecdsa (got ${JSON.stringify(issue.input)})`)),
  }),
);

function resolvePolicy(ctx: OperationContext, policy: v.InferOutput<typeof CertificatePolicyInput> | undefined, defaultKeyType: PrivateKeyType): CertificatePolicy | null {
  if (!policy) return null;
  const supported = ctx.services.simulation.certificateAuthority;
  const authority = policy.authority ?? supported;
  if (authority !== supported) fail('INVALID_FIELD', `certificate_management_policy.authority: the only supported authority is ${supported} (got ${JSON.stringify(authority)})`);
  return { authority, private_key_type: policy.private_key_type ?? defaultKeyType };
}

/**
 * The managed-certificate fields after a policy was sent: a policy starts a new provisioning job
 * (keeping the renewal time of a certificate already issued), `null` turns management off.
 */
export function applyCertificatePolicy(
  ctx: OperationContext,
  current: ManagedCertificateFields | undefined,
  input: v.InferOutput<typeof CertificatePolicyInput> | undefined,
  defaultKeyType: PrivateKeyType,
): ManagedCertificateFields {
  const policy = resolvePolicy(ctx, input, defaultKeyType);
  if (!policy) return { certificate_management_policy: null, renews_at: null, provisioning_job: null };
  const job: ProvisioningJob = { error_code: null, msg: 'provisioning a certificate', started_at: formatTime(ctx.clock.now()), retries_at: null };
  return { certificate_management_policy: policy, renews_at: current?.renews_at ?? null, provisioning_job: job };
}

/** The job as of now: a temporary failure whose retry time has passed is a new attempt. */
function currentJob(record: ManagedCertificateFields, now: Date): ProvisioningJob | null {
  const job = record.provisioning_job;
  if (job?.error_code === 'INTERNAL_ERROR' && job.retries_at && new Date(job.retries_at).getTime() <= now.getTime()) {
    return { error_code: null, msg: 'retrying certificate provisioning', started_at: job.retries_at, retries_at: null };
  }
  return job;
}

/** `certificate_management_status` as the API answers it: null without a policy. */
export function certificateStatus(record: ManagedCertificateFields, now: Date): { renews_at: string | null; provisioning_job: ProvisioningJob | null } | null {
  return record.certificate_management_policy ? { renews_at: record.renews_at, provisioning_job: currentJob(record, now) } : null;
}

const OUTCOMES = ['success', 'INTERNAL_ERROR', 'DNS_ERROR'] as const;
const ProvisioningBody = v.strictObject({
  outcome: v.picklist(OUTCOMES, (issue) => `must be one of ${OUTCOMES.join(', ')} (got ${JSON.stringify(issue.input)})`),
  msg: v.optional(v.string()),
});

/**
 * What a successful provisioning job leaves behind besides the renewal time (reserved domains: an
 * issued TLS certificate). `prepare` runs before the transaction (key generation is slow) on the
 * record as read then; `apply` runs inside it and answers the record to store.
 */
export interface CertificateIssuance<R, P> {
  prepare(instance: Instance, record: R): Promise<P>;
  apply(ctx: OperationContext, record: R, prepared: P): Promise<R>;
}

/**
 * The control-plane operation that decides how the current provisioning job of a record of `def`
 * ends: `POST /_burrow/accounts/{account_id}<path>/{id}/provisioning` with `{outcome, msg?}`.
 * `dnsError` is the default message of a DNS_ERROR (what the user's DNS lacks).
 */
export function provisioningControlOperation<R extends BaseRecord & ManagedCertificateFields, P = never>(
  def: ResourceDefinition<R, any, any>,
  dnsError: (record: R) => string,
  issuance?: CertificateIssuance<R, P>,
): ControlOperationSpec {
  return {
    id: `control.${def.name}.provisioning`,
    route: `POST /accounts/:account_id${def.path}/:id/provisioning`,
    body: ProvisioningBody,
    summary: `Finish the certificate provisioning job of a ${def.label}: success, INTERNAL_ERROR (retried) or DNS_ERROR`,
    async run(instance, input) {
      const body = parseInput(ProvisioningBody, input.body ?? {});
      const account = input.params.account_id!;
      const scope = { account, kind: def.kind };
      const seen = issuance && body.outcome === 'success' ? ((await instance.reader.get(scope, input.params.id!)) as R | undefined) : undefined;
      const prepared = seen?.certificate_management_policy ? await issuance!.prepare(instance, seen) : undefined;
      return instance.perform(operatorIn(account), async (ctx) => {
        const record = (await ctx.tx.get(scope, input.params.id!)) as R | undefined;
        if (!record) fail('NOT_FOUND', `${def.label} '${input.params.id}' was not found in account '${account}'`);
        const now = ctx.clock.now();
        const job = currentJob(record, now);
        if (!record.certificate_management_policy || !job || job.error_code !== null) {
          fail('CONFLICT', `${def.label} '${record.id}' has no certificate provisioning job in progress`);
        }
        let next: R =
          body.outcome === 'success'
            ? { ...record, provisioning_job: null, renews_at: formatTime(new Date(now.getTime() + RENEW_AFTER_SECONDS * 1000)) }
            : {
                ...record,
                provisioning_job: {
                  error_code: body.outcome,
                  msg: body.msg ?? (body.outcome === 'DNS_ERROR' ? dnsError(record) : 'a temporary error; provisioning will be retried'),
                  started_at: job.started_at,
                  retries_at: body.outcome === 'INTERNAL_ERROR' ? formatTime(new Date(now.getTime() + RETRY_SECONDS * 1000)) : null,
                },
              };
        if (prepared !== undefined) next = await issuance!.apply(ctx, next, prepared);
        await replaceRecord(ctx, def, record, next);
        return { id: record.id, outcome: body.outcome, decided_at: formatTime(now) };
      });
    },
  };
}
