import * as v from 'valibot';
import type { TlsTermination } from '../../traffic/decisions.ts';
import type { Template } from '../interpolation.ts';
import { terminateTlsResults } from '../variables.ts';
import { ActionConfigProblem, defineAction, forEndpoint, lookUp, readConfig, type ActionContext } from './types.ts';

/**
 * terminate-tls (on_tcp_connect; also the tls_termination and mutual_tls modules, translated into
 * it): decides that the ingress terminates TLS, with which versions, optionally its own certificate
 * and client-certificate authorities (PEM, or ids of the account's certificate authorities) and
 * strategy. The ingress checks a presented chain with clientChainProblem (certificates.ts). When
 * the ingress gives its handshake (TLS ingress), the action terminates there and then and sets its
 * result variables, `actions.ngrok.terminate_tls.*`, for the rest of on_tcp_connect.
 */

const VERSION = v.picklist(['1.2', '1.3']);
const STRATEGIES = ['require-and-verify', 'require-any', 'request'] as const;

async function authorities(entries: readonly Template[], context: ActionContext): Promise<string[]> {
  const values = entries.map((entry) => context.text(entry, 'mutual_tls_certificate_authorities'));
  const pems = values.filter((value) => value.includes('-----BEGIN CERTIFICATE-----'));
  const ids = values.filter((value) => !value.includes('-----BEGIN CERTIFICATE-----'));
  if (ids.length === 0) return pems;
  return [...pems, ...(await lookUp(forEndpoint(context, context.services.certificateAuthorities), ids, 'terminate-tls: mutual_tls_certificate_authorities', `certificate authorities ${ids.join(', ')}`))];
}

export const terminateTls = defineAction({
  type: 'terminate-tls',
  compile(config, tools) {
    const c = readConfig(
      v.looseObject({
        min_version: v.optional(VERSION, '1.2'),
        max_version: v.optional(VERSION, '1.3'),
        server_certificate: v.optional(v.string()),
        server_private_key: v.optional(v.string()),
        mutual_tls_certificate_authorities: v.optional(v.array(v.string()), []),
        mutual_tls_verification_strategy: v.optional(v.picklist(STRATEGIES), 'require-and-verify'),
      }),
      config,
    );
    if ((c.server_certificate === undefined) !== (c.server_private_key === undefined)) throw new ActionConfigProblem('config.server_certificate: goes with server_private_key (both or neither)');
    return {
      minVersion: c.min_version,
      maxVersion: c.max_version,
      certificate: c.server_certificate === undefined ? undefined : tools.template(c.server_certificate, 'config.server_certificate'),
      key: c.server_private_key === undefined ? undefined : tools.template(c.server_private_key, 'config.server_private_key'),
      authorities: c.mutual_tls_certificate_authorities.map((entry, i) => tools.template(entry, `config.mutual_tls_certificate_authorities[${i}]`)),
      strategy: c.mutual_tls_verification_strategy,
    };
  },
  async run(config, context) {
    const cas = await authorities(config.authorities, context);
    const scope = context.scope;
    const termination: TlsTermination = {
      minVersion: config.minVersion,
      maxVersion: config.maxVersion,
      ...(config.certificate && config.key ? { serverCertificate: context.text(config.certificate, 'server_certificate'), serverPrivateKey: context.text(config.key, 'server_private_key') } : {}),
      ...(cas.length > 0 ? { mutualTls: { certificateAuthorities: cas, strategy: config.strategy } } : {}),
    };
    scope.tls = termination;
    const note = `terminate TLS ${config.minVersion}–${config.maxVersion}${cas.length ? `, client certificates ${config.strategy}` : ''}`;
    // With the ingress's handshake, TLS ends here, so later actions and rules read the session
    // (actions.ngrok.terminate_tls.*, conn.tls.*); a failed handshake has closed the connection.
    const handshake = scope.handshake;
    if (handshake) {
      scope.handshake = undefined;
      const done = await handshake(termination);
      if ('failed' in done) return { end: { kind: 'close', reason: `TLS handshake failed: ${done.failed}` }, note: `${note}: the handshake failed (${done.failed})` };
      scope.conn = { ...scope.conn, tls: done.tls };
      scope.changed();
    }
    if (scope.conn.tls) scope.setActionResult('terminate_tls', terminateTlsResults(scope.conn.tls));
    return { note };
  },
  results: 'terminate_tls',
});
