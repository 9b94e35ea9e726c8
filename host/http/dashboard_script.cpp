// /ui/live.js: what keeps a dashboard page current without reloading it
// (dashboard.h). A page that follows running work says how often in
// <body data-refresh="SECONDS">; the script fetches the same address with
// ?live=1 (JSON: the page's live parts as HTML) and replaces each part
// whose HTML changed, leaving everything else — a form being typed into,
// the scroll position — as it was. An opened <details> (a backtrace, a
// long input) is opened again after its part is replaced, matched by its
// data-key. A file of this server, so the pages' Content-Security-Policy
// (scripts from 'self' only, nothing inline) allows it.
#include "http/dashboard.h"

namespace ductwork::http {
namespace {

const char* kLiveScript = R"js('use strict';
(function () {
  var body = document.body;
  var seconds = Number(body.getAttribute('data-refresh')) || 0;
  var shown = {};
  var refreshes = 0;
  function keyOf(details, index) {
    return details.getAttribute('data-key') || '#' + index;
  }
  function replace(part, html) {
    var open = {};
    part.querySelectorAll('details').forEach(function (d, i) {
      if (d.open) open[keyOf(d, i)] = true;
    });
    part.innerHTML = html;
    part.querySelectorAll('details').forEach(function (d, i) {
      if (open[keyOf(d, i)]) d.open = true;
    });
  }
  function schedule() {
    if (seconds > 0) window.setTimeout(refresh, seconds * 1000);
  }
  function refresh() {
    var url = new URL(window.location.href);
    url.searchParams.set('live', '1');
    window.fetch(url.toString(), {credentials: 'same-origin', headers: {Accept: 'application/json'}})
      .then(function (reply) {
        if (!reply.ok) throw new Error('HTTP ' + reply.status);
        return reply.json();
      })
      .then(function (doc) {
        Object.keys(doc.parts).forEach(function (name) {
          var part = document.querySelector('[data-live="' + name + '"]');
          if (!part || shown[name] === doc.parts[name]) return;
          if (shown[name] !== undefined || part.innerHTML !== doc.parts[name]) replace(part, doc.parts[name]);
          shown[name] = doc.parts[name];
        });
        document.title = doc.title;
        seconds = doc.refresh;
        body.setAttribute('data-refresh', String(seconds));
        body.setAttribute('data-refreshed', String(++refreshes));
      })
      .catch(function () { /* a server restarting: try again at the next beat */ })
      .then(schedule);
  }
  schedule();
})();
)js";

}  // namespace

Response Dashboard::live_script() const {
  Response r;
  r.content_type = "text/javascript; charset=utf-8";
  r.body = kLiveScript;
  return r;
}

}  // namespace ductwork::http
