// Live updates of a dashboard page: the server sends "change" (or "problem") over server-sent
// events when what the page shows changes (or cannot be read); the page then fetches its live
// part again and swaps it in. Without this script the pages are complete, just not live.
(function () {
  "use strict";
  var live = document.getElementById("live");
  if (!live || !window.EventSource || !window.fetch) { return; }
  var page = live.getAttribute("data-page");
  var updated = document.getElementById("updated");
  var clientProblem = document.getElementById("client-problem");
  var busy = false, again = false;

  function showClientProblem(text) {
    clientProblem.textContent = text || "";
    clientProblem.hidden = !text;
  }

  function refresh() {
    if (busy) { again = true; return; }
    busy = true;
    var url = page + (page.indexOf("?") >= 0 ? "&" : "?") + "fragment=1";
    fetch(url, { cache: "no-store", credentials: "same-origin" }).then(function (resp) {
      return resp.text().then(function (html) {
        // Keep the keyboard's place: the link that had the focus gets it back after the swap.
        var focused = document.activeElement;
        var href = focused && live.contains(focused) && focused.getAttribute("href");
        live.innerHTML = html;
        if (href) {
          var link = live.querySelector('a[href="' + href.replace(/["\\]/g, "\\$&") + '"]');
          if (link) { link.focus(); }
        }
        showClientProblem("");
        var now = new Date();
        updated.textContent = (resp.ok ? "Read from kcp at " : "Could not read kcp at ") + now.toISOString().substring(11, 19) + " UTC";
      });
    }).catch(function () {
      live.innerHTML = "";
      showClientProblem("The dashboard itself does not answer: is kubectl edge dashboard still running? Nothing is shown, as it may no longer be true; trying again.");
    }).then(function () {
      busy = false;
      if (again) { again = false; refresh(); }
    });
  }

  var events = new EventSource("/events?page=" + encodeURIComponent(page));
  events.addEventListener("change", refresh);
  events.addEventListener("problem", refresh);
  events.onerror = function () {
    // The browser reconnects by itself; meanwhile, say so, and check the server.
    refresh();
  };
  // While the page shows an error, read it again every 2 s, whatever the stream says.
  setInterval(function () {
    if (live.querySelector("[data-error]") || !clientProblem.hidden) { refresh(); }
  }, 2000);
})();
