//! Agreement between two raters on categorical labels and Cohen's κ = (p_o − p_e)/(1 − p_e),
//! as iPrefBench §4.5 reports between the rule judge, the LLM judge and human annotators.

use std::collections::BTreeMap;

/// Agreement of two raters over the same items.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Agreement {
    /// Items both raters labelled.
    pub n: u32,
    /// Items with the same label.
    pub agree: u32,
    /// Observed agreement p_o; null with no items.
    pub p_o: Option<f64>,
    /// Chance agreement p_e from the two raters' marginals; null with no items.
    pub p_e: Option<f64>,
    /// Cohen's κ; null when undefined (no items, or p_e = 1: both raters used one same label).
    pub kappa: Option<f64>,
}

/// Agreement over `(rater_a, rater_b)` label pairs.
pub fn agreement<S: AsRef<str>>(pairs: &[(S, S)]) -> Agreement {
    let n = pairs.len();
    if n == 0 {
        return Agreement::default();
    }
    let mut a_counts: BTreeMap<&str, f64> = BTreeMap::new();
    let mut b_counts: BTreeMap<&str, f64> = BTreeMap::new();
    let mut agree = 0u32;
    for (a, b) in pairs {
        let (a, b) = (a.as_ref(), b.as_ref());
        *a_counts.entry(a).or_default() += 1.0;
        *b_counts.entry(b).or_default() += 1.0;
        agree += u32::from(a == b);
    }
    let total = n as f64;
    let p_o = agree as f64 / total;
    let p_e: f64 = a_counts
        .iter()
        .map(|(label, ca)| ca / total * b_counts.get(label).copied().unwrap_or(0.0) / total)
        .sum();
    let kappa = (p_e < 1.0 - 1e-12).then(|| (p_o - p_e) / (1.0 - p_e));
    Agreement {
        n: n as u32,
        agree,
        p_o: Some(p_o),
        p_e: Some(p_e),
        kappa,
    }
}
