import type { Operation } from '../../engine/context.ts';
import type { CompiledFilter } from '../../conventions/cel.ts';
import { FilterProblem } from '../../conventions/cel.ts';
import { listEnvelope, parsePageRequest } from '../../conventions/paging.ts';
import { absoluteUri } from '../../conventions/refs.ts';
import { scanPage } from '../../engine/list-filter.ts';
import { getRecord, respond, scopeOf } from '../../engine/resource.ts';
import { endpointsFamily } from '../endpoints/index.ts';
import { compileSelectors, kubernetesOperators } from './kubernetes-operators.ts';

/**
 * `GET /kubernetes_operators/{id}/bound_endpoints` (the Go client's GetBoundEndpoints, which the
 * operator polls): the endpoints of the account whose `bindings` include `kubernetes` and that one
 * of the operator's endpoint selectors matches, each selector a CEL condition over the endpoint as
 * the endpoints list answers it (`obj.url.endsWith(".example")`). Newest first, paged by `limit` and
 * `before_id`, scanned under the `filter` parameter's budget (lib/engine/list-filter.ts). A selector whose
 * evaluation fails on an endpoint (a field it lacks) does not match that endpoint: the poller gets
 * the rest, not a 400. An operator without the bindings feature binds nothing.
 */

const ENDPOINTS = endpointsFamily.kinds.endpoints;

/** Whether an endpoint response is kubernetes-bound and one of `selectors` matches it. */
function boundBy(selectors: readonly CompiledFilter[]): CompiledFilter {
  const matches = (endpoint: Record<string, unknown>) => {
    if (!(endpoint.bindings as readonly string[]).includes('kubernetes')) return false;
    return selectors.some((selector) => {
      try {
        return selector(endpoint);
      } catch (error) {
        if (error instanceof FilterProblem) return false;
        throw error;
      }
    });
  };
  return Object.assign(matches, { cost: selectors.reduce((sum, selector) => sum + selector.cost, 1) });
}

export const BOUND_ENDPOINTS: Operation = {
  id: 'kubernetes_operators.get_bound_endpoints',
  tag: kubernetesOperators.name,
  method: 'GET',
  path: `${kubernetesOperators.path}/:id/bound_endpoints`,
  status: 200,
  mutates: false,
  query: ['before_id', 'limit'],
  summary: "List the kubernetes-bound endpoints a Kubernetes operator's endpoint selectors match",
  async run(ctx, input) {
    const page = parsePageRequest(input.query);
    const operator = await getRecord(ctx, kubernetesOperators, input.params.id!);
    const listUri = absoluteUri(ctx.baseUrl, `${kubernetesOperators.path}/${operator.id}/bound_endpoints`);
    if (!operator.binding) return listEnvelope(ENDPOINTS.listKey, [], listUri, page, undefined, false);
    const matches = boundBy(compileSelectors(ctx, operator.binding.endpoint_selectors));
    const { items, lastId, hasMore } = await scanPage(ctx, scopeOf(ctx, ENDPOINTS.kind), page, (record) => respond(ctx, ENDPOINTS, record as never), matches);
    return listEnvelope(ENDPOINTS.listKey, items, listUri, page, lastId, hasMore);
  },
};
