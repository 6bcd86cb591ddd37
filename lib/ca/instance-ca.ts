import { checkCertificateAuthority, generateCertificateAuthority, type CertificateAuthority } from './certificate-authority.ts';
import { INSTANCE_SCOPE, type Store } from '../store.ts';

/**
 * The instance's own certificate authority (lib/ca/certificate-authority.ts makes and uses one): the
 * CA an embedder brought (`createBurrow({ certificateAuthority })`, the CLI's `--ca-cert/--ca-key`),
 * else the one kept in the store, generated the first time anything asks for it. Every server of
 * one store shares it: of servers asking at once on an empty store, the first insert wins and the
 * others read its CA (as lib/engine/accounts.ts claims the default account). Its private key is kept as
 * the store keeps the other instance secrets (the sealing key of lib/families/vaults): whoever
 * reads the store or a snapshot of it can sign with it, which is what a test CA is for.
 */

const SETTING = { scope: { account: INSTANCE_SCOPE, kind: 'setting' }, id: 'certificate_authority' } as const;

/** The setting record the CA is kept in. */
export type CertificateAuthoritySetting = {
  readonly id: 'certificate_authority';
  readonly certificate_pem: string;
  readonly private_key_pem: string;
};

/** Answers the instance's CA, generated and kept on first use (once per process, then cached). */
export function instanceCertificateAuthority(store: Store, now: () => Date, brought?: CertificateAuthority): () => Promise<CertificateAuthority> {
  let loading: Promise<CertificateAuthority> | undefined;
  if (brought) {
    checkCertificateAuthority(brought);
    return () => Promise.resolve(brought);
  }
  return () =>
    (loading ??= loadOrCreate(store, now).catch((error: unknown) => {
      // A store that was down may answer next time.
      loading = undefined;
      throw error;
    }));
}

async function loadOrCreate(store: Store, now: () => Date): Promise<CertificateAuthority> {
  const kept = await store.get(SETTING.scope, SETTING.id);
  if (kept) return fromSetting(kept as unknown as CertificateAuthoritySetting);
  // Generated outside the transaction (slow, not repeatable); a server that loses the claim drops its own.
  const made = await generateCertificateAuthority({ now: now() });
  const setting: CertificateAuthoritySetting = { id: SETTING.id, certificate_pem: made.certificatePem, private_key_pem: made.privateKeyPem };
  const winner = await store.transaction(async (tx) => ((await tx.insert(SETTING.scope, setting)) ? setting : ((await tx.get(SETTING.scope, SETTING.id)) as unknown as CertificateAuthoritySetting)));
  return fromSetting(winner);
}

const fromSetting = (setting: CertificateAuthoritySetting): CertificateAuthority => ({ certificatePem: setting.certificate_pem, privateKeyPem: setting.private_key_pem });
