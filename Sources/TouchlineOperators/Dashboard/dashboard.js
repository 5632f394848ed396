'use strict';
(() => {
  const keyStorage = 'touchline.apiKey';
  const $ = (selector) => document.querySelector(selector);
  const svgNS = 'http://www.w3.org/2000/svg';
  /// What the page has seen of each channel since it opened: push totals over time.
  const tracks = new Map();
  let channelID = null;
  let stream = null;
  /// The app the overview shows ('' for every app), and the last snapshot, shown again when it changes.
  let appFilter = '';
  let lastSnapshot = null;

  // MARK: Small DOM helpers

  function element(tag, attributes, ...children) {
    const node = document.createElement(tag);
    setAttributes(node, attributes);
    for (const child of children) if (child !== null && child !== undefined) node.append(child);
    return node;
  }

  function shape(tag, attributes, ...children) {
    const node = document.createElementNS(svgNS, tag);
    setAttributes(node, attributes);
    for (const child of children) if (child !== null && child !== undefined) node.append(child);
    return node;
  }

  function setAttributes(node, attributes) {
    for (const [name, value] of Object.entries(attributes || {})) {
      if (value !== null && value !== undefined) node.setAttribute(name, String(value));
    }
  }

  function title(text) { const node = document.createElementNS(svgNS, 'title'); node.textContent = text; return node; }

  function age(seconds) {
    if (seconds === null || seconds === undefined || !isFinite(seconds)) return '—';
    if (seconds < 1) return 'now';
    if (seconds < 90) return Math.round(seconds) + ' s ago';
    if (seconds < 5400) return Math.round(seconds / 60) + ' min ago';
    return Math.round(seconds / 3600) + ' h ago';
  }

  function clockText(state, now) {
    let seconds = Number(state.clockSeconds) || 0;
    if (state.clockRunning && typeof state.clockStartedAt === 'number') seconds = Math.max(0, Math.floor(now - state.clockStartedAt));
    const minutes = Math.floor(seconds / 60), rest = String(seconds % 60).padStart(2, '0');
    return minutes + ':' + rest;
  }

  // MARK: The model of a channel the views share

  function isMatch(channel) {
    const state = channel.contentState || {};
    return !!channel.attributes && typeof state.homeScore === 'number' && typeof state.awayScore === 'number';
  }

  /// A channel of a snapshot (its `GET /v1/channels/{id}/stats` figures) as the views use it.
  function model(channel, now) {
    const mix = channel.priorityMix || {};
    const errors = channel.errors || {};
    const events = channel.events || {};
    const p10 = mix['10'] || 0, p5 = mix['5'] || 0;
    // A channel of another app than `default` is named apart: `app` beside the provider's id.
    const app = channel.app || 'default';
    const key = channel.app ? channel.app + '/' + channel.id : channel.id;
    return {
      id: channel.id, app, key, label: channel.app ? channel.app + ' / ' + channel.id : channel.id, status: channel.status, summary: channel.summary, attributes: channel.attributes,
      state: channel.contentState || {}, p10, p5, pushes: p10 + p5, downgrades: channel.budgetDowngrades || 0,
      budget: channel.priorityBudgetRemaining, budgetPerHour: channel.priorityBudgetPerHour,
      deferrals: channel.rateLimitDeferrals || 0, coalesced: channel.coalesced || 0,
      events: events.received || 0, duplicates: events.duplicates || 0, lastSeq: events.lastSeq,
      errors: errors.total || 0,
      errorDetail: 'throttled ' + (errors.throttled || 0) + ', retried ' + (errors.retried || 0) + ', dropped ' + (errors.dropped || 0),
      inFlight: !!channel.pushInFlight, pending: !!channel.updatePending,
      perMinute: channel.pushesLastMinute, lastPushAge: channel.lastPushAgeSeconds,
      recentPushes: channel.recentPushes || [], track: observe(key, p10, p5, now),
      feed: channel.feed || {},
    };
  }

  /// Records a channel's push totals at `now`, so the chart can count pushes per minute over
  /// the time the page is open, beyond the gateway's short push history.
  function observe(id, p10, p5, now) {
    let track = tracks.get(id);
    if (!track) {
      track = { samples: [], seen: [] };
      tracks.set(id, track);
    }
    const last = track.samples[track.samples.length - 1];
    if (last && last.time >= now) return track;
    if (last && p10 + p5 > last.p10 + last.p5) track.seen.push({ time: now, p10: Math.max(0, p10 - last.p10), p5: Math.max(0, p5 - last.p5) });
    track.samples.push({ time: now, p10, p5 });
    while (track.samples.length > 1 && track.samples[0].time < now - 16 * 60) track.samples.shift();
    while (track.seen.length > 0 && track.seen[0].time < now - 16 * 60) track.seen.shift();
    return track;
  }

  /// Pushes per minute for each of the last 15 minutes, oldest first, by priority: in each
  /// minute, the larger of what the gateway's history lists and what the page saw happen.
  function perMinuteBuckets(channel, now) {
    const fromHistory = Array.from({ length: 15 }, () => ({ p10: 0, p5: 0 }));
    const seen = Array.from({ length: 15 }, () => ({ p10: 0, p5: 0 }));
    const index = (time) => 14 - Math.floor((now - time) / 60);
    for (const push of channel.recentPushes) {
      const i = index(push.sentAt);
      if (i >= 0 && i < 15) fromHistory[i][push.priority === 10 ? 'p10' : 'p5'] += 1;
    }
    for (const delta of channel.track.seen) {
      const i = index(delta.time);
      if (i >= 0 && i < 15) { seen[i].p10 += delta.p10; seen[i].p5 += delta.p5; }
    }
    return fromHistory.map((bucket, i) => {
      const history = bucket.p10 + bucket.p5, observed = seen[i].p10 + seen[i].p5;
      return history >= observed ? bucket : seen[i];
    });
  }

  // MARK: Overview

  function summary(channel, now) {
    const state = channel.state;
    if (isMatch({ attributes: channel.attributes, contentState: state })) {
      const attributes = channel.attributes;
      const phase = state.status === 'live' ? (state.period ? state.period + ' ' : '') + clockText(state, now)
        : state.status === 'break' ? (state.period || 'break') : state.status === 'finished' ? 'FT' : 'not started';
      return element('span', {}, attributes.homeCode + ' ',
                     element('span', { class: 'score' }, state.homeScore + ' – ' + state.awayScore),
                     ' ' + attributes.awayCode + ' · ' + phase);
    }
    return element('span', { class: 'state-summary' }, channel.summary || '—');
  }

  function mixBar(p10, p5, width, height) {
    const total = p10 + p5;
    const bar = shape('svg', { class: 'mix', width, height, viewBox: '0 0 ' + width + ' ' + height },
                      title('priority 10: ' + p10 + ', priority 5: ' + p5));
    if (total === 0) {
      bar.append(shape('rect', { x: 0, y: 0, width, height, class: 'axis', fill: 'none' }));
      return bar;
    }
    const split = Math.round(width * p10 / total);
    bar.append(shape('rect', { x: 0, y: 0, width: split, height, class: 'bar10' }),
               shape('rect', { x: split, y: 0, width: width - split, height, class: 'bar5' }));
    return bar;
  }

  /// The app filter offers the apps of the gateway, shown only when there is more than one.
  function renderAppFilter(stats) {
    const apps = (stats.apps || []).map((entry) => entry.app);
    const select = $('#app-filter');
    const offered = [...select.options].slice(1).map((option) => option.value);
    if (offered.join('|') !== apps.join('|')) {
      select.replaceChildren(element('option', { value: '' }, 'All apps'), ...apps.map((app) => element('option', { value: app }, app)));
      if (!apps.includes(appFilter)) appFilter = '';
      select.value = appFilter;
    }
    $('#apps').hidden = apps.length < 2;
  }

  function renderOverview(snapshot) {
    const now = snapshot.time;
    renderAppFilter(snapshot.stats || {});
    const channels = snapshot.channels.map((channel) => model(channel, now)).filter((channel) => appFilter === '' || channel.app === appFilter);
    $('#channels tbody').replaceChildren(...channels.map((channel) => element('tr', { 'data-channel': channel.key, 'data-app': channel.app },
      element('td', {}, element('a', { href: '/channels/' + encodeURIComponent(channel.key) }, channel.label)),
      element('td', {}, element('span', { class: 'status', 'data-status': channel.status }, channel.status),
        ...(channel.feed.state === 'stalled' ? [' ', element('span', { class: 'badge feed-stalled', title: 'no event since '
          + new Date(channel.feed.lastEventAt * 1000).toISOString() }, 'feed stalled')] : [])),
      element('td', { class: 'summary' }, summary(channel, now)),
      element('td', { class: 'num last-push' }, age(channel.lastPushAge)),
      element('td', { class: 'num rate' }, String(channel.perMinute ?? '—')),
      element('td', { class: 'mix' }, mixBar(channel.p10, channel.p5, 80, 10), ' ' + channel.p10 + ' / ' + channel.p5),
      element('td', { class: 'num budget' }, channel.budget === undefined ? '—' : channel.budget + ' / ' + channel.budgetPerHour),
      element('td', { class: 'num deferrals' }, String(channel.deferrals)),
      element('td', { class: 'num errors' + (channel.errors > 0 ? ' errors-nonzero' : ''), title: channel.errorDetail }, String(channel.errors)))));
    $('#no-channels').hidden = channels.length > 0;
    renderHealth(snapshot.stats || {}, channels);
  }

  function tile(label, value, detail, level) {
    return element('div', { class: 'tile', 'data-level': level },
                   element('div', { class: 'label' }, label), element('div', { class: 'value' }, String(value)),
                   detail ? element('div', { class: 'detail' }, detail) : null);
  }

  /// A pool of APNs connections: ready or not, streams in flight against the server's limit.
  function poolTile(pool) {
    const connections = pool.connections || [];
    const inFlight = connections.reduce((total, connection) => total + (connection.inFlight || 0), 0);
    const limit = connections.reduce((total, connection) => total + (connection.maxConcurrentStreams || 0), 0);
    const backingOff = (pool.slots || []).filter((slot) => slot.state === 'backing_off');
    const detail = connections.length + ' connection' + (connections.length === 1 ? '' : 's') + ', ' + inFlight + ' in flight'
      + (limit ? ' of ' + limit : '') + (pool.waiting ? ', ' + pool.waiting + ' waiting' : '')
      + (backingOff.length ? '; backing off: ' + (backingOff[0].lastError || 'reconnecting') : '');
    const name = 'APNs ' + (pool.app && pool.app !== 'default' ? pool.app + ' ' : '') + pool.pool;
    return tile(name, pool.ready ? 'ready' : 'not ready', detail, pool.ready ? null : 'bad');
  }

  /// Development mode is shown in the header on every page: its pushes reach no phone.
  function renderMode(mode) {
    const pill = $('#apns-mode');
    if (!mode) return;
    pill.hidden = false;
    pill.dataset.mode = mode;
    pill.textContent = mode === 'mock' ? 'APNs: mock (development mode)' : 'APNs: apple';
  }

  function renderHealth(stats, channels) {
    const byStatus = stats.channels || {};
    const statuses = Object.entries(byStatus).filter(([name, count]) => name !== 'total' && count > 0).map(([name, count]) => count + ' ' + name);
    const pushes = stats.pushes || {};
    const personal = stats.personal || {};
    const queues = stats.queues || {};
    const responses = (stats.apns || {}).responses || [];
    const refused = responses.filter((entry) => !/^2/.test(entry.status)).reduce((total, entry) => total + entry.count, 0);
    const budgets = channels.filter((channel) => channel.status === 'active' && channel.budget !== undefined).map((channel) => channel.budget);
    const lowest = budgets.length ? Math.min(...budgets) : null;
    const errors = (pushes.throttled || 0) + (pushes.retried || 0) + (pushes.dropped || 0);
    const deadLetters = Object.values(personal.deadLetters || {}).reduce((a, b) => a + b, 0);
    $('#health').replaceChildren(
      tile('Channels', byStatus.total ?? channels.length, statuses.join(', ')),
      tile('Pushes in the last minute', channels.reduce((total, channel) => total + (channel.perMinute || 0), 0),
           ((pushes.byPriority || {})['10'] || 0) + ' at priority 10, ' + ((pushes.byPriority || {})['5'] || 0) + ' at 5 in all'),
      tile('Lowest budget left', lowest ?? '—', 'priority-10 pushes, active channels', lowest === 0 ? 'warn' : null),
      tile('Broadcast errors', errors, (pushes.throttled || 0) + ' throttled, ' + (pushes.retried || 0) + ' retried, '
           + (pushes.dropped || 0) + ' dropped; ' + (pushes.rateLimitDeferrals || 0) + ' deferrals', errors > 0 ? 'bad' : null),
      ...(stats.connections || []).filter((pool) => appFilter === '' || (pool.app || 'default') === appFilter).map(poolTile),
      tile('Queues', (queues.broadcastPending || 0) + ' pending',
           Object.entries(queues).filter(([name]) => name !== 'broadcastPending').map(([name, depth]) => name + ' ' + depth).join(', ')),
      tile('Personal queue', (personal.targetsPending || 0) + ' targets',
           (personal.jobsRunning || 0) + ' jobs running, ' + (personal.inFlight || 0) + ' in flight, ' + deadLetters + ' dead letters',
           deadLetters > 0 ? 'warn' : null),
      tile('APNs refusals', refused, 'answers other than 2xx (or none), all pools', refused > 0 ? 'warn' : null));
  }

  // MARK: Channel page

  function renderActivity(channel, now) {
    const card = $('#activity');
    const state = channel.state;
    if (isMatch({ attributes: channel.attributes, contentState: state })) {
      const attributes = channel.attributes;
      const phase = state.status === 'live' ? element('span', { class: 'clock' }, (state.period ? state.period + ' · ' : '') + clockText(state, now))
        : element('span', {}, state.status === 'break' ? (state.period || 'Break') : state.status === 'finished' ? 'Full time'
          : 'Kick-off ' + new Date(attributes.kickoff * 1000).toLocaleString());
      const incident = state.lastIncident ? state.lastIncident.text || state.lastIncident.kind : '';
      card.replaceChildren(
        element('div', { class: 'top' }, element('span', {}, attributes.competition || ''), phase),
        element('div', { class: 'teams' },
                element('div', { class: 'team home' }, element('span', { class: 'code' }, attributes.homeCode), element('span', { class: 'name' }, attributes.homeName)),
                element('div', { class: 'score' }, state.homeScore + ' – ' + state.awayScore),
                element('div', { class: 'team away' }, element('span', { class: 'code' }, attributes.awayCode), element('span', { class: 'name' }, attributes.awayName))),
        element('div', { class: 'incident' }, incident));
      return;
    }
    const rows = Object.entries(state).map(([name, value]) =>
      element('tr', {}, element('td', {}, name), element('td', {}, typeof value === 'object' ? JSON.stringify(value) : String(value))));
    card.replaceChildren(rows.length ? element('table', { class: 'kv' }, element('tbody', {}, ...rows))
                                     : element('div', { class: 'incident' }, 'no content-state yet'));
  }

  function renderFacts(channel) {
    const facts = [
      ['Status', channel.status + (channel.pending ? ', update pending' : '') + (channel.inFlight ? ', push in flight' : '')],
      ['Last seq', channel.lastSeq ?? '—'], ['Events received', channel.events + ' (' + channel.duplicates + ' duplicates)'],
      ['Coalesced', channel.coalesced],
      ['Pushes', channel.pushes + ' (priority 10: ' + channel.p10 + ', priority 5: ' + channel.p5 + ')'],
      ['Pushes in the last minute', channel.perMinute ?? '—'], ['Last push', age(channel.lastPushAge)],
      ['Budget left', channel.budget === undefined ? '—' : channel.budget + ' of ' + channel.budgetPerHour + ' per hour'],
      ['Budget downgrades', channel.downgrades], ['Deferrals', channel.deferrals],
      ['Errors', channel.errors + ' (' + channel.errorDetail + ')'],
      ['Feed', (channel.feed.state || '—') + (channel.feed.gaps ? ', ' + channel.feed.gaps + ' seq gap(s)' : '')
        + (channel.feed.stalls ? ', stalled ' + channel.feed.stalls + ' time(s)' : '')],
    ];
    $('#channel-facts').replaceChildren(...facts.flatMap(([name, value]) => [element('dt', {}, name), element('dd', {}, String(value))]));
  }

  function renderRateChart(channel, now) {
    const buckets = perMinuteBuckets(channel, now);
    const highest = Math.max(1, ...buckets.map((bucket) => bucket.p10 + bucket.p5));
    const width = 300, height = 100, step = width / buckets.length;
    const parts = [shape('line', { x1: 0, y1: height, x2: width, y2: height, class: 'axis' })];
    buckets.forEach((bucket, index) => {
      const h10 = height * bucket.p10 / highest, h5 = height * bucket.p5 / highest;
      const label = (14 - index) + ' min ago: ' + bucket.p10 + ' at priority 10, ' + bucket.p5 + ' at priority 5';
      parts.push(shape('rect', { x: index * step + 2, y: height - h10, width: step - 4, height: h10, class: 'bar10' }, title(label)),
                 shape('rect', { x: index * step + 2, y: height - h10 - h5, width: step - 4, height: h5, class: 'bar5' }, title(label)));
    });
    parts.push(shape('text', { x: 0, y: 115 }, '15 min ago'), shape('text', { x: width, y: 115, 'text-anchor': 'end' }, 'now'),
               shape('text', { x: 2, y: 10 }, 'max ' + highest + '/min'));
    $('#rate-chart').replaceChildren(...parts);
  }

  function renderMixChart(channel) {
    const total = channel.p10 + channel.p5;
    const share = (count) => total ? ' (' + Math.round(100 * count / total) + '%)' : '';
    const bar = mixBar(channel.p10, channel.p5, 300, 28);
    bar.setAttribute('y', '10');
    $('#mix-chart').replaceChildren(bar,
      shape('rect', { x: 0, y: 58, width: 10, height: 10, class: 'bar10' }), shape('text', { x: 14, y: 67 }, 'priority 10: ' + channel.p10 + share(channel.p10)),
      shape('rect', { x: 0, y: 76, width: 10, height: 10, class: 'bar5' }), shape('text', { x: 14, y: 85 }, 'priority 5: ' + channel.p5 + share(channel.p5)),
      shape('text', { x: 0, y: 105 }, 'budget downgrades (critical sent at 5): ' + channel.downgrades));
  }

  function renderHistory(channel) {
    const rows = channel.recentPushes.slice().reverse().map((push) => element('tr', { 'data-outcome': push.outcome ?? 'in-flight' },
      element('td', {}, new Date(push.sentAt * 1000).toLocaleTimeString()), element('td', { class: 'num' }, String(push.sequence)),
      element('td', {}, String(push.priority) + (push.event === 'end' ? ' (end)' : '')), element('td', { class: 'num' }, String(push.bytes)),
      element('td', {}, push.outcome ?? 'in flight')));
    $('#history tbody').replaceChildren(...rows);
    $('#no-history').hidden = rows.length > 0;
  }

  function renderChannel(snapshot) {
    const now = snapshot.time;
    $('#channel-title').textContent = channelID;
    $('#channel-missing').hidden = !!snapshot.channel;
    if (!snapshot.channel) return;
    const channel = model(snapshot.channel, now);
    renderActivity(channel, now);
    renderFacts(channel);
    renderRateChart(channel, now);
    renderMixChart(channel);
    renderHistory(channel);
  }

  // MARK: The stream

  function setConnection(state, text) {
    const pill = $('#connection');
    pill.dataset.state = state;
    pill.textContent = text;
  }

  function render(snapshot) {
    renderMode(((snapshot.stats || {}).apns || {}).mode);
    lastSnapshot = snapshot;
    if (channelID === null) renderOverview(snapshot); else renderChannel(snapshot);
    $('#updated').textContent = 'updated ' + new Date(snapshot.time * 1000).toLocaleTimeString();
  }

  /// One Server-Sent Events message: its `event`, `data` (lines joined) and `retry`.
  function parseMessage(block) {
    const message = { event: 'message', data: [], retry: null };
    for (const line of block.split('\n')) {
      if (line === '' || line.startsWith(':')) continue;
      const colon = line.indexOf(':');
      const field = colon < 0 ? line : line.slice(0, colon);
      const value = colon < 0 ? '' : line.slice(colon + 1).replace(/^ /, '');
      if (field === 'event') message.event = value;
      else if (field === 'data') message.data.push(value);
      else if (field === 'retry' && /^\d+$/.test(value)) message.retry = Number(value);
    }
    message.data = message.data.join('\n');
    return message;
  }

  async function connect() {
    const controller = new AbortController();
    stream = controller;
    let retry = 2000;
    setConnection('idle', 'connecting');
    try {
      const path = '/v1/stream' + (channelID === null ? '' : '?channel=' + encodeURIComponent(channelID));
      const response = await fetch(path, { headers: { Authorization: 'Bearer ' + sessionStorage.getItem(keyStorage), Accept: 'text/event-stream' },
                                           cache: 'no-store', signal: controller.signal });
      if (response.status === 401 || response.status === 403) {
        const body = await response.json().catch(() => ({}));
        setConnection('refused', 'key refused');
        return signIn(body.message || 'The gateway refused this key.');
      }
      if (!response.ok) {
        const body = await response.json().catch(() => ({}));
        throw new Error(body.message || 'HTTP ' + response.status);
      }
      setConnection('live', 'live');
      const reader = response.body.getReader();
      const decoder = new TextDecoder();
      let buffer = '';
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        buffer += decoder.decode(value, { stream: true }).replace(/\r\n?/g, '\n');
        let end;
        while ((end = buffer.indexOf('\n\n')) >= 0) {
          const message = parseMessage(buffer.slice(0, end));
          buffer = buffer.slice(end + 2);
          if (message.retry !== null) retry = message.retry;
          if (message.event === 'snapshot' && message.data) render(JSON.parse(message.data));
        }
      }
      throw new Error('the gateway ended the stream');
    } catch (error) {
      if (controller.signal.aborted) return;
      setConnection('retrying', 'reconnecting (' + error.message + ')');
      setTimeout(() => { if (stream === controller) connect(); }, retry);
    }
  }

  // MARK: Key and start

  function signIn(message) {
    if (stream) stream.abort();
    stream = null;
    sessionStorage.removeItem(keyStorage);
    $('#overview').hidden = true;
    $('#channel-page').hidden = true;
    $('#forget-key').hidden = true;
    $('#sign-in').hidden = false;
    $('#key-error').textContent = message || '';
    $('#key-input').focus();
  }

  function open() {
    $('#sign-in').hidden = true;
    $('#forget-key').hidden = false;
    $('#overview').hidden = channelID !== null;
    $('#channel-page').hidden = channelID === null;
    connect();
  }

  function start() {
    const match = location.pathname.match(/^\/channels\/([^/]+)\/?$/);
    channelID = match ? decodeURIComponent(match[1]) : null;
    document.title = channelID === null ? 'Touchline' : channelID + ' · Touchline';
    $('#key-form').addEventListener('submit', (event) => {
      event.preventDefault();
      const key = $('#key-input').value.trim();
      if (!key) return;
      sessionStorage.setItem(keyStorage, key);
      $('#key-input').value = '';
      open();
    });
    $('#forget-key').addEventListener('click', () => { setConnection('idle', 'not connected'); signIn(''); });
    $('#app-filter').addEventListener('change', (event) => {
      appFilter = event.target.value;
      if (lastSnapshot && channelID === null) renderOverview(lastSnapshot);
    });
    if (sessionStorage.getItem(keyStorage)) open(); else signIn('');
  }

  start();
})();
