//! The page: one HTML file with its styles, script, timeline and flame graphs inside (no
//! network when it is viewed). The timeline is an inline SVG drawn here; each moment's flame
//! graph is inferno's SVG (with its own zoom and search), loaded into a frame as a standalone
//! SVG document so that its script runs; a slider picks the moment.

use super::{ArenaCurve, Band, Page, Point, Section};
use crate::charts::flame::flame_graph_svg;
use crate::export::human::{self, ColumnKind};
use crate::export::{Cell, Table};
use anyhow::Result;

/// The terms the page's legend defines (their definitions are the tables' own,
/// `export::definitions_of`).
const LEGEND: [&str; 6] = [
    "requested",
    "rounding",
    "empty regions",
    "pinned",
    "held",
    "resident",
];

fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// The page as HTML.
pub fn render(page: &Page) -> Result<String> {
    let mut flames = Vec::with_capacity(page.moments.len());
    for m in &page.moments {
        let title = format!(
            "{}: waste by call site at event {} ({} active bytes)",
            page.name,
            m.event,
            human::thousands(m.active_bytes)
        );
        let svg = match m.folded.is_empty() {
            true => format!("<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"600\" height=\"40\"><text x=\"10\" y=\"25\">{} : no waste at this moment</text></svg>", escape(&title)),
            false => String::from_utf8(flame_graph_svg(&title, "bytes", &m.folded)?)?,
        };
        flames.push(svg);
    }
    // `</` inside the JSON would end its script element: `<\/` is the same JSON string.
    let flames_json = serde_json::to_string(&flames)?.replace("</", "<\\/");
    let moments_json = serde_json::to_string(
        &page
            .moments
            .iter()
            .map(|m| (m.event, m.active_bytes, m.waste_bytes))
            .collect::<Vec<_>>(),
    )?;
    let peak_index = page
        .moments
        .iter()
        .position(|m| m.event == page.peak_event)
        .unwrap_or(0);
    let mut out = String::new();
    out.push_str("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">");
    out.push_str(&format!(
        "<title>fragsim view: {}</title><style>{STYLE}</style></head><body>\n",
        escape(&page.name)
    ));
    out.push_str(&format!("<h1>{}</h1>\n", escape(&page.name)));
    if let Some(c) = &page.command {
        out.push_str(&format!("<p>Recorded: <code>{}</code></p>\n", escape(c)));
    }
    out.push_str(&format!(
        "<p>Modelled: {}{} · {} events, {} threads · active peak {} at event {}</p>\n",
        escape(&page.build),
        escape(&page.about),
        human::thousands(page.events),
        page.threads,
        escape(&human::bytes(page.peak_active_bytes)),
        human::thousands(page.peak_event)
    ));
    out.push_str("<h2>Over the trace</h2>\n");
    out.push_str(&arena_control(&page.arenas));
    out.push_str(&timeline_svg(page));
    out.push_str(&format!(
        "<h2>Waste by call site</h2>\n<p><input type=\"range\" id=\"moment\" min=\"0\" max=\"{}\" value=\"{peak_index}\" aria-label=\"moment\"> <span id=\"moment-label\"></span></p>\n<iframe id=\"flame\" title=\"waste flame graph\"></iframe>\n",
        page.moments.len().saturating_sub(1)
    ));
    out.push_str("<h2>What the words mean</h2>\n<dl>");
    for (term, meaning) in crate::export::definitions_of(&LEGEND) {
        out.push_str(&format!("<dt>{term}</dt><dd>{meaning}</dd>"));
    }
    out.push_str("</dl>\n");
    out.push_str(&table_html(&page.blame));
    out.push_str(&table_html(&page.classes));
    for section in &page.extra {
        match section {
            Section::Table(t) => out.push_str(&table_html(t)),
            Section::Note { title, text } => out.push_str(&format!(
                "<h2>{}</h2>\n<p class=\"note\">{}</p>\n",
                escape(title),
                escape(text)
            )),
        }
    }
    out.push_str(&format!(
        "<script type=\"application/json\" id=\"flames\">{flames_json}</script>\n<script>const MOMENTS = {moments_json};\n{SCRIPT}</script>\n</body></html>\n"
    ));
    Ok(out)
}

/// One figure of a timeline point.
type Figure = fn(&Point) -> u64;

/// Arena curves keep at most this many of the timeline's points (every k-th, and the last).
const ARENA_POINTS: usize = 300;

/// The checkbox that shows the per-arena curves (`#arenas` in the address ticks it).
fn arena_control(arenas: &[ArenaCurve]) -> String {
    format!(
        "<p><label><input type=\"checkbox\" id=\"per-arena\"> active bytes per arena ({} arenas the model used)</label></p>\n",
        arenas.len()
    )
}

/// The timeline's scales: the SVG's width, the plot's bottom, its left edge and its maximum.
struct Frame {
    w: f64,
    bottom: f64,
    left: f64,
    max: f64,
    events: u64,
}

impl Frame {
    fn x(&self, e: u64) -> f64 {
        self.left + (self.w - self.left - 10.0) * e as f64 / self.events.max(1) as f64
    }

    fn y(&self, v: f64) -> f64 {
        self.bottom - (self.bottom - 10.0) * v / self.max
    }
}

/// Requested, allocated, active and resident bytes over the events, as polylines, with the
/// real allocator's resident band under them if given, each arena's active bytes (hidden
/// until the checkbox shows them), and the moment's marker (moved by the script).
fn timeline_svg(page: &Page) -> String {
    let points = &page.timeline;
    let band_max = page.band.as_ref().map_or(0.0, |b| {
        let model = b.model.iter().map(|p| p.1);
        b.points
            .iter()
            .map(|p| p.2)
            .chain(model)
            .fold(0.0, f64::max)
    });
    let max = points
        .iter()
        .map(|p| p.resident.max(p.active))
        .max()
        .unwrap_or(1)
        .max(1) as f64;
    let f = Frame {
        w: 1000.0,
        bottom: 230.0,
        left: 70.0,
        max: max.max(band_max),
        events: page.events,
    };
    let key_rows = 1 + page
        .band
        .as_ref()
        .map_or(0, |b| 1 + usize::from(!b.model.is_empty()));
    let arena_rows = page.arenas.len().div_ceil(ARENA_KEYS_PER_ROW);
    let h = f.bottom + AXIS + 20.0 * key_rows as f64 + 10.0;
    let full = h + 20.0 * arena_rows as f64;
    let mut svg = format!(
        "<svg id=\"timeline\" xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 {} {h}\" width=\"100%\" data-events=\"{}\" data-left=\"{}\" data-width=\"{}\" data-h=\"{h}\" data-h-arenas=\"{full}\">",
        f.w,
        page.events,
        f.left,
        f.w - f.left - 10.0
    );
    for k in 0..=4u64 {
        let v = (f.max as u64) * k / 4;
        let y = f.y(v as f64);
        svg.push_str(&format!(
            "<line x1=\"{}\" x2=\"{}\" y1=\"{y:.1}\" y2=\"{y:.1}\" class=\"grid\"/><text x=\"{}\" y=\"{:.1}\" class=\"axis\" text-anchor=\"end\">{:.1} MiB</text>",
            f.left,
            f.w - 10.0,
            f.left - 4.0,
            y + 4.0,
            v as f64 / (1u64 << 20) as f64
        ));
    }
    svg.push_str(&events_axis(&f));
    if let Some(band) = &page.band {
        svg.push_str(&band_svg(band, &f));
    }
    let series: [(&str, Figure); 4] = [
        ("resident", |p| p.resident),
        ("active", |p| p.active),
        ("allocated", |p| p.allocated),
        ("requested", |p| p.requested),
    ];
    for (i, (name, value)) in series.iter().enumerate() {
        let path: Vec<String> = points
            .iter()
            .map(|p| format!("{:.1},{:.1}", f.x(p.event), f.y(value(p) as f64)))
            .collect();
        svg.push_str(&format!(
            "<polyline class=\"s{i}\" fill=\"none\" points=\"{}\"><title>{name} bytes (the model)</title></polyline><text x=\"{}\" y=\"{}\" class=\"k{i} key\">{name}</text>",
            path.join(" "),
            f.left + 10.0 + 110.0 * i as f64,
            f.bottom + AXIS + 24.0
        ));
    }
    svg.push_str(&arenas_svg(&page.arenas, points, &f, h));
    svg.push_str(&format!(
        "<line id=\"marker\" x1=\"{}\" x2=\"{}\" y1=\"10\" y2=\"{}\"/></svg>\n",
        f.left, f.left, f.bottom
    ));
    svg
}

/// The strip under the plot that the events axis' labels take.
const AXIS: f64 = 16.0;

/// The events axis: the event numbers at the start, each quarter and the end.
fn events_axis(f: &Frame) -> String {
    (0..=4u64)
        .map(|k| {
            let e = f.events * k / 4;
            let anchor = match k {
                0 => "start",
                4 => "end",
                _ => "middle",
            };
            format!(
                "<text x=\"{:.1}\" y=\"{}\" class=\"axis\" text-anchor=\"{anchor}\">{}</text>",
                f.x(e),
                f.bottom + 13.0,
                crate::export::human::thousands(e)
            )
        })
        .collect()
}

/// The real allocator's resident, min to max over its runs, as a filled area, and its key
/// on the second row under the plot.
fn band_svg(band: &Band, f: &Frame) -> String {
    let upper = band.points.iter().map(|p| (p.0, p.2));
    let lower = band.points.iter().rev().map(|p| (p.0, p.1));
    let outline: Vec<String> = upper
        .chain(lower)
        .map(|(e, v)| format!("{:.1},{:.1}", f.x(e), f.y(v)))
        .collect();
    let legend = escape(&band.legend());
    let mut svg = format!(
        "<polygon id=\"band\" class=\"band\" points=\"{}\"><title>{legend}</title></polygon><rect x=\"{}\" y=\"{}\" width=\"24\" height=\"10\" class=\"band\"/><text x=\"{}\" y=\"{}\" class=\"key bandkey\">{legend}</text>",
        outline.join(" "),
        f.left + 10.0,
        f.bottom + AXIS + 35.0,
        f.left + 40.0,
        f.bottom + AXIS + 44.0
    );
    if !band.model.is_empty() {
        // The model as the report compares it with the band, under the band's key.
        let line: Vec<String> = band
            .model
            .iter()
            .map(|&(e, v)| format!("{:.1},{:.1}", f.x(e), f.y(v)))
            .collect();
        let legend = escape(&band.model_legend());
        svg.push_str(&format!(
            "<polyline id=\"band-model\" class=\"bandmodel\" points=\"{}\"><title>{legend}</title></polyline><line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" class=\"bandmodel\"/><text x=\"{}\" y=\"{}\" class=\"key\">{legend}</text>",
            line.join(" "),
            f.left + 10.0,
            f.bottom + AXIS + 55.0,
            f.left + 34.0,
            f.bottom + AXIS + 55.0,
            f.left + 40.0,
            f.bottom + AXIS + 59.0
        ));
    }
    svg
}

/// Arena keys on one row.
const ARENA_KEYS_PER_ROW: usize = 11;
/// The arena curves' colours, in turn.
const ARENA_COLOURS: [&str; 10] = [
    "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f",
    "#bcbd22", "#17becf",
];

/// Each arena's active bytes as a thin polyline (at most [`ARENA_POINTS`] of the timeline's
/// points) and its key in rows from `top`, all in a group the checkbox shows.
fn arenas_svg(arenas: &[ArenaCurve], points: &[Point], f: &Frame, top: f64) -> String {
    let step = points.len().div_ceil(ARENA_POINTS).max(1);
    let keep = |i: usize| i.is_multiple_of(step) || i + 1 == points.len();
    let mut svg = String::from("<g id=\"arena-curves\" display=\"none\">");
    for (k, a) in arenas.iter().enumerate() {
        let colour = ARENA_COLOURS[k % ARENA_COLOURS.len()];
        let path: Vec<String> = points
            .iter()
            .zip(&a.active)
            .enumerate()
            .filter(|&(i, _)| keep(i))
            .map(|(_, (p, &v))| format!("{:.1},{:.1}", f.x(p.event), f.y(v as f64)))
            .collect();
        let (row, col) = (k / ARENA_KEYS_PER_ROW, k % ARENA_KEYS_PER_ROW);
        svg.push_str(&format!(
            "<polyline class=\"arena\" data-arena=\"{i}\" stroke=\"{colour}\" points=\"{}\"><title>arena {i}: active bytes (the model)</title></polyline><text x=\"{}\" y=\"{}\" class=\"key\" fill=\"{colour}\">arena {i}</text>",
            path.join(" "),
            f.left + 10.0 + 82.0 * col as f64,
            top + 10.0 + 20.0 * row as f64,
            i = a.index
        ));
    }
    svg.push_str("</g>");
    svg
}

/// A table with its numbers written for people, each cell keeping its raw value for sorting
/// (a click on a column's header sorts by it).
fn table_html(table: &Table) -> String {
    let kinds: Vec<ColumnKind> = table.columns.iter().map(|c| ColumnKind::of(c)).collect();
    let mut out = format!(
        "<h2>{}</h2>\n<table class=\"sortable\"><thead><tr>",
        escape(&table.title)
    );
    for c in &table.columns {
        out.push_str(&format!("<th>{}</th>", escape(c)));
    }
    out.push_str("</tr></thead><tbody>");
    for row in &table.rows {
        out.push_str("<tr>");
        for (cell, &kind) in row.iter().zip(&kinds) {
            let raw = match cell {
                Cell::Int(v) => v.to_string(),
                Cell::Float(v, _) => v.to_string(),
                _ => String::new(),
            };
            out.push_str(&format!(
                "<td data-v=\"{}\">{}</td>",
                escape(&raw),
                escape(&human::cell(kind, cell))
            ));
        }
        out.push_str("</tr>");
    }
    out.push_str("</tbody></table>\n");
    out
}

const STYLE: &str = "body{font-family:sans-serif;margin:1.5em;max-width:1100px;color:#222}\
code{background:#f3f3f3;padding:0 .3em}table{border-collapse:collapse;margin:.5em 0 1.5em}\
th,td{border:1px solid #ccc;padding:.2em .5em;text-align:right}th{cursor:pointer;background:#f3f3f3}\
td:first-child,td:nth-child(2){text-align:left}iframe{width:100%;height:480px;border:1px solid #ccc}\
.grid{stroke:#e4e4e4}.axis{font-size:11px;fill:#555}.key{font-size:13px}\
.s0{stroke:#7570b3}.s1{stroke:#d95f02}.s2{stroke:#1b9e77}.s3{stroke:#666}\
.k0{fill:#7570b3}.k1{fill:#d95f02}.k2{fill:#1b9e77}.k3{fill:#666}polyline{stroke-width:1.5;fill:none}\
.band{fill:#7570b3;fill-opacity:.25;stroke:none}.bandmodel{fill:none;stroke:#3f3a8c;stroke-width:1.5;stroke-dasharray:2 2}.arena{stroke-width:1;stroke-dasharray:5 2}.note{font-style:italic}#marker{stroke:#000;stroke-dasharray:4 3}\
dt{font-weight:bold}dd{margin:0 0 .4em 1.5em}#moment{width:60%}";

/// The slider shows the moment's flame graph and moves the timeline's marker (`#moment=K` in
/// the address opens at moment K); a click on a table's header sorts it. `document.body.dataset.drawn` says the page's script ran.
const SCRIPT: &str = r#"
const FLAMES = JSON.parse(document.getElementById('flames').textContent);
const slider = document.getElementById('moment');
const frame = document.getElementById('flame');
const label = document.getElementById('moment-label');
const timeline = document.getElementById('timeline');
const marker = document.getElementById('marker');
const fmt = n => n.toLocaleString('en-US');
let url = null;
function show(i) {
  const [event, active, waste] = MOMENTS[i];
  // A standalone SVG document, as inferno wrote it: its own script (zoom, search) runs.
  if (url) URL.revokeObjectURL(url);
  url = URL.createObjectURL(new Blob([FLAMES[i]], {type: 'image/svg+xml'}));
  // How long the moment took to draw (the frame's document loaded), for whoever asks.
  const started = performance.now();
  frame.onload = () => { document.body.dataset.drawMs = Math.round(performance.now() - started); };
  frame.src = url;
  label.textContent = `event ${fmt(event)}: ${fmt(active)} active bytes, ${fmt(waste)} of them waste`;
  const left = +timeline.dataset.left, width = +timeline.dataset.width;
  const x = left + width * event / Math.max(1, +timeline.dataset.events);
  marker.setAttribute('x1', x);
  marker.setAttribute('x2', x);
  document.body.dataset.moment = event;
}
slider.addEventListener('input', () => show(+slider.value));
// The per-arena curves: hidden until asked for (`#arenas` in the address asks).
const perArena = document.getElementById('per-arena');
function showArenas() {
  document.getElementById('arena-curves').setAttribute('display', perArena.checked ? 'inline' : 'none');
  const h = perArena.checked ? timeline.dataset.hArenas : timeline.dataset.h;
  timeline.setAttribute('viewBox', `0 0 1000 ${h}`);
  document.body.dataset.arenas = perArena.checked ? document.querySelectorAll('#arena-curves polyline').length : 0;
}
perArena.addEventListener('change', showArenas);
if (/\barenas\b/.test(location.hash)) perArena.checked = true;
showArenas();
// `page.html#moment=K` opens at the K-th moment (a link to one moment).
const asked = /moment=(\d+)/.exec(location.hash);
if (asked && +asked[1] < MOMENTS.length) slider.value = asked[1];
show(+slider.value);
for (const table of document.querySelectorAll('table.sortable')) {
  table.querySelectorAll('th').forEach((th, col) => th.addEventListener('click', () => {
    const body = table.tBodies[0];
    const rows = [...body.rows];
    const key = r => r.cells[col].dataset.v;
    const numeric = rows.every(r => key(r) !== '' && !isNaN(+key(r)));
    const down = th.dataset.down !== '1';
    th.dataset.down = down ? '1' : '0';
    rows.sort((a, b) => (numeric ? +key(a) - +key(b) : key(a).localeCompare(key(b))) * (down ? -1 : 1));
    rows.forEach(r => body.appendChild(r));
  }));
}
document.body.dataset.drawn = FLAMES.length;
"#;
