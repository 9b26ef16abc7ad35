//! Task subsets of episode stages (`prefflow run --tasks ID,… | --sample N | --limit N`): a smoke
//! run of a few tasks, or a sample that keeps the benchmark's mix of perturbations, before
//! paying for the whole set. The engine applies the subset to the per-item instances of the
//! episode kinds ([`EPISODE_KINDS`]); each task is the same cached item in a subset and in the
//! full run, so a full run afterwards plays only the rest, and downstream tables (Table 1's
//! `n`, the report) show what was played.

use std::collections::BTreeMap;

use polars::prelude::*;
use prefflow_engine::keys::hash_bytes;
use prefflow_engine::subset::ItemSubset;

use crate::report::text_column;
use crate::tables::knowu::KnowuTaskRow;
use crate::tables::tasks::{BUNDLE, PERTURBATION};
use crate::tasks::Perturbation;

/// The stage kinds whose items are tasks played by an agent: the stages a task subset applies to.
pub const EPISODE_KINDS: [&str; 3] = ["run_episodes", "run_knowu_episodes", "run_remote_episodes"];

/// Which tasks an episode stage plays.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TaskSubset {
    /// Exactly these task ids (each must be a task of the stage's input).
    Tasks(Vec<String>),
    /// `n` tasks drawn with `seed`, stratified by perturbation subset: each subset gets its
    /// share of `n` (largest remainders, at least one task for every subset when `n` allows),
    /// and within a subset the tasks come in an order hashed from `seed` and the task id, so a
    /// larger sample keeps a smaller one's tasks (their episodes stay cached).
    Sample {
        /// How many tasks.
        n: usize,
        /// The draw's seed.
        seed: u64,
    },
    /// The first `n` tasks in the input's order.
    Limit(usize),
}

impl ItemSubset for TaskSubset {
    fn describe(&self) -> String {
        match self {
            TaskSubset::Tasks(ids) => format!("--tasks {}", ids.join(",")),
            TaskSubset::Sample { n, seed } => {
                format!("--sample {n} --sample-seed {seed} (stratified by perturbation)")
            }
            TaskSubset::Limit(n) => format!("--limit {n}"),
        }
    }

    fn select(&self, main: &DataFrame, column: &str) -> Result<Vec<String>, String> {
        let ids = distinct(&text_column(main, column).map_err(|e| e.to_string())?);
        match self {
            TaskSubset::Tasks(wanted) => check_known(wanted, &ids).map(|()| wanted.clone()),
            TaskSubset::Limit(n) => Ok(ids.into_iter().take(*n).collect()),
            TaskSubset::Sample { n, seed } => {
                let strata = strata(main, column).map_err(|e| e.to_string())?;
                Ok(sample(&strata, *n, *seed))
            }
        }
    }
}

/// Values in first-appearance order, each once.
fn distinct(values: &[Option<String>]) -> Vec<String> {
    let mut seen = std::collections::HashSet::new();
    values
        .iter()
        .flatten()
        .filter(|v| seen.insert(v.as_str()))
        .cloned()
        .collect()
}

/// Every asked-for id must be a task of the input; the error names the unknown ones and the
/// closest known id of each.
fn check_known(wanted: &[String], ids: &[String]) -> Result<(), String> {
    let unknown: Vec<String> = wanted
        .iter()
        .filter(|w| !ids.contains(w))
        .map(|w| match closest(w, ids) {
            Some(c) => format!("`{w}` (did you mean `{c}`?)"),
            None => format!("`{w}`"),
        })
        .collect();
    if unknown.is_empty() {
        return Ok(());
    }
    Err(format!(
        "--tasks names {} that the stage's input does not have ({} tasks, e.g. {}); list ids as `prefflow show taskset.tasks` prints them",
        unknown.join(", "),
        ids.len(),
        ids.iter().take(3).cloned().collect::<Vec<_>>().join(", ")
    ))
}

/// The known id sharing the longest prefix with `wanted` (at least 4 characters).
fn closest<'a>(wanted: &str, ids: &'a [String]) -> Option<&'a String> {
    let common = |id: &String| {
        wanted
            .chars()
            .zip(id.chars())
            .take_while(|(a, b)| a == b)
            .count()
    };
    ids.iter()
        .max_by_key(|id| common(id))
        .filter(|id| common(id) >= 4)
}

/// Task ids by stratum (perturbation subset), each list in input order. The stratum is the
/// task's perturbation: from the `bundle` JSON of a task-set input, else a `perturbation`
/// column, else (KnowU) a `split` column; an input with none of them is one stratum.
fn strata(main: &DataFrame, column: &str) -> PolarsResult<BTreeMap<String, Vec<String>>> {
    let ids = text_column(main, column)?;
    let stratum: Vec<Option<String>> = if main.schema().contains(BUNDLE) {
        text_column(main, BUNDLE)?
            .into_iter()
            .map(|b| b.as_deref().and_then(perturbation_of))
            .collect()
    } else if main.schema().contains(PERTURBATION) {
        text_column(main, PERTURBATION)?
    } else {
        text_column(main, KnowuTaskRow::split)?
    };
    let mut out: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for (id, s) in ids.into_iter().zip(stratum) {
        let Some(id) = id else { continue };
        let list = out.entry(s.unwrap_or_default()).or_default();
        if !list.contains(&id) {
            list.push(id);
        }
    }
    Ok(out)
}

/// The perturbation of a bundle's task, read without parsing the whole bundle.
fn perturbation_of(bundle: &str) -> Option<String> {
    #[derive(serde::Deserialize)]
    struct Task {
        #[serde(default)]
        perturbation: Perturbation,
    }
    #[derive(serde::Deserialize)]
    struct Bundle {
        task: Task,
    }
    serde_json::from_str::<Bundle>(bundle)
        .ok()
        .map(|b| b.task.perturbation.as_str().to_string())
}

/// `n` ids drawn from `strata` (see [`TaskSubset::Sample`]), in stratum then draw order.
pub fn sample(strata: &BTreeMap<String, Vec<String>>, n: usize, seed: u64) -> Vec<String> {
    let total: usize = strata.values().map(Vec::len).sum();
    let shares = allocate(strata, n.min(total));
    strata
        .iter()
        .zip(shares)
        .flat_map(|((_, ids), share)| {
            let mut ordered: Vec<(String, &String)> = ids
                .iter()
                .map(|id| (hash_bytes(format!("{seed}\u{1f}{id}").as_bytes()), id))
                .collect();
            ordered.sort();
            ordered
                .into_iter()
                .take(share)
                .map(|(_, id)| id.clone())
                .collect::<Vec<_>>()
        })
        .collect()
}

/// Each stratum's share of `n` (≤ the total): one for every stratum first when `n` covers
/// them all, then the rest in proportion to size by largest remainder (ties by stratum name).
fn allocate(strata: &BTreeMap<String, Vec<String>>, n: usize) -> Vec<usize> {
    let sizes: Vec<usize> = strata.values().map(Vec::len).collect();
    let total: usize = sizes.iter().sum();
    if total == 0 {
        return vec![0; sizes.len()];
    }
    let base = usize::from(n >= sizes.len());
    let mut shares: Vec<usize> = sizes.iter().map(|s| base.min(*s)).collect();
    let left = n - shares.iter().sum::<usize>();
    let room: Vec<usize> = sizes.iter().zip(&shares).map(|(s, h)| s - h).collect();
    let room_total: usize = room.iter().sum();
    if room_total == 0 || left == 0 {
        return shares;
    }
    let exact: Vec<f64> = room
        .iter()
        .map(|r| left as f64 * *r as f64 / room_total as f64)
        .collect();
    for (share, e) in shares.iter_mut().zip(&exact) {
        *share += e.floor() as usize;
    }
    let mut order: Vec<usize> = (0..sizes.len()).collect();
    order.sort_by(|&a, &b| {
        let frac = |i: usize| exact[i] - exact[i].floor();
        frac(b).total_cmp(&frac(a)).then(a.cmp(&b))
    });
    let mut given: usize = shares.iter().sum();
    for i in order.into_iter().cycle().take(sizes.len() * 2) {
        if given >= n {
            break;
        }
        if shares[i] < sizes[i] {
            shares[i] += 1;
            given += 1;
        }
    }
    shares
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tables::tasks::BundleRow;

    fn strata_of(sizes: &[(&str, usize)]) -> BTreeMap<String, Vec<String>> {
        sizes
            .iter()
            .map(|(name, k)| {
                (
                    name.to_string(),
                    (0..*k).map(|i| format!("{name}-{i:02}")).collect(),
                )
            })
            .collect()
    }

    #[test]
    fn a_sample_keeps_every_subset_in_proportion_and_grows_by_adding() {
        // The released set's mix: 70 plain, 20 override, 20 shift, 20 unavailable.
        let strata = strata_of(&[
            ("instruction_override", 20),
            ("none", 70),
            ("preference_shift", 20),
            ("unavailable_option", 20),
        ]);
        let count =
            |ids: &[String], prefix: &str| ids.iter().filter(|i| i.starts_with(prefix)).count();
        let ten = sample(&strata, 10, 3);
        assert_eq!(ten.len(), 10);
        for s in [
            "instruction_override",
            "preference_shift",
            "unavailable_option",
        ] {
            assert!((1..=2).contains(&count(&ten, s)), "{s}: {ten:?}");
        }
        assert!((4..=6).contains(&count(&ten, "none-")), "{ten:?}");
        // Four tasks: one per subset.
        let four = sample(&strata, 4, 3);
        for s in ["instruction", "none", "preference", "unavailable"] {
            assert_eq!(count(&four, s), 1, "{four:?}");
        }
        // Nested: a larger sample with the same seed keeps the smaller one's tasks.
        let twenty = sample(&strata, 20, 3);
        assert!(
            ten.iter().all(|t| twenty.contains(t)),
            "{ten:?} ⊄ {twenty:?}"
        );
        // The seed matters; the same seed gives the same draw.
        assert_eq!(ten, sample(&strata, 10, 3));
        assert_ne!(ten, sample(&strata, 10, 4));
        // More than there are: everything, once.
        assert_eq!(sample(&strata, 500, 3).len(), 130);
        assert!(sample(&strata, 0, 3).is_empty());
    }

    fn bundles(rows: &[(&str, &str)]) -> DataFrame {
        let rows: Vec<BundleRow> = rows
            .iter()
            .map(|(id, p)| BundleRow {
                task_id: id.to_string(),
                bundle: serde_json::json!({ "task": { "perturbation": p } }).to_string(),
            })
            .collect();
        BundleRow::to_frame(&rows).unwrap()
    }

    #[test]
    fn subsets_select_from_the_input_and_name_unknown_ids() {
        let df = bundles(&[
            ("dinner-01", "none"),
            ("dinner-02", "preference_shift"),
            ("taxi-01", "unavailable_option"),
        ]);
        let limit = TaskSubset::Limit(2)
            .select(&df, BundleRow::task_id)
            .unwrap();
        assert_eq!(limit, ["dinner-01", "dinner-02"]);
        let picked = TaskSubset::Tasks(vec!["taxi-01".into()])
            .select(&df, BundleRow::task_id)
            .unwrap();
        assert_eq!(picked, ["taxi-01"]);
        let e = TaskSubset::Tasks(vec!["dinner-03".into(), "zzz".into()])
            .select(&df, BundleRow::task_id)
            .unwrap_err();
        assert!(e.contains("`dinner-03` (did you mean `dinner-0"), "{e}");
        assert!(e.contains("`zzz`") && e.contains("3 tasks"), "{e}");
        let three = TaskSubset::Sample { n: 3, seed: 1 }
            .select(&df, BundleRow::task_id)
            .unwrap();
        assert_eq!(three.len(), 3, "one per perturbation");
        let describe = TaskSubset::Sample { n: 3, seed: 1 }.describe();
        assert!(describe.contains("--sample 3"), "{describe}");
    }
}
