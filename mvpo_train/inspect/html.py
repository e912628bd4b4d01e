"""The self-contained inspect page (docs/inspect.md, "What the page shows").

One HTML file: the data as JSON in a ``<script type="application/json">`` block, the CSS and a
vanilla-JS renderer inline; no network access, no external asset. The page reads its view from
the URL fragment: ``#est=gigpo`` selects the estimator, ``#est=mvpo&minus=gigpo`` shows the
difference, ``&label=routing|region|value|none`` picks the text inside each cell and ``&row=K`` pins the
details of record row ``K``.
"""

from __future__ import annotations

import html
import json
import os
from pathlib import Path
from typing import Any

import numpy as np

from mvpo_train.inspect.data import ROUTING, InspectData, finite_or_none

__all__ = ["page_payload", "render_html", "write_html"]


def _codes(values: list[str]) -> tuple[list[int], list[str]]:
    table: dict[str, int] = {}
    return [table.setdefault(v, len(table)) for v in values], list(table)


def page_payload(data: InspectData) -> dict[str, Any]:
    """The JSON the page embeds: rows of the shown groups only, in the record's row order;
    ``row_ids[j]`` is the record row of page row ``j`` (docs/inspect.md)."""
    b = data.batch
    shown = set(data.groups)
    row_ids = [r for r in range(len(b)) if int(b.group[r]) in shown]
    pos = {r: j for j, r in enumerate(row_ids)}
    idx = np.asarray(row_ids, dtype=np.int64)
    act, act_t = _codes([b.action[r] for r in row_ids])
    sig, sig_t = _codes([b.signature[r] for r in row_ids])
    obs, obs_t = _codes([str(data.observation[r]) for r in row_ids])
    ms_all = [name for r in row_ids for name in b.milestones[r]]
    _, ms_t = _codes(ms_all)
    ms_code = {n: k for k, n in enumerate(ms_t)}
    groups = []
    for g, trajs in data.traj_rows().items():
        groups.append(
            {
                "group": g,
                "trajs": [
                    {
                        "traj": tr["traj"],
                        "success": tr["success"],
                        "ret": tr["return"],
                        "rows": [pos[r] for r in tr["rows"]],
                    }
                    for tr in trajs
                ],
            }
        )
    meta = dict(data.meta)
    return finite_or_none(
        {
            "title": f"mvpo-inspect · iteration {data.iteration}",
            "source": data.source,
            "iteration": data.iteration,
            "trained": data.trained,
            "meta": meta,
            "estimators": data.estimators,
            "routing_labels": list(ROUTING),
            "row_ids": row_ids,
            "adv": {n: data.adv[n][idx].tolist() for n in data.estimators},
            "diag": data.diag,
            "configs": data.configs,
            "potential": data.potential_diag,
            "rows": {
                "group": b.group[idx].tolist(),
                "traj": b.traj[idx].tolist(),
                "t": b.t[idx].tolist(),
                "reward": b.reward[idx].tolist(),
                "region": data.region[idx].tolist(),
                "phi": data.phi[idx].tolist(),
                "d": data.d[idx].tolist(),
                "routing": data.routing[idx].tolist(),
                "loop": data.loop[idx].astype(int).tolist(),
                "revisit": data.revisit[idx].astype(int).tolist(),
                "ms": [[ms_code[n] for n in b.milestones[r]] for r in row_ids],
                "action": act,
                "sig": sig,
                "obs": obs,
            },
            "tables": {"action": act_t, "sig": sig_t, "obs": obs_t, "ms": ms_t},
            "groups": groups,
        }
    )


def _json_for_script(obj: Any) -> str:
    """JSON safe inside ``<script>``: ``<``, ``>``, ``&`` and line separators escaped."""
    text = json.dumps(obj, allow_nan=False, ensure_ascii=False, separators=(",", ":"))
    for a, b in (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026")):
        text = text.replace(a, b)
    return text.replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")


def render_html(data: InspectData) -> str:
    """The page as one string."""
    payload = page_payload(data)
    return (
        _TEMPLATE.replace("__TITLE__", html.escape(payload["title"]))
        .replace("__CSS__", _CSS)
        .replace("__DATA__", _json_for_script(payload))
        .replace("__JS__", _JS)
    )


def write_html(data: InspectData, path: str | os.PathLike) -> Path:
    """Write the page to ``path`` (folders created); returns the path."""
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(render_html(data), encoding="utf-8")
    return p


_TEMPLATE = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>__TITLE__</title>
<style>__CSS__</style></head>
<body>
<header id="top"></header>
<main>
<section id="controls"></section>
<div id="layout"><div id="grids"></div><aside id="details"><p class="hint">Hover a cell for its
step; click to pin it.</p></aside></div>
<section id="diagnostics"></section>
</main>
<script type="application/json" id="mvpo-data">__DATA__</script>
<script>__JS__</script>
</body></html>
"""

_CSS = """
:root{--cell:16px;font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:#222}
body{margin:0;background:#fafafa}
header{padding:10px 16px;background:#263238;color:#eceff1}
header h1{font-size:18px;margin:0 0 4px 0}
header .sub{font-size:12px;opacity:.85}
main{padding:8px 16px}
#controls{display:flex;flex-wrap:wrap;gap:14px;align-items:center;padding:8px 0;font-size:13px}
#controls label{display:flex;gap:4px;align-items:center}
#legend{display:flex;align-items:center;gap:6px;font-size:12px}
#legend .bar{width:180px;height:12px;border:1px solid #999}
.key{display:inline-flex;align-items:center;gap:4px;margin-right:10px;font-size:12px}
.swatch{display:inline-block;width:14px;height:14px;border:1px solid #999;position:relative}
#layout{display:flex;gap:16px;align-items:flex-start}
#grids{flex:1 1 auto;overflow-x:auto;min-width:0}
#details{flex:0 0 340px;position:sticky;top:8px;background:#fff;border:1px solid #ddd;
 border-radius:6px;padding:10px;font-size:12px;max-height:95vh;overflow:auto}
#details pre{white-space:pre-wrap;background:#f4f4f4;padding:6px;border-radius:4px;
 max-height:220px;overflow:auto;font-size:11px}
#details table{border-collapse:collapse;width:100%}
#details td{padding:1px 4px;border-bottom:1px solid #eee;vertical-align:top}
#details tr.sel td{font-weight:bold;background:#fff8e1}
.hint{color:#777}
.group{background:#fff;border:1px solid #ddd;border-radius:6px;margin:0 0 12px 0;padding:6px 8px;
 width:max-content;min-width:calc(100% - 18px);box-sizing:border-box}
.group h2{font-size:14px;margin:2px 0 6px 0}
.group h2 .gstat{font-weight:normal;color:#555;font-size:12px}
.grow{display:flex;align-items:center;height:calc(var(--cell) + 2px)}
.rlabel{flex:0 0 118px;font-size:11px;white-space:nowrap;overflow:hidden;padding-right:6px}
.rlabel.won{color:#1b5e20}.rlabel.lost{color:#b71c1c}
.rlabel .zbadge{display:none;margin-left:4px;padding:0 3px;border-radius:3px;background:#616161;
 color:#fff;font-size:10px}
.grow.zrow .zbadge{display:inline}
.grow.zrow .rlabel{text-decoration:underline dotted}
.cell{flex:0 0 var(--cell);width:var(--cell);height:var(--cell);margin-right:1px;
 box-sizing:border-box;position:relative;font-size:9px;line-height:var(--cell);text-align:center;
 cursor:pointer;color:#263238;border:1px solid rgba(0,0,0,.08)}
.cell.zero{background-image:repeating-linear-gradient(45deg,#bdbdbd 0 1px,transparent 1px 4px)}
.cell.loop{box-shadow:inset 0 -3px 0 #ff6d00}
.cell .ms{position:absolute;top:-4px;right:-2px;font-size:10px;color:#6a1b9a;line-height:1}
.cell.hl{outline:2px solid #00bcd4;z-index:1}
.cell.pin{outline:2px solid #000;z-index:2}
.steps{display:flex;height:14px;font-size:9px;color:#777}
.steps span{flex:0 0 var(--cell);width:var(--cell);margin-right:1px;text-align:left}
#diagnostics h2{font-size:15px}
#diagnostics table{border-collapse:collapse;font-size:12px;background:#fff;margin-bottom:12px}
#diagnostics th,#diagnostics td{border:1px solid #ddd;padding:2px 6px;text-align:right;
 vertical-align:top}
#diagnostics th:first-child,#diagnostics td:first-child{text-align:left}
#diagnostics td.sub{text-align:left}
"""

_JS = r"""
(function(){
"use strict";
const D = JSON.parse(document.getElementById("mvpo-data").textContent);
const R = D.rows, T = D.tables, N = R.t.length;
const ROUTE_LETTER = ["A", "P", "S", "S*"];
const PAL = ["#1f77b4","#ff7f0e","#2ca02c","#d62728","#9467bd","#8c564b","#e377c2","#7f7f7f",
             "#bcbd22","#17becf"];
let view = {est: D.trained && D.estimators.includes(D.trained) ? D.trained : D.estimators[0],
            minus: "", label: "routing"};
let pinned = -1;
const cells = new Array(N);

function el(tag, attrs, text){
  const e = document.createElement(tag);
  if (attrs) for (const k in attrs) e.setAttribute(k, attrs[k]);
  if (text !== undefined && text !== null) e.textContent = text;
  return e;
}
function fmt(x, d){ if (x === null || x === undefined) return "n/a";
  if (typeof x === "number") return Number.isInteger(x) ? String(x) : x.toFixed(d === undefined ? 3 : d);
  if (typeof x === "boolean") return x ? "yes" : "no";
  return String(x); }
function readHash(){
  const h = new URLSearchParams(location.hash.replace(/^#/, ""));
  if (h.get("est") && D.estimators.includes(h.get("est"))) view.est = h.get("est");
  const m = h.get("minus");
  view.minus = (m && D.estimators.includes(m) && m !== view.est) ? m : "";
  const l = h.get("label");
  if (["routing","region","value","none"].includes(l)) view.label = l;
  const r = h.get("row");
  if (r !== null && r !== "") { const j = D.row_ids.indexOf(Number(r)); if (j >= 0) pinned = j; }
}
function writeHash(){
  const p = new URLSearchParams({est: view.est});
  if (view.minus) p.set("minus", view.minus);
  if (view.label !== "routing") p.set("label", view.label);
  if (pinned >= 0) p.set("row", String(D.row_ids[pinned]));
  try { history.replaceState(null, "", "#" + p.toString()); } catch (e) { /* opaque origin */ }
}
function values(){
  const a = D.adv[view.est];
  if (!view.minus) return a;
  const b = D.adv[view.minus];
  return a.map((x, i) => x - b[i]);
}
function mix(c1, c2, f){
  return "rgb(" + [0,1,2].map(k => Math.round(c1[k] + (c2[k] - c1[k]) * f)).join(",") + ")";
}
const WHITE = [247,247,247], POS = [33,102,172], NEG = [178,24,43];
function colour(v, vmax){
  if (v === 0) return "rgb(238,238,238)";
  const f = Math.min(1, Math.abs(v) / vmax);
  return mix(WHITE, v > 0 ? POS : NEG, 0.12 + 0.88 * f);
}

function header(){
  const h = document.getElementById("top");
  h.appendChild(el("h1", null, D.title));
  const m = D.meta || {};
  const bits = ["record: " + D.source];
  if (m.env_id) bits.push("env: " + m.env_id);
  if (m.abstraction) bits.push("abstraction: " + m.abstraction);
  if (D.trained) bits.push("trained with: " + D.trained);
  bits.push(N + " steps shown in " + D.groups.length + " rollout group(s)");
  h.appendChild(el("div", {class: "sub"}, bits.join("  ·  ")));
}

function controls(){
  const c = document.getElementById("controls");
  const mk = (label, id, opts) => {
    const l = el("label", null, label);
    const s = el("select", {id: id});
    for (const [v, t] of opts) s.appendChild(el("option", {value: v}, t));
    l.appendChild(s); c.appendChild(l); return s;
  };
  const se = mk("advantage of", "sel-est", D.estimators.map(n => [n, n + (n === D.trained ? " (trained)" : "")]));
  const sm = mk("minus", "sel-minus", [["", "(nothing)"]].concat(D.estimators.map(n => [n, n])));
  const sl = mk("cell text", "sel-label", [["routing","routing (A/P/S)"],["region","region"],["value","value"],["none","none"]]);
  se.onchange = () => { view.est = se.value; if (view.minus === view.est) view.minus = ""; update(); };
  sm.onchange = () => { view.minus = sm.value === view.est ? "" : sm.value; update(); };
  sl.onchange = () => { view.label = sl.value; update(); };
  const lg = el("div", {id: "legend"});
  lg.appendChild(el("span", {id: "vmin"}));
  lg.appendChild(el("span", {class: "bar", id: "bar"}));
  lg.appendChild(el("span", {id: "vmax"}));
  c.appendChild(lg);
  const keys = el("div");
  const key = (cls, txt, style) => { const k = el("span", {class: "key"});
    const s = el("span", {class: "swatch " + cls}); if (style) s.setAttribute("style", style);
    if (cls.includes("msk")) { s.appendChild(el("span", {class: "ms", style: "position:absolute;top:0;right:1px"}, "\u25c6")); }
    k.appendChild(s); k.appendChild(document.createTextNode(txt)); keys.appendChild(k); };
  key("cell zero", "exactly 0", "background-color:rgb(238,238,238)");
  key("cell loop", "in a loop", "background:#fff;box-shadow:inset 0 -3px 0 #ff6d00");
  key("msk", "milestone fired");
  keys.appendChild(el("span", {class: "key"}, "A = anchor group · P = potential repair · S = singleton (S* repaired)"));
  keys.appendChild(el("span", {class: "key"}, "0 credit = every step of the row is 0"));
  c.appendChild(keys);
}

function grids(){
  const root = document.getElementById("grids");
  for (const g of D.groups){
    const sec = el("div", {class: "group", "data-group": g.group});
    const won = g.trajs.filter(t => t.success).length;
    const h2 = el("h2", null, "rollout group " + g.group + " ");
    h2.appendChild(el("span", {class: "gstat"}, won + "/" + g.trajs.length + " won"));
    sec.appendChild(h2);
    let tmax = 0; for (const tr of g.trajs) tmax = Math.max(tmax, tr.rows.length);
    const st = el("div", {class: "steps"});
    st.appendChild(el("span", {style: "flex:0 0 118px;width:118px"}, "step"));
    for (let t = 0; t < tmax; t++) st.appendChild(el("span", null, t % 5 === 0 ? String(t) : ""));
    sec.appendChild(st);
    for (const tr of g.trajs){
      const row = el("div", {class: "grow", "data-traj": tr.traj});
      const lab = el("div", {class: "rlabel " + (tr.success ? "won" : "lost")},
        (tr.success ? "\u2713 won " : "\u2717 lost ") + "#" + tr.traj + " R=" + fmt(tr.ret, 2));
      lab.appendChild(el("span", {class: "zbadge"}, "0 credit"));
      row.appendChild(lab);
      for (const j of tr.rows){
        const c = el("div", {class: "cell", "data-row": j});
        if (R.loop[j]) c.classList.add("loop");
        if (R.ms[j].length) c.appendChild(el("span", {class: "ms"}, "\u25c6"));
        c.appendChild(el("span", {class: "lbl"}));
        c.onmouseenter = () => { highlight(j); if (pinned < 0) details(j); };
        c.onmouseleave = () => highlight(-1);
        c.onclick = () => { if (pinned >= 0 && cells[pinned]) cells[pinned].classList.remove("pin");
          pinned = (pinned === j) ? -1 : j; if (pinned >= 0) c.classList.add("pin"); details(j); writeHash(); };
        cells[j] = c; row.appendChild(c);
      }
      sec.appendChild(row);
    }
    root.appendChild(sec);
  }
}

let hlRegion = null;
function highlight(j){
  if (hlRegion) for (const k of hlRegion) cells[k].classList.remove("hl");
  hlRegion = null;
  if (j < 0) return;
  hlRegion = [];
  for (let k = 0; k < N; k++)
    if (cells[k] && R.group[k] === R.group[j] && R.region[k] === R.region[j]) { cells[k].classList.add("hl"); hlRegion.push(k); }
}

function details(j){
  const box = document.getElementById("details");
  box.textContent = "";
  box.appendChild(el("h3", null, "group " + R.group[j] + " · trajectory #" + R.traj[j] + " · step " + R.t[j]));
  box.appendChild(el("div", {class: "hint"}, "record row " + D.row_ids[j] + (pinned === j ? " (pinned: click again to release)" : "")));
  const tb = el("table");
  const add = (k, v, cls) => { const tr = el("tr", cls ? {class: cls} : null);
    tr.appendChild(el("td", null, k)); tr.appendChild(el("td", null, v)); tb.appendChild(tr); };
  add("action", T.action[R.action[j]]);
  add("reward", fmt(R.reward[j], 4));
  add("signature", T.sig[R.sig[j]]);
  add("region", "R" + R.region[j] + (R.loop[j] ? " (in a loop)" : "") + (R.revisit[j] ? " (revisit)" : ""));
  add("routing", D.routing_labels[R.routing[j]]);
  add("milestones", R.ms[j].length ? R.ms[j].map(k => T.ms[k]).join(", ") : "-");
  add("\u03a6 (phi)", fmt(R.phi[j], 4));
  add("D", fmt(R.d[j], 4));
  for (const n of D.estimators) add("A " + n, fmt(D.adv[n][j], 4), n === view.est ? "sel" : null);
  if (view.minus) add("A " + view.est + " \u2212 " + view.minus, fmt(D.adv[view.est][j] - D.adv[view.minus][j], 4), "sel");
  box.appendChild(tb);
  box.appendChild(el("h4", null, "observation"));
  box.appendChild(el("pre", null, T.obs[R.obs[j]]));
}

function update(){
  writeHash();
  document.getElementById("sel-est").value = view.est;
  document.getElementById("sel-minus").value = view.minus;
  document.getElementById("sel-label").value = view.label;
  const v = values();
  let vmax = 0; for (const x of v) vmax = Math.max(vmax, Math.abs(x));
  if (vmax === 0) vmax = 1;
  for (let j = 0; j < N; j++){
    const c = cells[j]; if (!c) continue;
    c.style.backgroundColor = colour(v[j], vmax);
    c.classList.toggle("zero", v[j] === 0);
    c.setAttribute("data-value", String(v[j]));
    const lbl = c.querySelector(".lbl");
    lbl.textContent = view.label === "routing" ? ROUTE_LETTER[R.routing[j]]
      : view.label === "region" ? String(R.region[j])
      : view.label === "value" ? (v[j] === 0 ? "0" : v[j].toFixed(1)) : "";
    c.style.borderColor = view.label === "region" ? PAL[R.region[j] % PAL.length] : "";
    c.title = (view.minus ? view.est + " \u2212 " + view.minus : view.est) + " = " + v[j];
  }
  for (const g of D.groups) for (const tr of g.trajs){
    const zero = tr.rows.every(j => v[j] === 0);
    const row = document.querySelector('.grow[data-traj="' + tr.traj + '"]');
    row.classList.toggle("zrow", zero);
    row.querySelector(".zbadge").textContent = view.minus ? "equal" : "0 credit";
  }
  document.getElementById("vmin").textContent = fmt(-vmax, 2);
  document.getElementById("vmax").textContent = "+" + fmt(vmax, 2);
  document.getElementById("bar").style.background =
    "linear-gradient(90deg," + colour(-vmax, vmax) + "," + colour(-1e-12, vmax) + " 49.5%,rgb(238,238,238) 49.5%,rgb(238,238,238) 50.5%," + colour(1e-12, vmax) + " 50.5%," + colour(vmax, vmax) + ")";
  document.body.setAttribute("data-est", view.est);
  document.body.setAttribute("data-minus", view.minus);
  if (pinned >= 0) { details(pinned); cells[pinned].classList.add("pin"); }
}

function diagnostics(){
  const s = document.getElementById("diagnostics");
  s.appendChild(el("h2", null, "Batch diagnostics (each estimator's own output on this batch)"));
  const keys = [];
  for (const n of D.estimators) for (const k in D.diag[n])
    if (!keys.includes(k) && (D.diag[n][k] === null || typeof D.diag[n][k] !== "object")) keys.push(k);
  const order = ["zero_credit_ratio","zero_adv_ratio","episode_zero_credit_ratio","grouping_ratio",
    "repaired_ratio","singleton_ratio","kappa","ema_success","success_rate","phi_success_mean","phi_failure_mean"];
  keys.sort((a, b) => { const ia = order.indexOf(a), ib = order.indexOf(b);
    return (ia < 0 ? 99 : ia) - (ib < 0 ? 99 : ib) || (a < b ? -1 : a > b ? 1 : 0); });
  const t = el("table", {id: "diag-table"});
  const hr = el("tr"); hr.appendChild(el("th", null, "diagnostic"));
  for (const n of D.estimators) hr.appendChild(el("th", null, n));
  t.appendChild(hr);
  for (const k of keys){
    const tr = el("tr"); tr.appendChild(el("td", null, k));
    for (const n of D.estimators) tr.appendChild(el("td", null, k in D.diag[n] ? fmt(D.diag[n][k], 4) : ""));
    t.appendChild(tr);
  }
  s.appendChild(t);
  for (const n of D.estimators) for (const k in D.diag[n]){
    const v = D.diag[n][k];
    if (v === null || typeof v !== "object") continue;
    s.appendChild(el("h3", null, n + ": " + k));
    const st = el("table");
    for (const kk in v){ const tr = el("tr"); tr.appendChild(el("td", null, kk));
      tr.appendChild(el("td", null, fmt(v[kk], 4))); st.appendChild(tr); }
    s.appendChild(st);
  }
  s.appendChild(el("h3", null, "configs"));
  const ct = el("table");
  for (const n of D.estimators){ const tr = el("tr"); tr.appendChild(el("td", null, n));
    tr.appendChild(el("td", {class: "sub"}, JSON.stringify(D.configs[n]))); ct.appendChild(tr); }
  const tr = el("tr"); tr.appendChild(el("td", null, "regions, \u03a6, D, routing from"));
  tr.appendChild(el("td", {class: "sub"}, "mvpo " + JSON.stringify(D.potential.config))); ct.appendChild(tr);
  s.appendChild(ct);
}

readHash();
header(); controls(); grids(); diagnostics(); update();
window.addEventListener("hashchange", () => { readHash(); update(); });
document.body.setAttribute("data-ready", "1");
})();
"""
