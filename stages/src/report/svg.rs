//! Inline SVG plots for the report: no scripts, no network, readable from a file:// URL.

use std::fmt::Write;

/// Escapes text for SVG/HTML.
pub fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// A horizontal bar chart of `(label, value)`; negative values extend left of a zero axis (the
/// Figure 2 deltas). `percent` shows values ×100; `signed` marks them as differences (`+3.0`).
pub fn bars(
    id: &str,
    title: &str,
    items: &[(String, Option<f64>)],
    percent: bool,
    signed: bool,
) -> String {
    let (w, label_w, row_h) = (760.0, 300.0, 22.0);
    let h = 40.0 + row_h * items.len().max(1) as f64;
    let vals: Vec<f64> = items.iter().filter_map(|i| i.1).collect();
    let max = vals.iter().fold(0.0f64, |m, v| m.max(*v)).max(1e-9);
    let min = vals.iter().fold(0.0f64, |m, v| m.min(*v));
    let plot_w = w - label_w - 70.0;
    let x = |v: f64| label_w + (v - min) / (max - min) * plot_w;
    let mut s = String::new();
    let _ = write!(
        s,
        r#"<svg id="{id}" class="plot" xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" viewBox="0 0 {w} {h}" role="img"><title>{t}</title><text x="4" y="16" class="ptitle">{t}</text>"#,
        t = esc(title)
    );
    let zero = x(0.0);
    let _ = write!(
        s,
        r##"<line x1="{zero:.1}" y1="24" x2="{zero:.1}" y2="{:.1}" stroke="#444"/>"##,
        h - 8.0
    );
    for (i, (label, value)) in items.iter().enumerate() {
        let y = 28.0 + row_h * i as f64;
        let _ = write!(
            s,
            r#"<text x="{:.1}" y="{:.1}" text-anchor="end" class="plabel">{}</text>"#,
            label_w - 6.0,
            y + 13.0,
            esc(label)
        );
        let Some(v) = value else {
            let _ = write!(
                s,
                r#"<text x="{zero:.1}" y="{:.1}" class="pval">n/a</text>"#,
                y + 13.0
            );
            continue;
        };
        let (x0, x1) = if *v >= 0.0 {
            (zero, x(*v))
        } else {
            (x(*v), zero)
        };
        let fill = if *v >= 0.0 { "#3b7dd8" } else { "#d8553b" };
        let shown = if percent && (signed || min < 0.0) {
            format!("{:+.1}", v * 100.0)
        } else if percent {
            format!("{:.1}%", v * 100.0)
        } else {
            format!("{v:.2}")
        };
        let _ = write!(
            s,
            r#"<rect x="{x0:.1}" y="{y:.1}" width="{:.1}" height="{:.1}" fill="{fill}"/><text x="{:.1}" y="{:.1}" class="pval">{shown}</text>"#,
            (x1 - x0).max(0.5),
            row_h - 6.0,
            x1.max(zero) + 4.0,
            y + 13.0
        );
    }
    s.push_str("</svg>");
    s
}

/// One line of a line chart: a name and `(x index, y)` points.
pub type Series = (String, Vec<(usize, f64)>);

/// A line chart over categorical x positions (`x_labels`), y in [0, 1] shown as percent (the
/// Figure 4 curve of personalization against history top-k).
pub fn lines(id: &str, title: &str, x_labels: &[String], series: &[Series]) -> String {
    let (w, h, left, top, bottom, right) = (760.0, 340.0, 60.0, 30.0, 50.0, 200.0);
    let plot_w = w - left - right;
    let plot_h = h - top - bottom;
    let n = x_labels.len().max(2) - 1;
    let x = |i: usize| left + plot_w * i as f64 / n as f64;
    let y = |v: f64| top + plot_h * (1.0 - v.clamp(0.0, 1.0));
    let colors = [
        "#3b7dd8", "#d8553b", "#2e9d5b", "#9b59b6", "#e0a526", "#555555",
    ];
    let mut s = String::new();
    let _ = write!(
        s,
        r#"<svg id="{id}" class="plot" xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" viewBox="0 0 {w} {h}" role="img"><title>{t}</title><text x="4" y="16" class="ptitle">{t}</text>"#,
        t = esc(title)
    );
    for tick in [0.0, 0.25, 0.5, 0.75, 1.0] {
        let _ = write!(
            s,
            r##"<line x1="{left}" y1="{yy:.1}" x2="{:.1}" y2="{yy:.1}" stroke="#ddd"/><text x="{:.1}" y="{:.1}" text-anchor="end" class="plabel">{:.0}%</text>"##,
            left + plot_w,
            left - 6.0,
            y(tick) + 4.0,
            tick * 100.0,
            yy = y(tick)
        );
    }
    for (i, label) in x_labels.iter().enumerate() {
        let _ = write!(
            s,
            r#"<text x="{:.1}" y="{:.1}" text-anchor="middle" class="plabel">{}</text>"#,
            x(i),
            h - bottom + 18.0,
            esc(label)
        );
    }
    for (k, (name, points)) in series.iter().enumerate() {
        let color = colors[k % colors.len()];
        let path: Vec<String> = points
            .iter()
            .map(|&(i, v)| format!("{:.1},{:.1}", x(i), y(v)))
            .collect();
        let _ = write!(
            s,
            r#"<polyline class="series" fill="none" stroke="{color}" stroke-width="2" points="{}"/>"#,
            path.join(" ")
        );
        for &(i, v) in points {
            let _ = write!(
                s,
                r#"<circle cx="{:.1}" cy="{:.1}" r="3.5" fill="{color}"><title>{}: {:.1}%</title></circle>"#,
                x(i),
                y(v),
                esc(name),
                v * 100.0
            );
        }
        let _ = write!(
            s,
            r#"<text x="{:.1}" y="{:.1}" fill="{color}" class="plabel">{}</text>"#,
            left + plot_w + 10.0,
            top + 16.0 * (k as f64 + 1.0),
            esc(name)
        );
    }
    s.push_str("</svg>");
    s
}
