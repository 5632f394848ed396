/// The dashboard's style sheet: system fonts only, light and dark schemes.
enum DashboardStyle {
    static let source = #"""
    :root { color-scheme: light dark; --bg: #f6f7f9; --panel: #fff; --text: #16181d; --muted: #68707d; --line: #dde1e6;
            --accent: #0a84ff; --good: #1f9d55; --warn: #c77c02; --bad: #d63b30; --p10: #d63b30; --p5: #0a84ff; }
    @media (prefers-color-scheme: dark) {
      :root { --bg: #111316; --panel: #1b1e23; --text: #eceef1; --muted: #9aa3ae; --line: #2c3139; }
    }
    * { box-sizing: border-box; }
    body { margin: 0; background: var(--bg); color: var(--text);
           font: 14px/1.4 system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", sans-serif; }
    a { color: var(--accent); text-decoration: none; }
    a:hover { text-decoration: underline; }
    main { padding: 16px 20px 40px; max-width: 1400px; margin: 0 auto; }
    h1 { font-size: 20px; margin: 4px 0 12px; }
    h2 { font-size: 16px; margin: 24px 0 8px; }
    .bar { display: flex; align-items: center; gap: 12px; padding: 10px 20px; background: var(--panel);
           border-bottom: 1px solid var(--line); }
    .brand { font-weight: 700; font-size: 16px; color: var(--text); }
    .muted { color: var(--muted); }
    .error { color: var(--bad); }
    .pill { border-radius: 999px; padding: 2px 10px; font-size: 12px; border: 1px solid var(--line); }
    .pill[data-state="live"] { color: var(--good); border-color: var(--good); }
    .pill[data-state="retrying"], .pill[data-state="idle"] { color: var(--warn); border-color: var(--warn); }
    .pill[data-state="refused"] { color: var(--bad); border-color: var(--bad); }
    .pill[data-mode="mock"] { color: var(--warn); border-color: var(--warn); font-weight: 600; }
    #forget-key { margin-left: auto; }
    button { font: inherit; padding: 4px 12px; border-radius: 6px; border: 1px solid var(--line); background: var(--panel);
             color: var(--text); cursor: pointer; }
    #key-form { display: flex; gap: 8px; max-width: 480px; }
    #key-form input { flex: 1; font: inherit; padding: 6px 10px; border-radius: 6px; border: 1px solid var(--line);
                      background: var(--panel); color: var(--text); }
    .tiles { display: grid; grid-template-columns: repeat(auto-fill, minmax(180px, 1fr)); gap: 10px; margin-bottom: 16px; }
    .tile { background: var(--panel); border: 1px solid var(--line); border-radius: 8px; padding: 8px 12px; }
    .tile .label { color: var(--muted); font-size: 12px; }
    .tile .value { font-size: 20px; font-weight: 600; font-variant-numeric: tabular-nums; }
    .tile .detail { color: var(--muted); font-size: 12px; }
    .tile[data-level="warn"] .value { color: var(--warn); }
    .tile[data-level="bad"] .value { color: var(--bad); }
    table.grid { width: 100%; border-collapse: collapse; background: var(--panel); border: 1px solid var(--line); border-radius: 8px; }
    .grid th, .grid td { padding: 6px 10px; border-bottom: 1px solid var(--line); text-align: left; white-space: nowrap; }
    .grid th { font-size: 12px; color: var(--muted); font-weight: 600; }
    .grid td.num, .grid th.num { text-align: right; font-variant-numeric: tabular-nums; }
    .grid tbody tr:hover { background: color-mix(in srgb, var(--accent) 6%, transparent); }
    .status { font-size: 12px; font-weight: 600; text-transform: uppercase; }
    .status[data-status="active"] { color: var(--good); }
    .status[data-status="ending"], .status[data-status="creating"] { color: var(--warn); }
    .status[data-status="broken"] { color: var(--bad); }
    .status[data-status="ended"], .status[data-status="deleted"] { color: var(--muted); }
    .score { font-weight: 700; font-variant-numeric: tabular-nums; }
    .errors-nonzero { color: var(--bad); font-weight: 600; }
    svg.mix { vertical-align: middle; }
    .channel-top { display: flex; flex-wrap: wrap; gap: 20px; align-items: flex-start; }
    .activity { width: 380px; border-radius: 22px; padding: 14px 18px; background: #1c1c1e; color: #fff;
                box-shadow: 0 6px 20px rgba(0,0,0,.25); }
    .activity .top { display: flex; justify-content: space-between; font-size: 12px; color: #b8b8be; }
    .activity .teams { display: grid; grid-template-columns: 1fr auto 1fr; align-items: center; margin: 10px 0 6px; }
    .activity .team { display: flex; flex-direction: column; }
    .activity .team.away { align-items: flex-end; text-align: right; }
    .activity .code { font-size: 22px; font-weight: 800; letter-spacing: .5px; }
    .activity .name { font-size: 12px; color: #b8b8be; }
    .activity .score { font-size: 34px; font-weight: 800; padding: 0 12px; }
    .activity .clock { color: #30d158; font-weight: 600; font-variant-numeric: tabular-nums; }
    .activity .incident { font-size: 13px; color: #e5e5ea; border-top: 1px solid #3a3a3c; padding-top: 6px; min-height: 1.4em; }
    .activity .kv { width: 100%; font-size: 13px; border-collapse: collapse; }
    .activity .kv td { padding: 2px 0; vertical-align: top; }
    .activity .kv td:first-child { color: #b8b8be; padding-right: 12px; }
    .facts { display: grid; grid-template-columns: auto auto; gap: 4px 16px; margin: 0; }
    .facts dt { color: var(--muted); }
    .facts dd { margin: 0; font-variant-numeric: tabular-nums; }
    .charts { display: flex; flex-wrap: wrap; gap: 20px; margin-top: 20px; }
    .charts figure { margin: 0; background: var(--panel); border: 1px solid var(--line); border-radius: 8px; padding: 8px 12px; width: 340px; }
    .charts figcaption { color: var(--muted); font-size: 12px; margin-bottom: 4px; }
    .charts svg { width: 100%; height: 130px; }
    .charts text { fill: var(--muted); font-size: 10px; }
    .bar10 { fill: var(--p10); }
    .bar5 { fill: var(--p5); }
    .axis { stroke: var(--line); }

    """#
}
