import { constants, createHmac, createPublicKey, timingSafeEqual, verify as verifySignature, type JsonWebKey, type KeyObject } from 'node:crypto';
import * as v from 'valibot';
import type { PolicyError } from '../../traffic/decisions.ts';
import { headerValues, mediaType, queryParams } from '../http-fields.ts';
import type { Template } from '../interpolation.ts';
import { LIMITS, limitNote } from '../../limits.ts';
import { ActionFailure, defineAction, readConfig, type ActionContext } from './types.ts';

/**
 * jwt-validation: every configured token must be present (header or form/JSON body), signed with
 * an allowed algorithm by a key of the configured JWKS URLs (fetched through the host and cached,
 * or inline as `data:` URLs), issued by an allowed issuer (exact match), for an allowed audience
 * when audiences are configured, and not expired or not yet valid by the injected clock. Signatures
 * are checked with node:crypto: RS256/384/512, PS256/384/512, ES256/384/512, EdDSA and HS256/384/512
 * (a JWKS `oct` key). Failures answer 401 with the vendor's codes where it has one.
 */

const ALGORITHMS: Readonly<Record<string, { kind: 'rsa' | 'pss' | 'ec' | 'hmac' | 'eddsa'; hash: string | null; kty: string }>> = {
  RS256: { kind: 'rsa', hash: 'sha256', kty: 'RSA' },
  RS384: { kind: 'rsa', hash: 'sha384', kty: 'RSA' },
  RS512: { kind: 'rsa', hash: 'sha512', kty: 'RSA' },
  PS256: { kind: 'pss', hash: 'sha256', kty: 'RSA' },
  PS384: { kind: 'pss', hash: 'sha384', kty: 'RSA' },
  PS512: { kind: 'pss', hash: 'sha512', kty: 'RSA' },
  ES256: { kind: 'ec', hash: 'sha256', kty: 'EC' },
  ES384: { kind: 'ec', hash: 'sha384', kty: 'EC' },
  ES512: { kind: 'ec', hash: 'sha512', kty: 'EC' },
  EdDSA: { kind: 'eddsa', hash: null, kty: 'OKP' },
  HS256: { kind: 'hmac', hash: 'sha256', kty: 'oct' },
  HS384: { kind: 'hmac', hash: 'sha384', kty: 'oct' },
  HS512: { kind: 'hmac', hash: 'sha512', kty: 'oct' },
};

const allowList = v.looseObject({ allow_list: v.pipe(v.array(v.looseObject({ value: v.string() })), v.minLength(1, 'needs at least one entry')) });
const source = v.looseObject({ additional_jkus: v.array(v.string()) });
const oneOrMany = <S extends v.GenericSchema>(schema: S) => v.union([schema, v.array(schema)]);
const CONFIG = v.looseObject({
  issuer: allowList,
  audience: v.optional(allowList),
  http: v.looseObject({
    tokens: v.pipe(
      v.array(v.looseObject({ type: v.string(), method: v.picklist(['header', 'body']), name: v.string(), prefix: v.optional(v.string(), '') })),
      v.minLength(1, 'needs at least one token'),
    ),
  }),
  jws: v.looseObject({
    allowed_algorithms: v.pipe(
      v.array(v.picklist(Object.keys(ALGORITHMS), (issue) => `must be one of ${Object.keys(ALGORITHMS).join(', ')} (got ${JSON.stringify(issue.input)})`)),
      v.minLength(1, 'needs at least one algorithm'),
    ),
    keys: oneOrMany(v.looseObject({ sources: oneOrMany(source) })),
  }),
});

interface TokenSpec {
  readonly method: 'header' | 'body';
  readonly name: Template;
  readonly prefix: Template;
}

const reject = (message: string, code?: string, status = 401): never => {
  throw new ActionFailure({ status, message: `jwt-validation: ${message}`, headers: [], ...(code ? { code } : {}) } satisfies PolicyError);
};

const base64url = (text: string) => Buffer.from(text, 'base64url');

function decodePart(text: string, what: string): Record<string, unknown> {
  try {
    const value = JSON.parse(base64url(text).toString('utf8'));
    if (value && typeof value === 'object' && !Array.isArray(value)) return value;
  } catch {
    // reported below
  }
  return reject(`the token's ${what} is not a JSON object`, 'ERR_NGROK_3416');
}

/** The token text at its configured place in the request. */
async function locate(spec: TokenSpec, context: ActionContext): Promise<{ token: string; name: string }> {
  const request = context.scope.request!;
  const name = context.text(spec.name, 'http.tokens.name');
  const prefix = context.text(spec.prefix, 'http.tokens.prefix');
  let raw: string | undefined;
  if (spec.method === 'header') {
    raw = headerValues(request.headers, name)[0];
    if (raw === undefined) reject(`the ${name} header was not found in the request`, 'ERR_NGROK_3408');
  } else {
    if (!['POST', 'PUT', 'PATCH'].includes(request.method)) reject(`tokens in the body are not supported for ${request.method} requests`, 'ERR_NGROK_3415');
    const body = await context.scope.body(LIMITS.policy_inspected_body_bytes.value);
    if (body === null) reject(`the body is longer than ${LIMITS.policy_inspected_body_bytes.value} bytes ${limitNote('policy_inspected_body_bytes')}`, 'ERR_NGROK_3411');
    const type = mediaType(headerValues(request.headers, 'content-type')[0]).type;
    const text = Buffer.from(body ?? []).toString('utf8');
    let fields: Record<string, unknown>;
    if (type === 'application/json') {
      try {
        fields = JSON.parse(text);
      } catch {
        return reject('the JSON body does not parse', 'ERR_NGROK_3411');
      }
    } else if (type === 'application/x-www-form-urlencoded') {
      fields = Object.fromEntries(Object.entries(queryParams(text)).map(([key, values]) => [key, values[0]]));
    } else {
      return reject(`a token in the body needs a JSON or form body (content-type ${JSON.stringify(type)})`, 'ERR_NGROK_3414');
    }
    const key = Object.keys(fields ?? {}).find((field) => field.toLowerCase() === name.toLowerCase());
    raw = key === undefined || typeof fields[key] !== 'string' ? undefined : (fields[key] as string);
    if (raw === undefined) reject(`the token ${name} could not be found in the body`, 'ERR_NGROK_3406');
  }
  if (!raw!.startsWith(prefix)) reject(`the configured prefix ${JSON.stringify(prefix)} was not found in ${name}`, 'ERR_NGROK_3413');
  const token = raw!.slice(prefix.length).trim();
  if (Buffer.byteLength(token) > LIMITS.policy_jwt_bytes.value) reject(`the token in ${name} is longer than ${LIMITS.policy_jwt_bytes.value} bytes ${limitNote('policy_jwt_bytes')}`, 'ERR_NGROK_3416');
  return { token, name };
}

/** The keys of the configured JWKS URLs. */
async function jwksKeys(urls: readonly string[], context: ActionContext): Promise<JsonWebKey[]> {
  const keys: JsonWebKey[] = [];
  for (const url of urls) {
    let document: unknown;
    try {
      document = await context.documents.get(url);
    } catch (error) {
      reject(`failed to fetch the JWKS ${url}: ${(error as Error).message}`, 'ERR_NGROK_3422', 502);
    }
    const list = (document as { keys?: unknown })?.keys;
    if (!Array.isArray(list)) reject(`${url} is not a JSON Web Key Set (no keys list)`, 'ERR_NGROK_3422', 502);
    keys.push(...(list as JsonWebKey[]).slice(0, LIMITS.policy_jwks_keys.value));
  }
  return keys;
}

function signatureValid(algorithm: string, jwk: JsonWebKey, data: Buffer, signature: Buffer): boolean {
  const spec = ALGORITHMS[algorithm]!;
  if (jwk.kty !== spec.kty || (typeof jwk.alg === 'string' && jwk.alg !== algorithm)) return false;
  try {
    if (spec.kind === 'hmac') {
      const expected = createHmac(spec.hash!, base64url(String(jwk.k ?? ''))).update(data).digest();
      return expected.length === signature.length && timingSafeEqual(expected, signature);
    }
    const key: KeyObject = createPublicKey({ key: jwk, format: 'jwk' });
    if (spec.kind === 'pss') return verifySignature(spec.hash, data, { key, padding: constants.RSA_PKCS1_PSS_PADDING, saltLength: 32 + (spec.hash === 'sha384' ? 16 : spec.hash === 'sha512' ? 32 : 0) }, signature);
    if (spec.kind === 'ec') return verifySignature(spec.hash, data, { key, dsaEncoding: 'ieee-p1363' }, signature);
    return verifySignature(spec.hash, data, key, signature);
  } catch {
    return false;
  }
}

export const jwtValidation = defineAction({
  results: 'jwt_validation',
  type: 'jwt-validation',
  compile(config, tools) {
    const c = readConfig(CONFIG, config);
    const keys = Array.isArray(c.jws.keys) ? c.jws.keys : [c.jws.keys];
    return {
      issuers: c.issuer.allow_list.map((entry, i) => tools.template(entry.value, `config.issuer.allow_list[${i}].value`)),
      audiences: c.audience?.allow_list.map((entry) => entry.value),
      tokens: c.http.tokens.map((token, i): TokenSpec => ({
        method: token.method,
        name: tools.template(token.name, `config.http.tokens[${i}].name`),
        prefix: tools.template(token.prefix, `config.http.tokens[${i}].prefix`),
      })),
      algorithms: c.jws.allowed_algorithms,
      jkus: keys
        .flatMap((key) => (Array.isArray(key.sources) ? key.sources : [key.sources]))
        .flatMap((s) => s.additional_jkus)
        .map((url, i) => tools.template(url, `config.jws.keys.sources.additional_jkus[${i}]`)),
    };
  },
  async run(config, context) {
    const now = context.scope.now.getTime() / 1000;
    const results: Record<string, unknown>[] = [];
    context.scope.setActionResult('jwt_validation', { tokens: results, error: { code: '', message: '' } });
    try {
      const issuers = config.issuers.map((issuer) => context.text(issuer, 'issuer.allow_list.value'));
      const keys = await jwksKeys(config.jkus.map((url) => context.text(url, 'jws.keys.sources.additional_jkus')), context);
      for (const spec of config.tokens) {
        const { token, name } = await locate(spec, context);
        const parts = token.split('.');
        if (parts.length !== 3) reject(`the token in ${name} is not a signed JWT (three dot-separated parts)`, 'ERR_NGROK_3416');
        const header = decodePart(parts[0]!, 'header');
        const payload = decodePart(parts[1]!, 'payload');
        const result = { header, payload, signature: parts[2], verified: false, location: spec.method, location_property: name };
        results.push(result);
        const algorithm = String(header.alg);
        if (!config.algorithms.includes(algorithm)) reject(`the token's algorithm ${JSON.stringify(header.alg)} is not allowed`, 'ERR_NGROK_3401');
        const candidates = keys.filter((key) => header.kid === undefined || (key as { kid?: unknown }).kid === header.kid);
        const data = Buffer.from(`${parts[0]}.${parts[1]}`);
        if (!candidates.some((key) => signatureValid(algorithm, key, data, base64url(parts[2]!)))) reject(`the signature of the token in ${name} does not verify with the configured keys`, 'ERR_NGROK_3401');
        if (!issuers.includes(String(payload.iss))) reject(`the issuer ${JSON.stringify(payload.iss)} is not allowed`, 'ERR_NGROK_3401');
        if (config.audiences) {
          const audiences = Array.isArray(payload.aud) ? payload.aud : [payload.aud];
          if (!audiences.some((audience) => config.audiences!.includes(String(audience)))) reject(`the audience ${JSON.stringify(payload.aud)} is not allowed`, 'ERR_NGROK_3401');
        }
        if (typeof payload.exp === 'number' && now >= payload.exp) reject(`the token in ${name} expired at ${new Date(payload.exp * 1000).toISOString()}`, 'ERR_NGROK_3401');
        if (typeof payload.nbf === 'number' && now < payload.nbf) reject(`the token in ${name} is not valid before ${new Date(payload.nbf * 1000).toISOString()}`, 'ERR_NGROK_3401');
        result.verified = true;
      }
    } catch (error) {
      if (error instanceof ActionFailure) context.scope.setActionResult('jwt_validation', { tokens: results, error: { code: error.error.code ?? '', message: error.error.message } });
      throw error;
    }
    return { note: `${results.length} token${results.length === 1 ? '' : 's'} verified` };
  },
});
