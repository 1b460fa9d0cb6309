//! `--plot PATH.svg`: a hand-written SVG bar chart. One panel per (op, k); in each, one group
//! of bars per matrix, one bar per algorithm, the peer's bar beside ours, in GB/s (GFLOP/s
//! for ops without a byte model), with the device copy bandwidth as a dashed line.

use std::fmt::Write;

use crate::ops::K;
use crate::report::{Report, Row};

const BAR: f64 = 11.0;
const GROUP_GAP: f64 = 18.0;
/// Left of the y axis, unless a long first matrix name needs more.
const LEFT: f64 = 70.0;
const RIGHT: f64 = 24.0;
const PLOT_HEIGHT: f64 = 260.0;
/// Matrix names under the groups are rotated by this angle (degrees, clockwise from
/// horizontal to the left).
const LABEL_ANGLE: f64 = 35.0;
/// Approximate width of a character at font size 11.
const CHAR_WIDTH: f64 = 6.2;
const LEGEND_ROW: f64 = 18.0;
const MIN_WIDTH: f64 = 720.0;
/// Colours of our algorithms, in order (Tableau 10); the peer is dark grey.
const PALETTE: [&str; 10] =
    ["#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac"];
const PEER_COLOUR: &str = "#333333";

/// A row's value in a panel's unit (ours or the peer's).
type Metric = fn(&Row) -> Option<f64>;

/// One bar series: an algorithm, or the peer.
struct Series {
    name: String,
    colour: &'static str,
    peer: bool,
}

/// The chart of every verified row.
pub fn svg(report: &Report) -> String {
    let mut panels: Vec<(&str, K)> = Vec::new();
    for r in &report.rows {
        if !panels.contains(&(r.op, r.k)) {
            panels.push((r.op, r.k));
        }
    }
    let rendered: Vec<(f64, f64, String)> = panels
        .iter()
        .map(|&(op, k)| panel(report, report.rows.iter().filter(|r| r.op == op && r.k == k).collect()))
        .collect();
    let width = rendered.iter().map(|p| p.0).fold(MIN_WIDTH, f64::max);
    let height: f64 = rendered.iter().map(|p| p.1).sum::<f64>().max(40.0);
    let mut out = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{width:.0}\" height=\"{height:.0}\" \
         font-family=\"sans-serif\" font-size=\"11\">\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
    );
    let mut y = 0.0;
    for (_, h, body) in &rendered {
        let _ = writeln!(out, "<g transform=\"translate(0,{y:.0})\">\n{body}</g>");
        y += h;
    }
    if rendered.is_empty() {
        out += "<text x=\"10\" y=\"24\">no rows to plot</text>\n";
    }
    out + "</svg>\n"
}

/// One panel: returns its width, height and SVG body.
fn panel(report: &Report, rows: Vec<&Row>) -> (f64, f64, String) {
    let by_bytes = rows.iter().any(|r| r.cost.bytes.is_some());
    let (unit, ours, peers): (&str, Metric, Metric) =
        if by_bytes { ("GB/s", Row::gbps, Row::peer_gbps) } else { ("GFLOP/s", Row::gflops, Row::peer_gflops) };
    let value = |r: &Row| ours(r).filter(|_| r.verified());

    let mut matrices: Vec<&str> = Vec::new();
    let mut series: Vec<Series> = Vec::new();
    for r in &rows {
        if !matrices.contains(&r.matrix.as_str()) {
            matrices.push(&r.matrix);
        }
        if !series.iter().any(|s| s.name == r.algorithm) {
            let colour = PALETTE[series.len() % PALETTE.len()];
            series.push(Series { name: r.algorithm.to_string(), colour, peer: false });
        }
    }
    if let Some((name, _)) = report.peer.as_ref().filter(|_| rows.iter().any(|r| peers(r).is_some())) {
        series.push(Series { name: name.clone(), colour: PEER_COLOUR, peer: true });
    }

    // The bar of `series[s]` for `matrix`.
    let bar = |matrix: &str, s: &Series| -> Option<(f64, String)> {
        let mut of_matrix = rows.iter().filter(|r| r.matrix == matrix);
        if s.peer {
            return of_matrix.find_map(|r| peers(r).map(|v| (v, format!("{matrix} {}: {v:.1} {unit}", s.name))));
        }
        of_matrix
            .find(|r| r.algorithm == s.name)
            .and_then(|r| value(r).map(|v| (v, format!("{matrix} {}: {v:.1} {unit}", r.label))))
    };
    let copy_line = by_bytes.then_some(report.copy_gbps).filter(|c| c.is_finite() && *c > 0.0);
    let top = matrices
        .iter()
        .flat_map(|m| series.iter().filter_map(|s| bar(m, s).map(|b| b.0)))
        .chain(copy_line)
        .fold(0.0, f64::max);
    let y_max = nice_ceiling(top);

    let group = series.len() as f64 * BAR + GROUP_GAP;
    // Room for the rotated names: below the axis for the longest, left of it for the first.
    let (sin, cos) = LABEL_ANGLE.to_radians().sin_cos();
    let label_width = |name: &str| name.chars().count() as f64 * CHAR_WIDTH;
    let longest = matrices.iter().map(|m| label_width(m)).fold(0.0, f64::max);
    let first = matrices.first().map_or(0.0, |m| label_width(m));
    let left = LEFT.max(first * cos + 8.0 - group / 2.0);
    let bottom = 30.0 + longest * sin;
    let width = (left + matrices.len() as f64 * group + RIGHT).max(MIN_WIDTH);
    let legend_at = legend_positions(&series, left, width, 30.0);
    let plot_top = legend_at.last().map_or(30.0, |p| p.1) + LEGEND_ROW + 8.0;
    let height = plot_top + PLOT_HEIGHT + bottom;
    let y_of = |v: f64| plot_top + PLOT_HEIGHT * (1.0 - v / y_max);

    let (op, k) = (rows[0].op, rows[0].k);
    let case = k.map_or(String::new(), |k| format!(", k = {k}"));
    let mut s = String::new();
    let _ = writeln!(
        s,
        "<text x=\"{left}\" y=\"18\" font-size=\"14\" font-weight=\"bold\">{} on {}{} ({unit}, higher is better)</text>",
        escape(op),
        escape(&report.adapter.name),
        escape(&case)
    );
    legend(&mut s, &series, &legend_at);
    // Axes, grid and tick labels.
    for i in 0..=5 {
        let v = y_max * f64::from(i) / 5.0;
        let y = y_of(v);
        let _ = writeln!(
            s,
            "<line x1=\"{left}\" x2=\"{:.1}\" y1=\"{y:.1}\" y2=\"{y:.1}\" stroke=\"#ddd\"/>\
             <text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\">{}</text>",
            width - RIGHT,
            left - 6.0,
            y + 4.0,
            tick(v)
        );
    }
    let _ = writeln!(
        s,
        "<line x1=\"{left}\" x2=\"{left}\" y1=\"{plot_top:.1}\" y2=\"{:.1}\" stroke=\"black\"/>\
         <line x1=\"{left}\" x2=\"{:.1}\" y1=\"{:.1}\" y2=\"{:.1}\" stroke=\"black\"/>",
        plot_top + PLOT_HEIGHT,
        width - RIGHT,
        plot_top + PLOT_HEIGHT,
        plot_top + PLOT_HEIGHT
    );
    let _ = writeln!(
        s,
        "<text transform=\"translate(16,{:.1}) rotate(-90)\" text-anchor=\"middle\">{unit}</text>",
        plot_top + PLOT_HEIGHT / 2.0
    );
    // Bars, and the matrix name under each group.
    for (g, matrix) in matrices.iter().enumerate() {
        let x0 = left + GROUP_GAP / 2.0 + g as f64 * group;
        for (i, series) in series.iter().enumerate() {
            if let Some((v, title)) = bar(matrix, series) {
                let y = y_of(v);
                let _ = writeln!(
                    s,
                    "<rect x=\"{:.1}\" y=\"{y:.1}\" width=\"{:.1}\" height=\"{:.1}\" fill=\"{}\"><title>{}</title></rect>",
                    x0 + i as f64 * BAR,
                    BAR - 1.0,
                    plot_top + PLOT_HEIGHT - y,
                    series.colour,
                    escape(&title)
                );
            }
        }
        let label_x = x0 + series.len() as f64 * BAR / 2.0;
        let _ = writeln!(
            s,
            "<text transform=\"translate({label_x:.1},{:.1}) rotate(-{LABEL_ANGLE})\" text-anchor=\"end\">{}</text>",
            plot_top + PLOT_HEIGHT + 14.0,
            escape(matrix)
        );
    }
    if let Some(copy) = copy_line {
        let y = y_of(copy);
        let _ = writeln!(
            s,
            "<line x1=\"{left}\" x2=\"{:.1}\" y1=\"{y:.1}\" y2=\"{y:.1}\" stroke=\"#c00\" stroke-dasharray=\"6,4\"/>\
             <text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\" fill=\"#c00\">copy bandwidth {copy:.0} GB/s</text>",
            width - RIGHT,
            width - RIGHT,
            y - 4.0
        );
    }
    (width, height, s)
}

/// Approximate text width of a legend entry: swatch, name, spacing.
fn legend_width(series: &Series) -> f64 {
    14.0 + series.name.chars().count() as f64 * 6.5 + 18.0
}

/// Where each legend entry goes: left to right from `(left, top)`, wrapping at the panel's
/// right edge.
fn legend_positions(series: &[Series], left: f64, width: f64, top: f64) -> Vec<(f64, f64)> {
    let (mut x, mut y) = (left, top);
    series
        .iter()
        .map(|s| {
            if x + legend_width(s) > width - RIGHT && x > left {
                x = left;
                y += LEGEND_ROW;
            }
            let at = (x, y);
            x += legend_width(s);
            at
        })
        .collect()
}

fn legend(out: &mut String, series: &[Series], positions: &[(f64, f64)]) {
    for (s, &(x, y)) in series.iter().zip(positions) {
        let _ = writeln!(
            out,
            "<rect x=\"{x:.1}\" y=\"{y:.1}\" width=\"10\" height=\"10\" fill=\"{}\"/>\
             <text x=\"{:.1}\" y=\"{:.1}\">{}</text>",
            s.colour,
            x + 14.0,
            y + 9.0,
            escape(&s.name)
        );
    }
}

/// The smallest round number (1, 1.5, 2, 2.5, 3, 4, 5, 6 or 8 × 10ⁿ) at or above `v` (1 for
/// nothing to show).
fn nice_ceiling(v: f64) -> f64 {
    if v <= 0.0 || !v.is_finite() {
        return 1.0;
    }
    let magnitude = 10f64.powf(v.log10().floor());
    [1.0, 1.5, 2.0, 2.5, 3.0, 4.0, 5.0, 6.0, 8.0, 10.0]
        .iter()
        .map(|f| f * magnitude)
        .find(|&c| c >= v)
        .unwrap_or(10.0 * magnitude)
}

/// A tick value without needless decimals.
fn tick(v: f64) -> String {
    if v == 0.0 || v >= 10.0 {
        format!("{v:.0}")
    } else if v >= 1.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    }
}

fn escape(text: &str) -> String {
    text.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}
