//! pass^k (τ-bench: the chance that k independent epochs of a task all succeed) and pass@k (at
//! least one succeeds), per task from its n epochs with c successes, averaged over tasks.

/// pass^k of one task: C(c,k)/C(n,k); null when the task has fewer than k epochs.
pub fn pass_hat_k(n: u32, c: u32, k: u32) -> Option<f64> {
    if k == 0 || k > n || c > n {
        return None;
    }
    Some(
        (0..k)
            .map(|i| (c as f64 - i as f64).max(0.0) / (n - i) as f64)
            .product(),
    )
}

/// pass@k of one task: 1 − C(n−c,k)/C(n,k); null when the task has fewer than k epochs.
pub fn pass_at_k(n: u32, c: u32, k: u32) -> Option<f64> {
    if k == 0 || k > n || c > n {
        return None;
    }
    let all_fail: f64 = (0..k)
        .map(|i| ((n - c) as f64 - i as f64).max(0.0) / (n - i) as f64)
        .product();
    Some(1.0 - all_fail)
}

/// One row of the `pass_k` table for a variant.
#[derive(Debug, Clone, PartialEq)]
pub struct PassK {
    /// k.
    pub k: u32,
    /// Mean pass^k over tasks with at least k scored epochs.
    pub pass_hat_k: f64,
    /// Mean pass@k over the same tasks.
    pub pass_at_k: f64,
    /// Tasks averaged.
    pub n: u32,
}

/// pass^k and pass@k for k = 1..=max epochs, from per-task `(epochs, successes)`. A task with
/// fewer than k scored epochs is left out of k's mean (its `n` says so).
pub fn pass_k(tasks: &[(u32, u32)]) -> Vec<PassK> {
    let max = tasks.iter().map(|t| t.0).max().unwrap_or(0);
    (1..=max)
        .filter_map(|k| {
            let hat: Vec<f64> = tasks
                .iter()
                .filter_map(|&(n, c)| pass_hat_k(n, c, k))
                .collect();
            let at: Vec<f64> = tasks
                .iter()
                .filter_map(|&(n, c)| pass_at_k(n, c, k))
                .collect();
            (!hat.is_empty()).then(|| PassK {
                k,
                pass_hat_k: hat.iter().sum::<f64>() / hat.len() as f64,
                pass_at_k: at.iter().sum::<f64>() / at.len() as f64,
                n: hat.len() as u32,
            })
        })
        .collect()
}
