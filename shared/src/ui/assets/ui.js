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

// The Apps page's rows: every `apps` event (one per change the server's shared watches see),
// and every `drift` event with `ui --drift`, refetches this page's table (`part=rows`: counts
// and rows) with this page's filters and paging.
(function () {
  const table = document.getElementById("apps");
  if (!table || !window.EventSource) return;
  // The cluster this page shows (`ui --context dev,uat`): its rows and its events, whichever
  // cluster another tab switched to since.
  const context = table.dataset.context ? "context=" + encodeURIComponent(table.dataset.context) : "";
  const refresh = swapper(table, function () {
    const search = window.location.search;
    return "/apps" + search + (search ? "&" : "?") + "part=rows" + (context ? "&" + context : "");
  });
  const events = new EventSource("/api/v1/events" + (context ? "?" + context : ""));
  events.addEventListener("apps", function (event) {
    const data = JSON.parse(event.data);
    if (String(data.revision) === table.dataset.revision) return;
    table.dataset.revision = String(data.revision);
    refresh();
  });
  // A new drift report (`ui --drift`): the drift column is in the rows.
  events.addEventListener("drift", refresh);
})();

// The App page's drift section, live: every `drift` event refetches it (`part=drift`).
(function () {
  const section = document.getElementById("drift");
  if (!section || !window.EventSource) return;
  const refresh = swapper(section, function () {
    return window.location.pathname + "?part=drift";
  });
  new EventSource("/api/v1/events").addEventListener("drift", refresh);
})();

// The Fleet page's matrix: every `fleet` event (the matrix changed) refetches the table
// (`part=rows`).
(function () {
  const table = document.getElementById("fleet");
  if (!table || !window.EventSource) return;
  const refresh = swapper(table, function () {
    return "/fleet?part=rows";
  });
  new EventSource("/api/v1/fleet/events").addEventListener("fleet", function (event) {
    const data = JSON.parse(event.data);
    if (data.revision === table.dataset.revision) return;
    table.dataset.revision = data.revision;
    refresh();
  });
})();
