import type { Operation } from '../../engine/context.ts';
import { notFound } from '../../conventions/errors.ts';
import { makeRef } from '../../conventions/refs.ts';
import { OWNER_KINDS } from '../../engine/owners.ts';

/**
 * `GET /users/{id}`: the user a reference names (an API key's or secret's `owner`, an endpoint's
 * `principal`, a secret's `created_by`). The vendor publishes no users API, yet its references to a
 * user carry a `uri` under `/users`; Burrow answers it, so that every `uri` it gives resolves. Users
 * are made with their account (its admin) and never change through the API.
 */
export const GET_USER: Operation = {
  id: 'users.get',
  tag: 'users',
  method: 'GET',
  path: `${OWNER_KINDS.user.path}/:id`,
  status: 200,
  mutates: false,
  summary: 'Get a user of the account (the owner or principal a reference names)',
  async run(ctx, input) {
    const id = input.params.id!;
    const user = await ctx.tx.get({ account: ctx.account, kind: OWNER_KINDS.user.kind }, id);
    if (!user) notFound('user', id);
    return { ...makeRef(ctx.baseUrl, OWNER_KINDS.user.path, id), name: user.name ?? '', admin: user.admin === true, created_at: user.created_at };
  },
};
