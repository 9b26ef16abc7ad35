//! Seeded percentile bootstrap over tasks. Every statistic here is a ratio of sums over tasks
//! (a macro mean is a ratio with denominator 1 per task), so one resampling loop serves Table 1,
//! the paired differences and the subsets, in O(resamples × clusters).
//!
//! Tasks come in clusters: the variants of one template share an instruction shape, slots and
//! criteria, so their outcomes are correlated, and resampling variants as if independent would
//! make intervals too narrow. The resampling unit is therefore the cluster (the template): each
//! resample draws templates with replacement and takes every task of each drawn template.

/// One task's contribution to a statistic: the statistic over a set of tasks is
/// `Σ num / Σ den` (null when `Σ den` is 0).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Ratio {
    /// Numerator (a task mean, or a count of matched items).
    pub num: f64,
    /// Denominator (1 for a task mean, or a count of items).
    pub den: f64,
}

impl Ratio {
    /// A macro-averaged task value: the task mean with weight 1.
    pub fn mean(value: f64) -> Self {
        Self {
            num: value,
            den: 1.0,
        }
    }

    /// The task's own value, null when it has nothing to divide by.
    pub fn value(self) -> Option<f64> {
        (self.den > 0.0).then(|| self.num / self.den)
    }
}

/// A point estimate with its confidence interval and the numbers of tasks and clusters
/// (templates) behind it.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Estimate {
    /// The statistic on all tasks; null when undefined.
    pub value: Option<f64>,
    /// Lower percentile bound; null when undefined.
    pub ci_low: Option<f64>,
    /// Upper percentile bound; null when undefined.
    pub ci_high: Option<f64>,
    /// Tasks the statistic is computed over.
    pub n: u32,
    /// Clusters (templates) those tasks come from: the resampling unit of the interval.
    pub clusters: u32,
}

/// Bootstrap settings: why a number is uncertain is part of the result, so every estimate in
/// the aggregate tables carries an interval computed with these.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Bootstrap {
    /// Number of resamples (B); 0 disables intervals.
    pub resamples: u32,
    /// Root seed; each statistic's stream is derived from it and the statistic's key.
    pub seed: u64,
    /// Confidence level, e.g. 0.95.
    pub level: f64,
}

impl Default for Bootstrap {
    fn default() -> Self {
        Self {
            resamples: 1000,
            seed: 0,
            level: 0.95,
        }
    }
}

/// `Σ num / Σ den` of the tasks.
fn ratio_of(items: &[Ratio]) -> Option<f64> {
    let (num, den) = items
        .iter()
        .fold((0.0, 0.0), |(n, d), r| (n + r.num, d + r.den));
    (den > 0.0).then(|| num / den)
}

/// Sums of each cluster: `sums[c]` adds the items whose cluster index is `c`.
fn cluster_sums(items: &[Ratio], clusters: &[usize]) -> Vec<(f64, f64)> {
    let n = clusters.iter().copied().max().map_or(0, |m| m + 1);
    let mut sums = vec![(0.0, 0.0); n];
    for (r, &c) in items.iter().zip(clusters) {
        sums[c].0 += r.num;
        sums[c].1 += r.den;
    }
    sums
}

/// Dense cluster indices (0, 1, …, in first-seen order) for cluster labels.
pub fn cluster_index<S: AsRef<str>>(labels: &[S]) -> Vec<usize> {
    let mut seen: std::collections::HashMap<&str, usize> = std::collections::HashMap::new();
    labels
        .iter()
        .map(|l| {
            let next = seen.len();
            *seen.entry(l.as_ref()).or_insert(next)
        })
        .collect()
}

impl Bootstrap {
    /// `Σ num / Σ den` over tasks, each its own cluster, with its interval. `key` names the
    /// statistic (e.g. `variant/metric`) so each one has its own reproducible random stream.
    pub fn ratio(&self, key: &str, items: &[Ratio]) -> Estimate {
        let clusters: Vec<usize> = (0..items.len()).collect();
        self.ratio_clustered(key, items, &clusters)
    }

    /// `Σ num / Σ den` over tasks with an interval that resamples clusters: `clusters[i]` is the
    /// cluster (template) index of `items[i]`, dense from 0 (see [`cluster_index`]).
    pub fn ratio_clustered(&self, key: &str, items: &[Ratio], clusters: &[usize]) -> Estimate {
        let value = ratio_of(items);
        let sums = cluster_sums(items, clusters);
        let (ci_low, ci_high) = self.interval(key, sums.len(), |idx| {
            let (num, den) = idx
                .iter()
                .fold((0.0, 0.0), |(n, d), &c| (n + sums[c].0, d + sums[c].1));
            (den > 0.0).then(|| num / den)
        });
        Estimate {
            value,
            ci_low,
            ci_high,
            n: items.len() as u32,
            clusters: sums.len() as u32,
        }
    }

    /// The paired difference `ratio(b) − ratio(a)` over tasks both variants have, each its own
    /// cluster.
    pub fn paired(&self, key: &str, pairs: &[(Ratio, Ratio)]) -> Estimate {
        let clusters: Vec<usize> = (0..pairs.len()).collect();
        self.paired_clustered(key, pairs, &clusters)
    }

    /// The paired difference with an interval that resamples clusters; each resample draws the
    /// same clusters for both variants, as a paired test must.
    pub fn paired_clustered(
        &self,
        key: &str,
        pairs: &[(Ratio, Ratio)],
        clusters: &[usize],
    ) -> Estimate {
        let (a, b): (Vec<Ratio>, Vec<Ratio>) = pairs.iter().copied().unzip();
        let value = (|| Some(ratio_of(&b)? - ratio_of(&a)?))();
        let (sa, sb) = (cluster_sums(&a, clusters), cluster_sums(&b, clusters));
        let (ci_low, ci_high) = self.interval(key, sa.len(), |idx| {
            let sum = |s: &[(f64, f64)]| {
                let (n, d) = idx
                    .iter()
                    .fold((0.0, 0.0), |(n, d), &c| (n + s[c].0, d + s[c].1));
                (d > 0.0).then(|| n / d)
            };
            Some(sum(&sb)? - sum(&sa)?)
        });
        Estimate {
            value,
            ci_low,
            ci_high,
            n: pairs.len() as u32,
            clusters: sa.len() as u32,
        }
    }

    /// Percentile interval of `stat` over resamples of `n` units drawn with replacement.
    /// Resamples where the statistic is undefined are dropped; null when none is defined.
    fn interval(
        &self,
        key: &str,
        n: usize,
        stat: impl Fn(&[usize]) -> Option<f64>,
    ) -> (Option<f64>, Option<f64>) {
        if n == 0 || self.resamples == 0 {
            return (None, None);
        }
        let mut rng = fastrand::Rng::with_seed(stream_seed(self.seed, key));
        let mut idx = vec![0usize; n];
        let mut stats = Vec::with_capacity(self.resamples as usize);
        for _ in 0..self.resamples {
            idx.iter_mut().for_each(|i| *i = rng.usize(0..n));
            stats.extend(stat(&idx));
        }
        if stats.is_empty() {
            return (None, None);
        }
        stats.sort_by(f64::total_cmp);
        let tail = (1.0 - self.level) / 2.0;
        (
            Some(quantile(&stats, tail)),
            Some(quantile(&stats, 1.0 - tail)),
        )
    }
}

/// Linear-interpolated quantile of sorted, non-empty `values`.
pub fn quantile(values: &[f64], q: f64) -> f64 {
    let pos = q.clamp(0.0, 1.0) * (values.len() - 1) as f64;
    let (lo, hi) = (pos.floor() as usize, pos.ceil() as usize);
    values[lo] + (values[hi] - values[lo]) * (pos - lo as f64)
}

/// FNV-1a of `key` mixed with the root seed: a stable per-statistic stream.
fn stream_seed(seed: u64, key: &str) -> u64 {
    key.bytes().fold(0xcbf2_9ce4_8422_2325 ^ seed, |h, b| {
        (h ^ b as u64).wrapping_mul(0x0100_0000_01b3)
    })
}
