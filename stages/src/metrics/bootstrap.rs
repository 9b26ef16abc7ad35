//! Seeded percentile bootstrap over tasks. Every statistic here is a ratio of sums over tasks
//! (a macro mean is a ratio with denominator 1 per task), so one resampling loop serves Table 1,
//! the paired differences and the subsets, in O(resamples × tasks).

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

/// A point estimate with its confidence interval and the number of tasks behind it.
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

/// `Σ num / Σ den` of the tasks at `idx` (all tasks when `idx` is None).
fn ratio_of(items: &[Ratio], idx: Option<&[usize]>) -> Option<f64> {
    let (mut num, mut den) = (0.0, 0.0);
    let mut add = |r: &Ratio| {
        num += r.num;
        den += r.den;
    };
    match idx {
        Some(idx) => idx.iter().for_each(|&i| add(&items[i])),
        None => items.iter().for_each(add),
    }
    (den > 0.0).then(|| num / den)
}

impl Bootstrap {
    /// `Σ num / Σ den` over tasks with its interval. `key` names the statistic (e.g.
    /// `variant/metric`) so each one has its own reproducible random stream.
    pub fn ratio(&self, key: &str, items: &[Ratio]) -> Estimate {
        let value = ratio_of(items, None);
        let (ci_low, ci_high) = self.interval(key, items.len(), |idx| ratio_of(items, Some(idx)));
        Estimate {
            value,
            ci_low,
            ci_high,
            n: items.len() as u32,
        }
    }

    /// The paired difference `ratio(b) − ratio(a)` over tasks both variants have; each
    /// resample draws the same tasks for both, as a paired test must.
    pub fn paired(&self, key: &str, pairs: &[(Ratio, Ratio)]) -> Estimate {
        let diff = |idx: Option<&[usize]>| {
            let (a, b): (Vec<Ratio>, Vec<Ratio>) = match idx {
                Some(idx) => idx.iter().map(|&i| pairs[i]).unzip(),
                None => pairs.iter().copied().unzip(),
            };
            Some(ratio_of(&b, None)? - ratio_of(&a, None)?)
        };
        let value = diff(None);
        let (ci_low, ci_high) = self.interval(key, pairs.len(), |idx| diff(Some(idx)));
        Estimate {
            value,
            ci_low,
            ci_high,
            n: pairs.len() as u32,
        }
    }

    /// Percentile interval of `stat` over resamples of `n` tasks drawn with replacement.
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
