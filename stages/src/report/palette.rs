//! One colour per variant for the whole report (Table 1's header swatches, every chart's bars
//! and lines, the episode list), so a model keeps its colour from table to figure to episode.
//! The first twelve are a qualitative palette whose neighbours are easy to tell apart (Tableau
//! 10 and two more); beyond that, hues step by the golden angle, so no two variants share one.

/// The colours of the first variants, in order.
const BASE: [&str; 12] = [
    "#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1", "#ff9da7",
    "#9c755f", "#5f5f5f", "#17becf", "#8c564b",
];

/// The colour of the `i`-th variant (0-based).
pub fn color(i: usize) -> String {
    match BASE.get(i) {
        Some(c) => (*c).to_string(),
        None => {
            let hue = (i as f64 * 137.508) % 360.0;
            let light = if i.is_multiple_of(2) { 42 } else { 58 };
            format!("hsl({hue:.0}, 65%, {light}%)")
        }
    }
}

/// A variant's colour by its position in `variants`, grey for one not listed.
pub fn color_of(variants: &[String], variant: &str) -> String {
    variants
        .iter()
        .position(|v| v == variant)
        .map_or_else(|| "#999999".to_string(), color)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn forty_variants_get_forty_colours() {
        let all: std::collections::HashSet<String> = (0..40).map(color).collect();
        assert_eq!(all.len(), 40);
        assert_eq!(color_of(&["a".into(), "b".into()], "b"), color(1));
    }
}
