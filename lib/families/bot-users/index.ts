import { defineFamily } from '../../engine/family.ts';
import { botUsers } from './bot-users.ts';
import { BOT_USERS_ERRORS } from './errors.ts';

export { botKind, botUsers } from './bot-users.ts';

/** Bot users: owners of keys and credentials that are no person. */
export const botUsersFamily = defineFamily({
  name: 'bot-users',
  kinds: { bot_users: botUsers },
  errors: BOT_USERS_ERRORS,
  examples: { bot_users: { body: (seed) => ({ name: seed.unique('bot') }) } },
});
