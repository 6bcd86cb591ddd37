import { defineFamily } from '../../engine/family.ts';
import { BOUND_ENDPOINTS } from './bound-endpoints.ts';
import { KUBERNETES_OPERATORS_ERRORS } from './errors.ts';
import { kubernetesOperators } from './kubernetes-operators.ts';

/** Kubernetes operators: the vendor's ngrok-operator registered, its binding certificate signed, its bound endpoints. */
export const kubernetesOperatorsFamily = defineFamily({
  name: 'kubernetes-operators',
  kinds: { kubernetes_operators: kubernetesOperators },
  operations: [BOUND_ENDPOINTS],
  errors: KUBERNETES_OPERATORS_ERRORS,
  examples: {
    kubernetes_operators: { body: () => ({ description: 'swept', enabled_features: ['ingress'], deployment: { name: 'ngrok-operator', namespace: 'ngrok-operator' } }) },
  },
});
