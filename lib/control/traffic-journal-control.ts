import type { ControlOperation } from './context.ts';
import { accountOf, single } from './request-journal.ts';
import { parseTrafficQuery } from './traffic-journal.ts';

/** The traffic journal (lib/traffic-journal.ts) on the control plane: list and clear. */

export const TRAFFIC_JOURNAL_CONTROL_OPERATIONS: readonly ControlOperation[] = [
  {
    id: 'control.traffic.list',
    method: 'GET',
    path: '/traffic',
    status: 200,
    summary:
      'The traffic journal (what the ingress carried, with the rules its policy evaluated), newest first: filter by account_id (none: traffic no endpoint took), status (404, 4xx, failed), endpoint_id, errors=true (a rule failed); limit ≤ 1000',
    run: async (instance, input) => ({ traffic: instance.traffic.list(parseTrafficQuery(input.query)), size: instance.traffic.size }),
  },
  {
    id: 'control.traffic.clear',
    method: 'DELETE',
    path: '/traffic',
    status: 200,
    summary: 'Empty the traffic journal of one account (account_id; none: traffic no endpoint took) or of all',
    async run(instance, input) {
      const q = single(input.query, ['account_id']);
      return { removed: instance.traffic.clear(accountOf(q.account_id)) };
    },
  },
];
