// memoryd dashboard behaviour. Loaded as a file (the page's CSP allows no inline script).
// Charts: each <canvas data-chart="ID"> is drawn from the JSON in <script type="application/json" id="ID">.
// Dialogs: a link with data-dialog="ID" opens <dialog id="ID"> as a modal; without JS it
// navigates to a URL that renders the dialog already open.
(function () {
  "use strict";

  var PALETTE = ["#4f46e5", "#0d9488", "#d97706", "#db2777", "#0284c7", "#7c3aed", "#65a30d",
                 "#ea580c", "#475569", "#0891b2", "#be123c", "#a16207"];

  function drawCharts(root) {
    if (typeof window.Chart === "undefined") { return; }
    var canvases = root.querySelectorAll("canvas[data-chart]");
    for (var i = 0; i < canvases.length; i++) {
      var canvas = canvases[i];
      if (canvas.dataset.drawn) { continue; }
      var source = document.getElementById(canvas.dataset.chart);
      if (!source) { continue; }
      var spec = JSON.parse(source.textContent);
      new window.Chart(canvas, config(spec));
      canvas.dataset.drawn = "1";
    }
  }

  function config(spec) {
    var round = spec.type === "doughnut";
    var horizontal = spec.indexAxis === "y";
    var datasets = spec.datasets.map(function (ds, n) {
      var color = PALETTE[n % PALETTE.length];
      var out = Object.assign({}, ds);
      if (round) {
        out.backgroundColor = spec.labels.map(function (_, k) { return PALETTE[k % PALETTE.length]; });
        out.borderColor = "#fff";
        out.borderWidth = 2;
      } else if ((ds.type || spec.type) === "line") {
        out.borderColor = spec.datasets.length > 1 ? "#0f172a" : color;
        out.backgroundColor = "rgba(79, 70, 229, 0.08)";
        out.borderWidth = 2;
        out.pointRadius = 0;
        out.tension = 0.25;
        out.fill = spec.datasets.length === 1;
      } else {
        out.backgroundColor = n === 1 ? "#fca5a5" : color;
        out.borderRadius = 4;
        out.maxBarThickness = horizontal ? 22 : 42;
      }
      return out;
    });
    var scales = {};
    if (!round) {
      var stacked = spec.datasets.some(function (ds) { return ds.stack; });
      var category = { stacked: stacked, grid: { display: false }, ticks: { color: "#334155", maxRotation: 0, autoSkip: !horizontal } };
      var value = { stacked: stacked, beginAtZero: true, grid: { color: "#f1f5f9" }, ticks: { color: "#64748b", precision: 0 } };
      scales.x = horizontal ? value : category;
      scales.y = horizontal ? category : value;
      if (spec.datasets.some(function (ds) { return ds.yAxisID === "y2"; })) {
        scales.y2 = { position: "right", beginAtZero: true, grid: { display: false }, ticks: { color: "#0f172a", precision: 0 } };
      }
    }
    return {
      type: spec.type,
      data: { labels: spec.labels, datasets: datasets },
      options: {
        indexAxis: horizontal ? "y" : "x",
        responsive: true,
        maintainAspectRatio: false,
        animation: false,
        cutout: round ? "62%" : undefined,
        scales: scales,
        plugins: {
          legend: {
            display: round || spec.datasets.length > 1,
            position: round ? "right" : "top",
            labels: { boxWidth: 12, color: "#334155" }
          }
        }
      }
    };
  }

  function wireDialogs(root) {
    var openers = root.querySelectorAll("[data-dialog]");
    for (var i = 0; i < openers.length; i++) {
      openers[i].addEventListener("click", function (event) {
        var dialog = document.getElementById(event.currentTarget.dataset.dialog);
        if (!dialog || typeof dialog.showModal !== "function") { return; }
        event.preventDefault();
        if (dialog.open) { dialog.close(); }
        dialog.showModal();
      });
    }
    var closers = root.querySelectorAll("[data-close-dialog]");
    for (var j = 0; j < closers.length; j++) {
      closers[j].addEventListener("click", function (event) {
        var dialog = event.currentTarget.closest("dialog");
        if (dialog && dialog.open && dialog.matches(":modal")) {
          event.preventDefault();
          dialog.close();
        }
      });
    }
  }

  function init(root) {
    drawCharts(root);
    wireDialogs(root);
  }

  // Leave empty filters out of the URL htmx pushes, so links stay short and readable.
  function dropEmptyParameters(event) {
    var data = event.detail.formData;
    if (!data || event.detail.verb !== "get") { return; }
    Array.from(data.keys()).forEach(function (key) {
      if (data.getAll(key).every(function (v) { return v === ""; })) { data.delete(key); }
    });
  }

  document.addEventListener("htmx:configRequest", dropEmptyParameters);
  document.addEventListener("DOMContentLoaded", function () { init(document); });
  document.addEventListener("htmx:afterSettle", function (event) { init(event.target); });
})();
