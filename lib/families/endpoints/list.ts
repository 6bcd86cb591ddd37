import type { Operation, OperationContext, OperationInput } from '../../engine/context.ts';
import { listEnvelope, parsePageRequest, type QueryParams } from '../../conventions/paging.ts';
import { absoluteUri } from '../../conventions/refs.ts';
import { membersOf } from '../../engine/indexes.ts';
import { listRecords, respond, scopeOf } from '../../engine/resource.ts';
import { compileListFilter } from '../../engine/list-filter.ts';
import { byUrl, ENDPOINT_KIND, parseEndpointUrl, type EndpointRecord } from './records.ts';
import { endpoints } from './endpoints.ts';

/** The endpoint list with its `id`/`url` filters (the engine lists when neither is given). */

const FILTERS = ['id', 'url'] as const;
const LIST_PARAMS = ['before_id', 'beforeId', 'limit', 'filter', ...FILTERS];

/**
 * The values of a list filter: repeated parameters and comma-separated lists, empty ones dropped.
 */
function filterValues(value: QueryParams[string]): string[] {
  if (value === undefined) return [];
  return (typeof value === 'string' ? [value] : [...value]).flatMap((item) => item.split(',')).map((item) => item.trim()).filter((item) => item !== '');
}

/** A url filter matches the stored (canonical) url; a parseable one is canonicalised first. */
function canonicalUrl(text: string): string {
  try {
    return parseEndpointUrl(text, 'url', { ipHost: true }).url;
  } catch {
    return text;
  }
}

/**
 * One page of endpoints, newest first. Without filters it is the engine's list; with `id`/`url`,
 * the candidates are read by id and through the url index (O(filter values + matches)), then paged.
 */
export async function listEndpoints(ctx: OperationContext, query: QueryParams = {}): Promise<Record<string, unknown>> {
  const { id, url, ...paging } = query;
  const page = parsePageRequest(paging, LIST_PARAMS);
  const ids = filterValues(id);
  const urls = filterValues(url).map(canonicalUrl);
  if (ids.length === 0 && urls.length === 0) return listRecords(ctx, endpoints, paging);
  let candidates = new Set(ids);
  if (urls.length > 0) {
    const matches = new Set<string>();
    for (const one of new Set(urls)) for (const member of await membersOf(ctx.tx, byUrl(ctx), one)) matches.add(member);
    candidates = ids.length === 0 ? matches : new Set(ids.filter((candidate) => matches.has(candidate)));
  }
  const inPage = [...candidates].filter((candidate) => page.beforeId === undefined || candidate < page.beforeId).sort((a, b) => (a < b ? 1 : -1));
  const matches = page.filter === undefined ? undefined : compileListFilter(ctx, page.filter);
  const records: { id: string; response: Record<string, unknown> }[] = [];
  for (const candidate of inPage) {
    if (records.length > page.limit) break;
    const record = (await ctx.tx.get(scopeOf(ctx, ENDPOINT_KIND), candidate)) as EndpointRecord | undefined;
    if (!record) continue;
    const response = respond(ctx, endpoints, record);
    if (matches === undefined || matches(response)) records.push({ id: record.id, response });
  }
  const items = records.slice(0, page.limit);
  const listUri = absoluteUri(ctx.baseUrl, endpoints.path);
  const envelope = listEnvelope(endpoints.listKey, items.map((item) => item.response), listUri, page, items.at(-1)?.id, records.length > page.limit);
  if (typeof envelope.next_page_uri === 'string') {
    const keep = new URLSearchParams([...ids.map((value) => ['id', value]), ...filterValues(url).map((value) => ['url', value])]);
    envelope.next_page_uri = `${envelope.next_page_uri}&${keep.toString()}`;
  }
  return envelope;
}

/** The endpoint list: the engine's other operations come from the definition. */
export const ENDPOINT_OPERATIONS: readonly Operation[] = [
  {
    id: 'endpoints.list',
    tag: 'endpoints',
    method: 'GET',
    path: '/endpoints',
    status: 200,
    mutates: false,
    query: LIST_PARAMS.filter((name) => name !== 'beforeId'),
    // Deprecated by the vendor in its Go client v7.8 in favour of the CEL `filter`; still served.
    deprecatedQuery: ['id', 'url'],
    summary: 'List endpoints (filters: id, url, filter)',
    run: (ctx: OperationContext, input: OperationInput) => listEndpoints(ctx, input.query),
  },
];
