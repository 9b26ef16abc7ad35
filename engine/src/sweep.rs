//! Sweeps: a grid over a stage's parameters, expanded into named variants.
//!
//! A variant is an ordered list of `(dimension, value)` pairs. Its name (`agent=oracle,top_k=50`)
//! is stable and readable because it is derived only from the dimensions and values, never from
//! positions in the grid — adding a value never renames another variant.

use std::path::Path;

use indexmap::IndexMap;
use serde_json::Value;
use serde_saphyr::Spanned;

use crate::config::at;
use crate::error::ConfigError;
use crate::params::compact;
use crate::store::{check_name, NameRule};

/// One point of a sweep.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Variant(pub Vec<(String, Value)>);

impl Variant {
    /// The readable name, `""` for the unswept case.
    pub fn name(&self) -> String {
        self.0
            .iter()
            .map(|(k, v)| format!("{k}={}", compact(v)))
            .collect::<Vec<_>>()
            .join(",")
    }

    /// The value of dimension `dim`, if this variant sets it.
    pub fn get(&self, dim: &str) -> Option<&Value> {
        self.0.iter().find(|(k, _)| k == dim).map(|(_, v)| v)
    }

    /// True when both variants agree on every dimension they share.
    pub fn compatible(&self, other: &Variant) -> bool {
        self.0
            .iter()
            .all(|(k, v)| other.get(k).is_none_or(|w| w == v))
    }

    /// The union of two compatible variants, ordered by `order` (dimension declaration order).
    pub fn merge(&self, other: &Variant, order: &[String]) -> Variant {
        let mut pairs = self.0.clone();
        for (k, v) in &other.0 {
            if self.get(k).is_none() {
                pairs.push((k.clone(), v.clone()));
            }
        }
        pairs.sort_by_key(|(k, _)| order.iter().position(|o| o == k).unwrap_or(usize::MAX));
        Variant(pairs)
    }
}

/// A parsed `sweep:` block: dimensions (dotted parameter paths) and the points to run.
#[derive(Debug, Clone, Default)]
pub struct Sweep {
    /// Dimension names, in declaration order; each is a dotted path into the stage's params.
    pub dims: Vec<String>,
    /// The points, each a full assignment of `dims`.
    pub points: Vec<Variant>,
    /// Points a `--set` pin took out of the run (see `Plan::build`): they never run, and their
    /// results are kept in gathered stages when they are complete in the store.
    pub kept: Vec<Variant>,
    /// The `--set` that pinned this sweep (as typed), when one did.
    pub pinned_by: Option<String>,
}

impl Sweep {
    /// Parses either the shorthand grid `{dim: [values]}` or `{grid, include, exclude}`.
    pub fn parse(
        file: &Path,
        spec: &Spanned<IndexMap<String, Value>>,
    ) -> Result<Sweep, ConfigError> {
        let fail =
            |msg: String, hint: &str| ConfigError::new(at(file, spec), msg, Some(hint.into()));
        let (grid, include, exclude) = sections(&spec.value, &fail)?;
        let dims: Vec<String> = grid.iter().map(|(k, _)| k.clone()).collect();
        let mut points = grid_points(&grid, &fail)?;
        for ex in &exclude {
            check_filter(&dims, &points, ex).map_err(|(m, h)| {
                fail(
                    format!(
                        "`sweep.exclude` entry {}: {m}",
                        compact(&Value::Object(ex.clone()))
                    ),
                    &h,
                )
            })?;
        }
        points.retain(|p| !exclude.iter().any(|ex| matches(p, ex)));
        add_included(&dims, include, &mut points, &fail)?;
        if points.is_empty() {
            return Err(fail(
                "the sweep excludes every point".into(),
                "loosen `exclude`",
            ));
        }
        check_variant_names(&points, &fail)?;
        Ok(Sweep {
            dims,
            points,
            ..Sweep::default()
        })
    }
}

/// A located sweep error from its message and hint.
type Fail<'a> = &'a dyn Fn(String, &str) -> ConfigError;

/// A sweep filter entry (`include` / `exclude`): dimension → value.
type Filter = serde_json::Map<String, Value>;

/// A sweep's grid (dimension → values, in order).
type Grid = Vec<(String, Value)>;

/// The sweep's grid (dimension → values, in order), `include` and `exclude` lists: from
/// `{grid, include, exclude}`, or the whole mapping as the grid.
fn sections(
    map: &IndexMap<String, Value>,
    fail: Fail<'_>,
) -> Result<(Grid, Vec<Filter>, Vec<Filter>), ConfigError> {
    let structured = map.contains_key("grid")
        && map
            .keys()
            .all(|k| matches!(k.as_str(), "grid" | "include" | "exclude"));
    if !structured {
        let grid = map.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
        return Ok((grid, vec![], vec![]));
    }
    let grid = match map.get("grid") {
        Some(Value::Object(g)) => g.iter().map(|(k, v)| (k.clone(), v.clone())).collect(),
        _ => {
            return Err(fail(
                "`sweep.grid` must be a mapping of parameter → list of values".into(),
                "e.g. grid: { top_k: [10, 50] }",
            ))
        }
    };
    let include = list_of_maps(map.get("include")).map_err(|m| {
        fail(
            format!("`sweep.include` {m}"),
            "write include: [{ dim: value, ... }]",
        )
    })?;
    let exclude = list_of_maps(map.get("exclude")).map_err(|m| {
        fail(
            format!("`sweep.exclude` {m}"),
            "write exclude: [{ dim: value }]",
        )
    })?;
    Ok((grid, include, exclude))
}

/// Every point of the grid (the product of its dimensions' values, in order); each dimension
/// a non-empty list without repeats.
fn grid_points(grid: &[(String, Value)], fail: Fail<'_>) -> Result<Vec<Variant>, ConfigError> {
    let mut points = vec![Variant::default()];
    for (dim, values) in grid {
        let Value::Array(values) = values else {
            return Err(fail(
                format!("sweep dimension `{dim}` must be a list of values"),
                "e.g. sweep: { agent: [oracle, defaults] }",
            ));
        };
        if values.is_empty() {
            return Err(fail(
                format!("sweep dimension `{dim}` has no values"),
                "give at least one value",
            ));
        }
        if let Some(twice) = repeated(values) {
            return Err(fail(
                format!(
                    "sweep dimension `{dim}` lists `{}` twice: both variants would be named `{dim}={}` and run the same items",
                    compact(twice),
                    compact(twice)
                ),
                "list each value once",
            ));
        }
        points = points
            .iter()
            .flat_map(|p| {
                values.iter().map(move |v| {
                    let mut next = p.clone();
                    next.0.push((dim.clone(), v.clone()));
                    next
                })
            })
            .collect();
    }
    Ok(points)
}

/// Adds each `include` entry (which must set exactly the grid's dimensions) not already a
/// point.
fn add_included(
    dims: &[String],
    include: Vec<Filter>,
    points: &mut Vec<Variant>,
    fail: Fail<'_>,
) -> Result<(), ConfigError> {
    for extra in include {
        let missing: Vec<&String> = dims.iter().filter(|d| !extra.contains_key(*d)).collect();
        let unknown: Vec<&String> = extra.keys().filter(|k| !dims.contains(k)).collect();
        if !missing.is_empty() || !unknown.is_empty() {
            return Err(fail(
                format!(
                    "`sweep.include` entry must set exactly the grid dimensions [{}]",
                    dims.join(", ")
                ),
                "add the missing dimensions or a grid entry for the new one",
            ));
        }
        let point = Variant(dims.iter().map(|d| (d.clone(), extra[d].clone())).collect());
        if !points.contains(&point) {
            points.push(point);
        }
    }
    Ok(())
}

/// Every point's variant name is one the store can hold.
fn check_variant_names(points: &[Variant], fail: Fail<'_>) -> Result<(), ConfigError> {
    for point in points {
        let name = point.name();
        if let Err(why) = check_name(NameRule::Variant, &name) {
            return Err(fail(
                format!("variant name `{name}` {why}"),
                crate::store::names::hint(NameRule::Variant),
            ));
        }
    }
    Ok(())
}

/// The entries of an `include` / `exclude` list.
fn list_of_maps(value: Option<&Value>) -> Result<Vec<Filter>, String> {
    match value {
        None => Ok(vec![]),
        Some(Value::Array(items)) => items
            .iter()
            .map(|i| match i {
                Value::Object(m) => Ok(m.clone()),
                _ => Err("entries must be mappings".to_string()),
            })
            .collect(),
        Some(_) => Err("must be a list of mappings".into()),
    }
}

/// The first value listed twice.
fn repeated(values: &[Value]) -> Option<&Value> {
    values
        .iter()
        .enumerate()
        .find(|(i, v)| values[..*i].contains(v))
        .map(|(_, v)| v)
}

/// An `exclude` entry must name grid dimensions and match at least one point: a typo in a
/// dimension or value would otherwise exclude nothing, silently.
fn check_filter(
    dims: &[String],
    points: &[Variant],
    filter: &serde_json::Map<String, Value>,
) -> Result<(), (String, String)> {
    if filter.is_empty() {
        return Err((
            "is empty, so it would exclude every point".into(),
            "name at least one dimension".into(),
        ));
    }
    if let Some(unknown) = filter.keys().find(|k| !dims.contains(k)) {
        let close = crate::input::closest(unknown, dims.iter().map(String::as_str))
            .map(|c| format!("did you mean `{c}`? "))
            .unwrap_or_default();
        return Err((
            format!("names `{unknown}`, which is not a grid dimension"),
            format!("{close}the dimensions are: {}", dims.join(", ")),
        ));
    }
    if !points.iter().any(|p| matches(p, filter)) {
        return Err((
            "matches no point of the grid".into(),
            "check the values against the grid's lists (a typo excludes nothing)".into(),
        ));
    }
    Ok(())
}

fn matches(point: &Variant, filter: &serde_json::Map<String, Value>) -> bool {
    filter.iter().all(|(k, v)| point.get(k) == Some(v))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn sweep(yaml: &str) -> Result<Sweep, ConfigError> {
        let spec: Spanned<IndexMap<String, Value>> =
            crate::config::from_yaml(yaml).expect("test yaml");
        Sweep::parse(Path::new("t.yaml"), &spec)
    }

    fn names(s: &Sweep) -> Vec<String> {
        s.points.iter().map(Variant::name).collect()
    }

    #[test]
    fn shorthand_grid_is_a_cartesian_product_in_declaration_order() {
        let s = sweep("agent: [oracle, defaults]\ntop_k: [10, all]\n").expect("valid");
        assert_eq!(
            names(&s),
            [
                "agent=oracle,top_k=10",
                "agent=oracle,top_k=all",
                "agent=defaults,top_k=10",
                "agent=defaults,top_k=all"
            ]
        );
    }

    #[test]
    fn include_and_exclude_edit_the_grid() {
        let s = sweep(
            "grid: {a: [1, 2], b: [x, y]}\nexclude: [{a: 2, b: y}]\ninclude: [{a: 3, b: x}]\n",
        )
        .expect("valid");
        assert_eq!(names(&s), ["a=1,b=x", "a=1,b=y", "a=2,b=x", "a=3,b=x"]);
    }

    #[test]
    fn bad_sweeps_are_located_errors() {
        let e = sweep("a: 3\n").expect_err("scalar is not a list");
        assert!(e.message.contains("must be a list"), "{}", e.message);
        assert_eq!(e.location.line, 1);
        assert!(sweep("a: []\n").is_err());
        assert!(sweep("grid: {a: [1]}\ninclude: [{b: 2}]\n").is_err());
    }

    #[test]
    fn typos_in_exclude_and_repeated_values_are_errors() {
        let e = sweep("grid: {agent: [a, b]}\nexclude: [{agnet: a}]\n").expect_err("unknown dim");
        assert!(e.message.contains("`agnet`"), "{}", e.message);
        assert!(
            e.hint
                .as_deref()
                .is_some_and(|h| h.contains("did you mean `agent`")),
            "{e:?}"
        );
        let e = sweep("grid: {agent: [a, b]}\nexclude: [{agent: c}]\n").expect_err("no match");
        assert!(e.message.contains("matches no point"), "{}", e.message);
        let e = sweep("agent: [oracle, defaults, oracle]\n").expect_err("repeated value");
        assert!(e.message.contains("lists `oracle` twice"), "{}", e.message);
    }

    #[test]
    fn merging_orders_dimensions_by_declaration() {
        let a = Variant(vec![("b".into(), json!(1))]);
        let c = Variant(vec![("a".into(), json!("x"))]);
        let order = vec!["a".to_string(), "b".to_string()];
        assert_eq!(a.merge(&c, &order).name(), "a=x,b=1");
        assert!(a.compatible(&c));
        assert!(!a.compatible(&Variant(vec![("b".into(), json!(2))])));
    }
}
