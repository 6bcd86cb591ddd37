import { createHash, createHmac, createPublicKey, timingSafeEqual, verify as verifySignature } from 'node:crypto';
import type { PolicyResponse } from '../../traffic/decisions.ts';
import { headerValues } from '../http-fields.ts';
import type { HeaderList } from '../../traffic/facts.ts';
import { LIMITS } from '../../limits.ts';

/**
 * How each webhook provider signs its requests, for verify-webhook and the webhook_verification
 * module. The vendor lists the providers by identifier but leaves each scheme to the provider's own
 * documentation; these follow those schemes (header, HMAC algorithm, signed content, encoding,
 * timestamp tolerance). A provider whose timestamps are signed is refused outside its tolerance
 * (its documented one, else the vendor's default of 180 seconds). Twitter, Worldline, Xero and Zoom
 * also get their endpoint-verification challenges answered, as the vendor does.
 */

/** What a provider check reads: the request as received and the action's secret. */
export interface WebhookRequest {
  readonly method: string;
  readonly url: string;
  readonly headers: HeaderList;
  readonly body: Buffer;
  readonly secret: string;
  readonly now: Date;
}

/** A verification's result: verified, refused (and why), or a challenge answered for the provider. */
export type WebhookVerdict = { readonly verified: true } | { readonly verified: false; readonly reason: string } | { readonly challenge: PolicyResponse };

/** One provider: its check, and the status it expects on failure (403 unless it says otherwise). */
export interface WebhookProvider {
  readonly verify: (request: WebhookRequest) => WebhookVerdict;
  readonly failureStatus?: number;
}

/** The tolerance of signed timestamps when the provider names none, in seconds (the vendor's default). */
const DEFAULT_WEBHOOK_TOLERANCE_SECONDS = 180;

const VERIFIED = { verified: true } as const;
const refuse = (reason: string): WebhookVerdict => ({ verified: false, reason });

function header(request: WebhookRequest, name: string): string | undefined {
  const value = headerValues(request.headers, name)[0];
  return value === undefined || Buffer.byteLength(value) > LIMITS.policy_signature_header_bytes.value ? undefined : value;
}

const hmac = (algorithm: string, key: string | Buffer, ...parts: (string | Buffer)[]) => {
  const mac = createHmac(algorithm, key);
  for (const part of parts) mac.update(part);
  return mac.digest();
};

/** Whether `given` (text in `encoding`) is `expected`, in constant time. */
function same(expected: Buffer, given: string, encoding: 'hex' | 'base64'): boolean {
  const bytes = Buffer.from(given.trim(), encoding);
  return bytes.length === expected.length && timingSafeEqual(bytes, expected);
}

function sameText(expected: string, given: string): boolean {
  const a = createHash('sha256').update(expected).digest();
  return timingSafeEqual(a, createHash('sha256').update(given).digest());
}

/** `timestamp` (seconds, or milliseconds with `ms`) is within `tolerance` seconds of now. */
function fresh(request: WebhookRequest, timestamp: string | undefined, tolerance = DEFAULT_WEBHOOK_TOLERANCE_SECONDS, ms = false): string | undefined {
  if (!timestamp || !/^\d+$/.test(timestamp)) return 'the signed timestamp is missing';
  const seconds = Number(timestamp) / (ms ? 1000 : 1);
  return Math.abs(request.now.getTime() / 1000 - seconds) > tolerance ? `the signed timestamp is more than ${tolerance} seconds from now` : undefined;
}

/** `name: prefix + encode(HMAC(secret, body))`, the most common scheme. */
function bodySignature(name: string, algorithm: string, encoding: 'hex' | 'base64', prefix = ''): WebhookProvider {
  return {
    verify(request) {
      const given = header(request, name);
      if (!given) return refuse(`the ${name} header is missing`);
      if (!given.startsWith(prefix)) return refuse(`the ${name} header does not start with ${prefix}`);
      return same(hmac(algorithm, request.secret, request.body), given.slice(prefix.length), encoding) ? VERIFIED : refuse(`the ${name} signature does not match the body`);
    },
  };
}

/** `name: t=<seconds>,v1=<hex>[,v1=…]` over `<t>.<body>` (Stripe, Mux, Calendly). */
function timestampedPairs(name: string, tolerance: number, stamp = 't', version = 'v1'): WebhookProvider {
  return {
    verify(request) {
      const given = header(request, name);
      if (!given) return refuse(`the ${name} header is missing`);
      const pairs = given.split(',').map((pair) => pair.split('=') as [string, string]);
      const timestamp = pairs.find(([key]) => key.trim() === stamp)?.[1];
      const stale = fresh(request, timestamp, tolerance);
      if (stale) return refuse(stale);
      const expected = hmac('sha256', request.secret, `${timestamp}.`, request.body);
      return pairs.some(([key, value]) => key.trim() === version && value !== undefined && same(expected, value, 'hex')) ? VERIFIED : refuse(`no ${version} signature in ${name} matches`);
    },
  };
}

/** `v0=<hex>` over `v0:<timestamp>:<body>` (Slack, Zoom). */
function versionZero(signatureName: string, timestampName: string): (request: WebhookRequest) => WebhookVerdict {
  return (request) => {
    const timestamp = header(request, timestampName);
    const stale = fresh(request, timestamp, 300);
    if (stale) return refuse(stale);
    const given = header(request, signatureName);
    if (!given?.startsWith('v0=')) return refuse(`the ${signatureName} header is missing or not v0=`);
    return same(hmac('sha256', request.secret, `v0:${timestamp}:`, request.body), given.slice(3), 'hex') ? VERIFIED : refuse(`the ${signatureName} signature does not match`);
  };
}

const json = (status: number, value: unknown): PolicyResponse => ({ status, headers: [['content-type', 'application/json']], body: JSON.stringify(value) });

function parseJson(body: Buffer): any {
  try {
    return JSON.parse(body.toString('utf8'));
  } catch {
    return undefined;
  }
}

const svix: WebhookProvider = {
  verify(request) {
    const id = header(request, 'svix-id');
    const timestamp = header(request, 'svix-timestamp');
    const signatures = header(request, 'svix-signature');
    if (!id || !signatures) return refuse('the svix-id or svix-signature header is missing');
    const stale = fresh(request, timestamp, 300);
    if (stale) return refuse(stale);
    const key = Buffer.from(request.secret.replace(/^whsec_/, ''), 'base64');
    const expected = hmac('sha256', key, `${id}.${timestamp}.`, request.body);
    return signatures.split(' ').some((entry) => entry.startsWith('v1,') && same(expected, entry.slice(3), 'base64')) ? VERIFIED : refuse('no v1 signature in svix-signature matches');
  },
};

const zoomVerify = versionZero('x-zm-signature', 'x-zm-request-timestamp');
const zoom: WebhookProvider = {
  verify(request) {
    const verdict = zoomVerify(request);
    const event = parseJson(request.body);
    if ('verified' in verdict && verdict.verified && event?.event === 'endpoint.url_validation' && typeof event.payload?.plainToken === 'string') {
      const plainToken = event.payload.plainToken as string;
      return { challenge: json(200, { plainToken, encryptedToken: hmac('sha256', request.secret, plainToken).toString('hex') }) };
    }
    return verdict;
  },
};

const twitter: WebhookProvider = {
  verify(request) {
    const crcToken = new URL(request.url).searchParams.get('crc_token');
    if (request.method === 'GET' && crcToken !== null) return { challenge: json(200, { response_token: `sha256=${hmac('sha256', request.secret, crcToken).toString('base64')}` }) };
    return bodySignature('x-twitter-webhooks-signature', 'sha256', 'base64', 'sha256=').verify(request);
  },
};

const worldline: WebhookProvider = {
  verify(request) {
    const challenge = header(request, 'x-gcs-webhooks-endpoint-verification');
    if (request.method === 'GET' && challenge !== undefined) return { challenge: { status: 200, headers: [['content-type', 'text/plain']], body: challenge } };
    return bodySignature('x-gcs-signature', 'sha256', 'base64').verify(request);
  },
};

/** Xero's "intent to receive" expects 401 for a bad signature, so its failures are 401. */
const xero: WebhookProvider = { ...bodySignature('x-xero-signature', 'sha256', 'base64'), failureStatus: 401 };

const twilio: WebhookProvider = {
  verify(request) {
    const given = header(request, 'x-twilio-signature');
    if (!given) return refuse('the x-twilio-signature header is missing');
    const url = new URL(request.url);
    const form = /application\/x-www-form-urlencoded/i.test(headerValues(request.headers, 'content-type')[0] ?? '');
    let signed = request.url;
    if (form) {
      const params = [...new URLSearchParams(request.body.toString('utf8'))].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
      signed += params.map(([key, value]) => key + value).join('');
    } else if (url.searchParams.has('bodySHA256') && createHash('sha256').update(request.body).digest('hex') !== url.searchParams.get('bodySHA256')) {
      return refuse('the body does not match bodySHA256');
    }
    return same(hmac('sha1', request.secret, signed), given, 'base64') ? VERIFIED : refuse('the x-twilio-signature signature does not match');
  },
};

const hubspot: WebhookProvider = {
  verify(request) {
    const timestamp = header(request, 'x-hubspot-request-timestamp');
    const stale = fresh(request, timestamp, 300, true);
    if (stale) return refuse(stale);
    const given = header(request, 'x-hubspot-signature-v3');
    if (!given) return refuse('the x-hubspot-signature-v3 header is missing');
    return same(hmac('sha256', request.secret, request.method, request.url, request.body, timestamp!), given, 'base64') ? VERIFIED : refuse('the x-hubspot-signature-v3 signature does not match');
  },
};

const square: WebhookProvider = {
  verify(request) {
    const given = header(request, 'x-square-hmacsha256-signature');
    if (!given) return refuse('the x-square-hmacsha256-signature header is missing');
    return same(hmac('sha256', request.secret, request.url, request.body), given, 'base64') ? VERIFIED : refuse('the x-square-hmacsha256-signature signature does not match');
  },
};

const buildkite: WebhookProvider = {
  verify(request) {
    const token = header(request, 'x-buildkite-token');
    if (token !== undefined) return sameText(request.secret, token) ? VERIFIED : refuse('the x-buildkite-token does not match');
    const given = header(request, 'x-buildkite-signature');
    if (!given) return refuse('the x-buildkite-signature header is missing');
    const pairs = Object.fromEntries(given.split(',').map((pair) => pair.split('=') as [string, string]));
    const stale = fresh(request, pairs.timestamp);
    if (stale) return refuse(stale);
    return pairs.signature && same(hmac('sha256', request.secret, `${pairs.timestamp}.`, request.body), pairs.signature, 'hex') ? VERIFIED : refuse('the x-buildkite-signature signature does not match');
  },
};

const mailgun: WebhookProvider = {
  verify(request) {
    const signature = parseJson(request.body)?.signature;
    if (!signature || typeof signature.timestamp !== 'string' || typeof signature.token !== 'string' || typeof signature.signature !== 'string') return refuse('the body has no signature object');
    const stale = fresh(request, signature.timestamp, 300);
    if (stale) return refuse(stale);
    return same(hmac('sha256', request.secret, signature.timestamp, signature.token), signature.signature, 'hex') ? VERIFIED : refuse('the body signature does not match');
  },
};

const zendesk: WebhookProvider = {
  verify(request) {
    const timestamp = header(request, 'x-zendesk-webhook-signature-timestamp');
    const given = header(request, 'x-zendesk-webhook-signature');
    if (!timestamp || !given) return refuse('the x-zendesk-webhook-signature headers are missing');
    return same(hmac('sha256', request.secret, timestamp, request.body), given, 'base64') ? VERIFIED : refuse('the x-zendesk-webhook-signature signature does not match');
  },
};

const box: WebhookProvider = {
  verify(request) {
    const timestamp = header(request, 'box-delivery-timestamp');
    const signatures = [header(request, 'box-signature-primary'), header(request, 'box-signature-secondary')].filter((value): value is string => value !== undefined);
    if (!timestamp || signatures.length === 0) return refuse('the box-signature headers are missing');
    if (Math.abs(request.now.getTime() - Date.parse(timestamp)) > 600_000) return refuse('the box-delivery-timestamp is more than 10 minutes from now');
    const expected = hmac('sha256', request.secret, request.body, timestamp);
    return signatures.some((signature) => same(expected, signature, 'base64')) ? VERIFIED : refuse('no box signature matches');
  },
};

const microsoftTeams: WebhookProvider = {
  verify(request) {
    const given = header(request, 'authorization');
    if (!given?.startsWith('HMAC ')) return refuse('the authorization header is missing or not HMAC');
    return same(hmac('sha256', Buffer.from(request.secret, 'base64'), request.body), given.slice(5), 'base64') ? VERIFIED : refuse('the HMAC authorization does not match');
  },
};

const sendgrid: WebhookProvider = {
  verify(request) {
    const signature = header(request, 'x-twilio-email-event-webhook-signature');
    const timestamp = header(request, 'x-twilio-email-event-webhook-timestamp');
    if (!signature || !timestamp) return refuse('the x-twilio-email-event-webhook headers are missing');
    try {
      const key = createPublicKey({ key: Buffer.from(request.secret, 'base64'), format: 'der', type: 'spki' });
      return verifySignature('sha256', Buffer.concat([Buffer.from(timestamp), request.body]), key, Buffer.from(signature, 'base64')) ? VERIFIED : refuse('the ECDSA signature does not match');
    } catch (error) {
      return refuse(`the secret is not a base64 ECDSA public key: ${(error as Error).message}`);
    }
  },
};

const gitlab: WebhookProvider = {
  verify(request) {
    const token = header(request, 'x-gitlab-token');
    return token !== undefined && sameText(request.secret, token) ? VERIFIED : refuse('the x-gitlab-token header is missing or does not match');
  },
};

const metaSignature = bodySignature('x-hub-signature-256', 'sha256', 'hex', 'sha256=');

/** The providers Burrow verifies, by the vendor's identifier. */
export const WEBHOOK_PROVIDERS: Readonly<Record<string, WebhookProvider>> = {
  aftership: bodySignature('aftership-hmac-sha256', 'sha256', 'base64'),
  bitbucket: bodySignature('x-hub-signature', 'sha256', 'hex', 'sha256='),
  box,
  buildkite,
  calendly: timestampedPairs('calendly-webhook-signature', DEFAULT_WEBHOOK_TOLERANCE_SECONDS),
  castle: bodySignature('x-castle-signature', 'sha256', 'base64'),
  circleci: bodySignature('circleci-signature', 'sha256', 'hex', 'v1='),
  clerk: svix,
  docusign: bodySignature('x-docusign-signature-1', 'sha256', 'base64'),
  dropbox: bodySignature('x-dropbox-signature', 'sha256', 'hex'),
  facebook_graph_api: metaSignature,
  facebook_messenger: metaSignature,
  github: bodySignature('x-hub-signature-256', 'sha256', 'hex', 'sha256='),
  gitlab,
  heroku: bodySignature('heroku-webhook-hmac-sha256', 'sha256', 'base64'),
  hubspot,
  instagram: metaSignature,
  intercom: bodySignature('x-hub-signature', 'sha1', 'hex', 'sha1='),
  launch_darkly: bodySignature('x-ld-signature', 'sha256', 'hex'),
  linear: bodySignature('linear-signature', 'sha256', 'hex'),
  mailgun,
  microsoft_teams: microsoftTeams,
  modern_treasury: bodySignature('x-signature', 'sha256', 'hex'),
  mux: timestampedPairs('mux-signature', 300),
  pagerduty: {
    verify(request) {
      const given = header(request, 'x-pagerduty-signature');
      if (!given) return refuse('the x-pagerduty-signature header is missing');
      const expected = hmac('sha256', request.secret, request.body);
      return given.split(',').some((entry) => entry.trim().startsWith('v1=') && same(expected, entry.trim().slice(3), 'hex')) ? VERIFIED : refuse('no v1 signature in x-pagerduty-signature matches');
    },
  },
  pusher: bodySignature('x-pusher-signature', 'sha256', 'hex'),
  sendgrid,
  sentry: bodySignature('sentry-hook-signature', 'sha256', 'hex'),
  shopify: bodySignature('x-shopify-hmac-sha256', 'sha256', 'base64'),
  slack: { verify: versionZero('x-slack-signature', 'x-slack-request-timestamp') },
  square,
  stripe: timestampedPairs('stripe-signature', 300),
  svix,
  terraform: bodySignature('x-tfe-notification-signature', 'sha512', 'hex'),
  twilio,
  twitter,
  typeform: bodySignature('typeform-signature', 'sha256', 'base64', 'sha256='),
  webex: bodySignature('x-spark-signature', 'sha1', 'hex'),
  whatsapp: metaSignature,
  worldline,
  xero,
  zendesk,
  zoom,
};

/** The vendor's provider identifiers Burrow cannot verify, with the reason (a 5xx names it). */
export const UNVERIFIABLE_PROVIDERS: Readonly<Record<string, string>> = {
  sns: 'Amazon SNS signatures are checked against a signing certificate downloaded from AWS, which needs the internet',
  ...Object.fromEntries(
    ['airship', 'alchemy', 'autodesk', 'bolt', 'brex', 'chargify', 'clearbit', 'coinbase', 'contentful', 'frameio', 'go1', 'graphcms', 'hostedhooks', 'jira', 'mailchimp', 'mongodb', 'orb', 'orbit', 'pinwheel', 'plivo', 'signal_sciences', 'sonatype', 'tiktok', 'trendmicro_conformity', 'vmware'].map((name) => [
      name,
      `Burrow does not implement the ${name} signature scheme`,
    ]),
  ),
};
