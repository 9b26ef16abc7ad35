//! The cache decision: for a stage instance, and for each item of a per-item stage, whether a
//! valid result is in the store, and why not.
//!
//! This is the only place that decides. `run` acts on a [`Decision`], `plan` prints it and `why`
//! explains it, so what `plan` predicts is what `run` does: a result counts as cached only when
//! its manifest, every blob it points at and (for kinds with side effects) its output outside the
//! store are all present.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use polars::prelude::DataFrame;
use serde_json::Value;

use crate::artifact::{
    blob_path, check_blob, item_path, load_manifest, recipe_path, ItemIdentity, KeyParts, Manifest,
    ENGINE_VERSION,
};
use crate::code::CodeFingerprint;
use crate::error::{Error, Result};
use crate::keys::{hash_path, item_groups, ItemGroup};
use crate::plan::Instance;
use crate::record::{InstanceRecord, RunRecord, Status};
use crate::store::Store;

/// The decision for one stage instance.
#[derive(Debug, Clone)]
pub struct Decision {
    /// What the key was computed from.
    pub parts: KeyParts,
    /// The recipe key.
    pub key: String,
    /// What to do.
    pub verdict: Verdict,
    /// For a miss, why it must run; for a hit, how it differs from the last successful run
    /// (non-empty when an older result is reused, e.g. after reverting a parameter).
    pub reasons: Vec<String>,
}

/// What to do with an instance.
#[derive(Debug, Clone)]
pub enum Verdict {
    /// Use this complete, valid result.
    Hit(Box<Manifest>),
    /// Run it.
    Miss,
    /// Do not run it: its `when:` condition, or an upstream instance's, does not hold (why).
    Disabled(String),
}

impl Decision {
    /// The cached result, on a hit.
    pub fn hit(&self) -> Option<&Manifest> {
        match &self.verdict {
            Verdict::Hit(m) => Some(m),
            _ => None,
        }
    }
}

/// Why a stored result cannot be used, when its key is known.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Unusable {
    /// No manifest under the key.
    NoResult,
    /// The manifest points at blobs that are gone (these tables).
    BlobsMissing(Vec<String>),
    /// The manifest points at blobs whose content does not match their hash (these tables;
    /// now quarantined).
    Damaged(Vec<String>),
    /// The kind says its output outside the store is gone or stale.
    OutputGone,
}

/// Decides one instance, given the records of its upstream instances (in binding order) and the
/// last successful run of the pipeline (for the reasons).
pub fn decide(
    store: &dyn Store,
    workdir: &Path,
    inst: &Instance,
    upstream: &[Arc<InstanceRecord>],
    previous: Option<&RunRecord>,
) -> Result<Decision> {
    let parts = key_parts(inst, upstream, workdir);
    let key = parts.key();
    let known: Vec<Option<&InstanceRecord>> = upstream.iter().map(|u| Some(u.as_ref())).collect();
    if let Some(why) = disabled(inst, &known) {
        return Ok(Decision {
            parts,
            key,
            verdict: Verdict::Disabled(why),
            reasons: Vec::new(),
        });
    }
    let (hit, unusable) = match load_manifest(store, &recipe_path(&key))? {
        None => (None, Some(Unusable::NoResult)),
        Some(m) => {
            let (missing, damaged) = unusable_tables(store, &m)?;
            if !missing.is_empty() {
                (None, Some(Unusable::BlobsMissing(missing)))
            } else if !damaged.is_empty() {
                (None, Some(Unusable::Damaged(damaged)))
            } else if !inst.kind.cached_output_is_valid(&inst.params, workdir) {
                (None, Some(Unusable::OutputGone))
            } else {
                (Some(m), None)
            }
        }
    };
    let reasons = reasons(store, previous, inst, &parts, &key, unusable.as_ref())?;
    if let (None, Some(pin)) = (&hit, &inst.cached_only) {
        return Ok(Decision {
            parts,
            key,
            verdict: Verdict::Disabled(format!(
                "left out: {pin}, and this variant has no complete result in the store ({}); run without that --set to compute it",
                reasons.join("; ")
            )),
            reasons: Vec::new(),
        });
    }
    Ok(Decision {
        parts,
        key,
        verdict: hit.map_or(Verdict::Miss, |m| Verdict::Hit(Box::new(m))),
        reasons,
    })
}

/// Why `inst` is disabled: its own condition does not hold, or an input it cannot do without
/// is disabled. A `gather` stage goes on as long as one of its inputs is enabled. `upstream`
/// holds the records of its upstream instances in binding order, `None` where not known yet
/// (`plan` before they run): an unknown instance counts as enabled.
pub fn disabled(inst: &Instance, upstream: &[Option<&InstanceRecord>]) -> Option<String> {
    if let Some(why) = inst.when.as_ref().and_then(|w| w.unmet()) {
        return Some(why);
    }
    let off = |up: &Option<&InstanceRecord>| up.is_some_and(|u| u.status == Status::Disabled);
    let gather = inst.bindings.iter().any(|b| b.gathered_variant.is_some());
    if gather {
        return (!upstream.is_empty() && upstream.iter().all(off))
            .then(|| "every input is disabled".to_string());
    }
    upstream
        .iter()
        .find(|up| off(up))
        .copied()
        .flatten()
        .map(|up| format!("upstream `{}` is disabled", up.label()))
}

/// The key of an instance, given its upstream results (in binding order).
fn key_parts(inst: &Instance, upstream: &[Arc<InstanceRecord>], workdir: &Path) -> KeyParts {
    let mut inputs = BTreeMap::new();
    for (b, up) in inst.bindings.iter().zip(upstream) {
        for t in &b.tables {
            if let Some(entry) = up.tables.get(t) {
                let label = match &b.gathered_variant {
                    Some(v) => format!("{}[{v}].{t}", b.stage),
                    None => format!("{}.{t}", b.stage),
                };
                inputs.insert(label, entry.blob.clone());
            }
        }
    }
    let external = inst
        .kind
        .external_inputs(&inst.params)
        .into_iter()
        .map(|p| {
            let h = hash_path(&workdir.join(&p));
            (p, h)
        })
        .collect();
    KeyParts {
        engine: ENGINE_VERSION.to_string(),
        kind: inst.kind.name().to_string(),
        kind_version: inst.kind.version().to_string(),
        code: inst.kind.code().as_ref().clone(),
        params: inst.kind.key_params(&inst.params),
        inputs,
        external,
        item: None,
        when: inst.when.as_ref().map(|w| w.describe()),
        subset: inst.subset.as_ref().map(|s| s.describe()),
    }
}

/// Tables of `m` whose blob is not in the store, and those whose blob is there but does not
/// match its hash (read and hashed here, and quarantined: a used result is always intact), or
/// whose inline bytes do not.
fn unusable_tables(store: &dyn Store, m: &Manifest) -> Result<(Vec<String>, Vec<String>)> {
    let (mut missing, mut damaged) = (Vec::new(), Vec::new());
    for (name, t) in &m.tables {
        if let Some(inline) = t.inline_bytes() {
            if inline.is_err() {
                damaged.push(name.clone());
            }
            continue;
        }
        match store.get(&blob_path(&t.blob))? {
            None => missing.push(name.clone()),
            Some(bytes) => {
                if check_blob(store, &t.blob, &bytes)?.is_some() {
                    damaged.push(name.clone());
                }
            }
        }
    }
    Ok((missing, damaged))
}

/// Tables of `m` whose blob is not in the store, or whose inline bytes are damaged.
fn missing_tables(store: &dyn Store, m: &Manifest) -> Result<Vec<String>> {
    let mut missing = Vec::new();
    for (name, t) in &m.tables {
        if !t.present(store)? {
            missing.push(name.clone());
        }
    }
    Ok(missing)
}

/// Why the instance runs (or, for a hit, what differs from the last successful run).
fn reasons(
    store: &dyn Store,
    previous: Option<&RunRecord>,
    inst: &Instance,
    parts: &KeyParts,
    key: &str,
    unusable: Option<&Unusable>,
) -> Result<Vec<String>> {
    let last_key = previous
        .and_then(|p| p.instance(&inst.stage, &inst.variant.name()))
        .and_then(|r| r.recipe_key.clone());
    let changes = match &last_key {
        // The same recipe as last time: nothing changed, whatever the store holds.
        Some(k) if k == key => Some(Vec::new()),
        Some(k) => load_manifest(store, &recipe_path(k))?.map(|m| diff_parts(&m.key, parts)),
        None => None,
    };
    let Some(unusable) = unusable else {
        return Ok(changes.unwrap_or_default());
    };
    Ok(match changes {
        None => vec!["never run (no earlier result for this stage and variant)".into()],
        Some(d) if !d.is_empty() => d,
        Some(_) if last_key.as_deref() != Some(key) => vec!["key changed".into()],
        Some(_) => vec![describe(unusable)],
    })
}

fn describe(unusable: &Unusable) -> String {
    match unusable {
        Unusable::NoResult => "result missing from the store (removed by gc?)".into(),
        Unusable::BlobsMissing(tables) => format!(
            "stored tables missing from the store: {} (deleted by hand?)",
            tables.join(", ")
        ),
        Unusable::Damaged(tables) => format!(
            "stored tables damaged (content does not match its hash; quarantined): {}",
            tables.join(", ")
        ),
        Unusable::OutputGone => "its output outside the store is missing or changed".into(),
    }
}

/// The decisions for every item of a per-item instance.
#[derive(Debug, Clone)]
pub struct ItemDecisions {
    /// The items in order of first appearance in the main input, each with its decision.
    pub items: Vec<ItemDecision>,
}

/// The decision for one item.
#[derive(Debug, Clone)]
pub struct ItemDecision {
    /// The item's rows in the main input.
    pub group: ItemGroup,
    /// What the item's key was computed from.
    pub parts: KeyParts,
    /// The item key.
    pub key: String,
    /// The committed result, when it is complete.
    pub hit: Option<Manifest>,
    /// True when a manifest exists but some of its blobs are gone (the item runs again).
    pub blobs_missing: bool,
}

impl ItemDecisions {
    /// Items already committed with all their blobs.
    pub fn cached(&self) -> usize {
        self.items.iter().filter(|i| i.hit.is_some()).count()
    }

    /// Items whose manifest survives but whose blobs do not.
    pub fn incomplete(&self) -> usize {
        self.items.iter().filter(|i| i.blobs_missing).count()
    }

    /// Every item key, in item order.
    pub fn keys(&self) -> Vec<String> {
        self.items.iter().map(|i| i.key.clone()).collect()
    }
}

/// Decides every item of `inst`: `parts` is the instance's key, `main` its first input (the
/// table mapped over, labelled `main_label`). With an item subset ([`Instance::subset`]) only
/// the items it selects are decided (and run, and assembled). An error names the missing
/// per-item column, or says why the subset cannot be taken; a store that cannot be read fails
/// the decision ([`ItemsError::Store`]) instead of making every item a miss.
pub fn decide_items(
    store: &dyn Store,
    inst: &Instance,
    parts: &KeyParts,
    main_label: &str,
    main: &DataFrame,
) -> std::result::Result<ItemDecisions, ItemsError> {
    let column = inst.per_item.clone().unwrap_or_default();
    let mut groups = item_groups(main, &column).map_err(|_| {
        ItemsError::MissingColumn(MissingItemColumn {
            column: column.clone(),
            input: main_label.to_string(),
            columns: main
                .get_column_names()
                .iter()
                .map(|c| c.to_string())
                .collect(),
        })
    })?;
    if let Some(subset) = &inst.subset {
        let keep: std::collections::HashSet<String> = subset
            .select(main, &column)
            .map_err(|why| ItemsError::Subset(format!("{}: {why}", inst.label())))?
            .into_iter()
            .collect();
        groups.retain(|g| keep.contains(&g.value));
    }
    let mut items = Vec::with_capacity(groups.len());
    for group in groups {
        let parts = item_key_parts(parts, main_label, &column, &group);
        let key = parts.key();
        let stored = load_manifest(store, &item_path(&key)).map_err(ItemsError::Store)?;
        let complete = match &stored {
            Some(m) => Some(
                missing_tables(store, m)
                    .map_err(ItemsError::Store)?
                    .is_empty(),
            ),
            None => None,
        };
        items.push(ItemDecision {
            group,
            parts,
            key,
            blobs_missing: complete == Some(false),
            hit: stored.filter(|_| complete == Some(true)),
        });
    }
    Ok(ItemDecisions { items })
}

/// Why the items of a per-item instance cannot be decided.
#[derive(Debug)]
pub enum ItemsError {
    /// The per-item column is not in the main input.
    MissingColumn(MissingItemColumn),
    /// The item subset cannot be taken (e.g. it names an item the input does not have).
    Subset(String),
    /// The store could not be read (a remote that does not answer, permissions): the
    /// decision fails rather than taking every item for a miss.
    Store(Error),
}

impl std::fmt::Display for ItemsError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ItemsError::MissingColumn(m) => m.fmt(f),
            ItemsError::Subset(why) => f.write_str(why),
            ItemsError::Store(e) => e.fmt(f),
        }
    }
}

/// A per-item stage's column is not in its main input.
#[derive(Debug, Clone)]
pub struct MissingItemColumn {
    /// The `per_item` column.
    pub column: String,
    /// The main input, `stage.table`.
    pub input: String,
    /// The columns it has.
    pub columns: Vec<String>,
}

impl std::fmt::Display for MissingItemColumn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "per_item column `{}` is not in `{}` (columns: {}); fix `per_item` in the pipeline",
            self.column,
            self.input,
            self.columns.join(", ")
        )
    }
}

/// The key parts of one item: the stage's recipe without the main input's data version, plus
/// the item's identity (its column, value and rows).
fn item_key_parts(parts: &KeyParts, main_label: &str, column: &str, g: &ItemGroup) -> KeyParts {
    let mut p = parts.clone();
    p.inputs.remove(main_label);
    // An item is the same item whichever subset plays it.
    p.subset = None;
    p.item = Some(ItemIdentity {
        column: column.to_string(),
        value: g.value.clone(),
        rows: g.content_hash.clone(),
    });
    p
}

/// Field-level differences between two recipes, phrased for humans.
pub fn diff_parts(old: &KeyParts, new: &KeyParts) -> Vec<String> {
    let mut out = Vec::new();
    if old.engine != new.engine {
        out.push(format!("engine version: {} → {}", old.engine, new.engine));
    }
    if old.kind != new.kind {
        out.push(format!("kind: {} → {}", old.kind, new.kind));
    } else if old.kind_version != new.kind_version {
        out.push(format!(
            "kind `{}` version: {} → {}",
            new.kind, old.kind_version, new.kind_version
        ));
    }
    if old.code != new.code {
        out.push(format!("code changed: {}", diff_code(&old.code, &new.code)));
    }
    if old.subset != new.subset {
        let show = |s: &Option<String>| s.clone().unwrap_or_else(|| "every item".into());
        out.push(format!(
            "items: {} → {}",
            show(&old.subset),
            show(&new.subset)
        ));
    }
    if old.when != new.when {
        let show = |w: &Option<String>| w.clone().unwrap_or_else(|| "always".into());
        out.push(format!("when: {} → {}", show(&old.when), show(&new.when)));
    }
    diff_values("params", &old.params, &new.params, &mut out);
    diff_maps("input", "data", &old.inputs, &new.inputs, &mut out);
    diff_maps("file", "content", &old.external, &new.external, &mut out);
    out
}

/// `crate (abc → def)` for each crate whose sources differ, e.g.
/// `prefflow-stages (3f2a… → 9c1d…)`.
fn diff_code(old: &CodeFingerprint, new: &CodeFingerprint) -> String {
    let none = String::from("none");
    let names: std::collections::BTreeSet<&String> = old.keys().chain(new.keys()).collect();
    names
        .into_iter()
        .filter(|n| old.get(*n) != new.get(*n))
        .map(|n| {
            let (a, b) = (old.get(n).unwrap_or(&none), new.get(n).unwrap_or(&none));
            format!("{n} ({} → {})", short(a), short(b))
        })
        .collect::<Vec<_>>()
        .join(", ")
}

fn diff_maps(
    what: &str,
    noun: &str,
    old: &BTreeMap<String, String>,
    new: &BTreeMap<String, String>,
    out: &mut Vec<String>,
) {
    for (k, v) in new {
        match old.get(k) {
            None => out.push(format!("{what} `{k}`: added")),
            Some(o) if o != v => out.push(format!(
                "{what} `{k}`: {noun} changed ({} → {})",
                short(o),
                short(v)
            )),
            _ => {}
        }
    }
    for k in old.keys().filter(|k| !new.contains_key(*k)) {
        out.push(format!("{what} `{k}`: removed"));
    }
}

fn short(s: &str) -> &str {
    &s[..10.min(s.len())]
}

fn diff_values(path: &str, old: &Value, new: &Value, out: &mut Vec<String>) {
    match (old, new) {
        (Value::Object(a), Value::Object(b)) => {
            for (k, v) in b {
                let p = format!("{path}.{k}");
                match a.get(k) {
                    Some(o) => diff_values(&p, o, v, out),
                    None => out.push(format!("{p}: added ({v})")),
                }
            }
            for k in a.keys().filter(|k| !b.contains_key(*k)) {
                out.push(format!("{path}.{k}: removed"));
            }
        }
        (a, b) if a != b => out.push(format!("{path}: {a} → {b}")),
        _ => {}
    }
}
