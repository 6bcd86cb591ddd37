import * as v from 'valibot';
import { LIMITS, limitNote } from '../../limits.ts';
import { UNVERIFIABLE_PROVIDERS, WEBHOOK_PROVIDERS } from './webhook-providers.ts';
import { ActionConfigProblem, ActionFailure, defineAction, enforce, errorEnd, readConfig } from './types.ts';

/**
 * verify-webhook (and the webhook_verification module): checks the provider's signature over the
 * request body, read once up to `policy_inspected_body_bytes` (lib/limits.ts; the ingress forwards what it buffered).
 * Failure: 403 (ERR_NGROK_3204), or the provider's own status (Xero: 401); `enforce: false` only
 * records the result in `actions.ngrok.verify_webhook`. Endpoint-verification challenges are
 * answered for the provider. A provider Burrow cannot verify answers 501 naming it.
 */

const WEBHOOK_FAILED = 'ERR_NGROK_3204';

export const verifyWebhook = defineAction({
  results: 'verify_webhook',
  type: 'verify-webhook',
  compile(config, tools) {
    const c = readConfig(v.looseObject({ provider: v.string(), secret: v.optional(v.string(), ''), enforce }), config);
    const provider = c.provider.toLowerCase();
    if (!WEBHOOK_PROVIDERS[provider] && !UNVERIFIABLE_PROVIDERS[provider]) throw new ActionConfigProblem(`config.provider: ${JSON.stringify(c.provider)} is not a webhook provider the vendor supports`);
    return { provider, secret: tools.template(c.secret, 'config.secret'), enforce: c.enforce };
  },
  async run(config, context) {
    const provider = WEBHOOK_PROVIDERS[config.provider];
    if (!provider) throw new ActionFailure({ status: 501, message: `verify-webhook: provider ${config.provider} cannot be verified offline: ${UNVERIFIABLE_PROVIDERS[config.provider]}`, headers: [] });
    const scope = context.scope;
    const request = scope.request!;
    const body = await scope.body(LIMITS.policy_inspected_body_bytes.value);
    const verdict =
      body === null
        ? ({ verified: false, reason: `the body is longer than ${LIMITS.policy_inspected_body_bytes.value} bytes ${limitNote('policy_inspected_body_bytes')}` } as const)
        : provider.verify({ method: request.method, url: request.url, headers: request.headers, body: Buffer.from(body ?? []), secret: context.text(config.secret, 'secret'), now: scope.now });
    if ('challenge' in verdict) {
      scope.setActionResult('verify_webhook', { verified: true, error: { code: '', message: '' } });
      return { end: { kind: 'respond', response: verdict.challenge }, note: `answered the ${config.provider} endpoint verification` };
    }
    const reason = verdict.verified ? '' : verdict.reason;
    scope.setActionResult('verify_webhook', { verified: verdict.verified, error: { code: verdict.verified ? '' : WEBHOOK_FAILED, message: reason } });
    if (verdict.verified) return { note: `verified (${config.provider})` };
    const message = `${config.provider} webhook verification failed: ${reason}`;
    if (!config.enforce) return { note: `${message} (not enforced)` };
    return { end: errorEnd(provider.failureStatus ?? 403, `Request failed webhook verification: ${message}`, WEBHOOK_FAILED), note: message };
  },
});
