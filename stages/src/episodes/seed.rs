//! Episode seeds: hash(root seed, task, variant, epoch). Each episode's seed depends only on its
//! own identity, so adding a variant or an epoch never shifts another episode's randomness.

use prefflow_engine::keys::hash_bytes;

use super::agents::AgentName;
use super::params::RunEpisodesParams;

/// The seed of one episode.
pub fn episode_seed(root: u64, task_id: &str, variant: &str, epoch: u32) -> u64 {
    let text = format!("{root}\u{1f}{task_id}\u{1f}{variant}\u{1f}{epoch}");
    let hex = hash_bytes(text.as_bytes());
    u64::from_str_radix(&hex[..16], 16).unwrap_or(root)
}

/// `<task_id>#<variant>#<epoch>`, the episode's id in every table.
pub fn episode_id(task_id: &str, variant: &str, epoch: u32) -> String {
    format!("{task_id}#{variant}#{epoch}")
}

/// The `variant` column (and episode-id part) of an episode: the engine's variant, except that
/// model episodes name their agent, model and history first (`agent=llm,model=NAME,history=all`,
/// then the stage's own dimensions), so a model's Table 1 column reads like the built-in
/// agents' (`agent=oracle,history=all`) although its stage sweeps only models, or nothing.
pub fn episode_variant(params: &RunEpisodesParams, engine_variant: &str) -> String {
    let Some(model) = params
        .model_name()
        .filter(|_| params.agent == AgentName::Llm)
    else {
        return engine_variant.to_string();
    };
    let named = ["agent", "model", "history"];
    let mut pairs = vec![
        "agent=llm".to_string(),
        format!("model={model}"),
        format!("history={}", params.history),
    ];
    pairs.extend(
        engine_variant
            .split(',')
            .filter(|p| !p.is_empty())
            .filter(|p| {
                !named.iter().any(|n| {
                    p.split_once('=')
                        .is_some_and(|(k, _)| names_dimension(k, n))
                })
            })
            .map(str::to_string),
    );
    pairs.join(",")
}

/// Whether engine dimension `key` sweeps `name`: `history` itself, or a pipeline param feeding
/// it (`params.llm_history`, which a pipeline uses when another stage already sweeps `history`,
/// as pipelines/ablation-history.yaml does).
fn names_dimension(key: &str, name: &str) -> bool {
    let last = key.rsplit('.').next().unwrap_or(key);
    key == name || (key.starts_with("params.") && last.rsplit('_').next() == Some(name))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seeds_depend_on_every_part_and_nothing_else() {
        let s = episode_seed(7, "t1", "oracle", 0);
        assert_eq!(s, episode_seed(7, "t1", "oracle", 0));
        assert_ne!(s, episode_seed(8, "t1", "oracle", 0));
        assert_ne!(s, episode_seed(7, "t2", "oracle", 0));
        assert_ne!(s, episode_seed(7, "t1", "defaults", 0));
        assert_ne!(s, episode_seed(7, "t1", "oracle", 1));
    }
}
