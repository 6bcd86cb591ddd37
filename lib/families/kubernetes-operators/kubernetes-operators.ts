import * as v from 'valibot';
import type { Caller, OperationContext } from '../../engine/context.ts';
import { signClientCertificate, type CertificateAuthority } from '../../ca/certificate-authority.ts';
import { compileFilter, FilterProblem, type CompiledFilter } from '../../conventions/cel.ts';
import { formatTime } from '../../conventions/clock.ts';
import { ApiError } from '../../conventions/errors.ts';
import { coded, description, limitBytes, maxBytes, metadata, ownerId, rfc3339 } from '../../conventions/fields.ts';
import { readCertificationRequest } from '../../conventions/x509.ts';
import { limitNote, LIMITS } from '../../limits.ts';
import { FILTER_RECORD_COST } from '../../engine/list-filter.ts';
import { ownerRef, resolveOwner } from '../../engine/owners.ts';
import { defineResource, type BaseRecord } from '../../engine/resource.ts';
import { KUBERNETES_OPERATORS_ERRORS as ERRORS } from './errors.ts';

/**
 * Kubernetes operators (/kubernetes_operators, the Go client v8; the vendor's ngrok-operator
 * registers itself here): `enabled_features` (a subset of `bindings`, `ingress`, `gateway`, any case,
 * answered lower-case), `region` (`global` by default, or a region of the simulation), `deployment`
 * (name, namespace, version, cluster_name; an update changes name and version only) and, with the
 * `bindings` feature, `binding`: CEL `endpoint_selectors` over endpoints (the `filter` language,
 * lib/conventions/cel.ts), the `csr` the operator's forwarder holds the key of, and the
 * `ingress_endpoint` it connects to. The list key is `operators`, as the Go client reads it.
 *
 * Burrow's CA (lib/ca/instance-ca.ts, the one the agent gateway's certificate and GET /_burrow/ca.pem
 * come from; fetched before the write's transaction) signs the CSR where the vendor does: a client certificate for the
 * request's key, named after the operator, valid BINDING_CERTIFICATE_VALID_DAYS, answered as
 * `binding.cert` {cert, not_before, not_after}. The operator sends its CSR again on every update;
 * the same CSR keeps its certificate, a new one (the operator renews 30 days before `not_after`) is
 * signed anew. `GET …/{id}/bound_endpoints` answers the endpoints the selectors bind
 * (./bound-endpoints.ts).
 *
 * The vendor's codes: 19001 for a CSR that cannot be signed, 19002 for an operator that is not
 * valid (unknown feature or region; `bindings` without a `binding`, or a `binding` without the
 * feature), 19003 for endpoint selectors that are not CEL conditions. No audit events (the vendor
 * has none for operators).
 */

export const FEATURES = ['bindings', 'ingress', 'gateway'] as const;
/** How long a binding certificate is valid (the operator renews it 30 days before it ends). */
export const BINDING_CERTIFICATE_VALID_DAYS = 365;

interface Deployment {
  readonly name: string;
  readonly namespace: string;
  readonly version: string;
  readonly cluster_name: string;
}

interface StoredBinding {
  readonly endpoint_selectors: readonly string[];
  readonly ingress_endpoint: string;
  readonly csr: string;
  readonly cert: string;
  readonly not_before: string;
  readonly not_after: string;
}

export interface KubernetesOperatorRecord extends BaseRecord {
  readonly updated_at: string;
  readonly principal_id: string;
  readonly enabled_features: readonly string[];
  readonly region: string;
  readonly deployment: Deployment;
  readonly binding: StoredBinding | null;
}

const invalid = (message: string) => new ApiError(ERRORS.K8S_OPERATOR_INVALID, `Failed to validate Kubernetes Operator: ${message}`);

const shortText = v.pipe(v.string(), maxBytes(255));

const feature = v.pipe(
  v.string(),
  v.transform((name) => name.toLowerCase()),
  v.check((name) => (FEATURES as readonly string[]).includes(name), (issue) => coded(ERRORS.K8S_OPERATOR_INVALID, `${JSON.stringify(issue.input)} is not a feature; enabled_features is a subset of ${FEATURES.join(', ')}`)),
);
const features = v.pipe(v.array(feature), v.transform((names) => [...new Set(names)]));

const csr = v.pipe(v.string(), limitBytes('csr_pem_bytes'));
const ingressEndpoint = shortText;

const BindingCreate = v.strictObject({
  endpoint_selectors: v.optional(v.array(v.string()), []),
  csr: v.optional(csr, ''),
  ingress_endpoint: v.optional(v.nullable(ingressEndpoint)),
});

const Create = v.strictObject({
  description: v.optional(description),
  metadata: v.optional(metadata),
  enabled_features: v.optional(features, []),
  region: v.optional(v.string(), ''),
  deployment: v.optional(v.strictObject({ name: v.optional(shortText, ''), namespace: v.optional(shortText, ''), version: v.optional(shortText, ''), cluster_name: v.optional(shortText, '') }), {}),
  binding: v.optional(v.nullable(BindingCreate)),
});

const Update = v.strictObject({
  description: v.optional(description),
  metadata: v.optional(metadata),
  enabled_features: v.optional(features),
  region: v.optional(v.string()),
  deployment: v.optional(v.nullable(v.strictObject({ name: v.optional(shortText), version: v.optional(shortText) }))),
  binding: v.optional(
    v.nullable(
      v.strictObject({
        endpoint_selectors: v.optional(v.array(v.string())),
        csr: v.optional(csr),
        ingress_endpoint: v.optional(v.nullable(ingressEndpoint)),
      }),
    ),
  ),
});

/** `""` and absent mean global; otherwise one of the simulation's regions (19002). */
function regionOf(ctx: OperationContext, region: string): string {
  if (region === '' || region === 'global') return 'global';
  const regions = ctx.services.simulation.regions;
  if (!regions.includes(region)) throw invalid(`region: ${JSON.stringify(region)} is not a region; use global or one of ${regions.join(', ')}`);
  return region;
}

/**
 * Compiles endpoint selectors as list filters are compiled (19003 naming the one that is not a
 * condition); all of them together must fit one bound-endpoints page's budget.
 */
export function compileSelectors(ctx: Pick<OperationContext, 'clock'>, selectors: readonly string[]): CompiledFilter[] {
  const compiled = selectors.map((selector, index) => {
    try {
      return compileFilter(selector, () => ctx.clock.now());
    } catch (error) {
      if (error instanceof FilterProblem) throw new ApiError(ERRORS.K8S_SELECTORS_INVALID, `Failed to validate endpoint selectors: binding.endpoint_selectors[${index}]: ${error.message}`);
      throw error;
    }
  });
  const cost = compiled.reduce((sum, selector) => sum + selector.cost, FILTER_RECORD_COST);
  if (cost > LIMITS.filter_page_cost.value) {
    throw new ApiError(ERRORS.K8S_SELECTORS_INVALID, `Failed to validate endpoint selectors: together they cost ${cost} units an endpoint, more than one page of bound endpoints may spend ${limitNote('filter_page_cost')}`);
  }
  return compiled;
}

/**
 * Burrow's CA when `binding` brings a CSR to sign, fetched before the transaction opens (the first
 * use of an empty store makes the CA in a transaction of its own).
 */
const caToSign = (binding: { csr?: string } | null | undefined, caller: Caller): Promise<CertificateAuthority | undefined> =>
  binding?.csr ? caller.services.ca() : Promise.resolve(undefined);

/** Signs `request` (a PEM CSR) for operator `id` with `ca`; 19001 when it cannot be. */
function signBinding(ctx: OperationContext, ca: CertificateAuthority | undefined, id: string, request: string): Pick<StoredBinding, 'csr' | 'cert' | 'not_before' | 'not_after'> {
  if (request === '') throw new ApiError(ERRORS.K8S_CSR_INVALID, 'Certificate Signing Request failed: binding.csr is required with the bindings feature (a PEM certificate request for the key the operator connects with)');
  let publicKey;
  try {
    ({ publicKey } = readCertificationRequest(request));
  } catch (error) {
    throw new ApiError(ERRORS.K8S_CSR_INVALID, `Certificate Signing Request failed: binding.csr: ${(error as Error).message}`);
  }
  // caToSign fetched it for every binding with a CSR, the only bindings that reach here with one.
  if (!ca) throw new Error('kubernetes operators: a CSR to sign without the CA fetched for it');
  const signed = signClientCertificate(ca, { now: ctx.clock.now(), publicKey, commonName: id, validDays: BINDING_CERTIFICATE_VALID_DAYS, serial: ctx.ids.bytes(16) });
  return { csr: request, cert: signed.certificatePem, not_before: formatTime(signed.notBefore), not_after: formatTime(signed.notAfter) };
}

/** Where an operator's forwarder connects when the operator names no ingress endpoint. */
const defaultIngressEndpoint = (ctx: OperationContext) => `kubernetes-binding.${ctx.services.simulation.serviceZone}:443`;

/**
 * The binding an operator with `features` has after a write: none without the bindings feature
 * (19002 if one was sent), else `current` changed by `sent` (a CSR other than the current one is
 * signed anew).
 */
function nextBinding(
  ctx: OperationContext,
  ca: CertificateAuthority | undefined,
  id: string,
  features: readonly string[],
  current: StoredBinding | null,
  sent: { endpoint_selectors?: readonly string[]; csr?: string; ingress_endpoint?: string | null } | null | undefined,
): StoredBinding | null {
  if (!features.includes('bindings')) {
    if (sent) throw invalid('binding: is set only with the bindings feature (enabled_features has no "bindings")');
    return null;
  }
  if (!sent && !current) throw invalid('binding: is required with the bindings feature (endpoint_selectors and csr)');
  const selectors = sent?.endpoint_selectors ?? current?.endpoint_selectors ?? [];
  compileSelectors(ctx, selectors);
  const request = sent?.csr ?? current?.csr ?? '';
  const signed = current && request === current.csr ? current : signBinding(ctx, ca, id, request);
  const ingress = sent?.ingress_endpoint === undefined ? current?.ingress_endpoint : sent.ingress_endpoint;
  return {
    endpoint_selectors: [...selectors],
    ingress_endpoint: ingress || defaultIngressEndpoint(ctx),
    csr: signed.csr,
    cert: signed.cert,
    not_before: signed.not_before,
    not_after: signed.not_after,
  };
}

const StoredBindingSchema = v.nullable(
  v.strictObject({ endpoint_selectors: v.array(v.string()), ingress_endpoint: v.string(), csr: v.string(), cert: v.string(), not_before: rfc3339, not_after: rfc3339 }),
);

export const kubernetesOperators = defineResource<KubernetesOperatorRecord, typeof Create, typeof Update>({
  name: 'kubernetes_operators',
  label: 'Kubernetes operator',
  prefix: 'k8sop',
  listKey: 'operators',
  createSchema: Create,
  updateSchema: Update,
  storedFields: {
    updated_at: rfc3339,
    principal_id: ownerId,
    deployment: v.strictObject({ name: v.string(), namespace: v.string(), version: v.string(), cluster_name: v.string() }),
    binding: StoredBindingSchema,
  },
  prepareCreate: (input, caller) => caToSign(input.binding, caller),
  prepareUpdate: (patch, caller) => caToSign(patch.binding, caller),
  async create(ctx, input, base, ca) {
    const record: KubernetesOperatorRecord = {
      ...base,
      updated_at: base.created_at,
      principal_id: await resolveOwner(ctx, undefined),
      enabled_features: input.enabled_features,
      region: regionOf(ctx, input.region),
      deployment: { name: input.deployment.name, namespace: input.deployment.namespace, version: input.deployment.version, cluster_name: input.deployment.cluster_name },
      binding: nextBinding(ctx, ca as CertificateAuthority | undefined, base.id, input.enabled_features, null, input.binding),
    };
    return record;
  },
  update(ctx, record, patch, ca) {
    const features = patch.enabled_features ?? record.enabled_features;
    return {
      ...record,
      updated_at: formatTime(ctx.clock.now()),
      enabled_features: features,
      region: patch.region === undefined ? record.region : regionOf(ctx, patch.region),
      deployment: { ...record.deployment, ...(patch.deployment?.name !== undefined ? { name: patch.deployment.name } : {}), ...(patch.deployment?.version !== undefined ? { version: patch.deployment.version } : {}) },
      binding: nextBinding(ctx, ca as CertificateAuthority | undefined, record.id, features, record.binding, patch.binding),
    };
  },
  toResponse: (ctx, record, base) => ({
    ...base,
    updated_at: record.updated_at,
    principal: ownerRef(ctx.baseUrl, record.principal_id),
    enabled_features: [...record.enabled_features],
    region: record.region,
    deployment: { ...record.deployment },
    binding: record.binding && {
      endpoint_selectors: [...record.binding.endpoint_selectors],
      cert: { cert: record.binding.cert, not_before: record.binding.not_before, not_after: record.binding.not_after },
      ingress_endpoint: record.binding.ingress_endpoint,
    },
  }),
});
