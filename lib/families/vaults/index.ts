import { defineFamily } from '../../engine/family.ts';
import { VAULTS_ERRORS } from './errors.ts';
import { parseSecretsKey, type VaultOptions } from './sealing.ts';
import { secrets } from './secrets.ts';
import { vaults } from './vaults.ts';

export { operatorKeyOf, parseSecretsKey, type VaultOptions } from './sealing.ts';
export { readAccountSecrets, readSecretNamed, readSecretValue } from './secrets.ts';

/** Vaults and the secrets in them (values sealed at rest with the state's key or the operator's). */
export const vaultsFamily = defineFamily({
  name: 'vaults',
  errors: VAULTS_ERRORS,
  kinds: { vaults, secrets },
  setup: (options) => {
    const key = (options as VaultOptions).secretsKey;
    return { secretsKey: key === undefined ? undefined : parseSecretsKey(key) };
  },
  examples: {
    vaults: { body: (seed) => ({ name: seed.unique('vault') }) },
    secrets: { body: async (seed) => ({ name: seed.unique('SECRET'), value: 'swept', vault_id: await seed.id('vaults') }) },
  },
});

export { VAULTS_ERRORS } from './errors.ts';
