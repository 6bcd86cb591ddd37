import { errorSpec, type ErrorSpec } from '../../conventions/errors.ts';

/**
 * The error conditions of this family, with the vendor's catalogue numbers: bot users, which the
 * vendor calls service users now (vendor 4109–4111; service users share them).
 */
export const BOT_USERS_ERRORS = {
  BOT_NAME_EMPTY: errorSpec(4109, 400),
  BOT_NAME_TOO_LONG: errorSpec(4110, 400),
  BOT_ADMIN_ONLY: errorSpec(4111, 403),
} as const satisfies Record<string, ErrorSpec>;
