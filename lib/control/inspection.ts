import * as v from 'valibot';
import { operatorIn, type ControlOperationSpec, type Instance, type Operation } from '../engine/context.ts';
import { fail } from '../conventions/errors.ts';
import { NO_FIELDS, parseInput } from '../conventions/fields.ts';
import { parsePageRequest } from '../conventions/paging.ts';
import { INSTANCE_SCOPE, readAll, type StoreReader, type Scope } from '../store.ts';

/**
 * Control-plane views of what an account holds, for operators and the inspector page: the
 * accounts, every resource kind with its count, lists and records exactly as the API answers them
 * (the operation runs as an admin of the account, without guards or rate limits, so looking never
 * changes what an account's own requests see), and the agent commands on tunnel sessions.
 */

/** Counting stops here; a kind with more reports `more: true`. */
export const COUNT_CAP = 10_000;

const DEFAULT_ACCOUNT_SETTING = { scope: { account: INSTANCE_SCOPE, kind: 'setting' }, id: 'default_account' };

async function countUpTo(reader: StoreReader, scope: Scope, cap: number): Promise<number> {
  let count = 0;
  for (let page = await reader.page(scope, { limit: 500 }); ; ) {
    count += page.length;
    if (page.length < 500 || count >= cap) return Math.min(count, cap);
    page = await reader.page(scope, { beforeId: page[page.length - 1]!.id, limit: 500 });
  }
}

function definitionNamed(instance: Instance, name: string) {
  const def = instance.resources.find((d) => d.name === name);
  if (!def) fail('NOT_FOUND', `no resource kind '${name}'; kinds: ${instance.resources.map((d) => d.name).join(', ')}`, { name });
  return def;
}

function apiOperation(instance: Instance, id: string): Operation {
  const operation = instance.operation(id);
  if (!operation) fail('NOT_FOUND', `the API has no operation ${id}`);
  return operation;
}

/** Runs an API operation as the account's operator and answers its body. */
async function runAs(instance: Instance, account: string, operation: Operation, input: { params?: Record<string, string>; query?: Record<string, string>; body?: unknown }, baseUrl: string): Promise<unknown> {
  return instance.perform(operatorIn(account), (ctx) => operation.run(ctx, { params: input.params ?? {}, query: input.query ?? {}, body: input.body }), baseUrl);
}

const SESSION_COMMANDS = ['stop', 'restart', 'update'];

export const INSPECTION_CONTROL_OPERATIONS: readonly ControlOperationSpec[] = [
  {
    id: 'control.accounts.list',
    route: 'GET /accounts',
    summary: 'Every account, oldest first; `default` marks the one the CLI serves',
    async run(instance) {
      const defaultAccount = await instance.reader.get(DEFAULT_ACCOUNT_SETTING.scope, DEFAULT_ACCOUNT_SETTING.id);
      const accounts = (await readAll(instance.reader, { account: INSTANCE_SCOPE, kind: 'account' })).reverse();
      return { accounts: accounts.map((a) => ({ id: a.id, name: a.name ?? '', created_at: a.created_at, default: a.id === defaultAccount?.value })) };
    },
  },
  {
    id: 'control.accounts.resources',
    route: 'GET /accounts/:account_id/resources',
    summary: `Every resource kind of the API with the account's count of it (counting stops at ${COUNT_CAP}: then more is true)`,
    async run(instance, input) {
      const account = input.params.account_id!;
      const resources = [];
      for (const def of instance.resources) {
        const count = await countUpTo(instance.reader, { account, kind: def.kind }, COUNT_CAP + 1);
        resources.push({ name: def.name, label: def.label, path: def.path, prefix: def.prefix, list_key: def.listKey, count: Math.min(count, COUNT_CAP), more: count > COUNT_CAP });
      }
      return { resources };
    },
  },
  {
    id: 'control.accounts.resources.list',
    route: 'GET /accounts/:account_id/resources/:name',
    summary: "One page of a kind's list exactly as the API answers it (limit, before_id)",
    async run(instance, input, meta) {
      const account = input.params.account_id!;
      const def = definitionNamed(instance, input.params.name!);
      const page = parsePageRequest(input.query);
      const query: Record<string, string> = { limit: String(page.limit), ...(page.beforeId ? { before_id: page.beforeId } : {}) };
      return runAs(instance, account, apiOperation(instance, `${def.name}.list`), { query }, instance.baseUrl ?? meta.baseUrl);
    },
  },
  {
    id: 'control.accounts.records.get',
    route: 'GET /accounts/:account_id/records/:id',
    summary: 'Any record of the account by id (its prefix names the kind), as the API answers it',
    async run(instance, input, meta) {
      const account = input.params.account_id!;
      const id = input.params.id!;
      const prefix = id.slice(0, id.lastIndexOf('_'));
      const def = instance.resources.find((d) => d.prefix === prefix);
      if (!def) fail('NOT_FOUND', `'${id}' is not the id of an API resource (no kind has the prefix '${prefix}')`, { id });
      const record = await runAs(instance, account, apiOperation(instance, `${def.name}.get`), { params: { id } }, instance.baseUrl ?? meta.baseUrl);
      return { resource: def.name, label: def.label, record };
    },
  },
  {
    id: 'control.tunnel_sessions.command',
    route: 'POST /accounts/:account_id/tunnel_sessions/:id/:command',
    status: 204,
    body: NO_FIELDS,
    summary: 'Send an agent command (stop, restart or update) to the agent of a tunnel session, as the API does',
    async run(instance, input, meta) {
      const account = input.params.account_id!;
      const command = input.params.command!;
      if (!SESSION_COMMANDS.includes(command)) fail('ROUTE_NOT_FOUND', `no agent command '${command}'; commands: ${SESSION_COMMANDS.join(', ')}`);
      parseInput(NO_FIELDS, input.body ?? {});
      await runAs(instance, account, apiOperation(instance, `tunnel_sessions.${command}`), { params: { id: input.params.id! }, body: {} }, instance.baseUrl ?? meta.baseUrl);
      return undefined;
    },
  },
];
