import { LIMITS, limitNote } from '../../lib/limits.ts';

/**
 * The command grammar of the SSH gateway: what `ssh -R <remote name>:<remote port>:<local
 * name>:<local port> <user>@host <command> [flags]` asks for, read the way the vendor documents
 * its SSH reverse tunnel (docs/ssh-gateway.md lists what was documented and what was inferred).
 * The user names the syntax version (`v2`; any other name that is not `v<n>` means the latest);
 * the command is `http`, `tcp` or `tls`; the remote name and port of the `-R` forward choose the
 * endpoint. Pure: text in, a request or an SshCommandError out.
 */

/** What the client's `-R` asked the server to listen on (the tcpip-forward request). */
export interface RemoteForward {
  /** The bind address as the client sent it (`localhost` when the user gave no remote name). */
  readonly address: string;
  /** 0: the server chooses. */
  readonly port: number;
}

export interface BasicAuthCredential {
  readonly username: string;
  /** A secret: never logged or echoed. */
  readonly password: string;
}

/** The endpoint an SSH client asked for. */
export interface SshBindRequest {
  /** `http` for the `http` command on remote port 80, `https` for it on 0 or 443. */
  readonly proto: 'http' | 'https' | 'tcp' | 'tls';
  /** The domain (http, https, tls) or `host:port` address (tcp) asked for; '' lets the server choose. */
  readonly name: string;
  readonly basicAuth: readonly BasicAuthCredential[];
  /** A traffic policy (JSON) made from the header flags, or null. */
  readonly trafficPolicy: string | null;
}

export type SshCommand = { readonly kind: 'bind'; readonly request: SshBindRequest } | { readonly kind: 'help'; readonly text: string };

/** A command the gateway cannot run; the message is shown to the ssh user as is. */
export class SshCommandError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'SshCommandError';
  }
}

/** The syntax version this gateway speaks (the vendor's latest). */
export const COMMAND_SYNTAX_VERSION = 'v2';

const COMMANDS = ['http', 'tcp', 'tls'] as const;
type CommandName = (typeof COMMANDS)[number];

/** Bind addresses that mean "no remote name": OpenSSH sends `localhost` when -R has none. */
const UNNAMED_ADDRESSES = new Set(['', '*', 'localhost', '0.0.0.0', '::', '127.0.0.1', '::1']);

/** A DNS name or a wildcard one, as the gateway passes it on (the session handler checks reservations). */
const DOMAIN_NAME = /^(\*\.)?([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?\.)*[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/i;
const MAX_DOMAIN_LENGTH = 253;

interface FlagSpec {
  readonly commands: readonly CommandName[];
  readonly help: string;
  /** false: a switch without a value. */
  readonly takesValue: boolean;
  /** Set when the vendor documents the flag but it cannot work here; the reason is shown. */
  readonly unsupported?: string;
}

const FLAGS: Readonly<Record<string, FlagSpec>> = {
  url: { commands: COMMANDS, takesValue: true, help: 'the endpoint URL or name (https://app.example.com, tcp://1.tcp.example.com:20002), instead of the -R remote name' },
  domain: { commands: ['http', 'tls'], takesValue: true, help: 'the endpoint domain (older spelling of --url)' },
  'remote-addr': { commands: ['tcp'], takesValue: true, help: 'the reserved address host:port (older spelling of --url)' },
  'basic-auth': { commands: ['http'], takesValue: true, help: "'user:password' a visitor must give (repeatable)" },
  'request-header-add': { commands: ['http'], takesValue: true, help: "'name: value' added to requests (repeatable)" },
  'request-header-remove': { commands: ['http'], takesValue: true, help: 'a header removed from requests (repeatable)' },
  'traffic-policy-url': {
    commands: COMMANDS,
    takesValue: true,
    help: 'a traffic policy fetched from a URL',
    unsupported: 'Burrow runs offline and fetches no policy; attach the policy to the endpoint through the API instead',
  },
  oauth: { commands: ['http'], takesValue: true, help: 'an OAuth provider', unsupported: 'use an oauth traffic policy on the endpoint through the API instead' },
  help: { commands: COMMANDS, takesValue: false, help: 'this text' },
};

/**
 * Splits a command line into words as a POSIX shell would (quotes and backslashes, no
 * expansions), because OpenSSH sends the remote command as one string: `http --basic-auth
 * 'a:b c'` typed for the remote side arrives quoted.
 */
export function splitWords(text: string): string[] {
  const words: string[] = [];
  let word = '';
  let inWord = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!;
    if (c === ' ' || c === '\t' || c === '\n') {
      if (inWord) words.push(word);
      word = '';
      inWord = false;
    } else if (c === "'") {
      const end = text.indexOf("'", i + 1);
      if (end < 0) throw new SshCommandError(`unterminated ' quote at character ${i + 1} of the command`);
      word += text.slice(i + 1, end);
      inWord = true;
      i = end;
    } else if (c === '"') {
      let j = i + 1;
      for (; j < text.length && text[j] !== '"'; j++) {
        if (text[j] === '\\' && j + 1 < text.length && '"\\$`\n'.includes(text[j + 1]!)) j++;
        word += text[j];
      }
      if (j >= text.length) throw new SshCommandError(`unterminated " quote at character ${i + 1} of the command`);
      inWord = true;
      i = j;
    } else if (c === '\\') {
      if (i + 1 < text.length) word += text[++i];
      inWord = true;
    } else {
      word += c;
      inWord = true;
    }
  }
  if (inWord) words.push(word);
  return words;
}

/** The usage text `--help` shows (and errors point to). */
export function usage(command?: CommandName): string {
  const lines = [
    `usage: ssh -R [<remote name>:]<remote port>:<local host>:<local port> ${COMMAND_SYNTAX_VERSION}@<host> -p <port> <http|tcp|tls> [flags]`,
    '',
    '  http   an HTTPS endpoint (remote port 0 or 443; 80 for plain HTTP); the remote name is its domain',
    '  tcp    a TCP endpoint (remote port 0 for a free address; <reserved host>:<port> for a reserved one)',
    '  tls    a TLS endpoint (remote port 0 or 443); the remote name is its domain',
    '',
    'flags:',
  ];
  for (const [name, spec] of Object.entries(FLAGS)) {
    if (command && !spec.commands.includes(command)) continue;
    const commands = spec.commands.length === COMMANDS.length ? '' : ` (${spec.commands.join(', ')})`;
    lines.push(`  --${name}${spec.takesValue ? ' VALUE' : ''}  ${spec.help}${commands}${spec.unsupported ? ' [not supported here]' : ''}`);
  }
  return lines.join('\n');
}

/** Reads the user name, command line and `-R` forward of one SSH session into a bind request. */
export function parseTunnelCommand(user: string, command: string, forward: RemoteForward): SshCommand {
  const bytes = Buffer.byteLength(command);
  if (bytes > LIMITS.ssh_command_bytes.value) {
    throw new SshCommandError(`the command is ${bytes} bytes, more than ${LIMITS.ssh_command_bytes.value} ${limitNote('ssh_command_bytes')}`);
  }
  if (/^v\d+$/.test(user) && user !== COMMAND_SYNTAX_VERSION) {
    throw new SshCommandError(`unknown command syntax version '${user}': this gateway speaks ${COMMAND_SYNTAX_VERSION} (connect as ${COMMAND_SYNTAX_VERSION}@host)`);
  }
  const words = splitWords(command);
  const name = words[0];
  if (name === undefined || name === '--help' || name === 'help') {
    if (name === undefined) throw new SshCommandError(`no command given: say http, tcp or tls\n\n${usage()}`);
    return { kind: 'help', text: usage() };
  }
  if (!(COMMANDS as readonly string[]).includes(name)) throw new SshCommandError(`unknown command '${name}': say http, tcp or tls\n\n${usage()}`);
  const commandName = name as CommandName;
  const flags = readFlags(commandName, words.slice(1));
  if (flags.has('help')) return { kind: 'help', text: usage(commandName) };
  return { kind: 'bind', request: bindRequest(commandName, flags, forward) };
}

function readFlags(command: CommandName, args: readonly string[]): Map<string, string[]> {
  const flags = new Map<string, string[]>();
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!;
    const match = /^--([a-z][a-z-]*)(?:=([\s\S]*))?$/.exec(arg);
    if (!match) throw new SshCommandError(`unexpected argument '${arg}' (flags are written --name value or --name=value; see ${command} --help)`);
    const flagName = match[1]!;
    const spec = FLAGS[flagName];
    if (!spec || !spec.commands.includes(command)) throw new SshCommandError(`unknown flag --${flagName} for ${command} (see ${command} --help)`);
    if (spec.unsupported) throw new SshCommandError(`--${flagName} is not supported by this gateway: ${spec.unsupported}`);
    let value = match[2];
    if (spec.takesValue && value === undefined) {
      value = args[++i];
      if (value === undefined) throw new SshCommandError(`--${flagName} needs a value`);
    } else if (!spec.takesValue && value !== undefined) {
      throw new SshCommandError(`--${flagName} takes no value`);
    }
    flags.set(flagName, [...(flags.get(flagName) ?? []), value ?? '']);
  }
  return flags;
}

/** The one value of a flag that may be given once. */
function single(flags: Map<string, string[]>, name: string): string | undefined {
  const values = flags.get(name);
  if (values && values.length > 1) throw new SshCommandError(`--${name} is given ${values.length} times; give it once`);
  return values?.[0];
}

function bindRequest(command: CommandName, flags: Map<string, string[]>, forward: RemoteForward): SshBindRequest {
  const remoteName = UNNAMED_ADDRESSES.has(forward.address.toLowerCase()) ? '' : forward.address;
  const common = { basicAuth: basicAuth(flags), trafficPolicy: headerPolicy(flags) };
  if (command === 'tcp') return { proto: 'tcp', name: tcpAddress(remoteName, forward.port, flags), ...common };
  const allowedPorts = command === 'tls' ? [0, 443] : [0, 80, 443];
  if (!allowedPorts.includes(forward.port)) {
    throw new SshCommandError(`remote port ${forward.port}: a ${command} endpoint listens on ${allowedPorts.slice(1).join(' or ')} (or say 0)`);
  }
  const url = single(flags, 'url');
  const proto = command === 'tls' ? 'tls' : httpProto(forward.port, url);
  const flagged = [url, single(flags, 'domain')].filter((value) => value !== undefined).map((value) => urlHost(value, proto));
  const names = [...new Set([remoteName.toLowerCase(), ...flagged.map((value) => value.toLowerCase())].filter((value) => value !== ''))];
  if (names.length > 1) throw new SshCommandError(`the endpoint is named twice, differently: ${names.map((value) => `'${value}'`).join(' and ')}`);
  const domain = names[0] ?? '';
  if (domain !== '') checkDomain(domain);
  return { proto, name: domain, ...common };
}

/** Remote port 80 means plain HTTP, 443 HTTPS; with 0, the scheme of --url decides (HTTPS without one). */
function httpProto(port: number, url: string | undefined): 'http' | 'https' {
  if (port !== 0) return port === 80 ? 'http' : 'https';
  return url !== undefined && /^http:\/\//i.test(url) ? 'http' : 'https';
}

/** The host of a --url/--domain value; its scheme, if any, must fit the command. */
function urlHost(value: string, proto: SshBindRequest['proto']): string {
  const match = /^([a-z]+):\/\/(.*)$/i.exec(value);
  if (!match) return value.replace(/\/$/, '');
  const scheme = match[1]!.toLowerCase();
  const fits = proto === 'tls' ? scheme === 'tls' : scheme === 'http' || scheme === 'https';
  if (!fits) throw new SshCommandError(`--url ${value}: a ${proto === 'tls' ? 'tls' : 'http'} endpoint's URL starts with ${proto === 'tls' ? 'tls://' : 'https:// or http://'}`);
  if (proto !== 'tls' && scheme !== proto) throw new SshCommandError(`--url ${value}: remote port ${proto === 'http' ? 80 : 443} serves ${proto}`);
  return match[2]!.replace(/\/$/, '');
}

function checkDomain(domain: string): void {
  if (domain.length > MAX_DOMAIN_LENGTH || !DOMAIN_NAME.test(domain)) {
    throw new SshCommandError(`'${domain.slice(0, 300)}' is not a domain name`);
  }
}

function tcpAddress(remoteName: string, port: number, flags: Map<string, string[]>): string {
  const fromForward = remoteName === '' ? (port === 0 ? '' : undefined) : port === 0 ? undefined : `${remoteName}:${port}`;
  if (fromForward === undefined) {
    throw new SshCommandError(
      remoteName === ''
        ? `remote port ${port}: a fixed TCP address needs its reserved host too (-R <host>:${port}:…), or say 0 for a free one`
        : `remote name '${remoteName}' without a port: a reserved TCP address is <host>:<port> (-R ${remoteName}:<port>:…)`,
    );
  }
  const flagged = [single(flags, 'url'), single(flags, 'remote-addr')]
    .filter((value) => value !== undefined)
    .map((value) => {
      const match = /^(?:tcp:\/\/)?([^/:]+):(\d{1,5})\/?$/i.exec(value);
      if (!match || Number(match[2]) === 0 || Number(match[2]) > 65535) throw new SshCommandError(`'${value}' is not a TCP address: say tcp://<host>:<port>`);
      return `${match[1]}:${Number(match[2])}`;
    });
  const names = [...new Set([fromForward.toLowerCase(), ...flagged.map((value) => value.toLowerCase())].filter((value) => value !== ''))];
  if (names.length > 1) throw new SshCommandError(`the endpoint address is given twice, differently: ${names.map((value) => `'${value}'`).join(' and ')}`);
  const address = names[0] ?? '';
  if (address !== '') checkDomain(address.slice(0, address.lastIndexOf(':')));
  return address;
}

function basicAuth(flags: Map<string, string[]>): BasicAuthCredential[] {
  return (flags.get('basic-auth') ?? []).map((value) => {
    const colon = value.indexOf(':');
    if (colon <= 0) throw new SshCommandError("--basic-auth: say 'user:password'");
    return { username: value.slice(0, colon), password: value.slice(colon + 1) };
  });
}

/** The header flags as the traffic policy the vendor's agent makes of them. */
function headerPolicy(flags: Map<string, string[]>): string | null {
  const added: Record<string, string> = {};
  for (const value of flags.get('request-header-add') ?? []) {
    const colon = value.indexOf(':');
    if (colon <= 0) throw new SshCommandError(`--request-header-add '${value}': say 'name: value'`);
    added[value.slice(0, colon).trim()] = value.slice(colon + 1).trim();
  }
  const removed = flags.get('request-header-remove') ?? [];
  const actions = [
    ...(Object.keys(added).length > 0 ? [{ type: 'add-headers', config: { headers: added } }] : []),
    ...(removed.length > 0 ? [{ type: 'remove-headers', config: { headers: removed } }] : []),
  ];
  return actions.length === 0 ? null : JSON.stringify({ on_http_request: [{ actions }] });
}
