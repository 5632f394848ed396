/// The dashboard's script: signs in with an API key, reads `GET /v1/stream` (Server-Sent
/// Events over `fetch`, so the key goes in the `Authorization` header), and renders each
/// snapshot. Provider text is only ever set as text, never parsed as HTML.
enum DashboardScript {
    static let source = #"""
    'use strict';
    (() => {
      const keyStorage = 'touchline.apiKey';
      const $ = (selector) => document.querySelector(selector);
      const svgNS = 'http://www.w3.org/2000/svg';
      /// What the page has seen of each channel since it opened: push totals over time.
      const tracks = new Map();
      let channelID = null;
      let stream = null;

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

      function model(channel, now) {
        const counters = channel.counters || {};
        const track = observe(channel, now);
        const p10 = counters.immediatePushes || 0, p5 = counters.powerConsideratePushes || 0;
        const errors = { throttled: counters.throttled || 0, retried: counters.retries || 0, dropped: counters.dropped || 0,
                         'too large': counters.rejectedTooLarge || 0 };
        return {
          id: channel.id, status: channel.status, attributes: channel.attributes, state: channel.contentState || {},
          p10, p5, pushes: p10 + p5, downgrades: counters.budgetDowngrades || 0,
          budget: channel.priorityBudgetRemaining, deferrals: counters.rateLimitDeferrals || 0,
          coalesced: counters.coalesced || 0, events: counters.eventsApplied || 0, lastSeq: channel.lastSeq,
          errors: Object.values(errors).reduce((a, b) => a + b, 0),
          errorDetail: Object.entries(errors).map(([name, count]) => name + ' ' + count).join(', '),
          inFlight: !!channel.pushInFlight, brokenReason: channel.brokenReason,
          perMinute: pushesPerMinute(track, now), lastPushAt: track.lastPushAt, track,
        };
      }

      /// Records the channel's push totals at `now`; returns its track.
      function observe(channel, now) {
        const counters = channel.counters || {};
        const p10 = counters.immediatePushes || 0, p5 = counters.powerConsideratePushes || 0;
        let track = tracks.get(channel.id);
        if (!track) {
          track = { samples: [], pushes: [], lastPushAt: null };
          tracks.set(channel.id, track);
        }
        const last = track.samples[track.samples.length - 1];
        if (last && last.time >= now) return track;
        if (last && (p10 > last.p10 || p5 > last.p5)) {
          track.lastPushAt = now;
          if (p10 > last.p10) track.pushes.push({ time: now, priority: 10, count: p10 - last.p10 });
          if (p5 > last.p5) track.pushes.push({ time: now, priority: 5, count: p5 - last.p5 });
          if (track.pushes.length > 50) track.pushes.splice(0, track.pushes.length - 50);
        }
        track.samples.push({ time: now, p10, p5 });
        while (track.samples.length > 2 && track.samples[1].time < now - 16 * 60) track.samples.shift();
        return track;
      }

      /// Pushes seen in the last minute (only those since the page opened).
      function pushesPerMinute(track, now) {
        const samples = track.samples;
        if (samples.length < 2) return null;
        const latest = samples[samples.length - 1];
        const base = samples.find((sample) => sample.time >= now - 60) || samples[0];
        return latest.p10 + latest.p5 - base.p10 - base.p5;
      }

      /// Pushes per minute for each of the last 15 minutes, oldest first, by priority.
      function perMinuteBuckets(track, now) {
        const buckets = Array.from({ length: 15 }, () => ({ p10: 0, p5: 0 }));
        for (const push of track.pushes) {
          const index = 14 - Math.floor((now - push.time) / 60);
          if (index >= 0 && index < 15) buckets[index][push.priority === 10 ? 'p10' : 'p5'] += push.count;
        }
        return buckets;
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
        const pairs = Object.entries(state).slice(0, 3).map(([name, value]) => name + '=' + (typeof value === 'object' ? JSON.stringify(value) : value));
        return element('span', { class: 'state-summary' }, pairs.join(' ') || '—');
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

      function renderOverview(snapshot) {
        const now = snapshot.time;
        const channels = snapshot.channels.map((channel) => model(channel, now));
        const body = $('#channels tbody');
        body.replaceChildren(...channels.map((channel) => {
          const row = element('tr', { 'data-channel': channel.id },
            element('td', {}, element('a', { href: '/channels/' + encodeURIComponent(channel.id) }, channel.id)),
            element('td', {}, element('span', { class: 'status', 'data-status': channel.status }, channel.status)),
            element('td', { class: 'summary' }, summary(channel, now)),
            element('td', { class: 'num last-push' }, channel.lastPushAt === null ? (channel.pushes > 0 ? 'before this page' : '—') : age(now - channel.lastPushAt)),
            element('td', { class: 'num rate' }, channel.perMinute === null ? '—' : String(channel.perMinute)),
            element('td', { class: 'mix' }, mixBar(channel.p10, channel.p5, 80, 10), ' ' + channel.p10 + ' / ' + channel.p5),
            element('td', { class: 'num budget' }, channel.budget === undefined ? '—' : String(channel.budget)),
            element('td', { class: 'num deferrals' }, String(channel.deferrals)),
            element('td', { class: 'num errors' + (channel.errors > 0 ? ' errors-nonzero' : ''), title: channel.errorDetail }, String(channel.errors)));
          return row;
        }));
        $('#no-channels').hidden = channels.length > 0;
        renderHealth(channels);
      }

      function tile(label, value, detail, level) {
        return element('div', { class: 'tile', 'data-level': level },
                       element('div', { class: 'label' }, label), element('div', { class: 'value' }, String(value)),
                       detail ? element('div', { class: 'detail' }, detail) : null);
      }

      function renderHealth(channels) {
        const byStatus = {};
        for (const channel of channels) byStatus[channel.status] = (byStatus[channel.status] || 0) + 1;
        const sum = (name) => channels.reduce((total, channel) => total + channel[name], 0);
        const rates = channels.map((channel) => channel.perMinute || 0);
        const budgets = channels.filter((channel) => channel.status === 'active' && channel.budget !== undefined).map((channel) => channel.budget);
        $('#health').replaceChildren(
          tile('Channels', channels.length, Object.entries(byStatus).map(([status, count]) => count + ' ' + status).join(', ')),
          tile('Pushes in the last minute', rates.reduce((a, b) => a + b, 0), sum('pushes') + ' pushes in all'),
          tile('Broadcasts in flight', channels.filter((channel) => channel.inFlight).length, 'channels waiting for APNs'),
          tile('Lowest budget left', budgets.length ? Math.min(...budgets) : '—', 'priority-10 pushes, active channels',
               budgets.length && Math.min(...budgets) === 0 ? 'warn' : null),
          tile('Deferrals', sum('deferrals'), 'pushes that waited for the rate limit'),
          tile('Errors', sum('errors'), '429s, retries, drops, too large', sum('errors') > 0 ? 'bad' : null));
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
        card.replaceChildren(element('table', { class: 'kv' }, element('tbody', {}, ...rows)));
        if (rows.length === 0) card.replaceChildren(element('div', { class: 'incident' }, 'no content-state yet'));
      }

      function renderFacts(channel, now) {
        const facts = [
          ['Status', channel.status + (channel.brokenReason ? ' — ' + channel.brokenReason : '')],
          ['Last seq', channel.lastSeq], ['Events applied', channel.events], ['Coalesced', channel.coalesced],
          ['Pushes', channel.pushes + ' (priority 10: ' + channel.p10 + ', priority 5: ' + channel.p5 + ')'],
          ['Pushes per minute', channel.perMinute === null ? '—' : String(channel.perMinute)],
          ['Last push', channel.lastPushAt === null ? (channel.pushes > 0 ? 'before this page opened' : '—') : age(now - channel.lastPushAt)],
          ['Budget left', channel.budget === undefined ? '—' : channel.budget], ['Budget downgrades', channel.downgrades],
          ['Deferrals', channel.deferrals], ['Errors', channel.errors + ' (' + channel.errorDetail + ')'],
          ['Push in flight', channel.inFlight ? 'yes' : 'no'],
        ];
        $('#channel-facts').replaceChildren(...facts.flatMap(([name, value]) => [element('dt', {}, name), element('dd', {}, String(value))]));
      }

      function renderRateChart(channel, now) {
        const chart = $('#rate-chart');
        const buckets = perMinuteBuckets(channel.track, now);
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
        chart.replaceChildren(...parts);
      }

      function renderMixChart(channel) {
        const chart = $('#mix-chart');
        const total = channel.p10 + channel.p5;
        const share = (count) => total ? ' (' + Math.round(100 * count / total) + '%)' : '';
        const bar = mixBar(channel.p10, channel.p5, 300, 28);
        bar.setAttribute('y', '10');
        chart.replaceChildren(bar,
          shape('rect', { x: 0, y: 58, width: 10, height: 10, class: 'bar10' }), shape('text', { x: 14, y: 67 }, 'priority 10: ' + channel.p10 + share(channel.p10)),
          shape('rect', { x: 0, y: 76, width: 10, height: 10, class: 'bar5' }), shape('text', { x: 14, y: 85 }, 'priority 5: ' + channel.p5 + share(channel.p5)),
          shape('text', { x: 0, y: 105 }, 'budget downgrades (critical sent at 5): ' + channel.downgrades));
      }

      function renderHistory(channel) {
        const rows = channel.track.pushes.slice().reverse().map((push) => element('tr', {},
          element('td', {}, new Date(push.time * 1000).toLocaleTimeString()), element('td', { class: 'num' }, '—'),
          element('td', {}, String(push.priority)), element('td', { class: 'num' }, '—'),
          element('td', {}, push.count > 1 ? push.count + ' pushes' : 'sent')));
        $('#history tbody').replaceChildren(...rows);
        $('#no-history').hidden = rows.length > 0;
      }

      function renderChannel(snapshot) {
        const now = snapshot.time;
        for (const channel of snapshot.channels) if (channel.id !== channelID) observe(channel, now);
        $('#channel-title').textContent = channelID;
        $('#channel-missing').hidden = !!snapshot.channel;
        if (!snapshot.channel) return;
        const channel = model(snapshot.channel, now);
        renderActivity(channel, now);
        renderFacts(channel, now);
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
        if (sessionStorage.getItem(keyStorage)) open(); else signIn('');
      }

      start();
    })();

    """#
}
