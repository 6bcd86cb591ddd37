import * as v from 'valibot';
import { ERRORS, fail } from '../../../conventions/errors.ts';
import { coded } from '../../../conventions/fields.ts';
import { re2Pattern } from '../../../conventions/patterns.ts';
import { policyRefusal, type TrafficPolicyHolder, type TrafficPolicyPhase } from '../../../conventions/traffic-policy.ts';
import type { OperationContext } from '../../../engine/context.ts';
import { httpHeaderMap } from '../../backends/index.ts';
import { ipPolicyExists } from '../../ip-policies/index.ts';
import { EDGES_ERRORS } from '../errors.ts';
import { type ModuleSpec, at, enabled, nonEmpty, statusCode } from './spec.ts';
import { TLS_VERSIONS } from './tls.ts';

/** The policy module (0.11.0 clients' rules) and the traffic policy module that replaced it. */

const ACTION_TYPES = ['url-rewrite', 'custom-response', 'deny', 'log', 'terminate-tls'] as const;
const MTLS_STRATEGIES = ['require-and-verify', 'require-any', 'request'] as const;

const tlsVersion = v.picklist(TLS_VERSIONS, (issue) => coded(EDGES_ERRORS.TLS_VERSION_UNSUPPORTED, `${JSON.stringify(issue.input)} is not a supported TLS version; supported: ${TLS_VERSIONS.join(', ')}`));

/**
 * `terminate-tls` (the vendor's traffic-policy action reference): TLS versions 1.2–1.3 (defaults
 * min 1.2, max 1.3), an optional server certificate with its private key (together), mutual-TLS
 * CAs (PEM or CA ids) and a verification strategy. The private key is a secret: answered as null.
 */
const terminateTlsConfig = v.pipe(
  v.strictObject({
    min_version: v.optional(tlsVersion),
    max_version: v.optional(tlsVersion),
    server_private_key: v.optional(nonEmpty),
    server_certificate: v.optional(nonEmpty),
    mutual_tls_certificate_authorities: v.optional(v.array(nonEmpty)),
    mutual_tls_verification_strategy: v.optional(v.picklist(MTLS_STRATEGIES, (issue) => `must be one of ${MTLS_STRATEGIES.join(', ')} (got ${JSON.stringify(issue.input)})`)),
  }),
  v.forward(
    v.check((config) => (config.min_version ?? '1.2') <= (config.max_version ?? '1.3'), 'must not be above max_version'),
    ['min_version'],
  ),
  v.forward(
    v.check((config) => (config.server_private_key === undefined) === (config.server_certificate === undefined), 'server_certificate and server_private_key go together'),
    ['server_certificate'],
  ),
);

const action = v.variant(
  'type',
  [
    v.strictObject({ type: v.literal('url-rewrite'), config: v.strictObject({ from: re2Pattern, to: v.string() }) }),
    v.strictObject({
      type: v.literal('custom-response'),
      config: v.strictObject({ status_code: statusCode, content: v.optional(v.string()), headers: v.optional(httpHeaderMap) }),
    }),
    v.strictObject({ type: v.literal('deny'), config: v.optional(v.nullable(v.strictObject({ status_code: v.optional(statusCode) }))) }),
    v.strictObject({ type: v.literal('log'), config: v.optional(v.nullable(v.strictObject({ metadata: v.optional(v.record(v.string(), v.unknown())) }))) }),
    v.strictObject({ type: v.literal('terminate-tls'), config: v.optional(v.nullable(terminateTlsConfig)) }),
  ],
  (issue) => `must be one of ${ACTION_TYPES.join(', ')} (got ${JSON.stringify(issue.input)})`,
);

const rule = v.strictObject({
  name: nonEmpty,
  expressions: v.array(nonEmpty),
  actions: v.pipe(v.array(action), v.minLength(1, 'a rule needs at least one action')),
});

type PolicyRule = v.InferOutput<typeof rule>;

const storeRules = (rules: readonly PolicyRule[] | null | undefined) =>
  (rules ?? []).map((r) => ({ name: r.name, expressions: [...r.expressions], actions: r.actions.map((a) => ({ type: a.type, config: a.config ?? null })) }));

type StoredRule = ReturnType<typeof storeRules>[number];

/** Rules as answered: a terminate-tls server private key is a secret, answered as null. */
const respondRules = (rules: readonly StoredRule[]) =>
  rules.map((r) => ({
    ...r,
    actions: r.actions.map((a) => (a.type === 'terminate-tls' && a.config && 'server_private_key' in a.config ? { ...a, config: { ...a.config, server_private_key: null } } : a)),
  }));

/**
 * The policy module of the 0.11.0 API (replaced by traffic_policy below): inbound and outbound rules, each a name, CEL expressions (an empty
 * list applies the rule to all traffic; Burrow stores them, it evaluates no traffic) and at least
 * one action. Actions: url-rewrite {from (an RE2 pattern), to}, custom-response {status_code, content?,
 * headers?}, deny {status_code?} or null, log {metadata?} or null, and terminate-tls (above), which
 * acts on the connection and so belongs to inbound rules only. Inbound rules run on the request
 * of a route and on the connection of a TCP or TLS edge, outbound rules on a route's response
 * (lib/policy/sources.ts); the write-time checker type-checks their expressions for that phase.
 */
export function policyModule(phases: readonly TrafficPolicyPhase[]): ModuleSpec {
  const connectionOnly = !phases.includes('on_http_request');
  return {
    name: 'policy',
    label: 'policy',
    schema: v.strictObject({ enabled, inbound: v.optional(v.nullable(v.array(rule))), outbound: v.optional(v.nullable(v.array(rule))) }),
    async store(ctx, input: { enabled?: boolean; inbound?: PolicyRule[] | null; outbound?: PolicyRule[] | null }, field) {
      (input.outbound ?? []).forEach((r, index) => {
        const position = r.actions.findIndex((a) => a.type === 'terminate-tls');
        if (position >= 0) fail('INVALID_FIELD', `${at(field, 'outbound')}[${index}].actions[${position}].type: terminate-tls acts on the incoming connection; put it in an inbound rule`);
      });
      const stored = { enabled: input.enabled ?? true, inbound: storeRules(input.inbound), outbound: storeRules(input.outbound) };
      const rules = connectionOnly ? { on_tcp_connect: stored.inbound } : { on_http_request: stored.inbound, on_http_response: stored.outbound };
      const labels = connectionOnly ? { on_tcp_connect: 'inbound' } : { on_http_request: 'inbound', on_http_response: 'outbound' };
      const issue = await ctx.services.trafficPolicies.rules({ rules, labels }, holderOf(ctx, phases));
      if (issue) throw policyRefusal(issue, field, ERRORS.INVALID_FIELD);
      return stored;
    },
    respond: (_ctx, stored) => ({ enabled: stored.enabled, inbound: respondRules(stored.inbound as StoredRule[]), outbound: respondRules(stored.outbound as StoredRule[]) }),
  };
}

/** An edge or route as a traffic policy's holder: the phases of its traffic, and its account's IP policies. */
const holderOf = (ctx: OperationContext, phases: readonly TrafficPolicyPhase[]): TrafficPolicyHolder => ({ phases, ipPolicyExists: (id) => ipPolicyExists(ctx.tx, ctx.account, id) });

/**
 * The traffic policy module of the newer API (0.12 on), which replaced `policy`: `{enabled, value}`,
 * `value` a traffic policy document in JSON or YAML (lib/conventions/traffic-policy.ts), checked
 * by the write-time checker (lib/policy/checker.ts) for the phases of the holder's traffic and stored and answered exactly as sent. An edge or route
 * holds one traffic policy: setting `traffic_policy` unsets `policy` and the other way round (the
 * vendor's responses carry both keys, the old one null), and a body may not send both.
 */
export function trafficPolicyModule(phases: readonly TrafficPolicyPhase[]): ModuleSpec {
  return {
    name: 'traffic_policy',
    label: 'traffic policy',
    replaces: 'policy',
    schema: v.strictObject({ enabled, value: v.string() }),
    async store(ctx, input: { enabled?: boolean; value: string }, field) {
      const issue = await ctx.services.trafficPolicies.document(input.value, holderOf(ctx, phases));
      if (issue) throw policyRefusal(issue, at(field, 'value'), ERRORS.INVALID_FIELD);
      return { enabled: input.enabled ?? true, value: input.value };
    },
    respond: (_ctx, stored) => ({ enabled: stored.enabled, value: stored.value }),
  };
}
