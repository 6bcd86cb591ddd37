/**
 * Type tests of the in-process client, checked by `npm run typecheck` (tsc reads test/): every
 * `@ts-expect-error` line must be an error, or tsc fails with "unused @ts-expect-error". Nothing
 * here runs.
 */
import { createBurrow, type BurrowClient, type CreateBody, type ResourceName, type UpdateBody } from '../../lib/index.ts';
import { MemoryStore } from '../../adapters/stores/memory-store.ts';

export async function clientTypes(): Promise<void> {
  const burrow = createBurrow({ store: new MemoryStore() });
  const client = burrow.client((await burrow.createAccount()).token);

  const credential = await client.resource('credentials').create({ acl: ['bind:*.example.com'], description: 'ci' });
  const id: string = credential.id;
  await client.resource('credentials').update(id, { metadata: '{}' });
  await client.resource('ip_policy_rules').create({ ip_policy_id: 'ipp_1', cidr: '10.0.0.0/8', action: 'allow' });
  await client.resource('https_edges').create({ hostports: ['example.com:443'] });
  const page = await client.resource('api_keys').list({ limit: '5' });
  const next: string | null = page.next_page_uri;
  void next;

  // @ts-expect-error an unknown resource name
  client.resource('no_such_thing');
  // @ts-expect-error acl is a list of strings
  await client.resource('credentials').create({ acl: 5 });
  // @ts-expect-error an unknown field (schemas are strict)
  await client.resource('api_keys').create({ descripton: 'typo' });
  // @ts-expect-error action is allow or deny
  await client.resource('ip_policy_rules').create({ ip_policy_id: 'ipp_1', cidr: '10.0.0.0/8', action: 'permit' });
  // @ts-expect-error cidr is required
  await client.resource('ip_policy_rules').create({ ip_policy_id: 'ipp_1', action: 'allow' });
  // @ts-expect-error description is a string
  await client.resource('event_destinations').update(id, { description: 7 });
  await client.resource('reserved_domains').create({ domain: 'app.example.com', certificate_management_policy: { private_key_type: 'rsa' } });
  await client.resource('tls_certificates').create({ certificate_pem: '…', private_key_pem: '…' });
  // @ts-expect-error a reserved domain needs its domain
  await client.resource('reserved_domains').create({ region: 'us' });
  // @ts-expect-error the region of a reserved address cannot change
  await client.resource('reserved_addrs').update(id, { region: 'eu' });
  // @ts-expect-error the id of a resource is a string
  await client.resource('api_keys').get(7);
  // @ts-expect-error a secret's vault cannot be moved: vault_id is not an update field
  await client.resource('secrets').update(id, { vault_id: 'vault_1' });
  // @ts-expect-error a secret value is a string
  await client.resource('secrets').create({ name: 'S', value: 42, vault_id: 'vault_1' });
}

/** The exported client type, unannotated with kinds, is Burrow's: names and bodies stay checked. */
export async function annotatedClientTypes(): Promise<void> {
  const burrow = createBurrow({ store: new MemoryStore() });
  const client: BurrowClient = burrow.client((await burrow.createAccount()).token);
  await client.resource('api_keys').create({ description: 'ci' });
  // @ts-expect-error an unknown resource name
  client.resource('no_such_kind');
  // @ts-expect-error an unknown field (schemas are strict)
  await client.resource('api_keys').create({ descripton: 'typo' });
}

/** Names and bodies are types of their own, for code that passes them around. */
export const names: ResourceName[] = ['api_keys', 'tunnel_group_backends', 'ssh_user_certificates'];
export const body: CreateBody<'ip_policies'> = { description: 'office' };
export const patch: UpdateBody<'credentials'> = { acl: [] };
// @ts-expect-error not a resource name
export const wrong: ResourceName = 'api_key';
