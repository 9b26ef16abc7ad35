//! What each variant's episodes cost, per role: Table 1's companion table (`usage`). The agent
//! and the user simulator are read from the runner's `episodes` (`*_tokens_agent`,
//! `*_tokens_user`, `cost_agent`, `cost_user`), the judge from the judge's `scores`
//! (`*_tokens_judge`, `cost_judge`), so a model's column in Table 1 comes with the tokens and
//! money it took to get. Built-in agents cost nothing and show zeros honestly (no model ran).

use polars::prelude::*;

use crate::tables::aggregate::UsageRow as U;

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
        return empty();
    }
    concat(parts, UnionArgs::default())?
        .sort(
            [U::variant],
            SortMultipleOptions::default().with_maintain_order(true),
        )
        .collect()
}

/// The table with no rows: the columns `usage` computes (`judge` is added by `aggregate`).
fn empty() -> PolarsResult<DataFrame> {
    let columns = U::COLUMNS.iter().filter(|c| **c != U::judge);
    let schema = U::to_frame(&[])?;
    schema.select(columns.copied())
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
            .with_column(cached.cast(DataType::UInt64).alias(U::cached_prompt_tokens))
            .group_by_stable([col(U::variant)])
            .agg([
                len().cast(DataType::UInt32).alias(U::episodes),
                sum(&needed[0], DataType::UInt64, U::prompt_tokens),
                sum(&needed[1], DataType::UInt64, U::completion_tokens),
                col(U::cached_prompt_tokens)
                    .sum()
                    .cast(DataType::UInt64)
                    .alias(U::cached_prompt_tokens),
                sum(&needed[2], DataType::Float64, U::cost),
            ])
            .with_column(lit(role).alias(U::role))
            .select([
                col(U::variant),
                col(U::role),
                col(U::episodes),
                col(U::prompt_tokens),
                col(U::completion_tokens),
                col(U::cached_prompt_tokens),
                col(U::cost),
            ]),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tables::episodes::EPISODES;
    use crate::tables::judging::SCORES;

    crate::tables::row! {
        /// What the runner records of an episode's cost.
        struct EpisodeCost of EPISODES {
            variant: String,
            prompt_tokens_agent: u64,
            completion_tokens_agent: u64,
            cost_agent: f64,
            cached_tokens_agent: u64,
            prompt_tokens_user: u64,
            completion_tokens_user: u64,
            cost_user: f64,
        }
    }

    crate::tables::row! {
        /// What the judge records of its cost.
        struct JudgeCost of SCORES {
            variant: String,
            prompt_tokens_judge: u64,
            completion_tokens_judge: u64,
            cost_judge: f64,
        }
    }

    fn episode(variant: &str, agent: (u64, u64, f64, u64), user: (u64, u64)) -> EpisodeCost {
        EpisodeCost {
            variant: variant.into(),
            prompt_tokens_agent: agent.0,
            completion_tokens_agent: agent.1,
            cost_agent: agent.2,
            cached_tokens_agent: agent.3,
            prompt_tokens_user: user.0,
            completion_tokens_user: user.1,
            cost_user: 0.0,
        }
    }

    fn judged(variant: &str, prompt: u64, completion: u64, cost: f64) -> JudgeCost {
        JudgeCost {
            variant: variant.into(),
            prompt_tokens_judge: prompt,
            completion_tokens_judge: completion,
            cost_judge: cost,
        }
    }

    #[test]
    fn tokens_and_money_add_up_per_variant_and_role() {
        let episodes = EpisodeCost::to_frame(&[
            episode("m1", (10, 1, 0.5, 8), (3, 1)),
            episode("m1", (20, 2, 0.25, 0), (4, 1)),
            episode("oracle", (0, 0, 0.0, 0), (0, 0)),
        ])
        .unwrap();
        let scores = JudgeCost::to_frame(&[
            judged("m1", 100, 5, 0.125),
            judged("m1", 0, 0, 0.0),
            judged("oracle", 0, 0, 0.0),
        ])
        .unwrap();
        let u = usage(&scores, Some(&episodes)).unwrap();
        assert_eq!(u.height(), 6);
        // `judge` is added by `aggregate`: absent here, so read as null.
        let rows = U::from_frame(
            &u.lazy()
                .with_column(lit(NULL).cast(DataType::String).alias(U::judge))
                .collect()
                .unwrap(),
        )
        .unwrap();
        let row = |variant: &str, role: &str| -> (u64, f64) {
            let r = rows
                .iter()
                .find(|r| r.variant == variant && r.role == role)
                .unwrap();
            (r.prompt_tokens, r.cost)
        };
        assert_eq!(row("m1", "agent"), (30, 0.75));
        assert_eq!(row("m1", "user"), (7, 0.0));
        assert_eq!(row("m1", "judge"), (100, 0.125));
        assert_eq!(row("oracle", "agent"), (0, 0.0));
        // The agent's cached prompt tokens; none reported for the user and the judge.
        assert_eq!(rows[0].cached_prompt_tokens, 8, "{rows:?}");
        let cached: u64 = rows.iter().map(|r| r.cached_prompt_tokens).sum();
        assert_eq!(cached, 8, "{rows:?}");
        let judge_only = usage(&scores, None).unwrap();
        assert_eq!(judge_only.height(), 2);
    }
}
