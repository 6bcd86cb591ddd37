import assert from 'node:assert/strict';
import { createHmac, generateKeyPairSync, sign } from 'node:crypto';
import { describe, test } from 'node:test';
import { body, harness, onRequest } from './helpers.ts';

const h = harness();
const now = () => Math.floor(h.clock.now().getTime() / 1000);
const payload = '{"event":"push","id":42}';
const hmac = (algorithm: string, key: string | Buffer, data: string) => createHmac(algorithm, key).update(data).digest();
const policy = (provider: string, secret: string, extra = '') => `on_http_request: [{actions: [{type: verify-webhook, config: {provider: ${provider}, secret: '${secret}'${extra}}}]}]`;
const post = (headers: [string, string][], text = payload, url = 'https://app.example/hook') => ({ method: 'POST', url, headers, body: body(text) });
const verified = async (provider: string, secret: string, request: ReturnType<typeof post>) => (await onRequest(h, policy(provider, secret), request)).terminal;
const FAILED = (message: string, status = 403) => ({ kind: 'error', error: { status, code: 'ERR_NGROK_3204', message: `Request failed webhook verification: ${message}`, headers: [] } });

describe('verify-webhook with real signatures', () => {
  test('github: X-Hub-Signature-256 over the body', async () => {
    const signature = `sha256=${hmac('sha256', 'gh-secret', payload).toString('hex')}`;
    assert.equal(await verified('github', 'gh-secret', post([['X-Hub-Signature-256', signature]])), undefined);
    assert.deepEqual(await verified('github', 'gh-secret', post([['X-Hub-Signature-256', signature]], `${payload} `)), FAILED('github webhook verification failed: the x-hub-signature-256 signature does not match the body'));
    assert.deepEqual(await verified('github', 'other', post([['X-Hub-Signature-256', signature]])), FAILED('github webhook verification failed: the x-hub-signature-256 signature does not match the body'));
    assert.deepEqual(await verified('github', 'gh-secret', post([])), FAILED('github webhook verification failed: the x-hub-signature-256 header is missing'));
  });

  test('stripe: t and v1 over "t.body", within 300 seconds', async () => {
    const t = now();
    const header = (time: number, key = 'whsec_stripe') => `t=${time},v1=${hmac('sha256', key, `${time}.${payload}`).toString('hex')},v0=ignored`;
    assert.equal(await verified('stripe', 'whsec_stripe', post([['Stripe-Signature', header(t)]])), undefined);
    assert.equal(await verified('stripe', 'whsec_stripe', post([['Stripe-Signature', header(t - 299)]])), undefined);
    assert.deepEqual(await verified('stripe', 'whsec_stripe', post([['Stripe-Signature', header(t - 301)]])), FAILED('stripe webhook verification failed: the signed timestamp is more than 300 seconds from now'));
    assert.deepEqual(await verified('stripe', 'whsec_stripe', post([['Stripe-Signature', header(t, 'wrong')]])), FAILED('stripe webhook verification failed: no v1 signature in stripe-signature matches'));
  });

  test('slack: v0 over "v0:timestamp:body"', async () => {
    const t = String(now());
    const signature = `v0=${hmac('sha256', 'slack-secret', `v0:${t}:${payload}`).toString('hex')}`;
    assert.equal(await verified('slack', 'slack-secret', post([['X-Slack-Request-Timestamp', t], ['X-Slack-Signature', signature]])), undefined);
    assert.deepEqual(await verified('slack', 'slack-secret', post([['X-Slack-Request-Timestamp', String(now() - 400)], ['X-Slack-Signature', signature]])), FAILED('slack webhook verification failed: the signed timestamp is more than 300 seconds from now'));
  });

  test('shopify, heroku, typeform, sentry, linear, terraform, intercom, webex, circleci …: HMACs of the body in their headers', async () => {
    const cases: [string, string, string][] = [
      ['shopify', 'X-Shopify-Hmac-Sha256', hmac('sha256', 's', payload).toString('base64')],
      ['heroku', 'Heroku-Webhook-Hmac-SHA256', hmac('sha256', 's', payload).toString('base64')],
      ['typeform', 'Typeform-Signature', `sha256=${hmac('sha256', 's', payload).toString('base64')}`],
      ['sentry', 'Sentry-Hook-Signature', hmac('sha256', 's', payload).toString('hex')],
      ['linear', 'Linear-Signature', hmac('sha256', 's', payload).toString('hex')],
      ['terraform', 'X-TFE-Notification-Signature', hmac('sha512', 's', payload).toString('hex')],
      ['intercom', 'X-Hub-Signature', `sha1=${hmac('sha1', 's', payload).toString('hex')}`],
      ['bitbucket', 'X-Hub-Signature', `sha256=${hmac('sha256', 's', payload).toString('hex')}`],
      ['webex', 'X-Spark-Signature', hmac('sha1', 's', payload).toString('hex')],
      ['circleci', 'circleci-signature', `v1=${hmac('sha256', 's', payload).toString('hex')}`],
      ['whatsapp', 'X-Hub-Signature-256', `sha256=${hmac('sha256', 's', payload).toString('hex')}`],
      ['dropbox', 'X-Dropbox-Signature', hmac('sha256', 's', payload).toString('hex')],
      ['launch_darkly', 'X-LD-Signature', hmac('sha256', 's', payload).toString('hex')],
      ['aftership', 'aftership-hmac-sha256', hmac('sha256', 's', payload).toString('base64')],
      ['pagerduty', 'X-PagerDuty-Signature', `v1=deadbeef,v1=${hmac('sha256', 's', payload).toString('hex')}`],
    ];
    for (const [provider, name, value] of cases) {
      assert.equal(await verified(provider, 's', post([[name, value]])), undefined, provider);
      assert.equal((await verified(provider, 'not-s', post([[name, value]])))?.kind, 'error', `${provider} with another secret`);
    }
  });

  test('gitlab: the X-Gitlab-Token equals the secret', async () => {
    assert.equal(await verified('gitlab', 'secret!', post([['X-Gitlab-Token', 'secret!']])), undefined);
    assert.deepEqual(await verified('gitlab', 'secret!', post([['X-Gitlab-Token', 'secret?']])), FAILED('gitlab webhook verification failed: the x-gitlab-token header is missing or does not match'));
  });

  test('twilio: the URL plus sorted form parameters, HMAC-SHA1', async () => {
    const form = 'To=%2B15551234&From=%2B15559876&Body=hi+there';
    const signed = 'https://app.example/sms?x=1Bodyhi thereFrom+15559876To+15551234';
    const signature = hmac('sha1', 'auth-token', signed).toString('base64');
    const request = post([['Content-Type', 'application/x-www-form-urlencoded'], ['X-Twilio-Signature', signature]], form, 'https://app.example/sms?x=1');
    assert.equal(await verified('twilio', 'auth-token', request), undefined);
  });

  test('svix (and clerk): v1 over "id.timestamp.body" with the base64 whsec_ key', async () => {
    const key = Buffer.from('svix-key-bytes');
    const t = String(now());
    const signature = `v1,${hmac('sha256', key, `msg_1.${t}.${payload}`).toString('base64')}`;
    const headers: [string, string][] = [['svix-id', 'msg_1'], ['svix-timestamp', t], ['svix-signature', `v1,bm90IGl0 ${signature}`]];
    for (const provider of ['svix', 'clerk']) assert.equal(await verified(provider, `whsec_${key.toString('base64')}`, post(headers)), undefined, provider);
  });

  test('hubspot v3: method, URL, body and millisecond timestamp', async () => {
    const t = String(h.clock.now().getTime());
    const signature = hmac('sha256', 'hs', `POST${'https://app.example/hook'}${payload}${t}`).toString('base64');
    assert.equal(await verified('hubspot', 'hs', post([['X-HubSpot-Request-Timestamp', t], ['X-HubSpot-Signature-v3', signature]])), undefined);
  });

  test('mailgun: the signature object in the JSON body', async () => {
    const t = String(now());
    const text = JSON.stringify({ signature: { timestamp: t, token: 'tok', signature: hmac('sha256', 'mg', `${t}tok`).toString('hex') }, 'event-data': {} });
    assert.equal(await verified('mailgun', 'mg', post([['Content-Type', 'application/json']], text)), undefined);
  });

  test('sendgrid: an ECDSA signature over timestamp + body, the secret is the public key', async () => {
    const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
    const t = String(now());
    const signature = sign('sha256', Buffer.from(t + payload), privateKey).toString('base64');
    const secret = publicKey.export({ format: 'der', type: 'spki' }).toString('base64');
    const headers: [string, string][] = [['X-Twilio-Email-Event-Webhook-Timestamp', t], ['X-Twilio-Email-Event-Webhook-Signature', signature]];
    assert.equal(await verified('sendgrid', secret, post(headers)), undefined);
    assert.equal((await verified('sendgrid', secret, post(headers, `${payload}x`)))?.kind, 'error');
  });

  test('xero answers 401 on failure (its intent-to-receive check expects it)', async () => {
    assert.deepEqual(await verified('xero', 'x', post([['x-xero-signature', 'AAAA']])), FAILED('xero webhook verification failed: the x-xero-signature signature does not match the body', 401));
  });
});

describe('verify-webhook: endpoint verification challenges', () => {
  test('zoom: a signed endpoint.url_validation event is answered with the encrypted token', async () => {
    const t = String(now());
    const event = JSON.stringify({ event: 'endpoint.url_validation', payload: { plainToken: 'plain-123' } });
    const signature = `v0=${hmac('sha256', 'zoom-secret', `v0:${t}:${event}`).toString('hex')}`;
    const outcome = await onRequest(h, policy('zoom', 'zoom-secret'), post([['x-zm-request-timestamp', t], ['x-zm-signature', signature]], event));
    assert.deepEqual(outcome.terminal, {
      kind: 'respond',
      response: { status: 200, headers: [['content-type', 'application/json']], body: JSON.stringify({ plainToken: 'plain-123', encryptedToken: hmac('sha256', 'zoom-secret', 'plain-123').toString('hex') }) },
    });
  });

  test('twitter: the CRC GET is answered with the response token', async () => {
    const outcome = await onRequest(h, policy('twitter', 'consumer-secret'), { url: 'https://app.example/hook?crc_token=abc' });
    assert.deepEqual(outcome.terminal, {
      kind: 'respond',
      response: { status: 200, headers: [['content-type', 'application/json']], body: JSON.stringify({ response_token: `sha256=${hmac('sha256', 'consumer-secret', 'abc').toString('base64')}` }) },
    });
  });

  test('worldline: the verification GET is echoed', async () => {
    const outcome = await onRequest(h, policy('worldline', 'w'), { headers: [['X-GCS-Webhooks-Endpoint-Verification', 'echo-me']] });
    assert.deepEqual(outcome.terminal, { kind: 'respond', response: { status: 200, headers: [['content-type', 'text/plain']], body: 'echo-me' } });
  });
});

describe('verify-webhook: limits, enforcement and providers Burrow cannot check', () => {
  test('a body over the limit fails verification', async () => {
    const big = 'x'.repeat(1024 * 1024 + 1);
    const outcome = await onRequest(h, policy('github', 's'), post([['X-Hub-Signature-256', `sha256=${hmac('sha256', 's', big).toString('hex')}`]], big));
    assert.deepEqual(outcome.terminal, FAILED('github webhook verification failed: the body is longer than 1048576 bytes (limit policy_inspected_body_bytes)'));
  });

  test('enforce: false records the result in actions.ngrok.verify_webhook and goes on', async () => {
    const outcome = await onRequest(h, `on_http_request: [{actions: [{type: verify-webhook, config: {provider: github, secret: s, enforce: false}}, {type: log, config: {metadata: {v: '\${actions.ngrok.verify_webhook}'}}}]}]`, post([]));
    assert.equal(outcome.terminal, undefined);
    assert.deepEqual(outcome.logs[0]!.metadata, { v: { verified: false, error: { code: 'ERR_NGROK_3204', message: 'the x-hub-signature-256 header is missing' } } });
  });

  test('sns needs AWS certificates: 501 naming it; an unknown provider is a configuration problem', async () => {
    assert.deepEqual((await onRequest(h, policy('sns', ''), post([]))).terminal, {
      kind: 'error',
      error: { status: 501, message: 'verify-webhook: provider sns cannot be verified offline: Amazon SNS signatures are checked against a signing certificate downloaded from AWS, which needs the internet', headers: [] },
    });
    assert.match(JSON.stringify((await onRequest(h, policy('myhooks', 'x'), post([]))).terminal), /"status":500.*config\.provider: \\"myhooks\\" is not a webhook provider the vendor supports/);
  });
});
