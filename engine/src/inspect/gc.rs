//! `prefflow gc`: removes every artifact no pipeline's run records (nor any lease) reach,
//! the hand-off objects of finished cluster jobs, and temporary files whose writer is gone.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::artifact::{blob_path, item_path, load_manifest, recipe_path, unix_now};
use crate::cluster::job as cluster_jobs;
use crate::error::{Error, Result};
use crate::record::{load_last_run, load_latest, pipelines};
use crate::store::lease::{
    self, list_leases, remove_lease, Holder, Lease, LeaseRecord, Liveness, Protected, LEASES,
};
use crate::store::{tmp_is_stale, ObjectMeta, Store, TMP_SUFFIX};

/// What `gc` removed (or would remove), and what it kept for leases.
#[derive(Debug, Default)]
pub struct GcReport {
    /// Store keys removed.
    pub removed: Vec<String>,
    /// Bytes freed.
    pub bytes: u64,
    /// Objects kept.
    pub kept: usize,
    /// What is protected beyond the run records, and why (one line each).
    pub protected: Vec<String>,
    /// Leases that are live now: a real `gc` would refuse (or wait) while they exist.
    pub live: Vec<String>,
    /// Dead leases removed (or, in a dry run, that would be), and why.
    pub dropped: Vec<String>,
}

/// How to collect.
#[derive(Debug, Clone, Default)]
pub struct GcOptions {
    /// Only report what would be removed and why things are kept.
    pub dry_run: bool,
    /// Wait up to this long for live leases to end instead of refusing at once.
    pub wait: Option<Duration>,
    /// Forget the leases of killed runs whose results no run record holds, so those results
    /// become garbage too.
    pub drop_dead_leases: bool,
}

/// Prefixes holding artifacts: what no record reaches is garbage.
const ARTIFACTS: [&str; 4] = ["recipes", "items", "blobs", "tmp"];

/// Prefixes holding objects `gc` never judges by reachability (run records, the record/replay
/// cache of model calls, leases): only their stale temporary files are removed.
const TEMP_ONLY: [&str; 3] = ["runs", "llm", LEASES];

/// Removes every artifact not reachable from the latest and last run of each pipeline, nor
/// from any lease. Takes a `gc` lease first; refuses with [`Error::Busy`] (or waits, with
/// `opts.wait`) while another lease is live, since a live writer may be about to use an
/// object no record reaches yet. `dry_run` takes no lease and reports instead.
pub fn gc(store: Arc<dyn Store>, opts: &GcOptions) -> Result<GcReport> {
    let own = if opts.dry_run {
        None
    } else {
        Some(Lease::acquire(store.clone(), Holder::Gc, "")?)
    };
    let own_id = own.as_ref().map(|l| l.id()).unwrap_or_default();
    let store = store.as_ref();
    let leases = wait_for_live_leases(store, &own_id, opts)?;
    let mut report = GcReport::default();
    let mut keep = reachable(store)?;
    let cutoff = protect_leases(store, &leases, &own_id, opts, &mut keep, &mut report)?;
    let now = unix_now();
    let mut sweeper = Sweeper {
        store,
        dry_run: opts.dry_run,
        report,
    };
    sweeper.artifacts(&keep, cutoff, now)?;
    sweeper.temporary_files(now)?;
    let unfinished = sweep_cluster_jobs(store, opts, now, |meta, garbage| {
        sweeper.sweep(meta, garbage)
    })?;
    let mut report = sweeper.report;
    if unfinished > 0 {
        report.protected.push(format!(
            "{unfinished} unfinished cluster job(s) under {} (a restarted coordinator adopts \
             them; `gc --drop-dead-leases` removes them)",
            cluster_jobs::PREFIX
        ));
    }
    if let Some(own) = own {
        own.release()?;
    }
    Ok(report)
}

/// The store's leases once no other one is live: refuses with [`Error::Busy`] while one is,
/// or waits for them up to `opts.wait`. A dry run does not wait.
fn wait_for_live_leases(
    store: &dyn Store,
    own_id: &str,
    opts: &GcOptions,
) -> Result<Vec<(LeaseRecord, Vec<Protected>)>> {
    let deadline = opts.wait.map(|w| Instant::now() + w);
    let mut announced = false;
    loop {
        let leases = list_leases(store)?;
        let now = unix_now();
        let live: Vec<&LeaseRecord> = leases
            .iter()
            .map(|(l, _)| l)
            .filter(|l| l.id != own_id && l.liveness(now) == Liveness::Live)
            .collect();
        if live.is_empty() || opts.dry_run {
            return Ok(leases);
        }
        let waiting = deadline.is_some_and(|d| Instant::now() < d);
        if !waiting {
            let names: Vec<String> = live.iter().map(|l| l.describe(now)).collect();
            return Err(Error::Busy(format!(
                "gc refused: {} live lease(s) in {}: {}. Their runs may still use results no run \
                 record holds yet. Try again when they are done, or wait with `gc --wait SECS`; a \
                 lease on another machine counts as dead after {:.0}s without a heartbeat",
                live.len(),
                store.describe(),
                names.join("; "),
                lease::timeout_secs()
            )));
        }
        if !announced {
            tracing::info!("gc: waiting for {}", live[0].describe(now));
            announced = true;
        }
        std::thread::sleep(Duration::from_millis(500));
    }
}

/// Removes garbage (or, in a dry run, only lists it) and counts what it keeps.
struct Sweeper<'a> {
    store: &'a dyn Store,
    dry_run: bool,
    report: GcReport,
}

impl Sweeper<'_> {
    /// Removes `meta` when it is `garbage`, else counts it kept.
    fn sweep(&mut self, meta: ObjectMeta, garbage: bool) -> Result<()> {
        if !garbage {
            self.report.kept += 1;
            return Ok(());
        }
        self.report.bytes += meta.size;
        if !self.dry_run {
            self.store.delete(&meta.key)?;
        }
        self.report.removed.push(meta.key);
        Ok(())
    }

    /// The artifacts no record reaches (`keep`), except those written since `cutoff` (on this
    /// machine's clock: the oldest live lease's start), and stale temporary files among them.
    fn artifacts(&mut self, keep: &HashSet<String>, cutoff: Option<f64>, now: f64) -> Result<()> {
        // Lease times are on this machine's clock, modification times on the store's.
        let offset = self.store.clock_offset().unwrap_or(0.0);
        let store_cutoff = cutoff.map(|c| c + offset);
        let mut recent = 0usize;
        for prefix in ARTIFACTS {
            for meta in self.store.list_meta(prefix)? {
                let garbage = if meta.key.ends_with(TMP_SUFFIX) {
                    tmp_is_stale(&meta, now)
                } else if store_cutoff.is_some_and(|c| meta.modified >= c) {
                    recent += 1;
                    false
                } else {
                    !keep.contains(&meta.key)
                };
                self.sweep(meta, garbage)?;
            }
        }
        if let Some(c) = cutoff {
            self.report.protected.push(format!(
                "{recent} object(s) written since the oldest live lease started ({:.0}s ago)",
                now - c
            ));
        }
        Ok(())
    }

    /// Stale temporary files under the prefixes never judged by reachability.
    fn temporary_files(&mut self, now: f64) -> Result<()> {
        for prefix in TEMP_ONLY {
            for meta in self.store.list_meta(prefix)? {
                if meta.key.ends_with(TMP_SUFFIX) {
                    let garbage = tmp_is_stale(&meta, now);
                    self.sweep(meta, garbage)?;
                }
            }
        }
        Ok(())
    }
}

/// Sweeps the cluster executor's hand-off objects (`cluster/jobs/<job>/…`: spec, submissions,
/// shard reports, done marks). A job whose instance is committed (its recipe manifest exists)
/// is finished and all of it is garbage; an unfinished one is kept for a restarted coordinator
/// to adopt, unless `drop_dead_leases` (no live lease exists by now, so nobody works on it).
/// Returns how many unfinished jobs were kept.
fn sweep_cluster_jobs(
    store: &dyn Store,
    opts: &GcOptions,
    now: f64,
    mut sweep: impl FnMut(ObjectMeta, bool) -> Result<()>,
) -> Result<usize> {
    let mut finished: std::collections::HashMap<String, bool> = Default::default();
    let mut kept = HashSet::new();
    for meta in store.list_meta(cluster_jobs::PREFIX)? {
        let rest = &meta.key[cluster_jobs::PREFIX.len()..];
        let job = match rest.trim_start_matches('/').split('/').next() {
            Some(job) if !job.is_empty() => job.to_string(),
            _ => continue,
        };
        let done = match finished.get(&job) {
            Some(d) => *d,
            None => {
                let d = store.exists(&recipe_path(&job))?;
                finished.insert(job.clone(), d);
                d
            }
        };
        let garbage = if meta.key.ends_with(TMP_SUFFIX) {
            tmp_is_stale(&meta, now)
        } else {
            done || opts.drop_dead_leases
        };
        if !garbage && !done {
            kept.insert(job);
        }
        sweep(meta, garbage)?;
    }
    Ok(kept.len())
}

/// Adds what the leases protect to `keep` and says why in `report`. A dead lease whose work
/// the latest records hold (every instance it listed is there, with the same recipe key) is
/// retired; so is every dead lease with `drop_dead_leases`. Returns the start of the oldest
/// live lease (objects written since are kept whatever reaches them).
fn protect_leases(
    store: &dyn Store,
    leases: &[(LeaseRecord, Vec<Protected>)],
    own: &str,
    opts: &GcOptions,
    keep: &mut HashSet<String>,
    report: &mut GcReport,
) -> Result<Option<f64>> {
    let now = unix_now();
    let mut cutoff: Option<f64> = None;
    let expiry = lease::dead_lease_expiry_secs();
    for (lease, lists) in leases.iter().filter(|(l, _)| l.id != own) {
        let live = lease.liveness(now);
        if let Liveness::Dead(why) = &live {
            let covered = covered_by_records(store, lease, lists)?;
            let expired = now - lease.heartbeat_at > expiry;
            if covered || expired || opts.drop_dead_leases {
                let how = if covered {
                    "its results are in the run records".to_string()
                } else if expired {
                    format!(
                        "dead for more than {} (PREFFLOW_DEAD_LEASE_EXPIRY_SECS), so what only it protected is let go",
                        lease::describe_age(expiry)
                    )
                } else {
                    "--drop-dead-leases".to_string()
                };
                report.dropped.push(format!(
                    "{}: dead ({why}); {how}: lease {}",
                    lease.describe(now),
                    if opts.dry_run {
                        "would be removed"
                    } else {
                        "removed"
                    }
                ));
                if !opts.dry_run {
                    remove_lease(store, &lease.id)?;
                }
                continue;
            }
        } else {
            report.live.push(lease.describe(now));
            cutoff = Some(cutoff.map_or(lease.started_at, |c: f64| c.min(lease.started_at)));
        }
        let before = keep.len();
        for p in lists {
            keep_manifest(store, &recipe_path(&p.recipe_key), keep)?;
            for k in &p.item_keys {
                keep_manifest(store, &item_path(k), keep)?;
            }
        }
        let state = match &live {
            Liveness::Live => "live".to_string(),
            Liveness::Dead(why) => format!(
                "dead ({why}); its results are in no run record yet: re-run `{}` to adopt them, or `gc --drop-dead-leases` to let them go",
                lease.pipeline
            ),
        };
        report.protected.push(format!(
            "{}: {state}; protects {} more object(s) of {} instance(s)",
            lease.describe(now),
            keep.len() - before,
            lists.len()
        ));
    }
    Ok(cutoff)
}

/// Whether every instance a dead lease listed is in its pipeline's latest record with the
/// same recipe key (a later run completed that work, so the record now keeps it).
fn covered_by_records(store: &dyn Store, lease: &LeaseRecord, lists: &[Protected]) -> Result<bool> {
    if lists.is_empty() || lease.holder == Holder::Gc {
        return Ok(true);
    }
    let Ok(Some(latest)) = load_latest(store, &lease.pipeline) else {
        return Ok(false);
    };
    Ok(lists.iter().all(|p| {
        latest
            .instances
            .iter()
            .any(|i| i.recipe_key.as_deref() == Some(p.recipe_key.as_str()))
    }))
}

/// Every store key the run records reach: manifests, the item manifests they list, and the
/// blobs of both.
fn reachable(store: &dyn Store) -> Result<HashSet<String>> {
    let mut keep: HashSet<String> = HashSet::new();
    for name in pipelines(store)? {
        for record in [load_latest(store, &name)?, load_last_run(store, &name)?]
            .into_iter()
            .flatten()
        {
            if let Some(b) = &record.errors_blob {
                keep.insert(blob_path(b));
            }
            for inst in &record.instances {
                let manifests = inst
                    .recipe_key
                    .iter()
                    .map(|k| recipe_path(k))
                    .chain(inst.item_keys.iter().map(|k| item_path(k)));
                for key in manifests {
                    keep_manifest(store, &key, &mut keep)?;
                }
            }
        }
    }
    // Item manifests kept above may point at blobs too.
    let item_keys: Vec<String> = keep
        .iter()
        .filter(|k| k.starts_with("items/"))
        .cloned()
        .collect();
    for key in item_keys {
        if let Some(m) = load_manifest(store, &key)? {
            keep.extend(m.tables.values().map(|t| blob_path(&t.blob)));
        }
    }
    Ok(keep)
}

/// Keeps manifest `key` (when present), its blobs and the item manifests it lists.
fn keep_manifest(store: &dyn Store, key: &str, keep: &mut HashSet<String>) -> Result<()> {
    if let Some(m) = load_manifest(store, key)? {
        keep.extend(m.tables.values().map(|t| blob_path(&t.blob)));
        keep.extend(m.item_keys.iter().map(|k| item_path(k)));
        keep.insert(key.to_string());
    }
    Ok(())
}
