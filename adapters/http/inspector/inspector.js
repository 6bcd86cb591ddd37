// The Burrow inspector: one page over the control plane (/_burrow/…), plain JavaScript, no build
// step and no third-party code. Every request it makes carries the operator token in the
// Authorization header; the token lives in this tab's sessionStorage only, never in a URL.
//
// It stays live by polling the view on screen every two seconds while the tab is visible.
// Server-sent events were the other choice, but EventSource cannot send an Authorization header
// (the token would have to travel in the URL or a cookie), and polling works unchanged through
// every host the HTTP adapter runs in (node:http, fetch handlers, Express, Fastify, Hono), whose
// seam answers whole bodies rather than streams.

const TOKEN_KEY = 'burrow.operatorToken';
const POLL_MS = 2000;
const PAGE_SIZE = 20;
const ID = /^([a-z]+)_[0-9A-Za-z]{27}$/;

const $ = (id) => document.getElementById(id);

const state = {
  token: sessionStorage.getItem(TOKEN_KEY),
  accounts: [],
  kinds: [],
  prefixes: new Set(),
  view: undefined,
  timer: undefined,
  /** The poll in flight, and whether another round was asked for meanwhile. */
  busy: undefined,
  again: false,
};

/** The control plane refused the token. */
class Refused extends Error {}

/** Any other error answer; `message` is the server's `msg`. */
class Failure extends Error {
  constructor(status, body) {
    super(body?.msg ?? `HTTP ${status}`);
    this.status = status;
    this.code = body?.error_code;
  }
}

/** Calls the control plane; paths are relative to the page (`/_burrow/`). */
async function call(method, path, body) {
  const headers = { Authorization: `Bearer ${state.token}` };
  if (body !== undefined) headers['Content-Type'] = 'application/json';
  const res = await fetch(path, { method, headers, cache: 'no-store', ...(body !== undefined ? { body: JSON.stringify(body) } : {}) });
  const text = await res.text();
  let data;
  try {
    data = text ? JSON.parse(text) : undefined;
  } catch {
    data = undefined;
  }
  if (res.status === 401 || (res.status === 403 && /9006$/.test(data?.error_code ?? ''))) throw new Refused(data?.msg ?? `HTTP ${res.status}`);
  if (!res.ok) throw new Failure(res.status, data);
  return data;
}

/** Builds an element: h('a', { href, class, onclick }, 'text', child…). */
function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (value === undefined || value === null || value === false) continue;
    if (key.startsWith('on')) el.addEventListener(key.slice(2), value);
    else if (key === 'class') el.className = value;
    else el.setAttribute(key, value === true ? '' : String(value));
  }
  for (const child of children.flat(Infinity)) {
    if (child === undefined || child === null || child === false) continue;
    el.append(child instanceof Node ? child : String(child));
  }
  return el;
}

const enc = encodeURIComponent;
const accountPath = (account) => `accounts/${enc(account)}`;
const link = (account, ...parts) => `#/accounts/${[account, ...parts].map(enc).join('/')}`;

function toast(message, kind = 'info') {
  const el = $('toast');
  el.textContent = message;
  el.className = `toast ${kind}`;
  el.hidden = false;
  clearTimeout(toast.timer);
  toast.timer = setTimeout(() => (el.hidden = true), 5000);
}

/** Runs a user action; a refusal signs out, other failures show their message. */
async function act(work) {
  try {
    await work();
  } catch (error) {
    if (error instanceof Refused) signOut(`Signed out: ${error.message}`);
    else toast(error.message, 'error');
  }
}

function table(headings, rows, empty) {
  if (rows.length === 0) return h('p', { class: 'empty muted' }, empty);
  return h('div', { class: 'table-wrap' }, h('table', {}, h('thead', {}, h('tr', {}, headings.map((t) => h('th', {}, t)))), h('tbody', {}, rows)));
}

const plural = (n, word) => `${n} ${word}${n === 1 ? '' : 's'}`;

function timeOf(iso) {
  return h('time', { datetime: iso, title: iso }, iso.slice(11, 23).replace(/Z$/, ''));
}

/** A record's JSON with every id of a known kind linked to that record's page. */
function jsonView(value, account, selfId) {
  const pre = h('pre', { class: 'json' });
  /** `key`: the field `v` is the value of. */
  const write = (v, indent, key) => {
    if (Array.isArray(v)) {
      if (v.length === 0) return pre.append('[]');
      pre.append('[\n');
      v.forEach((item, i) => {
        pre.append(`${indent}  `);
        write(item, `${indent}  `);
        pre.append(i < v.length - 1 ? ',\n' : '\n');
      });
      return pre.append(`${indent}]`);
    }
    if (v !== null && typeof v === 'object') {
      const keys = Object.keys(v);
      if (keys.length === 0) return pre.append('{}');
      pre.append('{\n');
      keys.forEach((key, i) => {
        pre.append(`${indent}  `, h('span', { class: 'key' }, JSON.stringify(key)), ': ');
        write(v[key], `${indent}  `, key);
        pre.append(i < keys.length - 1 ? ',\n' : '\n');
      });
      return pre.append(`${indent}}`);
    }
    if (typeof v === 'string' && key === 'traffic_policy' && v !== '') return pre.append(policyView(v, `${indent}    `));
    if (typeof v === 'string') {
      const match = ID.exec(v);
      if (match && v !== selfId && state.prefixes.has(match[1])) return pre.append(h('a', { class: 'ref', href: link(account, 'records', v) }, JSON.stringify(v)));
      return pre.append(h('span', { class: 'str' }, JSON.stringify(v)));
    }
    pre.append(h('span', { class: v === null ? 'lit' : typeof v === 'number' ? 'num' : 'lit' }, JSON.stringify(v)));
  };
  write(value, '');
  return pre;
}

/** A YAML scalar: a string as it is, quoted only where YAML would read it otherwise. */
function yamlScalar(v) {
  if (typeof v !== 'string') return JSON.stringify(v);
  const plain = v !== '' && !/^[\s\-?:,[\]{}#&*!|>'"%@`]|[:#]\s|:$|\s$|\n/.test(v) && !/^(true|false|null|yes|no|on|off|~|[-+]?\.?\d[\d._]*(e[-+]?\d+)?)$/i.test(v);
  return plain ? v : JSON.stringify(v);
}

/** YAML of a parsed JSON value (a policy), two spaces an indent. */
function toYaml(value, indent = '') {
  if (Array.isArray(value)) {
    if (value.length === 0) return `${indent}[]`;
    return value.map((item) => `${indent}- ${toYaml(item, `${indent}  `).trimStart()}`).join('\n');
  }
  if (value !== null && typeof value === 'object') {
    const keys = Object.keys(value);
    if (keys.length === 0) return `${indent}{}`;
    return keys
      .map((key) => {
        const v = value[key];
        const block = v !== null && typeof v === 'object' && Object.keys(v).length > 0;
        return block ? `${indent}${yamlScalar(key)}:\n${toYaml(v, `${indent}  `)}` : `${indent}${yamlScalar(key)}: ${toYaml(v)}`;
      })
      .join('\n');
  }
  return `${indent}${yamlScalar(value)}`;
}

/**
 * A traffic policy as a record holds it (JSON or YAML text), shown as YAML on lines of its own,
 * each `indent` in, after a `|` as a YAML block would be: not one escaped line running off the page.
 */
function policyView(text, indent) {
  let yaml;
  try {
    yaml = toYaml(JSON.parse(text));
  } catch {
    yaml = text;
  }
  const lines = yaml.trimEnd().split('\n').map((line) => `${indent}${line}`).join('\n');
  return h('span', { class: 'policy-block', title: 'the traffic policy, shown as YAML' }, `|\n${lines}`);
}

// ---- Views: each builds its fixed part once (`mount`) and redraws its data on every poll.

function overviewView(account) {
  const data = h('div');
  let confirming = false;
  const resetArea = h('div', { class: 'actions' });
  const drawReset = () => {
    resetArea.replaceChildren(
      confirming
        ? h('span', { class: 'confirm' }, 'Delete every resource of this account? Users and API keys stay. ',
            h('button', { type: 'button', class: 'danger', id: 'reset-confirm', onclick: () => act(reset) }, 'Reset'),
            ' ',
            h('button', { type: 'button', onclick: () => ((confirming = false), drawReset()) }, 'Cancel'))
        : h('button', { type: 'button', id: 'reset', class: 'danger', onclick: () => ((confirming = true), drawReset()) }, 'Reset account…'),
    );
  };
  const reset = async () => {
    const res = await call('POST', 'reset', { account_id: account });
    confirming = false;
    drawReset();
    toast(`Account reset: ${plural(res.removed, 'record')} removed`);
    await refreshAll();
  };
  drawReset();
  return {
    title: 'Overview',
    mount(content) {
      const info = state.accounts.find((a) => a.id === account);
      content.append(
        h('div', { class: 'heading' }, h('h1', {}, info?.name || 'Account', ' ', h('code', { class: 'muted' }, account)), resetArea),
        data,
      );
    },
    async refresh() {
      const failed = await call('GET', `requests?account_id=${enc(account)}&status=failed&limit=5`);
      const cards = state.kinds.filter((k) => k.count > 0).map((k) =>
        h('a', { class: 'card', href: link(account, 'kinds', k.name) }, h('span', { class: 'count' }, k.more ? `${k.count}+` : k.count), h('span', {}, k.path), h('small', { class: 'muted' }, k.label)),
      );
      data.replaceChildren(
        h('h2', {}, 'Resources'),
        cards.length ? h('div', { class: 'cards' }, cards) : h('p', { class: 'empty muted' }, 'This account holds no resources yet (besides its API keys).'),
        h('h2', {}, 'Recent failed requests ', h('a', { class: 'small', href: link(account, 'requests') }, 'all requests →')),
        requestTable(failed.requests, 'No failed requests.', { compact: true }),
      );
    },
  };
}

/** A page that is one block the refresh fills. */
function pageView(title, fill) {
  const data = h('div');
  return { title, mount: (content) => content.append(data), refresh: () => fill(data) };
}

function kindView(account, name, before) {
  return pageView(name, async (data) => {
    const kind = state.kinds.find((k) => k.name === name);
    const page = await call('GET', `${accountPath(account)}/resources/${enc(name)}?limit=${PAGE_SIZE}${before ? `&before_id=${enc(before)}` : ''}`);
    const items = page[kind?.list_key ?? ''] ?? Object.values(page).find(Array.isArray) ?? [];
    // Endpoints, tunnels, domains…: what they are reached by, and their type, when the records say.
    const urlOf = (item) => item.url ?? item.public_url ?? item.hostport ?? item.domain ?? item.addr ?? null;
    const typeOf = (item) => item.type ?? item.proto ?? null;
    const hasUrl = items.some((item) => urlOf(item) !== null);
    const hasType = items.some((item) => typeOf(item) !== null);
    const rows = items.map((item) =>
      h('tr', {}, h('td', {}, h('a', { class: 'id', href: link(account, 'records', item.id) }, item.id)),
        hasUrl ? h('td', { class: 'path' }, urlOf(item) ?? '') : null,
        hasType ? h('td', {}, typeOf(item) ?? '') : null,
        h('td', {}, item.description ?? ''), h('td', { class: 'muted' }, item.created_at ?? item.started_at ?? '')),
    );
    const next = page.next_page_uri ? new URL(page.next_page_uri).searchParams.get('before_id') : null;
    data.replaceChildren(
      h('div', { class: 'heading' }, h('h1', {}, kind?.path ?? name, ' ', h('span', { class: 'muted' }, kind ? `${kind.label}s` : ''))),
      table(['id', hasUrl ? 'url' : null, hasType ? 'type' : null, 'description', 'created'].filter(Boolean), rows, before ? 'No older records.' : `No ${kind?.label ?? name}s in this account.`),
      h('p', { class: 'pager' },
        before ? h('a', { href: link(account, 'kinds', name) }, '← newest') : null,
        ' ',
        next ? h('a', { id: 'older', href: link(account, 'kinds', name, 'before', next) }, 'older →') : null),
    );
  });
}

function recordView(account, id) {
  return pageView(id, async (data) => {
    let found;
    try {
      found = await call('GET', `${accountPath(account)}/records/${enc(id)}`);
    } catch (error) {
      if (!(error instanceof Failure) || error.status !== 404) throw error;
      data.replaceChildren(h('h1', {}, h('code', {}, id)), h('p', { class: 'empty' }, `Gone: ${error.message}`));
      return;
    }
    data.replaceChildren(
      h('div', { class: 'heading' }, h('h1', {}, found.label, ' ', h('code', {}, id)), h('a', { class: 'small', href: link(account, 'kinds', found.resource) }, `all ${found.label}s →`)),
      jsonView(found.record, account, id),
    );
  });
}

function sessionsView(account) {
  const data = h('div');
  const command = (id, name) =>
    act(async () => {
      await call('POST', `${accountPath(account)}/tunnel_sessions/${enc(id)}/${name}`, {});
      toast(name === 'stop' ? `Stopped ${id}` : `Restarted ${id}`);
      await refreshAll();
    });
  return {
    title: 'Tunnel sessions',
    mount(content) {
      content.append(h('div', { class: 'heading' }, h('h1', {}, 'Tunnel sessions'), h('span', { class: 'muted' }, 'online agents; stop or restart them as the API would')), data);
    },
    async refresh() {
      const page = await call('GET', `${accountPath(account)}/resources/tunnel_sessions?limit=100`);
      const rows = page.tunnel_sessions.map((s) =>
        h('tr', { 'data-id': s.id },
          h('td', {}, h('a', { class: 'id', href: link(account, 'records', s.id) }, s.id)),
          h('td', { class: 'row-actions' },
            h('button', { type: 'button', onclick: () => command(s.id, 'restart') }, 'Restart'),
            h('button', { type: 'button', class: 'danger', onclick: () => command(s.id, 'stop') }, 'Stop')),
          h('td', {}, s.agent_version), h('td', {}, s.os), h('td', {}, s.region), h('td', {}, s.ip), h('td', {}, s.transport),
          h('td', {}, h('a', { class: 'id', href: link(account, 'records', s.credential.id) }, s.credential.id)),
          h('td', { class: 'muted' }, s.started_at)),
      );
      data.replaceChildren(table(['id', '', 'agent', 'os', 'region', 'ip', 'transport', 'credential', 'started'], rows, 'No agent is online in this account.'));
    },
  };
}

/** A request path whose ids of known kinds link to their records (in the account that made it). */
function pathView(account, path) {
  return path.split(/(\/)/).map((part) => {
    const match = ID.exec(part);
    return match && account && state.prefixes.has(match[1]) ? h('a', { href: link(account, 'records', part) }, part) : part;
  });
}

/** Journal entries, failures highlighted; `compact` leaves out the operation ids; `open(id)` makes rows open the detail pane. */
function requestTable(entries, empty, { compact = false, open, selected } = {}) {
  const rows = entries.map((e) =>
    h('tr', {
      class: `${e.status >= 400 || e.status === 0 ? 'failed' : ''}${open ? ' clickable' : ''}${selected === e.operation_id ? ' selected' : ''}`,
      title: e.message ?? `operation id ${e.operation_id}`,
      'data-id': e.operation_id,
      onclick: open ? () => open(e.operation_id) : undefined,
    },
      h('td', {}, timeOf(e.time)),
      h('td', {}, e.method),
      h('td', { class: 'path' }, pathView(e.account_id, e.path), e.query ? h('span', { class: 'muted' }, `?${e.query}`) : null),
      h('td', {}, h('span', { class: `status s${String(e.status)[0]}` }, e.status === 0 ? 'dropped' : e.status)),
      h('td', { class: 'error-cell' }, e.error_code ?? '', e.message ? h('div', { class: 'message' }, e.message) : null),
      h('td', {}, e.fault ? h('code', { title: e.fault.latency_ms === null ? 'fault rule' : `fault rule; added ${e.fault.latency_ms} ms` }, e.fault.id) : ''),
      h('td', { class: 'num' }, `${e.duration_ms} ms`),
      h('td', { class: 'muted' }, e.operation ?? ''),
      compact ? null : h('td', {}, h('code', { class: 'muted' }, e.operation_id))),
  );
  return table(['time', 'method', 'path', 'status', 'error', 'fault', 'took', 'operation', compact ? null : 'operation id'].filter(Boolean), rows, empty);
}

/**
 * A journal's page (the API requests, the traffic): whose entries, their status and one filter of
 * its own, a Clear button, the table and a detail pane. `path` is the journal's control path.
 */
function journalView(account, { path, id, title, whoseLabel, noneLabel, statuses, noun, filter, render }) {
  const data = h('div');
  const pane = detailPane(path);
  const status = h('select', { id: `${id}-status`, 'aria-label': 'status', onchange: () => refreshAll() },
    [['', 'every status'], ['failed', 'failed (≥ 400)'], ...statuses.map((s) => [s, s])].map(([value, label]) => h('option', { value }, label)));
  const whose = h('select', { id: `${id}-whose`, 'aria-label': whoseLabel, onchange: () => refreshAll() },
    h('option', { value: account }, 'this account'), h('option', { value: 'none' }, noneLabel));
  const clear = h('button', {
    type: 'button',
    onclick: () => act(async () => {
      const res = await call('DELETE', `${path}?account_id=${enc(whose.value)}`);
      toast(`Cleared ${plural(res.removed, noun)}`);
      await refreshAll();
    }),
  }, 'Clear');
  return {
    title,
    mount(content) {
      content.append(h('div', { class: 'heading' }, h('h1', {}, title),
        h('form', { class: 'inline filters', onsubmit: (e) => e.preventDefault() }, whose, status, filter.control, clear)), data, pane.el);
    },
    async refresh() {
      const query = new URLSearchParams({ account_id: whose.value, limit: '200' });
      if (status.value) query.set('status', status.value);
      filter.apply(query);
      data.replaceChildren(...render(await call('GET', `${path}?${query}`), pane));
    },
  };
}

function requestsView(account) {
  const path = h('input', { id: 'journal-path', type: 'search', placeholder: 'path contains…', 'aria-label': 'path contains', oninput: () => refreshAll() });
  return journalView(account, {
    path: 'requests', id: 'journal', title: 'Requests', whoseLabel: 'whose requests', noneLabel: 'without a valid API key', statuses: ['2xx', '4xx', '5xx'], noun: 'request',
    filter: { control: path, apply: (query) => path.value.trim() && query.set('path', path.value.trim()) },
    render: (journal, pane) => [
      h('p', { class: 'muted small' }, `The last ${journal.size} API requests of each account are kept; newest first, failures in red. Click one for its detail.`),
      requestTable(journal.requests, 'No requests match.', { open: pane.open, selected: pane.selected() }),
    ],
  });
}

/** `phase · source · name` (or `#index`) of a rule of a traffic entry. */
const ruleLabel = (rule) => `${rule.phase} · ${rule.source}${rule.name ? ` · ${rule.name}` : ` #${rule.index}`}`;

/** One rule of a traffic entry: where it came from, whether it held, its actions, its error. */
function ruleItem(rule) {
  const label = ruleLabel(rule);
  return h('li', { class: rule.error ? 'rule failed' : rule.matched ? 'rule matched' : 'rule muted' },
    h('span', { class: 'rule-name' }, label), ' ',
    h('span', { class: 'muted' }, rule.error ? 'failed' : rule.matched ? 'matched' : 'did not match'),
    rule.actions.length ? h('ul', { class: 'actions' }, rule.actions.map((a) => h('li', {}, h('code', {}, a.type), a.ended ? h('span', { class: 'muted' }, ' ended the phase') : null, a.note ? ` — ${a.note}` : null))) : null,
    rule.error ? h('p', { class: 'error' }, rule.error) : null);
}

/** Who decided an exchange, in words: the journal's `decided_by` (the rule whose action ended it, else one that failed), else who answered. */
function decidedBy(entry) {
  const rule = entry.decided_by;
  if (rule) {
    return rule.action ? `Decided by ${ruleLabel(rule)}: ${rule.action}.` : `Stopped by ${ruleLabel(rule)}, which failed.`;
  }
  return entry.answered_by === 'upstream' ? `No rule ended it: the upstream answered${entry.rules.length ? ` after ${plural(entry.rules.length, 'rule')}` : ''}.` : `Answered by the ${entry.answered_by}.`;
}

/** Traffic journal entries: a row each; `open(seq)` shows one in the detail pane. */
function trafficTable(entries, open, selected) {
  const rows = entries.map((e) => {
    const failed = e.errors.length > 0 || e.status === 0 || e.status >= 400;
    const url = e.url ? new URL(e.url) : undefined;
    const ran = e.rules.filter((r) => r.matched || r.error);
    return h('tr', { class: `traffic clickable${failed ? ' failed' : ''}${selected === String(e.seq) ? ' selected' : ''}`, 'data-id': e.seq, onclick: () => open(String(e.seq)), title: e.message ?? 'show the detail and the rules evaluated' },
      h('td', {}, timeOf(e.time)),
      h('td', {}, e.method ?? e.protocol),
      h('td', { class: 'path', title: e.url ?? '' }, url ? [h('span', { class: 'muted' }, url.host), url.pathname, url.search ? h('span', { class: 'muted' }, url.search) : null] : e.endpoint?.url ?? ''),
      h('td', {}, e.status === null ? '' : h('span', { class: `status s${String(e.status)[0]}` }, e.status === 0 ? 'no answer' : e.status)),
      h('td', {}, e.answered_by),
      h('td', {}, e.error_code ?? ''),
      h('td', { class: 'rules' }, ran.map((r) => h('span', { class: `chip${r.error ? ' failed' : ''}`, title: r.error ?? r.source }, r.name ?? r.source, r.actions.length ? `: ${r.actions.map((a) => a.type).join(', ')}` : ''))),
      h('td', { class: 'num' }, `${e.duration_ms} ms`));
  });
  return table(['time', 'method', 'url', 'status', 'answered by', 'error', 'rules that ran', 'took'], rows, 'No traffic yet: requests through the ingress appear here as they complete.');
}

/** Headers as a two-column list. */
function headersView(headers) {
  if (!headers.length) return h('p', { class: 'muted small' }, 'no headers');
  return h('table', { class: 'headers' }, h('tbody', {}, headers.map(([name, value]) => h('tr', {}, h('th', {}, name), h('td', {}, value)))));
}

/** A kept body: pretty JSON when it is JSON, else its text; what was cut or let go said. */
function bodyView(body) {
  if (!body) return h('p', { class: 'muted small' }, 'no body');
  const notes = [`${body.bytes} bytes`, body.truncated ? 'only the first part was kept' : null, body.evicted ? 'let go to keep newer bodies' : null, body.encoding === 'base64' ? 'not text: base64' : null].filter(Boolean).join(' · ');
  let view;
  if (body.data === null) view = null;
  else {
    try {
      view = body.encoding === 'utf8' && !body.truncated ? jsonView(JSON.parse(body.data)) : undefined;
    } catch {
      view = undefined;
    }
    view ??= h('pre', { class: 'body' }, body.data);
  }
  return h('div', { class: 'body-view' }, h('p', { class: 'muted small' }, notes), view);
}

/**
 * The detail pane of the Requests or Traffic view (`kind`): one entry's request and answer, its
 * error message, for traffic the policy's rules as a trace, and Replay and Copy-as-curl. It keeps
 * its entry between polls; opening another row or a replay's new entry replaces it.
 */
function detailPane(kind) {
  const el = h('section', { id: 'detail', class: 'detail', hidden: true });
  let selected;
  const close = () => {
    selected = undefined;
    el.hidden = true;
    el.replaceChildren();
    refreshAll();
  };
  const show = (entry) => {
    const id = kind === 'requests' ? entry.operation_id : String(entry.seq);
    selected = id;
    const key = h('input', { id: 'replay-key', type: 'password', autocomplete: 'off', placeholder: 'API key to replay with', 'aria-label': 'API key to replay with' });
    const replay = () => act(async () => {
      const edits = kind === 'requests' && key.value.trim() ? { headers: { authorization: `Bearer ${key.value.trim()}` } } : {};
      const fresh = await call('POST', `${kind}/${enc(id)}/replay`, edits);
      toast(`Replayed: ${fresh.status === 0 ? 'no answer' : fresh.status}`);
      show(fresh);
      await refreshAll();
    });
    const copy = () => act(async () => {
      try {
        await navigator.clipboard.writeText(entry.curl);
        toast('Copied the curl command');
      } catch {
        getSelection().selectAllChildren(el.querySelector('.curl'));
        toast('Select and copy the curl command');
      }
    });
    const request = entry.request;
    const response = entry.response;
    const title = kind === 'requests' ? `${entry.method} ${entry.path}${entry.query ? `?${entry.query}` : ''}` : `${entry.method ?? entry.protocol} ${entry.url ?? entry.endpoint?.url ?? ''}`;
    el.replaceChildren(
      h('div', { class: 'heading' },
        h('h2', {}, title, ' ', entry.status === null ? '' : h('span', { class: `status s${String(entry.status)[0]}` }, entry.status === 0 ? 'no answer' : entry.status)),
        h('span', { class: 'row-actions' },
          kind === 'requests' ? key : null,
          entry.curl ? h('button', { type: 'button', id: 'replay', onclick: replay }, 'Replay') : null,
          entry.curl ? h('button', { type: 'button', id: 'copy-curl', onclick: copy }, 'Copy as curl') : null,
          h('button', { type: 'button', id: 'detail-close', onclick: close }, 'Close'))),
      entry.message ? h('p', { class: 'error', id: 'detail-message' }, entry.message) : '',
      h('p', { class: 'muted small' },
        kind === 'requests'
          ? [`operation ${entry.operation ?? '(no route)'} · `, h('code', {}, entry.operation_id), ` · ${entry.duration_ms} ms`, entry.fault ? ` · fault ${entry.fault.id}` : '']
          : [entry.endpoint ? ['endpoint ', h('code', {}, entry.endpoint.id), ` ${entry.endpoint.url}`, entry.forwarded_to.length ? ` → ${entry.forwarded_to.map((f) => f.url).join(' → ')}` : ''] : 'no endpoint took it',
            ` · client ${entry.client_ip ?? '?'} · answered by ${entry.answered_by} · ${entry.duration_ms} ms`, entry.upstream ? ` (upstream answered ${entry.upstream.status} after ${entry.upstream.after_ms} ms)` : '']),
      kind === 'traffic' ? h('div', { class: 'policy' }, h('h3', {}, 'Policy decisions'), h('p', { id: 'decided', class: 'small' }, decidedBy(entry)), entry.rules.length ? h('ol', { class: 'rules-run' }, entry.rules.map(ruleItem)) : h('p', { class: 'muted' }, 'No rules ran.'), entry.logs.length ? jsonView(entry.logs) : null) : '',
      entry.curl ? h('pre', { class: 'curl' }, entry.curl) : '',
      h('div', { class: 'exchange' },
        h('div', {}, h('h3', {}, 'Request'), request ? [headersView(request.headers), bodyView(request.body)] : h('p', { class: 'muted' }, 'not kept')),
        h('div', {}, h('h3', {}, 'Response'), response ? [headersView(response.headers), bodyView(response.body)] : h('p', { class: 'muted' }, 'no answer was sent'))),
    );
    el.hidden = false;
  };
  return {
    el,
    selected: () => selected,
    open: (id) => act(async () => {
      show(await call('GET', `${kind}/${enc(id)}`));
      el.scrollIntoView({ block: 'nearest' });
      await refreshAll();
    }),
  };
}

function trafficView(account) {
  const errors = h('input', { id: 'traffic-errors', type: 'checkbox', onchange: () => refreshAll() });
  return journalView(account, {
    path: 'traffic', id: 'traffic', title: 'Traffic', whoseLabel: 'whose traffic', noneLabel: 'no endpoint took it', statuses: ['2xx', '3xx', '4xx', '5xx'], noun: 'exchange',
    filter: { control: h('label', { class: 'check' }, errors, ' a rule failed'), apply: (query) => errors.checked && query.set('errors', 'true') },
    render: (journal, pane) => [
      h('p', { class: 'muted small' }, `What the ingress carried, newest first (the last ${journal.size} exchanges of each account are kept). Click one for its detail and every rule its policy evaluated.`),
      trafficTable(journal.traffic, pane.open, pane.selected()),
    ],
  });
}

function eventsView(account) {
  const data = h('div');
  const open = new Set();
  return {
    title: 'Events',
    mount(content) {
      content.append(h('div', { class: 'heading' }, h('h1', {}, 'Event outboxes'), h('span', { class: 'muted' }, 'what each event destination received')), data);
    },
    async refresh() {
      const destinations = (await call('GET', `${accountPath(account)}/resources/event_destinations?limit=100`)).event_destinations;
      const sections = [];
      for (const destination of destinations) {
        const outbox = await call('GET', `${accountPath(account)}/event_destinations/${enc(destination.id)}/outbox`);
        const events = [...outbox.events].reverse().map((event) => {
          const details = h('details', { ontoggle: () => (details.open ? open.add(event.event_id) : open.delete(event.event_id)) },
            h('summary', {}, h('span', { class: 'event-type' }, event.event_type), ' ', h('span', { class: 'muted' }, event.event_timestamp),
              event.object?.id ? [' ', h('code', {}, event.object.id)] : null),
            jsonView(event, account));
          details.open = open.has(event.event_id);
          return h('li', {}, details);
        });
        sections.push(h('section', { class: 'outbox' },
          h('h2', {}, h('a', { href: link(account, 'records', destination.id) }, destination.id), ' ', h('span', { class: 'muted' }, destination.description)),
          h('p', { class: 'muted small' }, `${plural(outbox.events.length, 'event')} kept (at most ${outbox.limit}), ${outbox.dropped} dropped`),
          events.length ? h('ul', { class: 'events' }, events) : h('p', { class: 'empty muted' }, 'No events yet: subscribe this destination to event types.')));
      }
      data.replaceChildren(...(sections.length ? sections : [h('p', { class: 'empty muted' }, 'No event destinations in this account.')]));
    },
  };
}

/** What a fault rule matches and does, in short. */
function faultParts(rule) {
  const match = [rule.method, rule.path, rule.operation ? `operation ${rule.operation}` : null, rule.account_id ? `account ${rule.account_id}` : null].filter(Boolean).join(' ') || 'every API request';
  const latency = rule.latency_ms === undefined ? null : typeof rule.latency_ms === 'number' ? `wait ${rule.latency_ms} ms` : `wait ${rule.latency_ms.min}–${rule.latency_ms.max} ms`;
  const effect = [latency, rule.error ? `${rule.error.status}${rule.error.error_code ? ` ${rule.error.error_code}` : ''}${rule.error.message ? ` "${rule.error.message}"` : ''}` : null, rule.rate_limit ? `429, Retry-After ${rule.rate_limit.retry_after_seconds}` : null, rule.drop_connection ? 'drop the connection' : null].filter(Boolean).join(', then ');
  const when = [rule.every ? `every ${rule.every}th` : null, rule.times ? `at most ${plural(rule.times, 'time')}` : null, rule.probability !== undefined ? `probability ${rule.probability}` : null].filter(Boolean).join(', ');
  return { match, effect, when };
}

/** A user action that calls the control plane, says `message`, and redraws. */
const perform = (method, path, body, message) =>
  act(async () => {
    await call(method, path, body);
    toast(message);
    await refreshAll();
  });

function faultsView() {
  const data = h('div');
  const remove = (path, message) => perform('DELETE', path, undefined, message);
  return {
    title: 'Fault rules',
    mount(content) {
      content.append(h('div', { class: 'heading' }, h('h1', {}, 'Fault rules'), h('span', { class: 'muted' }, 'every account (POST /_burrow/faults adds one)'),
        h('span', { class: 'actions' }, h('button', { type: 'button', id: 'faults-clear', class: 'danger', onclick: () => remove('faults', 'Removed every fault rule') }, 'Remove all'))), data);
    },
    async refresh() {
      const { faults } = await call('GET', 'faults');
      const rows = faults.map((rule) => {
        const { match, effect, when } = faultParts(rule);
        return h('tr', { 'data-id': rule.id, class: rule.times !== undefined && rule.applied >= rule.times ? 'spent' : '' },
          h('td', {}, h('code', {}, rule.id)), h('td', { class: 'wrap' }, match), h('td', { class: 'wrap' }, effect), h('td', { class: 'muted' }, when),
          h('td', { class: 'num' }, rule.matched), h('td', { class: 'num' }, rule.applied), h('td', { class: 'muted' }, rule.created_at),
          h('td', { class: 'row-actions' }, h('button', { type: 'button', class: 'danger', onclick: () => remove(`faults/${enc(rule.id)}`, `Removed ${rule.id}`) }, 'Remove')));
      });
      data.replaceChildren(table(['id', 'matches', 'does', 'when', 'matched', 'applied', 'created', ''], rows, 'No fault rules: every API request is answered as it would be.'));
    },
  };
}

function checkpointsView() {
  const data = h('div');
  const name = h('input', { id: 'checkpoint-name', placeholder: 'checkpoint name', 'aria-label': 'checkpoint name', required: true });
  const create = h('form', { class: 'inline filters', onsubmit: (e) => {
    e.preventDefault();
    perform('POST', 'checkpoints', { name: name.value.trim() }, `Kept the whole state as ${name.value.trim()}`);
  } }, name, h('button', { type: 'submit', id: 'checkpoint-create' }, 'Keep the state'));
  return {
    title: 'Checkpoints',
    mount(content) {
      content.append(h('div', { class: 'heading' }, h('h1', {}, 'Checkpoints'), h('span', { class: 'muted' }, 'the whole state of every account, kept by name'), create), data);
    },
    async refresh() {
      const { checkpoints } = await call('GET', 'checkpoints');
      const rows = checkpoints.map((c) =>
        h('tr', { 'data-id': c.name }, h('td', {}, h('code', {}, c.name)), h('td', { class: 'num' }, c.records), h('td', { class: 'muted' }, c.created_at),
          h('td', { class: 'row-actions' },
            h('button', { type: 'button', onclick: () => perform('POST', `checkpoints/${enc(c.name)}/restore`, {}, `Restored ${c.name}`) }, 'Restore'),
            h('button', { type: 'button', class: 'danger', onclick: () => perform('DELETE', `checkpoints/${enc(c.name)}`, undefined, `Forgot ${c.name}`) }, 'Delete'))));
      data.replaceChildren(table(['name', 'records', 'kept at', ''], rows, 'No checkpoints yet.'));
    },
  };
}

// ---- Chrome: header, account picker, navigation.

function route() {
  const parts = location.hash.replace(/^#\/?/, '').split('/').filter(Boolean).map(decodeURIComponent);
  if (parts[0] !== 'accounts' || !parts[1]) return { account: undefined };
  return { account: parts[1], view: parts[2] ?? 'overview', arg: parts[3], before: parts[4] === 'before' ? parts[5] : undefined };
}

function viewFor(r) {
  switch (r.view) {
    case 'sessions':
      return sessionsView(r.account);
    case 'requests':
      return requestsView(r.account);
    case 'traffic':
      return trafficView(r.account);
    case 'events':
      return eventsView(r.account);
    case 'faults':
      return faultsView();
    case 'checkpoints':
      return checkpointsView();
    case 'kinds':
      return kindView(r.account, r.arg, r.before);
    case 'records':
      return recordView(r.account, r.arg);
    default:
      return overviewView(r.account);
  }
}

async function refreshChrome() {
  const [health, clock, accounts] = await Promise.all([call('GET', 'health'), call('GET', 'clock'), call('GET', 'accounts')]);
  $('instance').textContent = `v${health.version} · ${health.store} store`;
  $('clock').hidden = false;
  $('clock-now').textContent = clock.now;
  $('clock-now').dateTime = clock.now;
  $('clock').title = clock.manual ? 'Deterministic mode: the clock moves only when advanced' : 'The system clock';
  $('advance').hidden = !clock.manual;
  state.accounts = accounts.accounts;
  const { account } = route();
  const select = $('account');
  const options = state.accounts.map((a) => h('option', { value: a.id }, `${a.name || '(unnamed)'}${a.default ? ' (default)' : ''} · ${a.id}`));
  if (select.options.length !== options.length || [...select.options].some((o, i) => o.value !== state.accounts[i].id)) select.replaceChildren(...options);
  if (account) select.value = account;
  if (!account) return;
  state.kinds = (await call('GET', `${accountPath(account)}/resources`)).resources;
  state.prefixes = new Set(state.kinds.map((k) => k.prefix));
  const r = route();
  const sessions = state.kinds.find((k) => k.name === 'tunnel_sessions');
  const nav = (href, label, active, extra) => h('li', {}, h('a', { href, class: active ? 'active' : '' }, label, extra));
  $('views').replaceChildren(
    nav(link(account), 'Overview', r.view === 'overview'),
    nav(link(account, 'sessions'), 'Tunnel sessions', r.view === 'sessions', h('span', { class: 'badge' }, sessions?.count ?? 0)),
    nav(link(account, 'requests'), 'Requests', r.view === 'requests'),
    nav(link(account, 'traffic'), 'Traffic', r.view === 'traffic'),
    nav(link(account, 'events'), 'Events', r.view === 'events'),
    nav(link(account, 'faults'), 'Fault rules', r.view === 'faults'),
    nav(link(account, 'checkpoints'), 'Checkpoints', r.view === 'checkpoints'),
  );
  $('kinds').replaceChildren(
    ...state.kinds.map((k) =>
      h('li', { class: k.count ? '' : 'zero' }, h('a', { href: link(account, 'kinds', k.name), class: r.view === 'kinds' && r.arg === k.name ? 'active' : '', title: `${k.label}s` }, h('span', { class: 'name' }, k.path), h('span', { class: 'badge' }, k.more ? `${k.count}+` : k.count))),
    ),
  );
}

async function refreshView() {
  const view = state.view;
  if (!view) return;
  await view.refresh();
}

async function refreshOnce() {
  try {
    await refreshChrome();
    await refreshView();
    $('live').textContent = `● live · updated ${new Date().toLocaleTimeString()}`;
    $('live').className = 'live';
  } catch (error) {
    if (error instanceof Refused) return signOut(`Signed out: ${error.message}`);
    $('live').textContent = `● ${error.message}`;
    $('live').className = 'live offline';
  }
}

/**
 * One poll: header, navigation and the view on screen. A call while one runs waits for it and
 * then for one more round, so what an action changed is always drawn.
 */
async function refreshAll() {
  if (!state.token) return;
  if (state.busy) {
    state.again = true;
    return state.busy;
  }
  state.busy = (async () => {
    do {
      state.again = false;
      await refreshOnce();
    } while (state.again && state.token);
  })();
  try {
    await state.busy;
  } finally {
    state.busy = undefined;
  }
}

async function show() {
  const r = route();
  if (!r.account) {
    const first = state.accounts.find((a) => a.default) ?? state.accounts[0];
    if (first) location.replace(link(first.id));
    else $('content').replaceChildren(h('p', { class: 'empty' }, 'No accounts yet.'));
    return;
  }
  state.view = viewFor(r);
  const content = $('content');
  content.replaceChildren();
  state.view.mount(content);
  document.title = `${state.view.title} · Burrow inspector`;
  await refreshAll();
}

function schedule() {
  clearTimeout(state.timer);
  state.timer = setTimeout(async () => {
    if (!document.hidden) await refreshAll();
    if (state.token) schedule();
  }, POLL_MS);
}

async function enter() {
  $('signin-view').hidden = true;
  $('app').hidden = false;
  for (const id of ['sign-out', 'snapshot', 'live']) $(id).hidden = false;
  state.accounts = (await call('GET', 'accounts')).accounts;
  await show();
  schedule();
}

function signOut(message = '') {
  state.token = null;
  state.view = undefined;
  clearTimeout(state.timer);
  sessionStorage.removeItem(TOKEN_KEY);
  $('app').hidden = true;
  for (const id of ['sign-out', 'snapshot', 'live', 'clock']) $(id).hidden = true;
  $('instance').textContent = '';
  $('signin-view').hidden = false;
  $('signin-error').textContent = message;
  $('token').focus();
}

async function downloadSnapshot() {
  const snapshot = await call('GET', 'snapshot');
  const url = URL.createObjectURL(new Blob([JSON.stringify(snapshot, null, 2)], { type: 'application/json' }));
  const a = h('a', { href: url, download: `burrow-snapshot-${snapshot.exported_at.replace(/:/g, '-')}.json` });
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 60_000);
}

function wire() {
  $('signin').addEventListener('submit', async (event) => {
    event.preventDefault();
    state.token = $('token').value.trim();
    $('signin-error').textContent = '';
    try {
      await call('GET', 'accounts');
    } catch (error) {
      state.token = null;
      $('signin-error').textContent = error instanceof Refused ? `Refused: ${error.message}` : `Burrow did not answer: ${error.message}`;
      return;
    }
    sessionStorage.setItem(TOKEN_KEY, state.token);
    $('token').value = '';
    await act(enter);
  });
  $('sign-out').addEventListener('click', () => signOut());
  $('snapshot').addEventListener('click', () => act(downloadSnapshot));
  $('advance').addEventListener('submit', (event) => {
    event.preventDefault();
    act(async () => {
      const clock = await call('POST', 'clock', { advance_seconds: Number($('advance-seconds').value) });
      $('clock-now').textContent = clock.now;
      toast(`Clock advanced to ${clock.now}`);
      await refreshAll();
    });
  });
  $('account').addEventListener('change', () => (location.hash = link($('account').value)));
  addEventListener('hashchange', () => state.token && act(show));
  document.addEventListener('visibilitychange', () => !document.hidden && state.token && act(refreshAll));
}

/**
 * Opened from the sign-in link the server printed (`/_burrow/?token=CODE`): the one-time code is
 * taken out of the address at once, then exchanged for the operator token, kept as if typed in.
 */
async function signInWithLink(code) {
  history.replaceState(null, '', `${location.pathname}${location.hash}`);
  const res = await fetch('sign-in', { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ code }), cache: 'no-store' });
  const data = await res.json().catch(() => undefined);
  if (!res.ok || typeof data?.operator_token !== 'string') return signOut(`Sign-in link refused: ${data?.msg ?? `HTTP ${res.status}`}`);
  state.token = data.operator_token;
  sessionStorage.setItem(TOKEN_KEY, state.token);
  await act(enter);
}

wire();
const linkCode = new URLSearchParams(location.search).get('token');
if (linkCode) act(() => signInWithLink(linkCode));
else if (state.token) act(enter);
else signOut();
