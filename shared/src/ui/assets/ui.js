// Live pages: each works without this script. With it, a table (or section) is fetched again
// (`part=…`) and swapped in when the server's events say it changed: no reload, no client-side
// copy of the listing.
"use strict";

// Swaps `element`'s contents for what `url()` answers: one fetch at a time; a call that comes
// during one asks for one more afterwards, so the last change is never left out.
function swapper(element, url) {
  let pending = false;
  let again = false;
  return async function () {
    if (pending) {
      again = true;
      return;
    }
    pending = true;
    try {
      do {
        again = false;
        const response = await fetch(url(), { credentials: "same-origin" });
        if (response.ok) element.innerHTML = await response.text();
      } while (again);
    } finally {
      pending = false;
    }
  };
}

// An event stream that lives as long as its page is shown: closed when the page is hidden (a
// page left for another may be kept in the back-forward cache, and its open stream would hold
// one of the six connections a browser allows a server: after a few pages every request
// waited for one), and the page loaded again if it comes back from that cache.
function openEvents(url) {
  const source = new EventSource(url);
  window.addEventListener("pagehide", function () {
    source.close();
  });
  return source;
}
window.addEventListener("pageshow", function (event) {
  if (event.persisted) window.location.reload();
});

// A listing's table (the Apps page's, the Events page's): `refresh()` fetches its inside again
// (`part=rows`: counts and rows) with the page's filters and paging, for the cluster the page
// shows (`ui --context dev,uat`), whichever cluster another tab switched to since. Search as you
// type: the filters apply while they change, the server filtering and paging as for the form's
// own GET (the Filter button, without the script); the address follows, so the view can be
// shared or reloaded.
function liveListing(table, path) {
  const context = table.dataset.context ? "context=" + encodeURIComponent(table.dataset.context) : "";
  const refresh = swapper(table, function () {
    const search = window.location.search;
    return path + search + (search ? "&" : "?") + "part=rows" + (context ? "&" + context : "");
  });
  const form = document.getElementById("filters");
  let typing = null;
  function filter() {
    clearTimeout(typing);
    typing = setTimeout(function () {
      const query = new URLSearchParams(new FormData(form));
      for (const [name, value] of Array.from(query.entries())) if (value === "") query.delete(name);
      const search = query.toString();
      window.history.replaceState(null, "", path + (search ? "?" + search : ""));
      refresh();
    }, 200);
  }
  // `change` as well as `input`: a select chosen through automation (WebDriver) may say only
  // `change`; the two of one choice make one fetch.
  if (form) ["input", "change"].forEach(function (name) { form.addEventListener(name, filter); });
  return { refresh: refresh, context: context };
}

// Whether an event carries a revision the table has not shown (and notes it as shown).
function isNews(table, event) {
  const revision = String(JSON.parse(event.data).revision);
  if (revision === table.dataset.revision) return false;
  table.dataset.revision = revision;
  return true;
}

// The Apps page's rows: every `apps` event (one per change the server's shared watches see),
// and every `drift` event with `ui --drift`, refetches them.
(function () {
  const table = document.getElementById("apps");
  if (!table || !window.EventSource) return;
  const live = liveListing(table, "/apps");
  const events = openEvents("/api/v1/events" + (live.context ? "?" + live.context : ""));
  events.addEventListener("apps", function (event) {
    // The page came while the watches were listing: now they are done, the whole page.
    if (table.dataset.listing) return window.location.reload();
    if (isNews(table, event)) live.refresh();
  });
  // A new drift report (`ui --drift`): the drift column is in the rows.
  events.addEventListener("drift", live.refresh);
})();

// The Events page's rows: every `events` event (the cluster's events changed) refetches the
// first page; a later page stays as it was read, so that its rows do not move under the reader.
(function () {
  const table = document.getElementById("cluster-events");
  if (!table || !window.EventSource) return;
  const live = liveListing(table, "/events");
  const stream = openEvents("/api/v1/cluster/events/stream" + (live.context ? "?" + live.context : ""));
  stream.addEventListener("events", function (event) {
    if (table.dataset.listing) return window.location.reload();
    if (new URLSearchParams(window.location.search).has("continue")) return;
    if (isNews(table, event)) live.refresh();
  });
})();

// The sections a page marks `data-part` (the App page's graph and drift, the Graph page's
// figure): each is fetched again with `part=…` when what it shows changes. A graph listing
// `data-apps` (`namespace/name` …) is redrawn when one of those apps changes; one without, on
// every change; the drift section on every new drift report. Events and fetches name the page's
// cluster (`ui --context`), whichever cluster another tab chose since.
(function () {
  const sections = document.querySelectorAll("section[data-part]");
  if (sections.length === 0 || !window.EventSource) return;
  const context = document.querySelector("main").dataset.context;
  const withContext = context ? "context=" + encodeURIComponent(context) : "";
  const events = openEvents("/api/v1/events" + (withContext ? "?" + withContext : ""));
  sections.forEach(function (section) {
    const part = section.dataset.part;
    const refresh = swapper(section, function () {
      const search = window.location.search;
      return window.location.pathname + search + (search ? "&" : "?") + "part=" + part + (withContext ? "&" + withContext : "");
    });
    if (part === "drift") {
      events.addEventListener("drift", refresh);
      return;
    }
    const apps = section.dataset.apps ? section.dataset.apps.split(" ") : null;
    events.addEventListener("apps", function (event) {
      const data = JSON.parse(event.data);
      const touched = !apps || data.resync || data.changed.some(function (row) {
        return apps.includes(row.namespace + "/" + row.name);
      });
      if (touched) refresh();
    });
  });
})();

// The Fleet page's matrix: every `fleet` event (the matrix changed) refetches the table
// (`part=rows`).
(function () {
  const table = document.getElementById("fleet");
  if (!table || !window.EventSource) return;
  const refresh = swapper(table, function () {
    return "/fleet?part=rows";
  });
  openEvents("/api/v1/fleet/events").addEventListener("fleet", function (event) {
    if (isNews(table, event)) refresh();
  });
})();

// The theme toggle: applied at once, remembered by the server's cookie (the form's own GET,
// fetched instead of followed), no reload.
(function () {
  const form = document.querySelector("nav form.theme");
  if (!form) return;
  form.addEventListener("submit", function (event) {
    event.preventDefault();
    const theme = form.elements.theme.value;
    if (theme === "auto") delete document.documentElement.dataset.theme;
    else document.documentElement.dataset.theme = theme;
    fetch("/theme?theme=" + encodeURIComponent(theme), { credentials: "same-origin", redirect: "manual" });
  });
})();

// Arrow keys move through a graph's nodes and a table's rows (their links), beside Tab.
document.addEventListener("keydown", function (event) {
  if (!["ArrowDown", "ArrowUp", "ArrowRight", "ArrowLeft"].includes(event.key)) return;
  const here = document.activeElement;
  const group = here && here.closest("svg.graph, table#apps tbody, table#fleet tbody, table#cluster-events tbody");
  if (!group) return;
  const links = Array.from(group.querySelectorAll("a[href]"));
  const at = links.indexOf(here);
  if (at < 0) return;
  const step = event.key === "ArrowDown" || event.key === "ArrowRight" ? 1 : -1;
  const next = links[at + step];
  if (next) {
    next.focus();
    event.preventDefault();
  }
});

// The App page's log: each line the pod writes is added under the last ones (the newest 500
// kept), scrolled into view unless the reader scrolled up.
(function () {
  const log = document.querySelector("pre[data-stream]");
  if (!log || !window.EventSource) return;
  const KEPT = 500;
  const stream = openEvents(log.dataset.stream);
  stream.addEventListener("line", function (event) {
    const following = log.scrollTop + log.clientHeight >= log.scrollHeight - 4;
    log.appendChild(document.createTextNode(JSON.parse(event.data) + "\n"));
    while (log.childNodes.length > KEPT) log.removeChild(log.firstChild);
    if (following) log.scrollTop = log.scrollHeight;
  });
})();
