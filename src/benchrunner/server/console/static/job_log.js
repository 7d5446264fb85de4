// A job's log, followed while the page is open: the rest of the log from where the page's copy
// ends, as the server-sent events of .../logs/follow ("log" pieces, then one "end"). Without
// this script the page still shows the log, a page at a time.
(function () {
  "use strict";
  var log = document.getElementById("job-log");
  if (!log || log.dataset.complete === "true") {
    return;
  }
  var state = document.getElementById("log-state");
  var more = document.getElementById("log-more");
  var offset = Number(log.dataset.nextOffset);
  var RETRY_MS = 2000;

  function say(text) {
    if (state) {
      state.textContent = text;
    }
  }

  function nearBottom() {
    return log.scrollHeight - log.scrollTop - log.clientHeight < 32;
  }

  function onPiece(event) {
    var piece = JSON.parse(event.data);
    if (piece.offset < offset) {
      return; // already shown: every stream starts at our offset, so this is a stale one
    }
    var stick = nearBottom();
    log.appendChild(document.createTextNode(piece.content));
    offset = piece.next_offset;
    log.dataset.nextOffset = String(offset);
    if (stick) {
      log.scrollTop = log.scrollHeight;
    }
  }

  function follow() {
    var source = new EventSource(log.dataset.follow + "?offset=" + offset);
    source.addEventListener("log", onPiece);
    source.addEventListener("end", function () {
      source.close();
      log.dataset.complete = "true";
      say("End of log.");
    });
    source.addEventListener("error", function () {
      // EventSource would reconnect from the first offset: reconnect from ours instead.
      source.close();
      if (log.dataset.complete !== "true") {
        say("Connection lost; reconnecting…");
        window.setTimeout(follow, RETRY_MS);
      }
    });
    say("Following the log while the job runs…");
  }

  if (more) {
    more.hidden = true; // the stream brings the rest
  }
  follow();
})();
