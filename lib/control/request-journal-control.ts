import type { ControlOperation } from '../engine/context.ts';
import { accountOf, parseJournalQuery, single } from '../journal/request-journal.ts';

/** The request journal (lib/journal/request-journal.ts) on the control plane: list and clear. */

export const REQUEST_JOURNAL_CONTROL_OPERATIONS: readonly ControlOperation[] = [
  {
    id: 'control.requests.list',
    method: 'GET',
    path: '/requests',
    status: 200,
    summary: 'The request journal, newest first: filter by account_id (none: unauthenticated), status (404, 4xx, failed), path (contains); limit ≤ 1000',
    run: async (instance, input) => ({ requests: instance.requests.list(parseJournalQuery(input.query)), size: instance.requests.size }),
  },
  {
    id: 'control.requests.clear',
    method: 'DELETE',
    path: '/requests',
    status: 200,
    summary: 'Empty the request journal of one account (account_id; none: unauthenticated) or of all',
    async run(instance, input) {
      const q = single(input.query, ['account_id']);
      return { removed: instance.requests.clear(accountOf(q.account_id)) };
    },
  },
];
