// Draws each plot whose spec the page embeds as JSON (<script type="application/json" id="NAME-spec">)
// into the element with id NAME; a click on a point opens the run it stands for (customdata).
document.addEventListener("DOMContentLoaded", function () {
  document.querySelectorAll("script[type='application/json'][id$='-spec']").forEach(function (spec) {
    var target = document.getElementById(spec.id.slice(0, -5));
    var figure = JSON.parse(spec.textContent);
    Plotly.newPlot(target, figure.data, figure.layout, {responsive: true, displaylogo: false}).then(function () {
      target.dataset.points = String(figure.data[0].x.length);
      target.on("plotly_click", function (event) {
        var link = event.points[0].customdata;
        if (link) { window.location.href = link; }
      });
    });
  });
});
