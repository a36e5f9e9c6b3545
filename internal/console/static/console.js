// toolgate's console: reads /ui/api/… and the live feed /ui/api/events.
// Every value is written with textContent: nothing the gateway relays is
// ever read as HTML.
"use strict";

(function () {
  const token = new URLSearchParams(location.search).get("token");
  const withToken = (path) => (token ? path + "?token=" + encodeURIComponent(token) : path);
  const $ = (id) => document.getElementById(id);
  let selected = null;
  let entries = [];

  function el(tag, text, cls) {
    const e = document.createElement(tag);
    if (text !== undefined && text !== null) e.textContent = String(text);
    if (cls) e.className = cls;
    return e;
  }

  function row(cells) {
    const tr = el("tr");
    for (const c of cells) {
      const td = el("td");
      if (c instanceof Node) td.appendChild(c);
      else td.textContent = c === undefined || c === null ? "" : String(c);
      tr.appendChild(td);
    }
    return tr;
  }

  async function api(path) {
    const r = await fetch(withToken(path));
    if (!r.ok) throw new Error(path + ": " + r.status);
    return r.json();
  }

  function quirkLink(f) {
    const span = el("span", null, "tag fix");
    span.dataset.kind = f.kind;
    span.appendChild(el("span", f.kind + " ×" + f.n + (f.chunk ? " (first at chunk " + f.chunk + ")" : "") + " "));
    if (f.quirk) {
      const a = el("a", f.quirk, "quirk");
      a.href = withToken("quirks") + "#" + f.quirk.toLowerCase();
      span.appendChild(a);
    }
    return span;
  }

  function renderOverview(o) {
    $("version").textContent = o.version ? "version " + o.version : "";
    const dl = $("overview-list");
    dl.replaceChildren();
    const add = (k, v) => { dl.appendChild(el("dt", k)); dl.appendChild(el("dd", v)); };
    add("config", (o.config.file || "embedded default") + (o.config.at ? ", loaded " + new Date(o.config.at).toLocaleTimeString() : ""));
    if (o.config.last_reload_error) add("last reload", "failed: " + o.config.last_reload_error);
    add("upstream calls in flight", o.requests_in_flight);
    add("streams in flight", o.streams_in_flight);
    add("requests per second (last minute)", o.requests_per_second.toFixed(2));
    add("errors by status", (o.errors_by_status || []).map((c) => c.name + ": " + c.n).join(", ") || "none");
    add("gateway overhead p50 / p99", o.overhead_ms.p50.toFixed(2) + " / " + o.overhead_ms.p99.toFixed(2) + " ms");
    add("requests kept", o.requests_kept);
  }

  function renderStatus(s) {
    const ub = $("upstreams-body");
    ub.replaceChildren();
    for (const u of s.upstreams || []) {
      const health = u.cooling_until
        ? el("span", "cooling down until " + new Date(u.cooling_until).toLocaleTimeString(), "cooling")
        : el("span", "healthy", "healthy");
      const tr = row([u.name, u.protocol, u.host, health, u.in_flight, u.latency_ms ? u.latency_ms.toFixed(1) + " ms" : "",
        u.last_error ? u.last_error + " at " + new Date(u.last_error_at).toLocaleTimeString() : ""]);
      tr.dataset.upstream = u.name;
      ub.appendChild(tr);
    }
    const rb = $("routes-body");
    rb.replaceChildren();
    for (const r of s.routes || []) {
      const deps = r.deployments.map((d) => d.upstream + (r.deployments.length > 1 ? " (" + d.weight + ")" : "")).join(", ");
      rb.appendChild(row([r.name, r.model + (r.upstream_model ? " → " + r.upstream_model : ""), deps, (r.fallbacks || []).join(", "),
        r.repair, r.policy + ", tool calls " + r.tool_calls + ", arguments " + r.validate_arguments, r.reasoning, r.retries + ", cooldown " + r.cooldown]));
    }
    const kb = $("keys-body");
    kb.replaceChildren();
    for (const k of s.keys || []) {
      const limits = (k.limits || []).map((l) => l.name + " " + l.used + " / " + l.max).join(", ") || "none";
      kb.appendChild(row([k.name, (k.models || ["*"]).join(", "), limits]));
    }
  }

  function renderFixed(f) {
    const body = $("fixed-body");
    body.replaceChildren();
    const line = (title, items) => {
      const p = el("p");
      p.appendChild(el("strong", title + ": "));
      if (!items.length) p.appendChild(el("span", "none yet"));
      for (const i of items) p.appendChild(i);
      body.appendChild(p);
    };
    const tags = (cs) => cs.map((c) => el("span", c.name + " ×" + c.n, "tag"));
    line("repairs", tags(f.repairs));
    line("normalizations", f.normalizations.map(quirkLink));
    line("reasoning", tags(f.reasoning));
    line("completion policy", tags(f.completions));
    line("arguments rejected", f.invalid_arguments ? [el("span", f.invalid_arguments, "tag")] : []);
  }

  function requestRow(e) {
    const fixedCell = el("span");
    for (const r of e.repairs || []) fixedCell.appendChild(el("span", r.name + " ×" + r.n, "tag"));
    for (const f of e.fixes || []) fixedCell.appendChild(el("span", f.kind + " ×" + f.n, "tag"));
    const tr = row([new Date(e.time).toLocaleTimeString(), e.key || "", e.model || "", e.route || "", e.upstream || "", e.status,
      el("span", e.outcome, e.outcome === "ok" ? "" : "bad"), e.duration_ms.toFixed(1) + " ms", e.overhead_ms.toFixed(2) + " ms", fixedCell]);
    tr.dataset.id = e.id;
    tr.addEventListener("click", () => inspect(e));
    return tr;
  }

  function renderRequests() {
    const body = $("requests-body");
    body.replaceChildren(...entries.map(requestRow));
    if (selected) {
      const tr = body.querySelector('tr[data-id="' + selected + '"]');
      if (tr) tr.classList.add("selected");
    }
  }

  function outline(title, turns) {
    const div = el("div");
    div.appendChild(el("h3", title));
    const ol = el("ol", null, "turns");
    let last = -1;
    for (const t of turns) {
      if (last >= 0 && t.index > last + 1) ol.appendChild(el("li", "…", "gap"));
      const li = el("li", t.role + (t.ids && t.ids.length ? " " + t.ids.join(", ") : "") + (t.text ? ": " + t.text : ""));
      li.value = t.index;
      ol.appendChild(li);
      last = t.index;
    }
    div.appendChild(ol);
    return div;
  }

  function inspect(e) {
    selected = e.id;
    renderRequests();
    $("inspector").classList.remove("hidden");
    $("inspector-title").textContent = e.method + " " + e.path + " · " + e.request_id;
    const body = $("inspector-body");
    body.replaceChildren();
    const section = (title) => { const s = el("section"); s.appendChild(el("h3", title)); body.appendChild(s); return s; };
    const rep = section("Repair");
    if (e.repair) {
      const ul = el("ul", null, "actions");
      for (const a of e.repair.actions) {
        const li = el("li", null, "action action-" + a.action);
        li.dataset.action = a.action;
        li.dataset.callId = a.call_id || "";
        const what = a.action === "sealed" ? "sealed the call " + a.call_id + " made in messages[" + a.index + "]"
          : a.action + " the tool message messages[" + a.index + "]" + (a.call_id ? " answering " + a.call_id : "");
        li.textContent = what;
        ul.appendChild(li);
      }
      if (e.repair.omitted) ul.appendChild(el("li", "and " + e.repair.omitted + " more"));
      rep.appendChild(ul);
      const o = el("div", null, "outline");
      o.appendChild(outline("before", e.repair.before));
      o.appendChild(outline("after", e.repair.after));
      rep.appendChild(o);
    } else {
      rep.appendChild(el("p", (e.repairs || []).map((r) => r.name + " ×" + r.n).join(", ") || "the transcript needed no repair"));
    }
    const norm = section("Normalizations of the answer");
    if ((e.fixes || []).length) for (const f of e.fixes) norm.appendChild(quirkLink(f));
    else norm.appendChild(el("p", "none"));
    const rs = section("Reasoning");
    rs.appendChild(el("p", "level " + (e.reasoning.level || "none") + "; restored " + e.reasoning.restored +
      ", missing " + e.reasoning.missed + ", placeholders " + e.reasoning.placeholders));
    const at = section("Attempts");
    const ol = el("ol", null, "attempts");
    for (const a of e.attempts || []) {
      ol.appendChild(el("li", a.upstream + " (route " + a.route + "): " + a.outcome + (a.verdict ? ", " + a.verdict : "") +
        (a.cooldown ? ", cooled down: " + a.cooldown : "")));
    }
    at.appendChild(ol);
  }

  async function refresh() {
    try {
      const [o, s, f, r] = await Promise.all([api("api/overview"), api("api/status"), api("api/fixed"), api("api/requests")]);
      renderOverview(o);
      renderStatus(s);
      renderFixed(f);
      entries = r;
      renderRequests();
    } catch (err) {
      $("live").textContent = "error: " + err.message;
      $("live").classList.add("off");
    }
  }

  let pending = null;
  function soon() {
    if (!pending) pending = setTimeout(() => { pending = null; refresh(); }, 1000);
  }

  function live() {
    const es = new EventSource(withToken("api/events"));
    es.addEventListener("open", () => { $("live").textContent = "live"; $("live").classList.remove("off"); });
    es.addEventListener("error", () => { $("live").textContent = "reconnecting…"; $("live").classList.add("off"); });
    es.addEventListener("request", (m) => {
      const e = JSON.parse(m.data);
      entries = [e].concat(entries.filter((x) => x.id !== e.id));
      renderRequests();
      soon();
    });
  }

  refresh();
  live();
  setInterval(refresh, 5000);
})();
