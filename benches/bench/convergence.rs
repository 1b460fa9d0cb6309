//! `--convergence-plot PATH.svg`: the solvers' residual histories, a hand-written SVG. One
//! panel per solver row: the relative residual of the recurrence (log scale) against the
//! iteration, ours as a line, the peer's as a line of its own (GMRES: one point a cycle).

use std::fmt::Write;

use crate::report::{Report, Row};

const WIDTH: f64 = 640.0;
const PANEL_HEIGHT: f64 = 240.0;
const LEFT: f64 = 64.0;
const RIGHT: f64 = 20.0;
const TOP: f64 = 28.0;
const BOTTOM: f64 = 36.0;
const OURS: &str = "#4e79a7";
const PEER: &str = "#333333";

/// The chart of every solver row with a history (an empty chart when none has one).
pub fn svg(report: &Report) -> String {
    let rows: Vec<&Row> = report.rows.iter().filter(|r| r.solve().is_some_and(|s| !s.history.is_empty())).collect();
    let height = (rows.len() as f64 * PANEL_HEIGHT).max(40.0);
    let mut out = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{WIDTH:.0}\" height=\"{height:.0}\" \
         font-family=\"sans-serif\" font-size=\"11\">\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
    );
    if rows.is_empty() {
        out.push_str("<text x=\"10\" y=\"24\">no solver rows with a residual history</text>\n");
    }
    for (i, row) in rows.iter().enumerate() {
        let _ = writeln!(out, "<g transform=\"translate(0,{:.0})\">\n{}</g>", i as f64 * PANEL_HEIGHT, panel(row));
    }
    out.push_str("</svg>\n");
    out
}

/// One row's panel: axes, decades, our line and the peer's.
fn panel(row: &Row) -> String {
    let ours: Vec<(usize, f64)> =
        row.solve().map(|s| s.history.iter().enumerate().map(|(i, &v)| (i + 1, v)).collect()).unwrap_or_default();
    let peer: Vec<(usize, f64)> = row.peer.as_ref().and_then(|p| p.history.clone()).unwrap_or_default();
    let positive = |v: &f64| v.is_finite() && *v > 0.0;
    let values = ours.iter().chain(&peer).map(|&(_, v)| v).filter(positive);
    let (lo, hi) = values.fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), v| (lo.min(v), hi.max(v)));
    let (lo, hi) = if lo.is_finite() {
        (lo.log10().floor(), hi.log10().ceil().max(lo.log10().floor() + 1.0))
    } else {
        (-1.0, 0.0)
    };
    let last = ours.iter().chain(&peer).map(|&(i, _)| i).max().unwrap_or(1).max(1) as f64;
    let (plot_w, plot_h) = (WIDTH - LEFT - RIGHT, PANEL_HEIGHT - TOP - BOTTOM);
    let x = |i: usize| LEFT + plot_w * i as f64 / last;
    let y = |v: f64| TOP + plot_h * (hi - v.log10()) / (hi - lo);
    let mut out = String::new();
    let title = format!("{} {} {} ({})", row.matrix, row.op, row.dtype.name(), row.label);
    let _ = writeln!(out, "<text x=\"{LEFT}\" y=\"16\" font-weight=\"bold\">{}</text>", escape(&title));
    let _ = writeln!(
        out,
        "<rect x=\"{LEFT}\" y=\"{TOP}\" width=\"{plot_w:.0}\" height=\"{plot_h:.0}\" fill=\"none\" stroke=\"#999\"/>"
    );
    for decade in lo as i32..=hi as i32 {
        let yy = y(10f64.powi(decade));
        let _ = writeln!(
            out,
            "<line x1=\"{LEFT}\" x2=\"{:.1}\" y1=\"{yy:.1}\" y2=\"{yy:.1}\" stroke=\"#eee\"/>\
             <text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\">1e{decade}</text>",
            LEFT + plot_w,
            LEFT - 6.0,
            yy + 4.0
        );
    }
    let _ = writeln!(
        out,
        "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\">iteration (0 – {last:.0})</text>",
        LEFT + plot_w / 2.0,
        PANEL_HEIGHT - 10.0
    );
    let mut legend = LEFT + 8.0;
    for (points, colour, name) in [(&ours, OURS, "wgsparse".to_string()), (&peer, PEER, peer_name(row))] {
        let path: Vec<String> =
            points.iter().filter(|(_, v)| positive(v)).map(|&(i, v)| format!("{:.1},{:.1}", x(i), y(v))).collect();
        if path.is_empty() {
            continue;
        }
        let _ = writeln!(
            out,
            "<polyline fill=\"none\" stroke=\"{colour}\" stroke-width=\"1.5\" points=\"{}\"/>",
            path.join(" ")
        );
        let _ = writeln!(
            out,
            "<rect x=\"{legend:.1}\" y=\"{:.1}\" width=\"12\" height=\"3\" fill=\"{colour}\"/>\
             <text x=\"{:.1}\" y=\"{:.1}\">{}</text>",
            TOP + 8.0,
            legend + 16.0,
            TOP + 12.0,
            escape(&name)
        );
        legend += 24.0 + name.len() as f64 * 6.2;
    }
    out
}

fn peer_name(row: &Row) -> String {
    row.peer.as_ref().map_or_else(String::new, |p| p.name.clone())
}

fn escape(text: &str) -> String {
    text.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;")
}
