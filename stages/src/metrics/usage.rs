//! What each variant's episodes cost, per role: Table 1's companion table (`usage`). The agent
//! and the user simulator are read from the runner's `episodes` (`*_tokens_agent`,
//! `*_tokens_user`, `cost_agent`, `cost_user`), the judge from the judge's `scores`
//! (`*_tokens_judge`, `cost_judge`), so a model's column in Table 1 comes with the tokens and
//! money it took to get. Built-in agents cost nothing and show zeros honestly (no model ran).

use polars::prelude::*;

/// The roles, in table order, with the frame each is read from and its column suffix.
const ROLES: [(&str, Source); 3] = [
    ("agent", Source::Episodes),
    ("user", Source::Episodes),
    ("judge", Source::Scores),
];

#[derive(Clone, Copy)]
enum Source {
    Episodes,
    Scores,
}

/// `usage`: variant, role, episodes, prompt_tokens, completion_tokens, cached_prompt_tokens,
/// cost (sums over the
/// variant's episodes). Without an `episodes` table only the judge rows are known.
pub fn usage(scores: &DataFrame, episodes: Option<&DataFrame>) -> PolarsResult<DataFrame> {
    let parts: Vec<LazyFrame> = ROLES
        .iter()
        .filter_map(|&(role, source)| {
            let frame = match source {
                Source::Episodes => episodes?,
                Source::Scores => scores,
            };
            role_sums(frame, role)
        })
        .collect();
    if parts.is_empty() {
        return df!(
            "variant" => Vec::<String>::new(),
            "role" => Vec::<String>::new(),
            "episodes" => Vec::<u32>::new(),
            "prompt_tokens" => Vec::<u64>::new(),
            "completion_tokens" => Vec::<u64>::new(),
            "cached_prompt_tokens" => Vec::<u64>::new(),
            "cost" => Vec::<f64>::new(),
        );
    }
    concat(parts, UnionArgs::default())?
        .sort(
            ["variant"],
            SortMultipleOptions::default().with_maintain_order(true),
        )
        .collect()
}

/// One role's sums per variant from `frame`; None when `frame` lacks the role's columns.
fn role_sums(frame: &DataFrame, role: &str) -> Option<LazyFrame> {
    let needed = [
        format!("prompt_tokens_{role}"),
        format!("completion_tokens_{role}"),
        format!("cost_{role}"),
    ];
    if !needed.iter().all(|c| frame.schema().contains(c)) {
        return None;
    }
    // Prompt tokens the provider served from its cache (`cached_tokens_<role>`, written
    // by `run_episodes`; 0 where a table has none).
    let cached = format!("cached_tokens_{role}");
    let cached = if frame.schema().contains(&cached) {
        col(cached.as_str())
    } else {
        lit(0u64)
    };
    let sum = |c: &str, dtype: DataType, alias: &str| col(c).cast(dtype).sum().alias(alias);
    Some(
        frame
            .clone()
            .lazy()
            .with_column(cached.cast(DataType::UInt64).alias("cached_prompt_tokens"))
            .group_by_stable([col("variant")])
            .agg([
                len().cast(DataType::UInt32).alias("episodes"),
                sum(&needed[0], DataType::UInt64, "prompt_tokens"),
                sum(&needed[1], DataType::UInt64, "completion_tokens"),
                col("cached_prompt_tokens")
                    .sum()
                    .cast(DataType::UInt64)
                    .alias("cached_prompt_tokens"),
                sum(&needed[2], DataType::Float64, "cost"),
            ])
            .with_column(lit(role).alias("role"))
            .select([
                col("variant"),
                col("role"),
                col("episodes"),
                col("prompt_tokens"),
                col("completion_tokens"),
                col("cached_prompt_tokens"),
                col("cost"),
            ]),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_and_money_add_up_per_variant_and_role() {
        let episodes = df!(
            "variant" => ["m1", "m1", "oracle"],
            "prompt_tokens_agent" => [10u64, 20, 0],
            "completion_tokens_agent" => [1u64, 2, 0],
            "cost_agent" => [0.5, 0.25, 0.0],
            "cached_tokens_agent" => [8u64, 0, 0],
            "prompt_tokens_user" => [3u64, 4, 0],
            "completion_tokens_user" => [1u64, 1, 0],
            "cost_user" => [0.0, 0.0, 0.0],
        )
        .unwrap();
        let scores = df!(
            "variant" => ["m1", "m1", "oracle"],
            "prompt_tokens_judge" => [100u64, 0, 0],
            "completion_tokens_judge" => [5u64, 0, 0],
            "cost_judge" => [0.125, 0.0, 0.0],
        )
        .unwrap();
        let u = usage(&scores, Some(&episodes)).unwrap();
        assert_eq!(u.height(), 6);
        let row = |variant: &str, role: &str| -> (u64, f64) {
            let v = u.column("variant").unwrap().str().unwrap();
            let r = u.column("role").unwrap().str().unwrap();
            let i = (0..u.height())
                .find(|&i| v.get(i) == Some(variant) && r.get(i) == Some(role))
                .unwrap();
            (
                u.column("prompt_tokens")
                    .unwrap()
                    .u64()
                    .unwrap()
                    .get(i)
                    .unwrap(),
                u.column("cost").unwrap().f64().unwrap().get(i).unwrap(),
            )
        };
        assert_eq!(row("m1", "agent"), (30, 0.75));
        assert_eq!(row("m1", "user"), (7, 0.0));
        assert_eq!(row("m1", "judge"), (100, 0.125));
        assert_eq!(row("oracle", "agent"), (0, 0.0));
        // The agent's cached prompt tokens; none reported for the user and the judge.
        let cached = u.column("cached_prompt_tokens").unwrap().u64().unwrap();
        assert_eq!(cached.get(0), Some(8), "{u}");
        assert_eq!(cached.sum(), Some(8), "{u}");
        let judge_only = usage(&scores, None).unwrap();
        assert_eq!(judge_only.height(), 2);
    }
}
