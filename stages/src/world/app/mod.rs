//! Apps as data: the schema of `datasets/apps/*.yaml`, its loader, and the validated model the
//! phone runs on. Loading checks everything a benchmark author can get wrong (see
//! [`crate::world::error::ProblemKind`]) and reports all problems with their places at once.

mod expr;
mod fields;
pub mod model;
mod ops;
mod raw;
mod records;
mod sink;

use crate::world::hash::FastMap;
use std::path::Path;

pub use model::{
    App, Catalog, Check, CheckTest, Effect, Expr, Operation, Path as ExprPath, Record, RecordJson,
    Root, Table,
};

use fields::{lower_field, FieldCtx, FieldSite};
use raw::RawApp;
pub(crate) use records::is_record_id;
use records::{check_pending_refs, is_name, lower_records};
use sink::Sink;

use super::error::{Loc, Problem, ProblemKind, Problems, Result, WorldError};
use super::yaml::{self, at};

impl Catalog {
    /// Loads every `*.yaml` app file in `dir` (in name order) and validates them together.
    pub fn load_dir(dir: &Path) -> Result<Catalog> {
        let mut sources = Vec::new();
        for path in yaml::yaml_files(dir)? {
            let name = path
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            sources.push((name, yaml::read(&path)?));
        }
        if sources.is_empty() {
            return Err(WorldError::Empty {
                what: "app",
                dir: dir.display().to_string(),
            });
        }
        Catalog::from_sources(&sources)
    }

    /// Builds a catalog from `(file name, YAML text)` pairs; the file stem must equal the
    /// app id. Used by [`Catalog::load_dir`] and by tests that need no files.
    pub fn from_sources(sources: &[(String, String)]) -> Result<Catalog> {
        let raws: Vec<(&str, RawApp)> = sources
            .iter()
            .map(|(f, t)| yaml::parse(f, t).map(|r| (f.as_str(), r)))
            .collect::<Result<_>>()?;
        let mut sink = Sink::default();
        let mut cat = skeleton(&raws, &mut sink);
        lower_tables(&mut cat, &raws, &mut sink);
        lower_all_records(&mut cat, &raws, &mut sink);
        lower_all_operations(&mut cat, &raws, &mut sink);
        check_pending_refs(&cat, &mut sink);
        if sink.problems.is_empty() {
            Ok(cat)
        } else {
            Err(WorldError::Invalid(Problems(sink.problems)))
        }
    }
}

fn bad_name(kind: &str, name: &str, here: Loc) -> Problem {
    Problem::new(
        ProblemKind::BadId,
        here,
        format!("{kind} name `{name}` is not a lowercase identifier"),
        "use lowercase letters, digits and _ (starting with a letter)",
    )
}

/// Apps with ids and table names only, so cross-app references can be resolved.
fn skeleton(raws: &[(&str, RawApp)], sink: &mut Sink) -> Catalog {
    let mut cat = Catalog::default();
    for (file, raw) in raws {
        let id = raw.app.value.clone();
        let stem = std::path::Path::new(file)
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        if !is_name(&id) {
            sink.push(bad_name("app", &id, at(file, &raw.app)));
        } else if id != stem {
            sink.push(Problem::new(
                ProblemKind::BadId,
                at(file, &raw.app),
                format!("app id `{id}` differs from its file name `{file}`"),
                format!("rename the file to {id}.yaml or the id to {stem}"),
            ));
        }
        if cat.app_index.contains_key(&id) {
            sink.push(Problem::new(
                ProblemKind::DuplicateId,
                at(file, &raw.app),
                format!("app id `{id}` is used twice"),
                "give each app its own id",
            ));
        }
        cat.app_index.insert(id.clone(), cat.apps.len());
        cat.apps.push(App {
            id,
            name: raw.name.clone(),
            category: raw.category.clone(),
            description: raw.description.clone(),
            tables: raw
                .entities
                .iter()
                .map(|(n, t)| empty_table(n, &t.value.description))
                .collect(),
            operations: Vec::new(),
            table_index: raw
                .entities
                .keys()
                .enumerate()
                .map(|(i, n)| (n.clone(), i))
                .collect(),
            op_index: FastMap::default(),
        });
        for (n, t) in &raw.entities {
            if !is_name(n) {
                sink.push(bad_name("table", n, at(file, t)));
            }
        }
    }
    cat
}

fn empty_table(name: &str, description: &str) -> Table {
    Table {
        name: name.to_string(),
        description: description.to_string(),
        title: None,
        summary: Vec::new(),
        fields: Vec::new(),
        records: Vec::new(),
        field_index: FastMap::default(),
        id_index: FastMap::default(),
    }
}

fn lower_tables(cat: &mut Catalog, raws: &[(&str, RawApp)], sink: &mut Sink) {
    for (ai, (file, raw)) in raws.iter().enumerate() {
        for (ti, (tname, t)) in raw.entities.iter().enumerate() {
            let ctx = FieldCtx {
                cat,
                app: ai,
                file,
                site: FieldSite::Entity,
            };
            let fields: Vec<_> = t
                .value
                .fields
                .iter()
                .filter_map(|(n, f)| {
                    check_field_name(n, f, file, sink)
                        .then(|| lower_field(&ctx, n, f, sink))
                        .flatten()
                })
                .collect();
            if fields.len() != t.value.fields.len() {
                sink.broken.insert((ai, ti));
            }
            let table = &mut cat.apps[ai].tables[ti];
            table.field_index = fields
                .iter()
                .enumerate()
                .map(|(i, f)| (f.name.clone(), i))
                .collect();
            table.fields = fields;
            table.title = t
                .value
                .title
                .as_ref()
                .and_then(|s| display_field(table, tname, "title", s, file, sink));
            table.summary = t
                .value
                .summary
                .iter()
                .filter_map(|s| display_field(table, tname, "summary", s, file, sink))
                .collect();
        }
    }
}

fn check_field_name<T>(
    name: &str,
    f: &serde_saphyr::Spanned<T>,
    file: &str,
    sink: &mut Sink,
) -> bool {
    if name == "id" {
        sink.push(Problem::new(
            ProblemKind::BadId,
            at(file, f),
            "`id` is implicit in every table",
            "remove the `id` field declaration",
        ));
        return false;
    }
    if !is_name(name) {
        sink.push(bad_name("field", name, at(file, f)));
    }
    true
}

fn display_field(
    table: &Table,
    tname: &str,
    what: &str,
    s: &serde_saphyr::Spanned<String>,
    file: &str,
    sink: &mut Sink,
) -> Option<usize> {
    let found = table.field_idx(&s.value);
    if found.is_none() {
        sink.push(Problem::new(
            ProblemKind::UnknownDisplayField,
            at(file, s),
            format!("{what} of `{tname}` names unknown field `{}`", s.value),
            "name a declared field",
        ));
    }
    found
}

fn lower_all_records(cat: &mut Catalog, raws: &[(&str, RawApp)], sink: &mut Sink) {
    for (ai, (file, raw)) in raws.iter().enumerate() {
        for (ti, t) in raw.entities.values().enumerate() {
            if sink.broken.contains(&(ai, ti)) {
                continue; // its records would only report follow-on problems
            }
            let (records, index) =
                lower_records(&cat.apps[ai].tables[ti], file, &t.value.records, sink);
            let table = &mut cat.apps[ai].tables[ti];
            table.records = records;
            table.id_index = index;
        }
    }
}

fn lower_all_operations(cat: &mut Catalog, raws: &[(&str, RawApp)], sink: &mut Sink) {
    for (ai, (file, raw)) in raws.iter().enumerate() {
        let mut ops = Vec::with_capacity(raw.operations.len());
        for (name, op) in &raw.operations {
            check_op_name(&cat.apps[ai], name, file, op, sink);
            ops.push(ops::lower_operation(cat, ai, file, name, op, sink));
        }
        let app = &mut cat.apps[ai];
        app.op_index = ops
            .iter()
            .enumerate()
            .map(|(i, o)| (o.name.clone(), i))
            .collect();
        app.operations = ops;
    }
}

fn check_op_name<T>(
    app: &App,
    name: &str,
    file: &str,
    op: &serde_saphyr::Spanned<T>,
    sink: &mut Sink,
) {
    if !is_name(name) {
        sink.push(bad_name("operation", name, at(file, op)));
    }
    let clash = app
        .tables
        .iter()
        .any(|t| name == format!("list_{}", t.name) || name == format!("get_{}", t.name));
    if clash {
        sink.push(Problem::new(
            ProblemKind::DuplicateId,
            at(file, op),
            format!("operation `{name}` clashes with a built-in read tool"),
            "rename it; list_<table> and get_<table> are reserved",
        ));
    }
}

#[cfg(test)]
mod tests;
