import type { OperationContext } from '../../context.ts';
import { generateCertificateAuthority, type CertificateAuthority } from '../../certificate-authority.ts';

/**
 * The certificate authority that signs Kubernetes operators' binding certificates (the vendor signs
 * the operator's CSR; Burrow signs it with its own CA, lib/certificate-authority.ts). A seam: until
 * the instance keeps its CA in the store, each instance makes one on first use and keeps it in
 * memory, so certificates signed before a restart, or by another server of the same state, chain to
 * another CA. The family's state (`setup`) holds it; `bindingCa` is the one place that reads it.
 * It is made at the instance clock's time, as the certificates it signs are (their times are
 * answered beside the API's other times), so a chain checks out at any time the instance shows.
 */
export interface BindingCaState {
  ca?: Promise<CertificateAuthority>;
}

export const BINDING_CA_FAMILY = 'kubernetes-operators';

/** The CA of this instance that signs binding certificates, made on first use. */
export function bindingCa(ctx: OperationContext): Promise<CertificateAuthority> {
  const state = ctx.services.state(BINDING_CA_FAMILY) as BindingCaState;
  state.ca ??= generateCertificateAuthority({ now: ctx.clock.now(), commonName: 'Burrow Kubernetes Bindings CA' }).catch((error: unknown) => {
    state.ca = undefined;
    throw error;
  });
  return state.ca;
}
