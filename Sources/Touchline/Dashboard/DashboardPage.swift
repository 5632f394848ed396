/// The dashboard's one HTML page, for `/` and `/channels/{id}` alike: the script reads the path
/// and shows the overview or the channel. Everything in it is static; the script fills it in.
enum DashboardPage {
    static let html = #"""
    <!doctype html>
    <html lang="en">
    <head>
    <meta charset="utf-8">
    <meta name="viewport" content="width=device-width, initial-scale=1">
    <title>Touchline</title>
    <link rel="stylesheet" href="/dashboard.css">
    <script src="/dashboard.js" defer></script>
    </head>
    <body>
    <header class="bar">
      <a class="brand" href="/">Touchline</a>
      <span id="connection" class="pill" data-state="idle">not connected</span>
      <span id="apns-mode" class="pill" hidden></span>
      <span id="updated" class="muted"></span>
      <button id="forget-key" type="button" hidden>Forget key</button>
    </header>
    <main>
      <section id="sign-in" hidden>
        <h1>Operator dashboard</h1>
        <p>Enter an API key of this gateway. An admin key shows every channel; a provider key shows
        the channels of its prefix. The key stays in this tab only (session storage).</p>
        <form id="key-form" autocomplete="off">
          <input id="key-input" type="password" placeholder="API key" aria-label="API key" required>
          <button type="submit">Open</button>
        </form>
        <p id="key-error" class="error" role="alert"></p>
      </section>

      <section id="overview" hidden>
        <div id="health" class="tiles" aria-label="Queue and connection health"></div>
        <table id="channels" class="grid">
          <thead><tr>
            <th>Channel</th><th>Status</th><th>Score / state</th><th class="num">Last push</th>
            <th class="num">Pushes/min</th><th>Priority mix</th><th class="num">Budget left</th>
            <th class="num">Deferrals</th><th class="num">Errors</th>
          </tr></thead>
          <tbody></tbody>
        </table>
        <p id="no-channels" class="muted" hidden>No channels yet.</p>
      </section>

      <section id="channel-page" hidden>
        <p><a href="/">&larr; All channels</a></p>
        <h1 id="channel-title"></h1>
        <p id="channel-missing" class="error" hidden>This channel does not exist (or no longer).</p>
        <div class="channel-top">
          <div id="activity" class="activity" aria-label="Live Activity preview"></div>
          <dl id="channel-facts" class="facts"></dl>
        </div>
        <div class="charts">
          <figure><figcaption>Pushes per minute (last 15 minutes)</figcaption><svg id="rate-chart" role="img" viewBox="0 0 300 120"></svg></figure>
          <figure><figcaption>Priority mix</figcaption><svg id="mix-chart" role="img" viewBox="0 0 300 120"></svg></figure>
        </div>
        <h2>Recent pushes</h2>
        <table id="history" class="grid">
          <thead><tr><th>Sent</th><th class="num">Seq</th><th>Priority</th><th class="num">Bytes</th><th>Outcome</th></tr></thead>
          <tbody></tbody>
        </table>
        <p id="no-history" class="muted" hidden>No pushes seen yet.</p>
      </section>
    </main>
    </body>
    </html>

    """#
}
