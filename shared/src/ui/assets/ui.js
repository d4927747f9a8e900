// Live rows: the page works without this script. With it, every `apps` event (one per change
// the server's shared watches see), and every `drift` event with `ui --drift`, refetches this
// page's table (`part=rows`: counts and rows),
// with this page's filters and paging, and swaps it in: no reload, no client-side copy of the
// listing.
"use strict";
(function () {
  const table = document.getElementById("apps");
  if (!table || !window.EventSource) return;
  // One fetch at a time; an event that arrives during one asks for one more afterwards, so the
  // last change is never left out.
  let pending = false;
  let again = false;
  const refresh = async function () {
    if (pending) {
      again = true;
      return;
    }
    pending = true;
    try {
      do {
        again = false;
        const search = window.location.search;
        const url = "/apps" + search + (search ? "&" : "?") + "part=rows";
        const response = await fetch(url, { credentials: "same-origin" });
        if (response.ok) table.innerHTML = await response.text();
      } while (again);
    } finally {
      pending = false;
    }
  };
  const events = new EventSource("/api/v1/events");
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
  const events = new EventSource("/api/v1/events");
  events.addEventListener("drift", async function () {
    const response = await fetch(window.location.pathname + "?part=drift", { credentials: "same-origin" });
    if (response.ok) section.innerHTML = await response.text();
  });
})();
