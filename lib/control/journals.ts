import type { ControlOperation, Instance } from '../engine/context.ts';
import type { QueryParams } from '../conventions/paging.ts';
import { parseClearQuery, type JournalFilterBase } from '../journal/journal.ts';
import { parseRequestQuery } from '../journal/request-journal.ts';
import { parseTrafficQuery } from '../journal/traffic-journal.ts';

/** The journals (lib/journal/) on the control plane: each listed and cleared the same way. */

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
function journalOperations<F extends JournalFilterBase>({ name, journal, parse, listSummary, clearSummary }: JournalOnControlPlane<F>): ControlOperation[] {
  return [
    {
      id: `control.${name}.list`,
      method: 'GET',
      path: `/${name}`,
      status: 200,
      summary: listSummary,
      run: async (instance, input) => ({ [name]: journal(instance).list(parse(input.query)), size: journal(instance).size }),
    },
    {
      id: `control.${name}.clear`,
      method: 'DELETE',
      path: `/${name}`,
      status: 200,
      summary: clearSummary,
      run: async (instance, input) => ({ removed: journal(instance).clear(parseClearQuery(input.query)) }),
    },
  ];
}

export const JOURNAL_CONTROL_OPERATIONS: readonly ControlOperation[] = [
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
];
