import type { ControlOperationSpec, Instance } from '../engine/context.ts';
import type { QueryParams } from '../conventions/paging.ts';
import { fail } from '../conventions/errors.ts';
import { parseClearQuery, type JournalFilterBase } from '../journal/journal.ts';
import { curlCommand, parseReplayEdits, ReplayBody, replayRequest, type JournaledRequest } from '../journal/replay.ts';
import { REQUEST_FIND_BODY, TRAFFIC_FIND_BODY, type RequestFindInput, type TrafficFindInput } from '../journal/find.ts';
import { parseRequestQuery, type JournalEntryDetail } from '../journal/request-journal.ts';
import { parseTrafficQuery, type TrafficEntryDetail } from '../journal/traffic-journal.ts';

/**
 * The journals (lib/journal/) on the control plane: each listed and cleared the same way; one
 * entry read with its detail and the curl command that reproduces it, and replayed with edits
 * (lib/journal/replay.ts).
 */

interface JournalOnControlPlane<F extends JournalFilterBase> {
  /** The listing's path and the field of its answer (`requests`, `traffic`). */
  readonly name: string;
  /** What the control plane asks of a journal (lib/journal/journal.ts `Journal`). */
  readonly journal: (instance: Instance) => { list(filter: F): unknown[]; readonly size: number; clear(account?: string | null): number };
  readonly parse: (query: QueryParams) => F;
  readonly listSummary: string;
  readonly clearSummary: string;
}

/** `GET /_burrow/<name>` (its entries and the journal's size) and `DELETE /_burrow/<name>` (how many were removed). */
function journalOperations<F extends JournalFilterBase>({ name, journal, parse, listSummary, clearSummary }: JournalOnControlPlane<F>): ControlOperationSpec[] {
  return [
    {
      id: `control.${name}.list`,
      route: `GET /${name}`,
      summary: listSummary,
      run: async (instance, input) => ({ [name]: journal(instance).list(parse(input.query)), size: journal(instance).size }),
    },
    {
      id: `control.${name}.clear`,
      route: `DELETE /${name}`,
      summary: clearSummary,
      run: async (instance, input) => ({ removed: journal(instance).clear(parseClearQuery(input.query)) }),
    },
  ];
}

/** An API request as replay and curl read it. */
function apiRequestOf(entry: JournalEntryDetail): JournaledRequest {
  return { method: entry.method, target: `${entry.path}${entry.query ? `?${entry.query}` : ''}`, headers: entry.request.headers, body: entry.request.body };
}

/** An HTTP exchange as replay and curl read it (TCP connections are not replayed). */
function trafficRequestOf(entry: TrafficEntryDetail): JournaledRequest {
  if (!entry.request) fail('INVALID_FIELD', `exchange ${entry.seq} is a TCP connection; only HTTP exchanges are replayed`);
  const url = new URL(entry.request.url);
  return { method: entry.request.method, target: `${url.pathname}${url.search}`, headers: entry.request.headers, body: entry.request.body };
}

/** `seq` of a path, a whole number (else the 404 an unknown one gets). */
function seqOf(text: string | undefined): number {
  const seq = /^\d{1,15}$/.test(text ?? '') ? Number(text) : 0;
  if (seq === 0) fail('NOT_FOUND', `the traffic journal has no exchange ${JSON.stringify(text)}: entries are numbered 1, 2, …`, { seq: String(text) });
  return seq;
}

const withApiCurl = (instance: Instance, baseUrl: string, entry: JournalEntryDetail) => ({ ...entry, curl: curlCommand(instance.baseUrl ?? baseUrl, apiRequestOf(entry)) });

/** The traffic's curl goes to this process's HTTP ingress when it has one (the Host header names the endpoint), else to the URL as received. */
function withTrafficCurl(instance: Instance, entry: TrafficEntryDetail) {
  if (!entry.request) return { ...entry, curl: null };
  const ingress = instance.services.listeners.get('http_ingress');
  return { ...entry, curl: curlCommand(ingress ? `http://${ingress}` : new URL(entry.request.url).origin, trafficRequestOf(entry)) };
}

/** Reading one entry and replaying it; finding entries by what was sent (lib/journal/find.ts). */
const DETAIL_OPERATIONS: readonly ControlOperationSpec[] = [
  {
    id: 'control.requests.find',
    route: 'POST /requests/find',
    body: REQUEST_FIND_BODY,
    summary: 'The journaled API requests that match method, path pattern, operation pattern, status and body (text it contains, or JSON it contains), each with its detail, newest first',
    run: async (instance, input) => ({ requests: instance.requests.find(input.body as RequestFindInput) }),
  },
  {
    id: 'control.traffic.find',
    route: 'POST /traffic/find',
    body: TRAFFIC_FIND_BODY,
    summary: 'The journaled exchanges that match method, path pattern, host, endpoint_id, status and body, each with its detail, newest first; wait_ms waits for a first match',
    run: async (instance, input) => ({ traffic: await instance.traffic.find(input.body as TrafficFindInput) }),
  },
  {
    id: 'control.requests.get',
    route: 'GET /requests/:operation_id',
    summary: 'One journaled API request with its detail: headers and bodies both ways (secrets masked, bodies capped), the error message, and a curl command that reproduces it ($BURROW_KEY for the key)',
    run: async (instance, input, meta) => withApiCurl(instance, meta.baseUrl, instance.requests.get(input.params.operation_id ?? '')),
  },
  {
    id: 'control.requests.replay',
    route: 'POST /requests/:operation_id/replay',
    body: ReplayBody,
    summary:
      'Send a journaled API request again through the same pipeline, with optional edits (method, path, headers, body), answering the new entry. The journal never keeps API keys: give one as headers.authorization ("Bearer <key>") when the original sent one',
    async run(instance, input, meta) {
      const edits = parseReplayEdits(input.body);
      const original = apiRequestOf(instance.requests.get(input.params.operation_id ?? ''));
      if (!meta.send) fail('INVALID_FIELD', "a replay is sent over HTTP: call the control plane through Burrow's HTTP adapter");
      const sentKey = original.headers.some(([name]) => name.toLowerCase() === 'authorization');
      const operationId = await meta.send(replayRequest(original, edits, sentKey));
      return withApiCurl(instance, meta.baseUrl, instance.requests.get(operationId));
    },
  },
  {
    id: 'control.traffic.get',
    route: 'GET /traffic/:seq',
    summary: 'One journaled exchange with its detail: the request and answer (headers masked, bodies capped), the upstream\'s answer and timings, the rules evaluated, and a curl command that reproduces it',
    run: async (instance, input) => withTrafficCurl(instance, instance.traffic.get(seqOf(input.params.seq))),
  },
  {
    id: 'control.traffic.replay',
    route: 'POST /traffic/:seq/replay',
    body: ReplayBody,
    summary:
      "Send a journaled HTTP exchange again to this process's HTTP ingress, through the endpoint's policy, with optional edits (method, path, headers, body), answering the new exchange. Masked headers are not sent unless the edits give them",
    async run(instance, input) {
      const edits = parseReplayEdits(input.body);
      const original = trafficRequestOf(instance.traffic.get(seqOf(input.params.seq)));
      return withTrafficCurl(instance, await instance.traffic.replay(replayRequest(original, edits, false)));
    },
  },
];

export const JOURNAL_CONTROL_OPERATIONS: readonly ControlOperationSpec[] = [
  ...journalOperations({
    name: 'requests',
    journal: (instance) => instance.requests,
    parse: parseRequestQuery,
    listSummary: 'The request journal, newest first: filter by account_id (none: unauthenticated), status (404, 4xx, failed), path (contains); limit ≤ 1000',
    clearSummary: 'Empty the request journal of one account (account_id; none: unauthenticated) or of all',
  }),
  ...journalOperations({
    name: 'traffic',
    journal: (instance) => instance.traffic,
    parse: parseTrafficQuery,
    listSummary:
      'The traffic journal (what the ingress carried, with the rules its policy evaluated), newest first: filter by account_id (none: traffic no endpoint took), status (404, 4xx, failed), endpoint_id, errors=true (a rule failed); limit ≤ 1000',
    clearSummary: 'Empty the traffic journal of one account (account_id; none: traffic no endpoint took) or of all',
  }),
  ...DETAIL_OPERATIONS,
];
