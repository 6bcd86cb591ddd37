import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { parseTunnelCommand, SshCommandError, splitWords, type SshBindRequest } from '../../../adapters/ssh-gateway/command.ts';
import { LIMITS } from '../../../lib/limits.ts';

/** The SSH gateway's command grammar: the -R forward, the user (syntax version) and the command line. */

const unnamed = { address: 'localhost', port: 0 };

function bind(command: string, forward = unnamed, user = 'v2'): SshBindRequest {
  const parsed = parseTunnelCommand(user, command, forward);
  assert.equal(parsed.kind, 'bind');
  return (parsed as Extract<typeof parsed, { kind: 'bind' }>).request;
}

function refused(command: string, message: RegExp, forward = unnamed, user = 'v2'): void {
  assert.throws(() => parseTunnelCommand(user, command, forward), (error: unknown) => error instanceof SshCommandError && message.test(error.message));
}

const plain = { basicAuth: [], trafficPolicy: null };

describe('splitWords reads the command line as a POSIX shell would, without expansions', () => {
  test('quotes, escapes and blanks', () => {
    assert.deepEqual(splitWords(`http  --basic-auth 'a:b c' --x="d \\"e\\" $f" g\\ h ''`), ['http', '--basic-auth', 'a:b c', '--x=d "e" $f', 'g h', '']);
    assert.deepEqual(splitWords('\t tcp\n'), ['tcp']);
    assert.throws(() => splitWords('http "open'), /unterminated " quote at character 6/);
  });
});

describe('parseTunnelCommand', () => {
  test('http: port 0 or 443 is HTTPS, 80 plain HTTP; the remote name is the domain; loopback names and * mean none', () => {
    assert.deepEqual(bind('http'), { proto: 'https', name: '', ...plain });
    assert.deepEqual(bind('http', { address: 'App.Example.com', port: 443 }), { proto: 'https', name: 'app.example.com', ...plain });
    assert.deepEqual(bind('http', { address: '*.example.com', port: 80 }), { proto: 'http', name: '*.example.com', ...plain });
    for (const address of ['', '*', '0.0.0.0', '127.0.0.1', '::1', 'LOCALHOST']) assert.equal(bind('http', { address, port: 0 }).name, '');
  });

  test('--url and --domain name the endpoint; with port 0 the URL scheme picks http or https; two different names are refused', () => {
    assert.deepEqual(bind('http --url https://a.example.com/'), { proto: 'https', name: 'a.example.com', ...plain });
    assert.deepEqual(bind('http --url=http://a.example.com'), { proto: 'http', name: 'a.example.com', ...plain });
    assert.deepEqual(bind('http --domain a.example.com', { address: 'a.example.com', port: 443 }), { proto: 'https', name: 'a.example.com', ...plain });
    assert.deepEqual(bind('tls --url tls://s.example.com'), { proto: 'tls', name: 's.example.com', ...plain });
    refused('http --url b.example.com', /the endpoint is named twice, differently: 'a\.example\.com' and 'b\.example\.com'/, { address: 'a.example.com', port: 443 });
    refused('http --url http://a.example.com', /--url http:\/\/a\.example\.com: remote port 443 serves https/, { address: 'localhost', port: 443 });
    refused('tls --url https://a.example.com', /a tls endpoint's URL starts with tls:\/\//);
    refused('http --url a.example.com --url b.example.com', /--url is given 2 times; give it once/);
    refused('http --domain bad_name!', /'bad_name!' is not a domain name/);
  });

  test('tcp: 0 is a free address; host:port of -R or --url/--remote-addr a reserved one', () => {
    assert.deepEqual(bind('tcp'), { proto: 'tcp', name: '', ...plain });
    assert.deepEqual(bind('tcp', { address: '1.tcp.example.com', port: 20002 }), { proto: 'tcp', name: '1.tcp.example.com:20002', ...plain });
    assert.deepEqual(bind('tcp --url tcp://1.tcp.example.com:20002'), { proto: 'tcp', name: '1.tcp.example.com:20002', ...plain });
    assert.deepEqual(bind('tcp --remote-addr 1.tcp.example.com:20002', { address: '1.tcp.example.com', port: 20002 }), { proto: 'tcp', name: '1.tcp.example.com:20002', ...plain });
    refused('tcp', /remote port 22: a fixed TCP address needs its reserved host too/, { address: 'localhost', port: 22 });
    refused('tcp', /remote name '1\.tcp\.example\.com' without a port/, { address: '1.tcp.example.com', port: 0 });
    refused('tcp --url tcp://1.tcp.example.com:0', /is not a TCP address: say tcp:\/\/<host>:<port>/);
    refused('tcp --url tcp://a.example.com:1', /the endpoint address is given twice, differently/, { address: 'b.example.com', port: 1 });
  });

  test('tls listens on 443 only; http on 80 or 443', () => {
    assert.deepEqual(bind('tls', { address: 's.example.com', port: 443 }), { proto: 'tls', name: 's.example.com', ...plain });
    refused('tls', /remote port 80: a tls endpoint listens on 443 \(or say 0\)/, { address: 's.example.com', port: 80 });
    refused('http', /remote port 8080: a http endpoint listens on 80 or 443 \(or say 0\)/, { address: 'localhost', port: 8080 });
  });

  test('--basic-auth (repeatable) and the header flags; flags that need a value, take none or do not fit the command are refused', () => {
    assert.deepEqual(bind("http --basic-auth 'a:pass word' --basic-auth b:c:d").basicAuth, [
      { username: 'a', password: 'pass word' },
      { username: 'b', password: 'c:d' },
    ]);
    assert.deepEqual(JSON.parse(bind("http --request-header-add 'x-a: 1' --request-header-add=x-b:2 --request-header-remove cookie").trafficPolicy!), {
      on_http_request: [{ actions: [{ type: 'add-headers', config: { headers: { 'x-a': '1', 'x-b': '2' } } }, { type: 'remove-headers', config: { headers: ['cookie'] } }] }],
    });
    refused('http --basic-auth nocolon', /--basic-auth: say 'user:password'/);
    refused('http --basic-auth', /--basic-auth needs a value/);
    refused('http --help=yes', /--help takes no value/);
    refused('tcp --basic-auth a:b', /unknown flag --basic-auth for tcp/);
    refused('http --oauth google', /--oauth is not supported by this gateway: use an oauth traffic policy/);
    refused('http 8080', /unexpected argument '8080'/);
    refused('http -subdomain=x', /unexpected argument '-subdomain=x'/);
  });

  test('the user names the syntax version: v2 or any non-version name; other versions are refused', () => {
    assert.equal(bind('http', unnamed, 'alice').proto, 'https');
    refused('http', /unknown command syntax version 'v1': this gateway speaks v2/, unnamed, 'v1');
  });

  test('help, unknown and missing commands', () => {
    const help = parseTunnelCommand('v2', 'http --help', unnamed);
    assert.equal(help.kind, 'help');
    assert.match((help as Extract<typeof help, { kind: 'help' }>).text, /--basic-auth VALUE/);
    assert.equal(parseTunnelCommand('v2', '--help', unnamed).kind, 'help');
    refused('', /no command given: say http, tcp or tls/);
    refused('https', /unknown command 'https': say http, tcp or tls/);
  });

  test(`a command over ${LIMITS.ssh_command_bytes.value} bytes is refused before it is read`, () => {
    refused(`http ${'é'.repeat(LIMITS.ssh_command_bytes.value / 2)}`, new RegExp(`the command is ${LIMITS.ssh_command_bytes.value + 5} bytes, more than ${LIMITS.ssh_command_bytes.value} \\(limit ssh_command_bytes\\)`));
  });
});
