import { defineFamily } from '../../engine/family.ts';
import { RESERVED_ADDRS_ERRORS } from './errors.ts';
import { reservedAddrs } from './reserved-addrs.ts';

/** Reserved TCP addresses. */
export const reservedAddrsFamily = defineFamily({
  name: 'reserved-addrs',
  errors: RESERVED_ADDRS_ERRORS,
  kinds: { reserved_addrs: reservedAddrs },
  examples: { reserved_addrs: { body: () => ({}) } },
});

export { RESERVED_ADDR_KIND, findReservedAddr } from './reserved-addrs.ts';

export { RESERVED_ADDRS_ERRORS } from './errors.ts';
