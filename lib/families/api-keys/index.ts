import { defineFamily } from '../../engine/family.ts';
import { apiKeys } from './api-keys.ts';

/** API keys: the bearer tokens of the management API. */
export const apiKeysFamily = defineFamily({
  name: 'api-keys',
  kinds: { api_keys: apiKeys },
  examples: { api_keys: { body: () => ({ description: 'sweep' }) } },
});
