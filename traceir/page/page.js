// The run page works without this script; with it, following a link to a
// call, a request or a warning (a mark on the timeline, a row's number)
// opens that row's details, and printing opens every details first.
(function () {
  function open() {
    var id = decodeURIComponent(location.hash.slice(1));
    var el = id && document.getElementById(id);
    if (!el) return;
    var d = el.tagName === "DETAILS" ? el : el.querySelector("details");
    if (d) d.open = true;
    var was = document.querySelector(".target");
    if (was) was.classList.remove("target");
    el.classList.add("target");
  }
  window.addEventListener("hashchange", open);
  open();
  var closed = [];
  window.addEventListener("beforeprint", function () {
    closed = Array.prototype.filter.call(document.querySelectorAll("details"), function (d) { return !d.open; });
    closed.forEach(function (d) { d.open = true; });
  });
  window.addEventListener("afterprint", function () {
    closed.forEach(function (d) { d.open = false; });
  });
  document.documentElement.classList.add("js");
})();
