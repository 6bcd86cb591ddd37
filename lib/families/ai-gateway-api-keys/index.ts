import { defineFamily } from '../../engine/family.ts';
import { aiGatewayApiKeys } from './ai-gateway-api-keys.ts';
import { AI_GATEWAY_API_KEYS_ERRORS } from './errors.ts';

/** AI gateway API keys: keys scoped to one endpoint, for callers of an AI gateway. */
export const aiGatewayApiKeysFamily = defineFamily({
  name: 'ai-gateway-api-keys',
  kinds: { ai_gateway_api_keys: aiGatewayApiKeys },
  errors: AI_GATEWAY_API_KEYS_ERRORS,
  examples: { ai_gateway_api_keys: { body: async (seed) => ({ description: 'swept', endpoint_id: await seed.id('endpoints') }) } },
});
