import * as v from 'valibot';
import type { ControlOperationSpec, Instance, OperationContext } from '../../engine/context.ts';
import { ApiError, ERRORS } from '../../conventions/errors.ts';
import { description, metadata, refusedField, storedId, zeroIsUnset } from '../../conventions/fields.ts';
import { claimUnique, findUnique, releaseUnique } from '../../engine/indexes.ts';
import { defineResource, getRecord, refTo, replaceRecord, type BaseRecord } from '../../engine/resource.ts';
import { INSTANCE_SCOPE, type StoreReader } from '../../store.ts';
import { isDnsName } from '../../conventions/acl.ts';
import { applyCertificatePolicy, CertificatePolicyInput, certificateStatus, MANAGED_CERTIFICATE_STORED, provisioningControlOperation, type ManagedCertificateFields } from './certificate-management.ts';
import { issueCertificate, type IssuedCertificate } from './simulated-issuer.ts';
import { storeIssuedCertificate, TLS_CERTIFICATE_KIND, tlsCertificates, type TlsCertificateRecord } from '../tls-certificates/index.ts';
import { DOMAINS_ERRORS } from './errors.ts';

/**
 * Reserved domains (/reserved_domains): hostnames an account listens on. A domain is either a
 * name of its own (`app.example.com`, or a wildcard `*.example.com`), which the customer points at
 * the service with a CNAME to `cname_target`, or a single label under the service's own zone
 * (`app.burrow.internal`), which needs no DNS and gets no `cname_target`. Domains are unique across
 * the whole instance (a unique index in the instance scope: 413 when the caller's account holds it,
 * 414 when another does) and cannot change; `region` is deprecated, kept as sent (`""` when not).
 *
 * TLS: either an uploaded certificate (`certificate_id`, a TLS certificate of the account, which is
 * then not deleted while the domain uses it) or a `certificate_management_policy` (default key
 * type ecdsa; simulated issuance, ./certificate-management.ts), never both in one request (434).
 * Setting one replaces the other. A provisioning job that succeeds issues a real certificate
 * (./simulated-issuer.ts), stored as a TLS certificate of the account with `issued_at`, which
 * becomes the domain's `certificate` (the last one issued; a policy set again keeps it until the
 * next one, an upload replaces it). `DELETE …/certificate` detaches the certificate (436 while a
 * policy manages it) and `DELETE …/certificate_management_policy` turns management off (the
 * issued certificate stays until detached).
 * Domains of the service's zone take neither (439, 440): the service's own certificate covers them.
 *
 * A domain that an edge or endpoint uses (a referrer record, lib/engine/references.ts) is not deleted (446).
 *
 * `resolves_to` pins the points of presence the domain resolves to (`[{ "value": "eu" }, …]`, each a
 * region of the simulation or `global`; an unknown one is 400, a repeated one 215). `[]`, the
 * default, resolves everywhere, and an update that sends `[]` un-pins the domain; an update that
 * leaves the field out keeps it (the vendor's Go client leaves an empty list out). The vendor's
 * dedicated-IP entries (`ip:port`, a preview there) are not simulated and are refused like an
 * unknown region. Burrow stores and answers the pins; it does not serve traffic by region.
 */

export const RESERVED_DOMAIN_KIND = 'reserved_domain';
/** Domains are unique instance-wide: a unique index in the instance scope, held by `<account>/<domain id>`. */
const holderOf = (account: string, id: string) => `${account}/${id}`;

export interface ReservedDomainRecord extends BaseRecord, ManagedCertificateFields {
  readonly domain: string;
  readonly region: string;
  readonly cname_target: string | null;
  readonly acme_challenge_cname_target: string | null;
  /** The uploaded certificate. */
  readonly certificate_id: string | null;
  /** The certificate automatic management issued last (absent in records from before issuance). */
  readonly issued_certificate_id?: string | null;
  /** The pinned points of presence (absent in records from before region pinning). */
  readonly resolves_to?: readonly string[];
}

const region = (ctx: OperationContext, value: string | undefined): string => {
  if (value === undefined) return '';
  const regions = ctx.services.simulation.regions;
  if (!regions.includes(value)) throw new ApiError(DOMAINS_ERRORS.RESERVED_DOMAIN_REGION_INVALID, `region: must be one of ${regions.join(', ')} (got ${JSON.stringify(value)})`);
  return value;
};

/** Every point of presence (region) at most once; the values are checked against the simulation in `resolvesTo`. */
const ResolvesTo = v.pipe(
  v.array(v.strictObject({ value: v.string() })),
  v.rawCheck(({ dataset, addIssue }) => {
    if (!dataset.typed) return;
    dataset.value.forEach((entry, index) => {
      if (dataset.value.findIndex((other) => other.value === entry.value) < index) {
        addIssue({ message: `${JSON.stringify(entry.value)} is listed twice`, path: [{ type: 'array', origin: 'value', input: dataset.value, key: index, value: entry }, { type: 'object', origin: 'value', input: entry, key: 'value', value: entry.value }] });
      }
    });
  }),
);

/** The pins of a request, checked against the simulation's regions (and `global`). */
function resolvesTo(ctx: OperationContext, entries: readonly { value: string }[]): string[] {
  const allowed = [...ctx.services.simulation.regions, 'global'];
  return entries.map(({ value }, index) => {
    if (!allowed.includes(value)) throw new ApiError(DOMAINS_ERRORS.RESERVED_DOMAIN_REGION_INVALID, `resolves_to[${index}].value: must be one of ${allowed.join(', ')} (got ${JSON.stringify(value)})`);
    return value;
  });
}

const DomainCreate = v.strictObject({
  domain: v.string(),
  region: zeroIsUnset(v.string()),
  description: v.optional(description),
  metadata: v.optional(metadata),
  certificate_id: zeroIsUnset(v.string()),
  certificate_management_policy: v.optional(CertificatePolicyInput),
  resolves_to: v.optional(ResolvesTo),
});

const DomainUpdate = v.strictObject({
  description: v.optional(description),
  metadata: v.optional(metadata),
  certificate_id: zeroIsUnset(v.string()),
  certificate_management_policy: v.optional(CertificatePolicyInput),
  resolves_to: v.optional(ResolvesTo),
  domain: refusedField('cannot be changed; reserve the new domain and delete this one'),
  region: refusedField('cannot be changed (the field is deprecated: domains are served in every region)', DOMAINS_ERRORS.RESERVED_DOMAIN_REGION_FIXED),
});

/** Where a valid domain lives: under the service's own zone, or a name of the customer's. */
interface ParsedDomain {
  readonly domain: string;
  readonly wildcard: boolean;
  readonly serviceOwned: boolean;
}

function parseDomain(ctx: OperationContext, input: string): ParsedDomain {
  const domain = input.trim().toLowerCase().replace(/\.$/, '');
  const labels = domain.split('.');
  if (labels.slice(1).some((label) => label.includes('*'))) {
    throw new ApiError(DOMAINS_ERRORS.RESERVED_DOMAIN_WILDCARD_PLACEMENT, `domain: only the first label may be a wildcard, as in *.example.com (got ${JSON.stringify(input)})`);
  }
  if (labels[0]!.includes('*') && labels[0] !== '*') {
    throw new ApiError(DOMAINS_ERRORS.RESERVED_DOMAIN_WILDCARD_LABEL, `domain: a wildcard must be the whole first label, as in *.example.com (got ${JSON.stringify(input)})`);
  }
  const wildcard = labels[0] === '*';
  const name = wildcard ? labels.slice(1).join('.') : domain;
  const ipLike = /^[\d.]+$/.test(name) || name.includes(':');
  if (ipLike || !isDnsName(name) || !name.includes('.') || Buffer.byteLength(domain) > 253) {
    throw new ApiError(DOMAINS_ERRORS.RESERVED_DOMAIN_INVALID, `domain: ${JSON.stringify(input)} is not a valid domain name (letters, digits and hyphens; labels of at most 63 characters; at most 253 in all; at least two labels; not an IP address)`);
  }
  const zone = ctx.services.simulation.serviceZone;
  if (domain === zone) throw new ApiError(DOMAINS_ERRORS.RESERVED_DOMAIN_SERVICE_NAME, `domain: ${zone} is the service's own zone; reserve a name under it (app.${zone}) or a domain you own`);
  if (!domain.endsWith(`.${zone}`)) return { domain, wildcard, serviceOwned: false };
  if (wildcard || labels.length !== zone.split('.').length + 1) {
    throw new ApiError(DOMAINS_ERRORS.RESERVED_DOMAIN_SUBDOMAIN, `domain: under the service's zone only a single label may be reserved, as in app.${zone} (got ${JSON.stringify(domain)})`);
  }
  return { domain, wildcard, serviceOwned: true };
}

const BASE36 = '0123456789abcdefghijklmnopqrstuvwxyz';
function randomLabel(ctx: OperationContext, length: number): string {
  return Array.from(ctx.ids.bytes(length), (byte) => BASE36[byte % 36]).join('');
}

/** A CNAME target under the service's zone: `<17 chars>.<16 chars>.<purpose>.<zone>`, as the vendor's look. */
function cnameTarget(ctx: OperationContext, purpose: 'cname' | 'acme'): string {
  return `${randomLabel(ctx, 17)}.${randomLabel(ctx, 16)}.${purpose}.${ctx.services.simulation.serviceZone}`;
}

/** The certificate fields after a request that may set `certificate_id` and/or a policy. */
async function certificateFields(
  ctx: OperationContext,
  record: Pick<ReservedDomainRecord, 'domain' | 'certificate_id' | 'issued_certificate_id'> & Partial<ManagedCertificateFields>,
  serviceOwned: boolean,
  input: { certificate_id?: string | undefined; certificate_management_policy?: v.InferOutput<typeof CertificatePolicyInput> | undefined },
): Promise<Pick<ReservedDomainRecord, 'certificate_id' | 'issued_certificate_id'> & ManagedCertificateFields> {
  const current = {
    certificate_id: record.certificate_id,
    issued_certificate_id: record.issued_certificate_id ?? null,
    certificate_management_policy: record.certificate_management_policy ?? null,
    renews_at: record.renews_at ?? null,
    provisioning_job: record.provisioning_job ?? null,
  };
  const policy = input.certificate_management_policy;
  if (input.certificate_id !== undefined && policy) {
    throw new ApiError(DOMAINS_ERRORS.RESERVED_DOMAIN_CERTIFICATE_AND_POLICY, 'certificate_id, certificate_management_policy: give at most one: an uploaded certificate or automatic management');
  }
  if (input.certificate_id !== undefined) {
    if (serviceOwned) throw new ApiError(DOMAINS_ERRORS.RESERVED_DOMAIN_SERVICE_UPLOAD, `certificate_id: ${record.domain} is in the service's zone and is served with the service's certificate`);
    await getRecord(ctx, tlsCertificates, input.certificate_id);
    return { ...current, certificate_id: input.certificate_id, issued_certificate_id: null, ...applyCertificatePolicy(ctx, undefined, null, 'ecdsa') };
  }
  if (policy === undefined) return current;
  if (policy && serviceOwned) {
    throw new ApiError(DOMAINS_ERRORS.RESERVED_DOMAIN_SERVICE_POLICY, `certificate_management_policy: must be null for ${record.domain}: it is in the service's zone and is served with the service's certificate`);
  }
  return { ...current, certificate_id: policy ? null : current.certificate_id, ...applyCertificatePolicy(ctx, current, policy, 'ecdsa') };
}

/** The certificate the domain is served with: the uploaded one, else the one last issued for it. */
const attachedCertificate = (record: ReservedDomainRecord) => record.certificate_id ?? record.issued_certificate_id ?? null;

const isServiceOwned = (ctx: OperationContext, domain: string) => domain.endsWith(`.${ctx.services.simulation.serviceZone}`);

export const reservedDomains = defineResource<ReservedDomainRecord, typeof DomainCreate, typeof DomainUpdate>({
  name: 'reserved_domains',
  label: 'reserved domain',
  prefix: 'rd',
  filterable: true,
  event: 'domain',
  inUseError: DOMAINS_ERRORS.RESERVED_DOMAIN_IN_USE,
  createSchema: DomainCreate,
  updateSchema: DomainUpdate,
  storedFields: {
    ...MANAGED_CERTIFICATE_STORED,
    cname_target: v.nullable(v.string()),
    acme_challenge_cname_target: v.nullable(v.string()),
    issued_certificate_id: v.optional(v.nullable(storedId('cert'))),
  },
  async create(ctx, input, base) {
    const parsed = parseDomain(ctx, input.domain);
    const regionValue = region(ctx, input.region);
    const pins = resolvesTo(ctx, input.resolves_to ?? []);
    const holder = await claimUnique(ctx.tx, INSTANCE_SCOPE, RESERVED_DOMAIN_KIND, 'domain', parsed.domain, holderOf(ctx.account, base.id));
    if (holder !== undefined) {
      if (holder.startsWith(`${ctx.account}/`)) {
        throw new ApiError(DOMAINS_ERRORS.RESERVED_DOMAIN_TAKEN_BY_YOU, `domain: ${parsed.domain} is already reserved by this account (${holder.slice(ctx.account.length + 1)})`, { domain: parsed.domain, id: holder.slice(ctx.account.length + 1) });
      }
      throw new ApiError(DOMAINS_ERRORS.RESERVED_DOMAIN_TAKEN, `domain: ${parsed.domain} is already reserved by another account`, { domain: parsed.domain });
    }
    const certificates = await certificateFields(ctx, { domain: parsed.domain, certificate_id: null, issued_certificate_id: null }, parsed.serviceOwned, input);
    return {
      ...base,
      domain: parsed.domain,
      region: regionValue,
      cname_target: parsed.serviceOwned ? null : cnameTarget(ctx, 'cname'),
      acme_challenge_cname_target: parsed.wildcard ? cnameTarget(ctx, 'acme') : null,
      ...certificates,
      resolves_to: pins,
    };
  },
  async update(ctx, record, patch) {
    const pinned = patch.resolves_to === undefined ? record : { ...record, resolves_to: resolvesTo(ctx, patch.resolves_to) };
    if (patch.certificate_id === undefined && patch.certificate_management_policy === undefined) return pinned;
    return { ...pinned, ...(await certificateFields(ctx, record, isServiceOwned(ctx, record.domain), patch)) };
  },
  toResponse: (ctx, record, base) => ({
    ...base,
    domain: record.domain,
    region: record.region,
    cname_target: record.cname_target,
    certificate: attachedCertificate(record) ? refTo(ctx, tlsCertificates, attachedCertificate(record)!) : null,
    certificate_management_policy: record.certificate_management_policy,
    certificate_management_status: certificateStatus(record, ctx.clock.now()),
    acme_challenge_cname_target: record.acme_challenge_cname_target,
    resolves_to: (record.resolves_to ?? []).map((value) => ({ value })),
  }),
  references: (record) => [record.certificate_id, record.issued_certificate_id].filter((id): id is string => typeof id === 'string'),
  commands: {
    certificate: {
      method: 'DELETE',
      verb: 'delete_certificate',
      summary: 'Detach the uploaded TLS certificate of a reserved domain',
      async run(ctx, record) {
        if (record.certificate_management_policy) {
          throw new ApiError(DOMAINS_ERRORS.RESERVED_DOMAIN_CERTIFICATE_MANAGED, `reserved domain '${record.id}' has its certificate managed by its certificate_management_policy; detach the policy instead`, { id: record.id });
        }
        if (attachedCertificate(record)) await replaceRecord(ctx, reservedDomains, record, { ...record, certificate_id: null, issued_certificate_id: null });
      },
    },
    certificate_management_policy: {
      method: 'DELETE',
      verb: 'delete_certificate_management_policy',
      summary: 'Turn off automatic certificate management of a reserved domain',
      async run(ctx, record) {
        if (record.certificate_management_policy) await replaceRecord(ctx, reservedDomains, record, { ...record, ...applyCertificatePolicy(ctx, record, null, 'ecdsa') });
      },
    },
  },
  async beforeDelete(ctx, record) {
    await releaseUnique(ctx.tx, INSTANCE_SCOPE, RESERVED_DOMAIN_KIND, 'domain', record.domain, holderOf(ctx.account, record.id));
  },
});

/**
 * The caller's reserved domain that covers `hostname`: the exact name, else the wildcard one label
 * up (`*.example.com` covers `app.example.com`). Undefined when none does, or when another account
 * holds it. Two index reads at most; for rules such as "an endpoint needs a reserved domain".
 */
export async function findReservedDomain(ctx: OperationContext, hostname: string): Promise<ReservedDomainRecord | undefined> {
  const name = hostname.toLowerCase().replace(/\.$/, '');
  const candidates = [name, `*.${name.slice(name.indexOf('.') + 1)}`];
  for (const candidate of name.includes('.') ? candidates : [name]) {
    const holder = await findUnique(ctx.tx, INSTANCE_SCOPE, RESERVED_DOMAIN_KIND, 'domain', candidate);
    if (holder?.startsWith(`${ctx.account}/`)) return (await ctx.tx.get({ account: ctx.account, kind: RESERVED_DOMAIN_KIND }, holder.slice(ctx.account.length + 1))) as ReservedDomainRecord | undefined;
  }
  return undefined;
}

/** A certificate and its private key (PEM), as the ingress serves it for a name. */
export interface DomainCertificate {
  /** The TLS certificate's id (`cert_…`): a new one when the domain's certificate changes. */
  readonly id: string;
  readonly certificatePem: string;
  readonly privateKeyPem: string;
}

/** The reserved domain that covers a name, and its certificate when it has one. */
export interface CoveringDomain {
  /** The reserved name: the name itself, or a wildcard one label up (`*.example.com`). */
  readonly domain: string;
  readonly certificate: DomainCertificate | undefined;
}

/**
 * The reserved domain covering `hostname` (of any account, as reserved domains are unique in the
 * instance; the exact name, then a wildcard one label up) and the certificate the ingress serves
 * for it, uploaded or issued (attachedCertificate); undefined when no domain covers the name.
 * A few reads, whatever the number of accounts.
 */
export async function findCoveringDomain(reader: StoreReader, hostname: string): Promise<CoveringDomain | undefined> {
  const name = hostname.toLowerCase().replace(/\.$/, '');
  const candidates = name.includes('.') ? [name, `*.${name.slice(name.indexOf('.') + 1)}`] : [name];
  for (const candidate of candidates) {
    const holder = await findUnique(reader, INSTANCE_SCOPE, RESERVED_DOMAIN_KIND, 'domain', candidate);
    if (holder === undefined) continue;
    const account = holder.slice(0, holder.indexOf('/'));
    const domain = (await reader.get({ account, kind: RESERVED_DOMAIN_KIND }, holder.slice(account.length + 1))) as ReservedDomainRecord | undefined;
    const certificateId = domain && attachedCertificate(domain);
    const certificate = certificateId ? ((await reader.get({ account, kind: TLS_CERTIFICATE_KIND }, certificateId)) as TlsCertificateRecord | undefined) : undefined;
    return { domain: candidate, certificate: certificate && { id: certificate.id, certificatePem: certificate.certificate_pem, privateKeyPem: certificate.private_key_pem } };
  }
  return undefined;
}

/** A successful job issues a certificate for the domain and makes it the domain's certificate. */
const issuance = {
  prepare: (instance: Instance, record: ReservedDomainRecord) =>
    issueCertificate({
      domain: record.domain,
      keyType: record.certificate_management_policy!.private_key_type,
      now: instance.clock.now(),
      serial: instance.ids.bytes(16),
      issuerName: `Burrow Simulated ACME (${record.certificate_management_policy!.authority})`,
    }),
  async apply(ctx: OperationContext, record: ReservedDomainRecord, issued: IssuedCertificate): Promise<ReservedDomainRecord> {
    return { ...record, issued_certificate_id: await storeIssuedCertificate(ctx, issued.certificatePem, issued.privateKeyPem) };
  },
};

/** Control plane: decide how the current certificate provisioning job of a reserved domain ends. */
export const RESERVED_DOMAIN_CONTROL_OPERATIONS: readonly ControlOperationSpec[] = [
  provisioningControlOperation(
    reservedDomains,
    (record) =>
      record.domain.startsWith('*.')
        ? `the CNAME record of _acme-challenge.${record.domain.slice(2)} does not point at ${record.acme_challenge_cname_target}`
        : `the CNAME record of ${record.domain} does not point at ${record.cname_target}`,
    issuance,
  ),
];
