import { ManualClock } from '../../lib/conventions/clock.ts';
import type { ConnectionFacts, EndpointFacts, HttpRequestFacts, HttpResponseFacts } from '../../lib/traffic/facts.ts';
import { createPolicyEngine, type PolicyEngine } from '../../lib/policy/engine.ts';
import type { RuleSource } from '../../lib/policy/program.ts';
import type { PolicyServices } from '../../lib/policy/services.ts';
import { trafficPolicySource } from '../../lib/policy/sources.ts';

/** Policy tests: an engine on a manual clock and hand-made traffic descriptions (no sockets). */

export const START = '2026-03-01T12:00:00Z';

export const ENDPOINT: EndpointFacts = { id: 'ep_2tEpN0yrxDI4j8jVnhVRoTNN2Tx', url: 'https://app.example' };

export const CONN: ConnectionFacts = {
  clientIp: '203.0.113.7',
  clientPort: 51234,
  serverIp: '127.0.0.1',
  serverPort: 443,
  startedAt: new Date('2026-03-01T11:59:59Z'),
};

export function requestFacts(overrides: Partial<HttpRequestFacts> = {}): HttpRequestFacts {
  return {
    method: 'GET',
    url: 'https://app.example/api/items?sort=asc&tag=a&tag=b',
    version: '1.1',
    headers: [
      ['Host', 'app.example'],
      ['User-Agent', 'curl/8.5.0'],
      ['Accept', '*/*'],
    ],
    receivedAt: new Date(START),
    ...overrides,
  };
}

/** A request body the engine may read (as the ingress would buffer it). */
export const body = (text: string | Buffer) => ({
  async read(maxBytes: number) {
    const bytes = Buffer.from(text);
    return bytes.length > maxBytes ? undefined : new Uint8Array(bytes);
  },
});

export interface Harness {
  readonly clock: ManualClock;
  readonly engine: PolicyEngine;
}

export function harness(services: Partial<PolicyServices> = {}): Harness {
  const clock = new ManualClock(START);
  let seed = 0.25;
  const engine = createPolicyEngine({ clock, random: () => (seed = (seed * 9301 + 0.49297) % 1), identityOrigin: 'https://idp.burrow.test', ...services });
  return { clock, engine };
}

/** Compiles a document (YAML or JSON text) with the harness engine. */
export const policyOf = (h: Harness, document: string, ...more: RuleSource[]) => h.engine.compile([...more, trafficPolicySource(document)]);

/** Runs the request phase of `document` over a request. */
export async function onRequest(h: Harness, document: string, request: Partial<HttpRequestFacts> = {}, conn: Partial<ConnectionFacts> = {}) {
  return h.engine.http(policyOf(h, document), ENDPOINT, { ...CONN, ...conn }, requestFacts(request)).request();
}

/** Runs both HTTP phases of `document`: the request, then `response` as the upstream's answer. */
export async function exchange(h: Harness, document: string, response: HttpResponseFacts, request: Partial<HttpRequestFacts> = {}) {
  const flow = h.engine.http(policyOf(h, document), ENDPOINT, CONN, requestFacts(request));
  const requestOutcome = await flow.request();
  return { request: requestOutcome, response: await flow.response(response) };
}

/** Evaluates one expression in on_http_request: a rule that adds `x-result: ${expression}`… as the rule's match result. */
export async function matches(h: Harness, expression: string, request: Partial<HttpRequestFacts> = {}, conn: Partial<ConnectionFacts> = {}): Promise<boolean> {
  const outcome = await onRequest(h, JSON.stringify({ on_http_request: [{ expressions: [expression], actions: [{ type: 'log' }] }] }), request, conn);
  if (outcome.terminal) throw new Error(JSON.stringify(outcome.terminal));
  return outcome.rules[0]!.matched;
}

/** The value of `${expression}` interpolated into a custom-response body. */
export async function interpolate(h: Harness, expression: string, request: Partial<HttpRequestFacts> = {}, conn: Partial<ConnectionFacts> = {}): Promise<string> {
  const outcome = await onRequest(h, JSON.stringify({ on_http_request: [{ actions: [{ type: 'custom-response', config: { body: `\${${expression}}` } }] }] }), request, conn);
  if (outcome.terminal?.kind !== 'respond') throw new Error(JSON.stringify(outcome.terminal));
  return outcome.terminal.response.body;
}
