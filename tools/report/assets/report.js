// Draws the report model (the JSON in #report-data, computed by tessera's
// report library) as SVG charts and tables, then records in #report-status
// the figures read back from what was drawn, for headless checks.
(function () {
  'use strict';

  var SVGNS = 'http://www.w3.org/2000/svg';
  var GROUP_COLORS = {
    compute: '#3b7dd8', exchange: '#e39a2d', sync: '#c2413b',
    host: '#5a9e48', control: '#9aa3ae'
  };
  var CATEGORY_COLORS = ['#2f6fd0', '#7fb0ef', '#8e6cc8', '#e39a2d',
                         '#5a9e48', '#9aa3ae'];
  var CHART_WIDTH = 1160;
  var status = { charts: {} };
  var tooltip;

  // ---- small helpers -----------------------------------------------------

  function el(tag, attrs, children) {
    var node = document.createElement(tag);
    setAttrs(node, attrs);
    append(node, children);
    return node;
  }

  function svg(tag, attrs, children) {
    var node = document.createElementNS(SVGNS, tag);
    setAttrs(node, attrs);
    append(node, children);
    return node;
  }

  function setAttrs(node, attrs) {
    if (!attrs) return;
    Object.keys(attrs).forEach(function (k) {
      if (attrs[k] !== undefined && attrs[k] !== null)
        node.setAttribute(k, String(attrs[k]));
    });
  }

  function append(node, children) {
    if (children === undefined || children === null) return;
    if (!Array.isArray(children)) children = [children];
    children.forEach(function (c) {
      if (c === null || c === undefined) return;
      node.appendChild(typeof c === 'string' || typeof c === 'number'
                           ? document.createTextNode(String(c)) : c);
    });
  }

  function fmtInt(n) {
    return Math.round(n).toString().replace(/\B(?=(\d{3})+(?!\d))/g, ',');
  }

  function fmtBytes(n) {
    if (n < 1024) return fmtInt(n) + ' B';
    var units = ['KB', 'MB', 'GB', 'TB'];
    var v = n / 1024, u = 0;
    while (v >= 1024 && u + 1 < units.length) { v /= 1024; ++u; }
    return v.toFixed(1) + ' ' + units[u];
  }

  function fmtPct(p) { return p.toFixed(1) + '%'; }

  function fmtTime(cycles) {
    var hz = model.target.clockHz;
    if (!(hz > 0)) return '';
    var t = cycles / hz, unit = 's';
    if (t < 1e-6) { t *= 1e9; unit = 'ns'; }
    else if (t < 1e-3) { t *= 1e6; unit = 'us'; }
    else if (t < 1) { t *= 1e3; unit = 'ms'; }
    return t.toFixed(2) + ' ' + unit;
  }

  function tileName(tile) {
    var per = model.target.tilesPerIPU;
    return 'tile ' + tile + ' (IPU ' + Math.floor(tile / per) + ', tile ' +
           (tile % per) + ')';
  }

  function showTip(event, text) {
    tooltip.textContent = text;
    tooltip.style.display = 'block';
    tooltip.style.left = Math.min(event.clientX + 14,
                                  window.innerWidth - 370) + 'px';
    tooltip.style.top = (event.clientY + 14) + 'px';
  }

  function hideTip() { tooltip.style.display = 'none'; }

  function panel(id, title, note) {
    var s = el('section', { 'class': 'panel', id: id }, el('h2', null, title));
    if (note) s.appendChild(el('p', { 'class': 'note' }, note));
    document.getElementById('report').appendChild(s);
    return s;
  }

  function legend(entries) {
    return el('div', { 'class': 'legend' }, entries.map(function (e) {
      return el('span', null, [el('i', { style: 'background:' + e.color }),
                               e.label]);
    }));
  }

  // Y axis lines and labels for a chart of height h over [0, max].
  function yAxis(g, left, top, width, h, max, format) {
    for (var i = 0; i <= 4; ++i) {
      var y = top + h - (h * i) / 4;
      g.appendChild(svg('line', { 'class': i ? 'grid' : 'axis', x1: left,
                                  x2: left + width, y1: y, y2: y }));
      g.appendChild(svg('text', { x: left - 6, y: y + 4,
                                  'text-anchor': 'end' },
                        format((max * i) / 4)));
    }
  }

  // A table whose columns sort on click. columns: {key, label, num, fmt}.
  function dataTable(columns, rows, name) {
    var table = el('table', { 'class': 'data', 'data-table': name });
    var head = el('tr');
    var body = el('tbody');
    var sortKey = null, up = false;
    function fill() {
      body.textContent = '';
      rows.forEach(function (r) {
        body.appendChild(el('tr', null, columns.map(function (c) {
          var v = c.fmt ? c.fmt(r[c.key], r) : r[c.key];
          return el('td', { 'class': c.num ? 'num' : (c.wide ? 'name' : '') },
                    v);
        })));
      });
    }
    columns.forEach(function (c) {
      var th = el('th', { 'class': c.num ? 'num' : '' }, c.label);
      th.addEventListener('click', function () {
        up = sortKey === c.key ? !up : !c.num;
        sortKey = c.key;
        rows.sort(function (a, b) {
          var x = a[c.key], y = b[c.key];
          var d = typeof x === 'number' ? x - y : String(x).localeCompare(y);
          return up ? d : -d;
        });
        Array.prototype.forEach.call(head.children, function (h) {
          h.classList.remove('sorted', 'up');
        });
        th.classList.add('sorted');
        if (up) th.classList.add('up');
        fill();
      });
      head.appendChild(th);
    });
    table.appendChild(el('thead', null, head));
    table.appendChild(body);
    fill();
    return table;
  }

  function meter(fraction, text) {
    var w = Math.max(1, Math.round(80 * Math.min(1, fraction)));
    return el('span', null, [el('span', { 'class': 'meter',
                                          style: 'width:' + w + 'px' }),
                             text]);
  }

  // ---- summary ------------------------------------------------------------

  function renderSummary() {
    var t = model.target, s = model.summary;
    var p = panel('summary', 'Summary');
    var cards = [
      ['Target', t.numIPUs + ' x ' + t.arch,
       fmtInt(t.tilesPerIPU) + ' tiles per IPU, ' + fmtBytes(t.bytesPerTile) +
       ' per tile'],
      ['Memory used', fmtBytes(s.totalBytes),
       fmtPct(s.capacityBytes ? 100 * s.totalBytes / s.capacityBytes : 0) +
       ' of ' + fmtBytes(s.capacityBytes) + ', ' + fmtInt(s.tilesUsed) +
       ' of ' + fmtInt(t.numTiles) + ' tiles used'],
      ['Most used tile', s.maxTile === null ? 'none' : fmtBytes(s.maxTileBytes),
       s.maxTile === null ? 'no tile holds data' : tileName(s.maxTile)],
      ['Graph', fmtInt(s.variables) + ' variables',
       fmtInt(s.computeSets) + ' compute sets, ' + fmtInt(s.steps) + ' steps']
    ];
    if (s.hasExecution) {
      cards.push(['Elapsed cycles', fmtInt(s.elapsedCycles),
                  fmtTime(s.elapsedCycles) + ' over ' + fmtInt(s.runs) +
                  ' run(s); busiest IPU ' + fmtInt(s.maxCycles) + ' busy']);
    }
    p.appendChild(el('div', { 'class': 'cards' }, cards.map(function (c) {
      return el('div', { 'class': 'card' }, [
        el('div', { 'class': 'label' }, c[0]),
        el('div', { 'class': 'value' }, c[1]),
        el('div', { 'class': 'detail' }, c[2])]);
    })));
  }

  // ---- memory per tile ----------------------------------------------------

  // One chart per IPU: the categories stacked per tile, on a scale shared by
  // every IPU so that they compare at a glance.
  function tileChart(ipu, scaleMax, drawn) {
    var mem = model.memory, per = model.target.tilesPerIPU;
    var left = 70, top = 10, h = 170, width = CHART_WIDTH - left - 10;
    var chart = svg('svg', { 'class': 'chart tile-chart', 'data-ipu': ipu,
                             viewBox: '0 0 ' + CHART_WIDTH + ' ' + (h + 40) });
    var g = svg('g');
    chart.appendChild(g);
    yAxis(g, left, top, width, h, scaleMax, fmtBytes);
    var step = width / per;
    var base = new Array(per).fill(0);
    var plotted = 0, plottedMax = 0;
    mem.categories.forEach(function (c, ci) {
      var column = mem.perTile[c.key];
      var d = '';
      for (var i = 0; i < per; ++i) {
        var v = column[ipu * per + i];
        if (!v) { continue; }
        var y0 = top + h - (h * base[i]) / scaleMax;
        var y1 = top + h - (h * (base[i] + v)) / scaleMax;
        var x = left + i * step;
        d += 'M' + x.toFixed(2) + ' ' + y0.toFixed(2) + 'V' + y1.toFixed(2) +
             'h' + Math.max(step * 0.85, 0.6).toFixed(2) + 'V' +
             y0.toFixed(2) + 'Z';
        base[i] += v;
      }
      if (d) g.appendChild(svg('path', { d: d, fill: CATEGORY_COLORS[ci],
                                         'data-category': c.key }));
    });
    base.forEach(function (b) { plotted += b; plottedMax = Math.max(plottedMax, b); });
    var cap = model.target.bytesPerTile;
    if (cap <= scaleMax) {
      var yc = top + h - (h * cap) / scaleMax;
      g.appendChild(svg('line', { 'class': 'capacity', x1: left,
                                  x2: left + width, y1: yc, y2: yc }));
    }
    g.appendChild(svg('text', { x: left, y: top + h + 16 }, 'tile 0'));
    g.appendChild(svg('text', { x: left + width, y: top + h + 16,
                                'text-anchor': 'end' }, 'tile ' + (per - 1)));
    g.appendChild(svg('text', { x: left + width / 2, y: top + h + 30,
                                'text-anchor': 'middle' },
                      'IPU ' + ipu + ': ' + fmtBytes(plotted) + ' on ' +
                      fmtInt(base.filter(function (b) { return b > 0; }).length) +
                      ' tiles'));
    var hover = svg('rect', { x: left, y: top, width: width, height: h,
                              fill: 'transparent' });
    hover.addEventListener('mousemove', function (e) {
      var box = hover.getBoundingClientRect();
      var i = Math.min(per - 1, Math.floor(((e.clientX - box.left) / box.width) * per));
      var tile = ipu * per + i;
      var lines = [tileName(tile) + ': ' + fmtBytes(base[i]) + ' (' +
                   fmtPct(100 * base[i] / cap) + ' of the tile)'];
      mem.categories.forEach(function (c) {
        var v = mem.perTile[c.key][tile];
        if (v) lines.push(c.label + ': ' + fmtBytes(v));
      });
      showTip(e, lines.join('\n'));
    });
    hover.addEventListener('mouseleave', hideTip);
    g.appendChild(hover);
    chart.setAttribute('data-tiles', per);
    chart.setAttribute('data-bytes', plotted);
    drawn.tiles += per;
    drawn.bytes += plotted;
    drawn.maxBytes = Math.max(drawn.maxBytes, plottedMax);
    drawn.ipus += 1;
    return chart;
  }

  function renderTileMemory() {
    var mem = model.memory;
    var p = panel('tile-memory', 'Memory per tile',
                  'Bytes on each tile by category; the dashed line is a ' +
                  'tile\'s capacity (drawn when the scale reaches it). ' +
                  'Hover a chart for a tile\'s breakdown.');
    p.appendChild(legend(mem.categories.map(function (c, i) {
      return { color: CATEGORY_COLORS[i], label: c.label };
    })));
    var scaleMax = 1;
    mem.perIpu.forEach(function (i) { scaleMax = Math.max(scaleMax, i.maxTileBytes); });
    if (scaleMax > 0.6 * model.target.bytesPerTile)
      scaleMax = Math.max(scaleMax, model.target.bytesPerTile);
    scaleMax *= 1.05;
    var drawn = { ipus: 0, tiles: 0, bytes: 0, maxBytes: 0 };
    mem.perIpu.forEach(function (i) {
      p.appendChild(el('h3', null, 'IPU ' + i.ipu + ' - ' + fmtBytes(i.bytes) +
                       ', most on ' + tileName(i.maxTile) + ' (' +
                       fmtBytes(i.maxTileBytes) + ')'));
      p.appendChild(tileChart(i.ipu, scaleMax, drawn));
    });
    p.appendChild(el('h3', null, 'Worst tiles'));
    var rows = mem.worstTiles.map(function (w) {
      var r = { tile: w.tile, ipu: w.ipu, tileOnIpu: w.tileOnIpu,
                bytes: w.bytes, percent: w.percentOfTile };
      mem.categories.forEach(function (c) { r[c.key] = w.categories[c.key]; });
      return r;
    });
    var cols = [
      { key: 'tile', label: 'Tile', num: true },
      { key: 'ipu', label: 'IPU', num: true },
      { key: 'tileOnIpu', label: 'Tile on IPU', num: true },
      { key: 'bytes', label: 'Bytes', num: true, fmt: fmtInt },
      { key: 'percent', label: '% of tile', num: true,
        fmt: function (v) { return meter(v / 100, fmtPct(v)); } }
    ];
    mem.categories.forEach(function (c) {
      cols.push({ key: c.key, label: c.label, num: true, fmt: fmtInt });
    });
    p.appendChild(el('div', { 'class': 'scroll' },
                     dataTable(cols, rows, 'worst-tiles')));
    drawn.worstTiles = rows.length;
    status.charts.tileMemory = drawn;
  }

  // ---- memory by category and by variable -------------------------------

  function barChart(items, cls, format) {
    var left = 260, rowH = 22, width = CHART_WIDTH - left - 140;
    var max = 1;
    items.forEach(function (i) { max = Math.max(max, i.value); });
    var chart = svg('svg', { 'class': 'chart ' + cls,
                             viewBox: '0 0 ' + CHART_WIDTH + ' ' +
                                      (items.length * rowH + 6) });
    var total = 0;
    items.forEach(function (it, k) {
      var y = k * rowH + 3;
      var w = (width * it.value) / max;
      chart.appendChild(svg('text', { x: left - 8, y: y + 14,
                                      'text-anchor': 'end' },
                            it.label.length > 40 ? it.label.slice(0, 38) + '..'
                                                 : it.label));
      var bar = svg('rect', { 'class': 'bar', x: left, y: y, height: rowH - 6,
                              width: Math.max(w, it.value ? 1 : 0),
                              fill: it.color, 'data-value': it.value },
                    svg('title', null, it.label + ': ' + format(it.value)));
      chart.appendChild(bar);
      chart.appendChild(svg('text', { x: left + w + 6, y: y + 14 },
                            format(it.value)));
      total += it.value;
    });
    return { chart: chart, total: total };
  }

  function renderCategories() {
    var mem = model.memory;
    var p = panel('memory-categories', 'Memory by category',
                  'All tiles together: ' + fmtBytes(mem.total) + '.');
    var drawn = barChart(mem.categories.map(function (c, i) {
      return { label: c.label, value: c.bytes, color: CATEGORY_COLORS[i] };
    }), 'category-chart', fmtBytes);
    p.appendChild(drawn.chart);
    status.charts.categories = { bars: mem.categories.length,
                                 bytes: drawn.total };
  }

  function renderVariables() {
    var v = model.variables;
    var p = panel('memory-variables', 'Memory by variable',
                  fmtInt(v.count) + ' variables, ' + fmtBytes(v.totalBytes) +
                  ' in all' + (v.otherCount ? '; the ' + fmtInt(v.otherCount) +
                  ' smallest (' + fmtBytes(v.otherBytes) + ') are not listed'
                  : '') + '.');
    var top = v.rows.slice(0, 20);
    var drawn = barChart(top.map(function (r) {
      return { label: r.name, value: r.bytes,
               color: r.alwaysLive ? CATEGORY_COLORS[0] : CATEGORY_COLORS[1] };
    }), 'variable-chart', fmtBytes);
    p.appendChild(legend([{ color: CATEGORY_COLORS[0], label: 'always live' },
                          { color: CATEGORY_COLORS[1],
                            label: 'live over a range of steps' }]));
    p.appendChild(drawn.chart);
    var rows = v.rows.map(function (r) {
      return { name: r.name, type: r.type, shape: '[' + r.shape.join(',') + ']',
               bytes: r.bytes, tiles: r.tiles,
               live: r.alwaysLive ? 'always'
                                  : 'steps ' + r.liveBegin + '-' + r.liveEnd };
    });
    var table = dataTable([
      { key: 'name', label: 'Variable', wide: true },
      { key: 'type', label: 'Type' },
      { key: 'shape', label: 'Shape' },
      { key: 'bytes', label: 'Bytes', num: true, fmt: fmtInt },
      { key: 'tiles', label: 'Tiles', num: true },
      { key: 'live', label: 'Live' }], rows, 'variables');
    var filter = el('input', { 'class': 'filter', type: 'search',
                               placeholder: 'Filter variables by name' });
    filter.addEventListener('input', function () {
      var q = filter.value.toLowerCase();
      Array.prototype.forEach.call(table.tBodies[0].rows, function (tr) {
        tr.style.display =
            tr.cells[0].textContent.toLowerCase().indexOf(q) >= 0 ? '' : 'none';
      });
    });
    p.appendChild(filter);
    p.appendChild(el('div', { 'class': 'scroll' }, table));
    var listed = 0;
    v.rows.forEach(function (r) { listed += r.bytes; });
    status.charts.variables = { bars: top.length, rows: rows.length,
                                bytes: listed };
  }

  // ---- liveness -------------------------------------------------------------

  function renderLiveness() {
    var l = model.liveness, n = l.notAlwaysLive.length;
    var p = panel('liveness', 'Liveness over program steps',
                  'Bytes of variables live at each step of the compiled ' +
                  'program (all tiles): always-live variables and constants ' +
                  'below, variables live over a range of steps above.' +
                  (n ? ' Peak: ' + fmtBytes(l.peakBytes) + ' at step ' +
                       l.peakStep + '.' : ''));
    p.appendChild(legend([{ color: CATEGORY_COLORS[0], label: 'always live' },
                          { color: CATEGORY_COLORS[1],
                            label: 'not always live' }]));
    var left = 70, top = 10, h = 200, width = CHART_WIDTH - left - 10;
    var max = 1, i;
    for (i = 0; i < n; ++i) max = Math.max(max, l.alwaysLiveBytes + l.notAlwaysLive[i]);
    max *= 1.05;
    var chart = svg('svg', { 'class': 'chart liveness-chart',
                             viewBox: '0 0 ' + CHART_WIDTH + ' ' + (h + 36) });
    yAxis(chart, left, top, width, h, max, fmtBytes);
    var stepW = n ? width / n : width;
    var yBase = top + h - (h * l.alwaysLiveBytes) / max;
    chart.appendChild(svg('rect', { x: left, y: yBase, width: width,
                                    height: top + h - yBase,
                                    fill: CATEGORY_COLORS[0] }));
    var d = 'M' + left + ' ' + yBase.toFixed(2);
    var drawnPeak = 0;
    for (i = 0; i < n; ++i) {
      var y = top + h - (h * (l.alwaysLiveBytes + l.notAlwaysLive[i])) / max;
      d += 'H' + (left + i * stepW).toFixed(2) + 'V' + y.toFixed(2);
      drawnPeak = Math.max(drawnPeak, l.alwaysLiveBytes + l.notAlwaysLive[i]);
    }
    d += 'H' + (left + width) + 'V' + yBase.toFixed(2) + 'Z';
    chart.appendChild(svg('path', { d: d, fill: CATEGORY_COLORS[1] }));
    if (n) {
      var xp = left + (l.peakStep + 0.5) * stepW;
      chart.appendChild(svg('line', { 'class': 'marker', x1: xp, x2: xp,
                                      y1: top, y2: top + h }));
    }
    chart.appendChild(svg('text', { x: left, y: top + h + 16 }, 'step 0'));
    chart.appendChild(svg('text', { x: left + width, y: top + h + 16,
                                    'text-anchor': 'end' },
                          'step ' + Math.max(0, n - 1)));
    var hover = svg('rect', { x: left, y: top, width: width, height: h,
                              fill: 'transparent' });
    hover.addEventListener('mousemove', function (e) {
      if (!n) return;
      var box = hover.getBoundingClientRect();
      var s = Math.min(n - 1, Math.floor(((e.clientX - box.left) / box.width) * n));
      showTip(e, 'step ' + s + ': ' +
                     fmtBytes(l.alwaysLiveBytes + l.notAlwaysLive[s]) +
                     ' live (' + fmtBytes(l.notAlwaysLive[s]) +
                     ' not always live)');
    });
    hover.addEventListener('mouseleave', hideTip);
    chart.appendChild(hover);
    p.appendChild(chart);
    if (l.largestAtPeak.length) {
      p.appendChild(el('h3', null, 'Largest variables live at the peak'));
      p.appendChild(dataTable([
        { key: 'name', label: 'Variable', wide: true },
        { key: 'bytes', label: 'Bytes', num: true, fmt: fmtInt }],
        l.largestAtPeak.slice(), 'peak-variables'));
    }
    status.charts.liveness = { points: n, peakBytes: drawnPeak };
  }

  // ---- execution trace ----------------------------------------------------

  function traceLanes(tr, view) {
    var left = 70, laneH = 34, width = CHART_WIDTH - left - 10;
    var lanes = tr.lanes;
    var chart = svg('svg', { 'class': 'chart trace-chart',
                             viewBox: '0 0 ' + CHART_WIDTH + ' ' +
                                      (lanes.length * (laneH + 8) + 30) });
    var blocksG = [];
    lanes.forEach(function (lane, k) {
      var y = k * (laneH + 8) + 4;
      chart.appendChild(svg('text', { x: left - 8, y: y + laneH / 2 + 4,
                                      'text-anchor': 'end' }, 'IPU ' + lane.ipu));
      chart.appendChild(svg('rect', { x: left, y: y, width: width, height: laneH,
                                      fill: '#f6f8fb' }));
      var g = svg('g', { 'class': 'lane', 'data-ipu': lane.ipu });
      lane.blocks.forEach(function (b) {
        var group = tr.groups[b[2]];
        var r = svg('rect', { 'class': 'block', y: y + 2, height: laneH - 4,
                              fill: GROUP_COLORS[group], 'data-cycles': b[1],
                              'data-group': group, 'data-step': b[4] },
                    svg('title', null, tr.labels[b[3]] + '\nstep ' + b[4] +
                        ' (' + group + '): ' + fmtInt(b[1]) +
                        ' cycles from cycle ' + fmtInt(b[0])));
        r.__start = b[0];
        r.__cycles = b[1];
        g.appendChild(r);
      });
      chart.appendChild(g);
      blocksG.push(g);
    });
    var axisY = lanes.length * (laneH + 8) + 16;
    var from = svg('text', { x: left, y: axisY });
    var to = svg('text', { x: left + width, y: axisY, 'text-anchor': 'end' });
    chart.appendChild(from);
    chart.appendChild(to);
    // Positions every block for the cycles [view.from, view.to].
    function layout() {
      var span = Math.max(1, view.to - view.from);
      blocksG.forEach(function (g) {
        Array.prototype.forEach.call(g.children, function (r) {
          var x0 = left + ((r.__start - view.from) * width) / span;
          var x1 = left + ((r.__start + r.__cycles - view.from) * width) / span;
          var visible = x1 >= left && x0 <= left + width;
          r.setAttribute('display', visible ? 'inline' : 'none');
          x0 = Math.max(left, x0);
          x1 = Math.min(left + width, x1);
          r.setAttribute('x', x0.toFixed(2));
          r.setAttribute('width', Math.max(0.5, x1 - x0).toFixed(2));
        });
      });
      from.textContent = 'cycle ' + fmtInt(view.from);
      to.textContent = 'cycle ' + fmtInt(view.to);
    }
    layout();
    return { chart: chart, layout: layout };
  }

  function traceToolbar(view, end, layout) {
    function zoom(f) {
      var mid = (view.from + view.to) / 2;
      var half = Math.max(10, ((view.to - view.from) * f) / 2);
      view.from = Math.max(0, mid - half);
      view.to = Math.min(end, mid + half);
      layout();
    }
    function pan(f) {
      var span = view.to - view.from;
      var shift = span * f;
      view.from = Math.min(Math.max(0, view.from + shift), end - span);
      view.to = view.from + span;
      layout();
    }
    function button(label, action) {
      var b = el('button', { type: 'button' }, label);
      b.addEventListener('click', action);
      return b;
    }
    return el('div', { 'class': 'toolbar' }, [
      button('Zoom in', function () { zoom(0.5); }),
      button('Zoom out', function () { zoom(2); }),
      button('<', function () { pan(-0.5); }),
      button('>', function () { pan(0.5); }),
      button('Reset', function () { view.from = 0; view.to = end; layout(); })]);
  }

  function renderTrace() {
    var tr = model.trace;
    var p = panel('trace', 'Execution trace',
                  tr.available
                      ? 'Each IPU\'s steps in the order they ran, as blocks ' +
                        'of their estimated cycles (an IPU taking no part in ' +
                        'a step shows no block). ' + fmtInt(tr.traceEntries) +
                        ' steps traced' + (tr.complete ? ' (all that ran).'
                        : ' (the first ones of ' + fmtInt(tr.stepsExecuted) +
                        ' that ran; the totals below count them all).')
                      : 'This profile has no execution facts: run the ' +
                        'program with autoReport.all or ' +
                        'autoReport.outputExecutionProfile set to "true".');
    if (!tr.available) {
      status.charts.trace = { lanes: [] };
      return;
    }
    p.appendChild(legend(tr.groups.map(function (g) {
      return { color: GROUP_COLORS[g], label: g };
    })));
    var end = 1;
    tr.lanes.forEach(function (l) { end = Math.max(end, l.end); });
    var view = { from: 0, to: end };
    var lanes = traceLanes(tr, view);
    p.appendChild(traceToolbar(view, end, lanes.layout));
    p.appendChild(lanes.chart);
    var drawn = [];
    tr.lanes.forEach(function (lane, k) {
      var info = { ipu: lane.ipu, blocks: 0, cycles: 0, byGroup: {},
                   hidden: lane.hiddenBlocks };
      tr.groups.forEach(function (g) { info.byGroup[g] = 0; });
      var g = lanes.chart.querySelectorAll('g.lane')[k];
      Array.prototype.forEach.call(g.children, function (r) {
        var c = Number(r.getAttribute('data-cycles'));
        info.blocks += 1;
        info.cycles += c;
        info.byGroup[r.getAttribute('data-group')] += c;
      });
      drawn.push(info);
    });
    p.appendChild(el('h3', null, 'Cycles per IPU by step kind'));
    var rows = tr.lanes.map(function (lane) {
      var r = { ipu: 'IPU ' + lane.ipu, total: tr.totalCycles[lane.ipu],
                time: fmtTime(tr.totalCycles[lane.ipu]) };
      tr.groups.forEach(function (g) { r[g] = tr.cyclesByKind[g][lane.ipu]; });
      return r;
    });
    var cols = [{ key: 'ipu', label: 'IPU' },
                { key: 'total', label: 'Cycles', num: true, fmt: fmtInt },
                { key: 'time', label: 'Time' }];
    tr.groups.forEach(function (g) {
      cols.push({ key: g, label: g, num: true, fmt: fmtInt });
    });
    p.appendChild(dataTable(cols, rows, 'trace-totals'));
    traceScopes(p, tr);
    status.charts.trace = { lanes: drawn };
  }

  // Each IPU's runs of steps in named programs (a pipeline's stage passes:
  // which stage ran which micro-batch on which IPU), in execution order.
  function traceScopes(p, tr) {
    var rows = [];
    tr.lanes.forEach(function (lane) {
      lane.scopes.forEach(function (s, k) {
        rows.push({ ipu: 'IPU ' + lane.ipu, order: k, start: s[1],
                    cycles: s[2] - s[1], steps: s[3],
                    scope: tr.labels[s[0]] });
      });
    });
    if (!rows.length) return;
    p.appendChild(el('h3', null, 'Scopes per IPU'));
    p.appendChild(dataTable([{ key: 'ipu', label: 'IPU' },
                             { key: 'order', label: '#', num: true },
                             { key: 'start', label: 'Start', num: true,
                               fmt: fmtInt },
                             { key: 'cycles', label: 'Cycles', num: true,
                               fmt: fmtInt },
                             { key: 'steps', label: 'Steps', num: true },
                             { key: 'scope', label: 'Scope', wide: true }],
                            rows, 'trace-scopes'));
  }

  // ---- operations -------------------------------------------------------

  function opsTable(p, ops, name, label) {
    var n = model.target.numIPUs;
    var rows = ops.rows.map(function (r) {
      var row = { name: r.name, cycles: r.cycles, percent: r.percent,
                  steps: r.steps, runs: r.runs, vertices: r.vertices,
                  exchangeBytes: r.exchangeBytes, memoryBytes: r.memoryBytes };
      Object.keys(r.byGroup).forEach(function (g) { row[g] = r.byGroup[g]; });
      for (var i = 0; i < n && n > 1; ++i) row['ipu' + i] = r.ipuCycles[i];
      return row;
    });
    var cols = [
      { key: 'name', label: label, wide: true },
      { key: 'cycles', label: 'Cycles', num: true, fmt: fmtInt },
      { key: 'percent', label: '% of cycles', num: true,
        fmt: function (v) { return meter(v / 100, fmtPct(v)); } }];
    ['compute', 'exchange', 'sync'].forEach(function (g) {
      cols.push({ key: g, label: g, num: true,
                  fmt: function (v) { return fmtInt(v || 0); } });
    });
    for (var i = 0; i < n && n > 1; ++i)
      cols.push({ key: 'ipu' + i, label: 'IPU ' + i, num: true, fmt: fmtInt });
    cols.push({ key: 'runs', label: 'Steps run', num: true, fmt: fmtInt },
              { key: 'vertices', label: 'Vertices', num: true, fmt: fmtInt },
              { key: 'exchangeBytes', label: 'Exchanged', num: true,
                fmt: fmtBytes },
              { key: 'memoryBytes', label: 'Variable memory', num: true,
                fmt: fmtBytes });
    p.appendChild(el('div', { 'class': 'scroll' }, dataTable(cols, rows, name)));
    var cycles = 0;
    ops.rows.forEach(function (r) { cycles += r.cycles; });
    return { rows: rows.length, cycles: cycles };
  }

  function renderOperations() {
    var ops = model.operations;
    var p = panel('operations', 'Operations',
                  'Cycles (each step at its slowest IPU, times its runs' +
                  (ops.fromExecution ? '' : '; one run each: this profile ' +
                   'has no execution facts') + ') and memory (bytes of the ' +
                  'variables named under it) per operation, the first part ' +
                  'of a debug name, and per full debug name.');
    var top = ops.rows.slice(0, 15).filter(function (r) { return r.cycles > 0; });
    var groups = ['compute', 'exchange', 'sync', 'host', 'control'];
    var left = 260, rowH = 22, width = CHART_WIDTH - left - 140;
    var max = 1;
    top.forEach(function (r) { max = Math.max(max, r.cycles); });
    var chart = svg('svg', { 'class': 'chart ops-chart',
                             viewBox: '0 0 ' + CHART_WIDTH + ' ' +
                                      (top.length * rowH + 6) });
    var segments = 0;
    top.forEach(function (r, k) {
      var y = k * rowH + 3, x = left;
      chart.appendChild(svg('text', { x: left - 8, y: y + 14,
                                      'text-anchor': 'end' },
                            r.name.length > 40 ? r.name.slice(0, 38) + '..'
                                               : r.name));
      groups.forEach(function (g) {
        var v = r.byGroup[g];
        if (!v) return;
        var w = (width * v) / max;
        chart.appendChild(svg('rect', { 'class': 'bar', x: x, y: y,
                                        width: Math.max(w, 0.5),
                                        height: rowH - 6,
                                        fill: GROUP_COLORS[g] },
                              svg('title', null, r.name + ' - ' + g + ': ' +
                                  fmtInt(v) + ' cycles')));
        x += w;
        segments += 1;
      });
      chart.appendChild(svg('text', { x: x + 6, y: y + 14 }, fmtInt(r.cycles)));
    });
    p.appendChild(legend(groups.map(function (g) {
      return { color: GROUP_COLORS[g], label: g };
    })));
    p.appendChild(chart);
    p.appendChild(el('h3', null, 'By operation'));
    var byOp = opsTable(p, ops, 'operations', 'Operation');
    p.appendChild(el('h3', null, 'By debug name'));
    var byName = opsTable(p, model.debugNames, 'debug-names', 'Debug name');
    status.charts.operations = { bars: top.length, segments: segments,
                                 rows: byOp.rows, cycles: byOp.cycles };
    status.charts.debugNames = { rows: byName.rows, cycles: byName.cycles };
  }

  // ---- page -----------------------------------------------------------------

  var model;
  var out = document.getElementById('report-status');
  try {
    model = JSON.parse(document.getElementById('report-data').textContent);
    tooltip = el('div', { id: 'tooltip' });
    document.body.appendChild(tooltip);
    renderSummary();
    renderTileMemory();
    renderCategories();
    renderVariables();
    renderLiveness();
    renderTrace();
    renderOperations();
    status.svgCharts = document.querySelectorAll('svg.chart').length;
    out.textContent = JSON.stringify(status);
    out.setAttribute('data-status', 'ok');
  } catch (e) {
    var message = 'The report could not be drawn: ' + (e && e.message ? e.message : e);
    document.getElementById('report').appendChild(
        el('div', { 'class': 'error' }, message));
    out.textContent = JSON.stringify({ error: message });
    out.setAttribute('data-status', 'error');
  }
})();
