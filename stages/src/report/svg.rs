//! Inline SVG plots for the report: no scripts, no network, readable from a file:// URL.

use std::fmt::Write;

/// Escapes text for SVG/HTML.
pub fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// One bar of a [`bars`] chart.
#[derive(Debug, Clone, PartialEq)]
pub struct Bar {
    /// The bar's colour (the variant's, see [`super::palette`]).
    pub color: String,
    /// Who the bar is (the variant, with a qualifier such as the judge mode), in its tooltip.
    pub name: String,
    /// The value; `None` is drawn as `n/a`.
    pub value: Option<f64>,
    /// Text after the value (e.g. `llm` when judge modes differ), or empty.
    pub note: String,
}

/// Rough width of `text` at the report's label size (11px), generous so nothing is clipped.
fn text_width(text: &str) -> f64 {
    text.chars().count() as f64 * 7.0
}

/// A horizontal bar chart of groups (perturbation subsets, failure labels), one bar per
/// variant in each, coloured by variant (the legend is the page's, in HTML, where names wrap
/// instead of being clipped); negative values extend left of a zero axis (the Figure 2
/// deltas). `percent` shows values ×100; `signed` marks them as differences (`+3.0`). The
/// drawing is as wide as its labels need and scales to the page.
pub fn bars(
    id: &str,
    title: &str,
    groups: &[(String, Vec<Bar>)],
    percent: bool,
    signed: bool,
) -> String {
    let (bar_h, gap, group_gap, top) = (14.0, 2.0, 12.0, 30.0);
    let label_w = groups
        .iter()
        .map(|(g, _)| text_width(g))
        .fold(60.0f64, f64::max)
        + 14.0;
    let w = 1100.0f64.max(label_w + 400.0).max(text_width(title) + 20.0);
    let rows: usize = groups.iter().map(|(_, b)| b.len().max(1)).sum();
    let h = top + rows as f64 * (bar_h + gap) + groups.len().max(1) as f64 * group_gap + 10.0;
    let vals: Vec<f64> = groups
        .iter()
        .flat_map(|(_, b)| b.iter().filter_map(|b| b.value))
        .collect();
    let max = vals.iter().fold(0.0f64, |m, v| m.max(*v)).max(1e-9);
    let min = vals.iter().fold(0.0f64, |m, v| m.min(*v));
    let plot_w = w - label_w - 90.0;
    let x = |v: f64| label_w + (v - min) / (max - min) * plot_w;
    let mut s = String::new();
    let _ = write!(
        s,
        r#"<svg id="{id}" class="plot" xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" viewBox="0 0 {w} {h}" style="max-width:{w}px" role="img"><title>{t}</title><text x="4" y="16" class="ptitle">{t}</text>"#,
        t = esc(title)
    );
    let zero = x(0.0);
    let _ = write!(
        s,
        r##"<line x1="{zero:.1}" y1="{:.1}" x2="{zero:.1}" y2="{:.1}" stroke="#444"/>"##,
        top - 4.0,
        h - 6.0
    );
    let mut y = top;
    for (group, items) in groups {
        let _ = write!(
            s,
            r#"<text x="{:.1}" y="{:.1}" text-anchor="end" class="plabel">{}</text>"#,
            label_w - 8.0,
            y + bar_h - 3.0,
            esc(group)
        );
        for bar in items {
            s.push_str(&bar_svg(
                bar,
                y,
                bar_h,
                (zero, &x),
                (percent, signed || min < 0.0),
            ));
            y += bar_h + gap;
        }
        y += group_gap;
    }
    s.push_str("</svg>");
    s
}

/// One bar at height `y`, with its value after it and its name and value as a tooltip.
fn bar_svg(
    bar: &Bar,
    y: f64,
    bar_h: f64,
    (zero, x): (f64, &dyn Fn(f64) -> f64),
    (percent, signed): (bool, bool),
) -> String {
    let note = if bar.note.is_empty() {
        String::new()
    } else {
        format!(" ({})", bar.note)
    };
    let Some(v) = bar.value else {
        return format!(
            r#"<text x="{:.1}" y="{:.1}" class="pval"><title>{}</title>n/a{}</text>"#,
            zero + 4.0,
            y + bar_h - 3.0,
            esc(&bar.name),
            esc(&note)
        );
    };
    let (x0, x1) = if v >= 0.0 { (zero, x(v)) } else { (x(v), zero) };
    let shown = if percent && signed {
        format!("{:+.1}", v * 100.0)
    } else if percent {
        format!("{:.1}%", v * 100.0)
    } else {
        format!("{v:.2}")
    };
    format!(
        r#"<rect x="{x0:.1}" y="{y:.1}" width="{:.1}" height="{bar_h:.1}" fill="{}"><title>{}: {shown}{}</title></rect><text x="{:.1}" y="{:.1}" class="pval">{shown}{}</text>"#,
        (x1 - x0).max(0.5),
        bar.color,
        esc(&bar.name),
        esc(&note),
        x1.max(zero) + 4.0,
        y + bar_h - 3.0,
        esc(&note)
    )
}

/// One line of a line chart: a name, its colour and `(x index, y)` points.
pub type Series = (String, String, Vec<(usize, f64)>);

/// A line chart over categorical x positions (`x_labels`), y in [0, 1] shown as percent (the
/// Figure 4 curve of personalization against history top-k). Series are coloured as given;
/// their names are in the tooltips and in the page's HTML legend, never clipped at the edge.
pub fn lines(id: &str, title: &str, x_labels: &[String], series: &[Series]) -> String {
    let label_room = x_labels
        .iter()
        .map(|l| text_width(l))
        .fold(0.0f64, f64::max);
    let (w, h, left, top, bottom) = (760.0f64, 340.0, 60.0, 30.0, 50.0);
    let right = 20.0 + label_room / 2.0;
    let w = w.max(text_width(title) + 20.0);
    let plot_w = w - left - right;
    let plot_h = h - top - bottom;
    let n = x_labels.len().max(2) - 1;
    let x = |i: usize| left + plot_w * i as f64 / n as f64;
    let y = |v: f64| top + plot_h * (1.0 - v.clamp(0.0, 1.0));
    let mut s = String::new();
    let _ = write!(
        s,
        r#"<svg id="{id}" class="plot" xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" viewBox="0 0 {w} {h}" style="max-width:{w}px" role="img"><title>{t}</title><text x="4" y="16" class="ptitle">{t}</text>"#,
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
    for (name, color, points) in series {
        let path: Vec<String> = points
            .iter()
            .map(|&(i, v)| format!("{:.1},{:.1}", x(i), y(v)))
            .collect();
        let _ = write!(
            s,
            r#"<polyline class="series" fill="none" stroke="{color}" stroke-width="2" points="{}"><title>{}</title></polyline>"#,
            path.join(" "),
            esc(name)
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
    }
    s.push_str("</svg>");
    s
}
