// Live rows: the page works without this script. With it, every `apps` event (one per change
// the server's shared watches see) refetches this page's rows (`part=rows`), with this page's filters and
// paging, and swaps them in: no reload, no client-side copy of the listing.
"use strict";
(function () {
  const rows = document.getElementById("rows");
  if (!rows || !window.EventSource) return;
  let pending = false;
  const refresh = async function () {
    if (pending) return;
    pending = true;
    try {
      const search = window.location.search;
      const url = "/apps" + search + (search ? "&" : "?") + "part=rows";
      const response = await fetch(url, { credentials: "same-origin" });
      if (response.ok) rows.innerHTML = await response.text();
    } finally {
      pending = false;
    }
  };
  const events = new EventSource("/api/v1/events");
  events.addEventListener("apps", function (event) {
    const data = JSON.parse(event.data);
    if (String(data.revision) === rows.dataset.revision) return;
    rows.dataset.revision = String(data.revision);
    refresh();
  });
})();
