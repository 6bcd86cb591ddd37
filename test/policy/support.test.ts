import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { describe, test } from 'node:test';
import { ACTION_PHASES } from '../../lib/conventions/traffic-policy.ts';
import { createPhaseLanguages } from '../../lib/policy/languages.ts';
import { secretVariable, Unavailable } from '../../lib/policy/scope.ts';
import { actionSupport, documentedVariableSupport, SUPPORT_WORDS, type Support } from '../../lib/policy/support.ts';

/**
 * docs/traffic-policy.md's support table, checked against what Burrow's checker and engine know:
 * every action, variable group and function of the vendor's reference (ngrok-docs
 * traffic-policy/actions/, snippets/traffic-policy/variables/, snippets/traffic-policy/actions/*
 * /variables.mdx, traffic-policy/macros/index.mdx) with yes / accepted, needs a third party / no.
 * Actions and variables read their registries (lib/policy/support.ts); a function is "yes" when
 * its documented example compiles in the policy language and gives the documented result.
 */

/** The vendor's action reference (traffic-policy/actions/*.mdx), by type. */
const DOCUMENTED_ACTIONS = [
  'add-headers', 'ai-gateway', 'basic-auth', 'circuit-breaker', 'close-connection', 'compress-response', 'custom-response', 'deny',
  'forward-internal', 'http-request', 'jwt-validation', 'log', 'oauth', 'openid-connect', 'owasp-crs-request', 'owasp-crs-response',
  'rate-limit', 'redirect', 'remove-headers', 'request-body-find-replace', 'response-body-find-replace', 'restrict-ips', 'saml',
  'set-vars', 'sse-find-replace', 'terminate-tls', 'url-rewrite', 'verify-webhook',
];

/** The vendor's variables by group: its variable reference and each action's result variables. */
const DOCUMENTED_VARIABLES: [group: string, names: string][] = [
  ['conn', 'conn.bytes_in conn.bytes_out conn.client_ip conn.client_port conn.server_ip conn.server_port conn.server_region'],
  ['conn.client_ip.as', 'conn.client_ip.as.number conn.client_ip.as.organization'],
  ['conn.*_ip (IP intelligence)', 'conn.client_ip.categories conn.client_ip.is_on_blocklist conn.client_ip.is_tor_node conn.server_ip.categories conn.server_ip.is_on_blocklist conn.server_ip.is_tor_node'],
  ['conn.client_ip.geo', 'conn.client_ip.geo.location.city conn.client_ip.geo.location.continent conn.client_ip.geo.location.country conn.client_ip.geo.location.country_code conn.client_ip.geo.location.is_eu conn.client_ip.geo.location.latitude conn.client_ip.geo.location.longitude conn.client_ip.geo.location.metro_code conn.client_ip.geo.location.postal_code conn.client_ip.geo.location.radius conn.client_ip.geo.location.subdivision conn.client_ip.geo.location.timezone conn.client_ip.geo.registered_location.city conn.client_ip.geo.registered_location.continent conn.client_ip.geo.registered_location.country conn.client_ip.geo.registered_location.country_code conn.client_ip.geo.registered_location.is_eu conn.client_ip.geo.registered_location.metro_code conn.client_ip.geo.registered_location.subdivision conn.client_ip.geo.registered_location.timezone'],
  ['conn.geo', 'conn.geo.city conn.geo.country conn.geo.country_code conn.geo.latitude conn.geo.longitude conn.geo.radius conn.geo.subdivision'],
  ['conn.k8s', 'conn.k8s.pod.id conn.k8s.pod.metadata.annotations conn.k8s.pod.metadata.error_code conn.k8s.pod.metadata.error_message conn.k8s.pod.metadata.name conn.k8s.pod.metadata.namespace'],
  ['conn.server_ip.as', 'conn.server_ip.as.number conn.server_ip.as.organization'],
  ['conn.server_ip.geo', 'conn.server_ip.geo.location.city conn.server_ip.geo.location.continent conn.server_ip.geo.location.country conn.server_ip.geo.location.country_code conn.server_ip.geo.location.is_eu conn.server_ip.geo.location.latitude conn.server_ip.geo.location.longitude conn.server_ip.geo.location.metro_code conn.server_ip.geo.location.postal_code conn.server_ip.geo.location.radius conn.server_ip.geo.location.subdivision conn.server_ip.geo.location.timezone conn.server_ip.geo.registered_location.city conn.server_ip.geo.registered_location.continent conn.server_ip.geo.registered_location.country conn.server_ip.geo.registered_location.country_code conn.server_ip.geo.registered_location.is_eu conn.server_ip.geo.registered_location.metro_code conn.server_ip.geo.registered_location.subdivision conn.server_ip.geo.registered_location.timezone'],
  ['conn.tls', 'conn.tls.cipher_suite conn.tls.ja4_fingerprint conn.tls.negotiated_alpn conn.tls.session_resumed conn.tls.sni conn.tls.version'],
  ['conn.tls.client', 'conn.tls.client.extensions conn.tls.client.extensions[i].critical conn.tls.client.extensions[i].id conn.tls.client.extensions[i].value conn.tls.client.issuer conn.tls.client.issuer.common_name conn.tls.client.issuer.country conn.tls.client.issuer.locality conn.tls.client.issuer.organization conn.tls.client.issuer.organizational_unit conn.tls.client.issuer.postal_code conn.tls.client.issuer.province conn.tls.client.issuer.street_address conn.tls.client.pem conn.tls.client.san conn.tls.client.san.dns_names conn.tls.client.san.email_addresses conn.tls.client.san.ip_addresses conn.tls.client.san.uris conn.tls.client.serial_number conn.tls.client.signature_algorithm conn.tls.client.subject conn.tls.client.subject.common_name conn.tls.client.subject.country conn.tls.client.subject.locality conn.tls.client.subject.organization conn.tls.client.subject.organizational_unit conn.tls.client.subject.postal_code conn.tls.client.subject.province conn.tls.client.subject.street_address conn.tls.client.validity.not_after conn.tls.client.validity.not_before'],
  ['conn.tls.server', 'conn.tls.server.extensions conn.tls.server.extensions[i].critical conn.tls.server.extensions[i].id conn.tls.server.extensions[i].value conn.tls.server.issuer conn.tls.server.issuer.common_name conn.tls.server.issuer.country conn.tls.server.issuer.locality conn.tls.server.issuer.organization conn.tls.server.issuer.organizational_unit conn.tls.server.issuer.postal_code conn.tls.server.issuer.province conn.tls.server.issuer.street_address conn.tls.server.san conn.tls.server.san.dns_names conn.tls.server.san.email_addresses conn.tls.server.san.ip_addresses conn.tls.server.san.uris conn.tls.server.serial_number conn.tls.server.signature_algorithm conn.tls.server.subject conn.tls.server.subject.common_name conn.tls.server.subject.country conn.tls.server.subject.locality conn.tls.server.subject.organization conn.tls.server.subject.organizational_unit conn.tls.server.subject.postal_code conn.tls.server.subject.province conn.tls.server.subject.street_address conn.tls.server.validity.not_after conn.tls.server.validity.not_before'],
  ['conn.ts', 'conn.ts.start'],
  ['endpoint', 'endpoint.addr endpoint.host endpoint.id endpoint.port endpoint.protocol endpoint.url'],
  ['req', 'req.content_encoding req.content_length req.content_type req.content_type.parameters req.content_type.raw req.headers req.host req.location req.method req.trailers req.version'],
  ['req.cookies', 'req.cookies req.cookies[k][i].name req.cookies[k][i].value'],
  ['req.ts', 'req.ts.body_received req.ts.header_received'],
  ['req.url', 'req.url req.url.authority req.url.host req.url.path req.url.port req.url.query req.url.query_params req.url.raw req.url.raw_path req.url.scheme req.url.uri req.url.user_password'],
  ['req.user_agent', 'req.user_agent req.user_agent.device req.user_agent.is_bot req.user_agent.is_desktop req.user_agent.is_mobile req.user_agent.is_tablet req.user_agent.name req.user_agent.os req.user_agent.os_version req.user_agent.url req.user_agent.version'],
  ['res', 'res.content_encoding res.content_length res.content_type res.content_type.parameters res.content_type.raw res.headers res.location res.status_code res.trailers'],
  ['res.cookies', 'res.cookies res.cookies[k][i].domain res.cookies[k][i].expires res.cookies[k][i].http_only res.cookies[k][i].max_age res.cookies[k][i].name res.cookies[k][i].path res.cookies[k][i].same_site res.cookies[k][i].secure res.cookies[k][i].unparsed_attributes res.cookies[k][i].value'],
  ['time', 'time.now'],
  ['actions.ngrok.add_headers', 'actions.ngrok.add_headers.headers_added'],
  ['actions.ngrok.ai_gateway', 'actions.ngrok.ai_gateway.client actions.ngrok.ai_gateway.error actions.ngrok.ai_gateway.gateway_latency_ms actions.ngrok.ai_gateway.input_ngrok_tokens actions.ngrok.ai_gateway.model_selection actions.ngrok.ai_gateway.models_tried actions.ngrok.ai_gateway.output_ngrok_tokens actions.ngrok.ai_gateway.status actions.ngrok.ai_gateway.success'],
  ['actions.ngrok.basic_auth', 'actions.ngrok.basic_auth.credentials.authorized actions.ngrok.basic_auth.credentials.presented actions.ngrok.basic_auth.credentials.username'],
  ['actions.ngrok.compress', 'actions.ngrok.compress.already_compressed actions.ngrok.compress.negotiated_algorithm'],
  ['actions.ngrok.http_request', 'actions.ngrok.http_request.attempts actions.ngrok.http_request.error.code actions.ngrok.http_request.error.message actions.ngrok.http_request.req actions.ngrok.http_request.res'],
  ['actions.ngrok.jwt_validation', 'actions.ngrok.jwt_validation.error.code actions.ngrok.jwt_validation.error.message actions.ngrok.jwt_validation.tokens'],
  ['actions.ngrok.log', 'actions.ngrok.log.metadata'],
  ['actions.ngrok.oauth', 'actions.ngrok.oauth actions.ngrok.oauth.access_token actions.ngrok.oauth.error actions.ngrok.oauth.error.code actions.ngrok.oauth.error.message actions.ngrok.oauth.expires_at actions.ngrok.oauth.identity actions.ngrok.oauth.identity.current_provider_session_id actions.ngrok.oauth.identity.email actions.ngrok.oauth.identity.id actions.ngrok.oauth.identity.name actions.ngrok.oauth.identity.provider_user_id actions.ngrok.oauth.refresh_token actions.ngrok.oauth.session_max_duration_reached actions.ngrok.oauth.session_timed_out actions.ngrok.oauth.userinfo_refreshed'],
  ['actions.ngrok.oidc', 'actions.ngrok.oidc actions.ngrok.oidc.access_token actions.ngrok.oidc.error actions.ngrok.oidc.error.code actions.ngrok.oidc.error.message actions.ngrok.oidc.expires_at actions.ngrok.oidc.identity actions.ngrok.oidc.identity.current_session_id actions.ngrok.oidc.identity.email actions.ngrok.oidc.identity.id actions.ngrok.oidc.identity.name actions.ngrok.oidc.identity.provider_user_id actions.ngrok.oidc.identity_token actions.ngrok.oidc.refresh_token actions.ngrok.oidc.session_max_duration_reached actions.ngrok.oidc.session_timed_out actions.ngrok.oidc.userinfo_refreshed'],
  ['actions.ngrok.owasp_crs_request', 'actions.ngrok.owasp_crs_request.anomaly_score actions.ngrok.owasp_crs_request.anomaly_score_threshold actions.ngrok.owasp_crs_request.decision actions.ngrok.owasp_crs_request.error.code actions.ngrok.owasp_crs_request.error.message actions.ngrok.owasp_crs_request.matched_rules'],
  ['actions.ngrok.owasp_crs_response', 'actions.ngrok.owasp_crs_response.anomaly_score actions.ngrok.owasp_crs_response.anomaly_score_threshold actions.ngrok.owasp_crs_response.decision actions.ngrok.owasp_crs_response.error.code actions.ngrok.owasp_crs_response.error.message actions.ngrok.owasp_crs_response.matched_rules'],
  ['actions.ngrok.rate_limit', 'actions.ngrok.rate_limit.bucket_key actions.ngrok.rate_limit.error.code actions.ngrok.rate_limit.error.message actions.ngrok.rate_limit.limited'],
  ['actions.ngrok.redirect', 'actions.ngrok.redirect.error.code actions.ngrok.redirect.error.message actions.ngrok.redirect.matches actions.ngrok.redirect.url'],
  ['actions.ngrok.remove_headers', 'actions.ngrok.remove_headers.headers_removed'],
  ['actions.ngrok.restrict_ips', 'actions.ngrok.restrict_ips.action actions.ngrok.restrict_ips.error.code actions.ngrok.restrict_ips.error.message actions.ngrok.restrict_ips.matched_cidr'],
  ['actions.ngrok.url_rewrite', 'actions.ngrok.url_rewrite.error.code actions.ngrok.url_rewrite.error.message actions.ngrok.url_rewrite.matches actions.ngrok.url_rewrite.url'],
  ['actions.ngrok.verify_webhook', 'actions.ngrok.verify_webhook.error.code actions.ngrok.verify_webhook.error.message actions.ngrok.verify_webhook.verified'],  ['actions.ngrok.terminate_tls', 'actions.ngrok.terminate_tls.cipher_suite actions.ngrok.terminate_tls.client.extensions actions.ngrok.terminate_tls.client.extensions[i].critical actions.ngrok.terminate_tls.client.extensions[i].id actions.ngrok.terminate_tls.client.extensions[i].value actions.ngrok.terminate_tls.client.issuer actions.ngrok.terminate_tls.client.issuer.common_name actions.ngrok.terminate_tls.client.issuer.country actions.ngrok.terminate_tls.client.issuer.locality actions.ngrok.terminate_tls.client.issuer.organization actions.ngrok.terminate_tls.client.issuer.organizational_unit actions.ngrok.terminate_tls.client.issuer.postal_code actions.ngrok.terminate_tls.client.issuer.province actions.ngrok.terminate_tls.client.issuer.street_address actions.ngrok.terminate_tls.client.san actions.ngrok.terminate_tls.client.san.dns_names actions.ngrok.terminate_tls.client.san.email_addresses actions.ngrok.terminate_tls.client.san.ip_addresses actions.ngrok.terminate_tls.client.san.uris actions.ngrok.terminate_tls.client.serial_number actions.ngrok.terminate_tls.client.signature_algorithm actions.ngrok.terminate_tls.client.subject actions.ngrok.terminate_tls.client.subject.common_name actions.ngrok.terminate_tls.client.subject.country actions.ngrok.terminate_tls.client.subject.locality actions.ngrok.terminate_tls.client.subject.organization actions.ngrok.terminate_tls.client.subject.organizational_unit actions.ngrok.terminate_tls.client.subject.postal_code actions.ngrok.terminate_tls.client.subject.province actions.ngrok.terminate_tls.client.subject.street_address actions.ngrok.terminate_tls.client.validity.not_after actions.ngrok.terminate_tls.client.validity.not_before actions.ngrok.terminate_tls.error_code actions.ngrok.terminate_tls.error_message actions.ngrok.terminate_tls.server.extensions actions.ngrok.terminate_tls.server.extensions[i].critical actions.ngrok.terminate_tls.server.extensions[i].id actions.ngrok.terminate_tls.server.extensions[i].value actions.ngrok.terminate_tls.server.issuer actions.ngrok.terminate_tls.server.issuer.common_name actions.ngrok.terminate_tls.server.issuer.country actions.ngrok.terminate_tls.server.issuer.locality actions.ngrok.terminate_tls.server.issuer.organization actions.ngrok.terminate_tls.server.issuer.organizational_unit actions.ngrok.terminate_tls.server.issuer.postal_code actions.ngrok.terminate_tls.server.issuer.province actions.ngrok.terminate_tls.server.issuer.street_address actions.ngrok.terminate_tls.server.san actions.ngrok.terminate_tls.server.san.dns_names actions.ngrok.terminate_tls.server.san.email_addresses actions.ngrok.terminate_tls.server.san.ip_addresses actions.ngrok.terminate_tls.server.san.uris actions.ngrok.terminate_tls.server.serial_number actions.ngrok.terminate_tls.server.signature_algorithm actions.ngrok.terminate_tls.server.subject actions.ngrok.terminate_tls.server.subject.common_name actions.ngrok.terminate_tls.server.subject.country actions.ngrok.terminate_tls.server.subject.locality actions.ngrok.terminate_tls.server.subject.organization actions.ngrok.terminate_tls.server.subject.organizational_unit actions.ngrok.terminate_tls.server.subject.postal_code actions.ngrok.terminate_tls.server.subject.province actions.ngrok.terminate_tls.server.subject.street_address actions.ngrok.terminate_tls.server.validity.not_after actions.ngrok.terminate_tls.server.validity.not_before actions.ngrok.terminate_tls.sni actions.ngrok.terminate_tls.version actions.ngrok.terminate_tls.warnings'],

];

/** Each function of the macro reference with its documented example, as a condition that holds when Burrow gives the documented result. */
const DOCUMENTED_FUNCTIONS: [name: string, probe: string][] = [
  ['base64.decode()', "base64.decode('aGVsbG8=') == b'hello'"],
  ['base64.encode()', "base64.encode(b'hello') == 'aGVsbG8='"],
  ['basic_auth.encode(username, password)', "basic_auth.encode('username', 'password1') == 'Basic dXNlcm5hbWU6cGFzc3dvcmQx'"],
  ['bytes.size()', "b'hello'.size() == 5"],
  ['getReqCookie(string)', "getReqCookie('session').value == 's1'"],
  ['getReqHeader(string)', "getReqHeader('User-Agent') == ['curl/8']"],
  ['getQueryParam(string)', "getQueryParam('search') == ['x']"],
  ['hasQueryParam(string)', "!hasQueryParam('query')"],
  ['hasReqCookie(string)', "hasReqCookie('session')"],
  ['hasReqHeader(string)', "!hasReqHeader('Authorization')"],
  ['getResCookie(string)', "getResCookie('_device_id').value == 'd1'"],
  ['getResHeader(string)', "getResHeader('Content-Type') == ['text/html']"],
  ['hasResCookie(string)', "hasResCookie('_device_id')"],
  ['hasResHeader(string)', "hasResHeader('Content-Type')"],
  ['hash.crc32(string)', "hash.crc32('hello') == '3610a686'"],
  ['hash.crc64(string)', "hash.crc64('hello') == '3c3eeee2d8100000'"],
  ['hash.md5(string)', "hash.md5('hello') == '5d41402abc4b2a76b9719d911017c592'"],
  ['hash.sha1(string)', "hash.sha1('hello') == 'aaf4c61ddcc5e8a2dabede0f3b482cd9aea9434d'"],
  ['hash.sha256(string)', "hash.sha256('hello') == '2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824'"],
  ['hash.sha512(string)', "hash.sha512('hello').startsWith('9b71d224bd62f3785d96d46ad3ea3d73319bfbc2890caadae2dff72519673ca7')"],
  ['hash.xxhash64(string)', "hash.xxhash64('hello') == '26c7827d889f6da3'"],
  ['json.decode(string)', `json.decode('{"a":"b"}') == {'a': 'b'}`],
  ['json.encode(list | map)', `json.encode({'a': 'b'}) == '{"a":"b"}'`],
  ['list.all(x,p)', '[1, 2, 3].all(x, x > 0)'],
  ['list.encodeJson()', `["a","b","c"].encodeJson() == '["a","b","c"]'`],
  ['list.exists(x,p)', '[1, -2, 3].exists(x, x > 0)'],
  ['list.exists_one(x,p)', '[1, 2, 3].exists_one(x, x == 2)'],
  ['list.filter(x,p)', '[1, 2, 3].filter(x, x > 1) == [2, 3]'],
  ['list.join()', "['hello', 'mellow'].join() == 'hellomellow'"],
  ['list.map(x,t)', '[1, 2, 3].map(n, n * n) == [1, 4, 9]'],
  ['list.map(x,p,t)', '[1, 2, 3, 4].map(num, num % 2 == 0, num * 2) == [4, 8]'],
  ['list.size()', "['hello', 'world'].size() == 2"],
  ['list.slice()', '[1,2,3,4].slice(1, 3) == [2, 3]'],
  ['list.flatten()', '[1,[2,3],[4]].flatten() == [1, 2, 3, 4]'],
  ['list.sort()', '[3, 2, 1].sort() == [1, 2, 3]'],
  ['list.sortBy(x, keyExpr)', `[{'name': 'foo', 'score': 0}, {'name': 'bar', 'score': -10}, {'name': 'baz', 'score': 1000}].sortBy(e, e.score).map(e, e.name) == ['bar', 'foo', 'baz']`],
  ['list.distinct()', '[1, 2, 2, 3, 3, 3].distinct() == [1, 2, 3]'],
  ['lists.range()', 'lists.range(5) == [0, 1, 2, 3, 4]'],
  ['map.all(x,p)', "!{'one': 1, 'two': 2}.all(x, x.startsWith('o'))"],
  ['map.encodeJson()', `{'a': 'b', 'c': 'd'}.encodeJson() == '{"a":"b","c":"d"}'`],
  ['map.encodeQueryString()', "{'a': 'b', 'c': 'd'}.encodeQueryString() == 'a=b&c=d'"],
  ['map.exists(x,p)', "{'one': 1, 'two': 2}.exists(x, x.startsWith('o'))"],
  ['map.exists_one(x,p)', "{'one': 1, 'two': 2}.exists_one(x, x == 'one')"],
  ['map.filter(x,p)', "{'one': 1, 'two': 2}.filter(x, x.startsWith('o')) == ['one']"],
  ['map.map(x,t)', "{'one': 1, 'two': 2}.map(k, k) == ['one', 'two']"],
  ['map.map(x,p,t)', "{'one': 1, 'two': 2, 'three': 3}.map(k, k.startsWith('t'), k.upper()) == ['TWO', 'THREE']"],
  ['map.size()', "{'hello': 'world'}.size() == 1"],
  ['queryString.decode(string)', "queryString.decode('a=b&c=d') == {'a': 'b', 'c': 'd'}"],
  ['queryString.encode(map)', "queryString.encode({'a': 'b', 'c': 'd'}) == 'a=b&c=d'"],
  ['rand.double()', 'rand.double() >= 0.0 && rand.double() < 1.0'],
  ['rand.int(min,max)', 'rand.int(1, 1) == 1'],
  ['secrets.get(string, string)', "secrets.get('vault-name', 'secret-name') == 'hunter2'"],
  ['string.matches()', "matches('foobar', 'foo.*')"],
  ['string.startsWith()', "'hello world'.startsWith('hello')"],
  ['string.endsWith()', "'hello world'.endsWith('world')"],
  ['string.contains()', "'hello world'.contains('world')"],
  ['string.charAt()', "'hello'.charAt(4) == 'o'"],
  ['string.size()', "'hello'.size() == 5"],
  ['string.indexOf()', "'hello mellow'.indexOf('') == 0"],
  ['string.format()', "'hello %s'.format(['world']) == 'hello world'"],
  ['string.lastIndexOf()', "'hello mellow'.lastIndexOf('') == 12"],
  ['string.split()', "'hello mellow'.split() == ['hello', 'mellow']"],
  ['string.replace()', "'hello mellow'.replace('l', 'L') == 'heLLo meLLow'"],
  ['string.decodeBase64()', "'c29tZTp0aGluZw=='.decodeBase64() == 'some:thing'"],
  ['string.decodeJson()', `'{"a":"b"}'.decodeJson() == {'a': 'b'}`],
  ['string.decodeQueryString()', "'a=b&c=d'.decodeQueryString() == {'a': 'b', 'c': 'd'}"],
  ['string.encodeBase64()', "'some:thing'.encodeBase64() == 'c29tZTp0aGluZw=='"],
  ['string.escapeUrl()', "'i;md/r/$y'.escapeUrl() == 'i%3Bmd%2Fr%2F%24y'"],
  ['string.isJson()', `'{"a":"b","c":"d"}'.isJson()`],
  ['string.isPrivateIp()', "'192.168.1.1'.isPrivateIp()"],
  ['string.isQueryString()', "'a=b&c=d'.isQueryString()"],
  ['string.isURL()', "'https://ngrok.com'.isURL()"],
  ['string.lower()', "'ÉCOLE, İSTANBUL'.lower() == 'école, istanbul'"],
  ['string.upper()', "'école'.upper() == 'ÉCOLE'"],
  ['string.parseUrl()', "'https://ngrok.com/a?b=c'.parseUrl().host == 'ngrok.com'"],
  ['string.unescapeUrl()', "'i%3Bmd%2Fr%2F%24y'.unescapeUrl() == 'i;md/r/$y'"],
  ['string.md5()', "'hello'.md5() == '5d41402abc4b2a76b9719d911017c592'"],
  ['string.sha1()', "'hello'.sha1() == 'aaf4c61ddcc5e8a2dabede0f3b482cd9aea9434d'"],
  ['string.sha256()', "'hello'.sha256() == '2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824'"],
  ['string.sha512()', "'hello'.sha512().startsWith('9b71d224bd62f3785d96d46ad3ea3d73319bfbc2890caadae2dff72519673ca7')"],
  ['string.crc32()', "'hello'.crc32() == '3610a686'"],
  ['string.crc64()', "'hello'.crc64() == '3c3eeee2d8100000'"],
  ['string.xxhash64()', "'hello'.xxhash64() == '26c7827d889f6da3'"],
  ['string.lowerAscii()', "'TacoCat'.lowerAscii() == 'tacocat'"],
  ['string.upperAscii()', "'TacoCat'.upperAscii() == 'TACOCAT'"],
  ['string.substring()', "'tacocat'.substring(4) == 'cat'"],
  ['string.trim()', "'  \\ttrim\\n    '.trim() == 'trim'"],
  ['string.reverse()', "'gums'.reverse() == 'smug'"],
  ['strings.quote()', `strings.quote('single-quote with "double quote"') == '"single-quote with \\\\"double quote\\\\""'`],
  ['ts.getDate()', "timestamp('2023-12-25T00:00:00Z').getDate() == 25"],
  ['ts.getDayOfMonth()', "timestamp('2023-12-25T00:00:00Z').getDayOfMonth() == 24"],
  ['ts.getDayOfWeek()', "timestamp('2023-12-25T12:00:00Z').getDayOfWeek() == 1"],
  ['ts.getDayOfYear()', "timestamp('2023-12-25T12:00:00Z').getDayOfYear() == 358"],
  ['ts.getFullYear()', "timestamp('2023-12-25T12:00:00Z').getFullYear() == 2023"],
  ['ts.getHours()', "timestamp('2023-12-25T12:00:00Z').getHours() == 12 && duration('3h').getHours() == 3"],
  ['ts.getMilliseconds()', "timestamp('2023-12-25T12:00:00.500Z').getMilliseconds() == 500 && duration('1.234s').getMilliseconds() == 234"],
  ['ts.getMinutes()', "timestamp('2023-12-25T12:30:00Z').getMinutes() == 30 && duration('1h30m').getMinutes() == 90"],
  ['ts.getMonth()', "timestamp('2023-12-25T12:00:00Z').getMonth() == 11"],
  ['ts.getSeconds()', "timestamp('2023-12-25T12:30:30Z').getSeconds() == 30"],
  ['url.escape(string)', "url.escape('i;md/r/$y') == 'i%3Bmd%2Fr%2F%24y'"],
  ['url.parse(string)', "url.parse('https://ngrok.com').scheme == 'https'"],
  ['url.unescape(string)', "url.unescape('i%3Bmd%2Fr%2F%24y') == 'i;md/r/$y'"],
  ['has(field)', "!has(req.headers['x-custom-header'])"],
  ['inCidrRange(ip,cidr)', "inCidrRange('192.168.1.100', '192.168.1.0/24')"],
  ['inCidrRanges(ip,cidrs)', "inCidrRanges('192.168.1.100', ['192.168.1.0/24', '10.0.0.0/8'])"],
];

/** What the probes read: a request and a response, and the vault secret of the secrets.get example. */
const VALUES: Record<string, unknown> = {
  'req.headers': { 'user-agent': ['curl/8'] },
  'req.cookies': { session: [{ name: 'session', value: 's1' }] },
  'req.url.query_params': { search: ['x'] },
  'res.headers': { 'content-type': ['text/html'] },
  'res.cookies': { _device_id: [{ name: '_device_id', value: 'd1' }] },
  // What the engine reads from the account's vault before a phase (engine.ts readSecrets).
  [secretVariable('vault-name', 'secret-name')]: 'hunter2',
};

const language = createPhaseLanguages(() => 0.5).on_http_response;

function functionSupport(probe: string): Support {
  try {
    const value = language.compile(probe).evaluate((name) => {
      if (!(name in VALUES)) throw new Unavailable(name, 'not given to the probe');
      return VALUES[name];
    });
    return value === true ? 'yes' : 'no';
  } catch (error) {
    return error instanceof Unavailable && /third party/.test(error.message) ? 'third-party' : 'no';
  }
}

function groupSupport(names: readonly string[]): string {
  const supports = names.map((name) => [name, documentedVariableSupport(name)] as const);
  const first = supports[0]![1];
  if (supports.every(([, support]) => support === first)) return SUPPORT_WORDS[first];
  const counts = new Map<Support, number>();
  for (const [, support] of supports) counts.set(support, (counts.get(support) ?? 0) + 1);
  const usual = [...counts].sort((a, b) => b[1] - a[1])[0]![0];
  const others = supports.filter(([, support]) => support !== usual).map(([name, support]) => `\`${name}\` ${SUPPORT_WORDS[support]}`);
  return `${SUPPORT_WORDS[usual]}, except ${others.join(', ')}`;
}

/** The table the docs must hold. */
function supportTables(): string {
  const row = (cells: string[]) => `| ${cells.join(' | ')} |`;
  return [
    row(['Action', 'Support']),
    row(['---', '---']),
    ...DOCUMENTED_ACTIONS.map((type) => row([`\`${type}\``, SUPPORT_WORDS[actionSupport(type)]])),
    '',
    row(['Variables', 'Support']),
    row(['---', '---']),
    ...DOCUMENTED_VARIABLES.map(([group, names]) => row([`\`${group}\``, groupSupport(names.split(' '))])),
    '',
    row(['Function', 'Support']),
    row(['---', '---']),
    ...DOCUMENTED_FUNCTIONS.map(([name, probe]) => row([`\`${name}\``, SUPPORT_WORDS[functionSupport(probe)]])),
  ].join('\n');
}

describe("docs/traffic-policy.md's support table", () => {
  test('lists every documented action, variable group and function with the support Burrow has', () => {
    const file = new URL('../../docs/traffic-policy.md', import.meta.url);
    const docs = readFileSync(file, 'utf8');
    const marked = /(<!-- support table: checked by test\/policy\/support\.test\.ts -->\n)([\s\S]*?)(\n<!-- end of support table -->)/;
    // UPDATE_SUPPORT_TABLE=1 writes the table the registries give (then review the diff).
    if (process.env.UPDATE_SUPPORT_TABLE) writeFileSync(file, docs.replace(marked, (_all, start: string, _table: string, end: string) => `${start}${supportTables()}${end}`));
    assert.equal(marked.exec(docs)?.[2], supportTables(), 'docs/traffic-policy.md: the support table differs from the registries (UPDATE_SUPPORT_TABLE=1 rewrites it)');
  });

  test('every action type Burrow knows is in the documented list (no row is missing)', () => {
    for (const type of Object.keys(ACTION_PHASES).filter((type) => type !== 'oidc')) assert.ok(DOCUMENTED_ACTIONS.includes(type), type);
  });
});
