//! Model episodes downstream, through the real CLI against a scripted OpenAI-compatible server
//! on 127.0.0.1: judged, aggregated, validated and reported exactly like the built-in agents'
//! (a Table 1 column, paired differences, pass^k over epochs, the drill-down), absent — not
//! zeros — while no endpoint is set, and replayed `--offline` into bit-identical tables; models
//! side by side, a new one running only its own items; and provider faults (unusable bodies, 5xx) retried, and
//! when retries run out failing the item with a typed error row instead of becoming an episode.

use std::process::Output;

use polars::prelude::*;
use prefflow_stages::llm::mock::{tool_call_completion, Behavior, ScriptedServer};

use crate::common::*;

/// The variable the test pipeline reads its endpoint from.
const URL_VAR: &str = "PREFFLOW_TEST_JUDGED_URL";

/// The model's variant as Table 1 names it.
const LLM: &str = "agent=llm,model=tiny,history=all";

/// World, `count` validated tasks, the two reference agents, the `llm` agent (when the variable
/// is set), both judged, then aggregate, judge validation and report over both, as in
/// `pipelines/iprefbench.yaml`.
fn pipeline(count: usize, llm_epochs: u32, retries: u32) -> String {
    let head = world_and_candidates(
        "llm_judged",
        "resources: { llm_main: 1 }\n",
        &repo("datasets/tasks"),
        count,
        3,
    );
    let episodes = validated_episodes(
        "{ max_steps: 30 }",
        "{ agent: [oracle, defaults], history: [all] }",
    );
    let prompts = repo("datasets/prompts");
    let labels = repo("datasets/judge-labels");
    let template = repo("datasets/report/report.html.j2");
    format!(
        "{head}{episodes}  judged:
    kind: judge
    inputs: [episodes.episodes, episodes.steps, validated.bundles, world.sources, world.history_events]
    per_item: episode_id
  episodes_llm:
    kind: run_episodes
    inputs: [validated.bundles, world.sources, world.history_events]
    per_item: task_id
    when: {{ env: {URL_VAR} }}
    concurrency: 1
    resources: [llm_main]
    params:
      agent: llm
      history: all
      epochs: {llm_epochs}
      max_steps: 4
      prompts: '{prompts}'
      llm: {{ base_url_env: {URL_VAR}, model: tiny, temperature: 0, max_retries: {retries}, backoff_ms: 1, timeout_s: 5 }}
  judged_llm:
    kind: judge
    inputs: [episodes_llm.episodes, episodes_llm.steps, validated.bundles, world.sources, world.history_events]
    per_item: episode_id
  table:
    kind: aggregate
    gather: true
    inputs: [judged.scores, judged.interaction, judged.verdicts, episodes.episodes,
             judged_llm.scores, judged_llm.interaction, judged_llm.verdicts, episodes_llm.episodes]
    params: {{ resamples: 50, baseline: \"agent=defaults,history=all\" }}
  validation:
    kind: judge_agreement
    gather: true
    inputs: [judged.verdicts, judged.requests, judged_llm.verdicts, judged_llm.requests]
    params: {{ labels: '{labels}' }}
  report:
    kind: report
    gather: true
    inputs: [table.table1, table.paired, table.pass_k, table.perturbations, table.history_curve,
             table.failure_labels, validation.agreement, episodes.episodes, episodes.steps,
             judged.verdicts, judged.scores, episodes_llm.episodes, episodes_llm.steps,
             judged_llm.verdicts, judged_llm.scores]
    params: {{ template: '{template}' }}
"
    )
}

/// `prefflow run p.yaml` with the endpoint variable set to `url` (or unset).
fn run(ws: &Workspace, url: Option<&str>, extra: &[&str]) -> Output {
    let mut args = vec!["run", "p.yaml", "--progress", "none"];
    args.extend_from_slice(extra);
    let mut cmd = ws.command(&args);
    match url {
        Some(u) => cmd.env(URL_VAR, u),
        None => cmd.env_remove(URL_VAR),
    };
    cmd.output().expect("spawn prefflow")
}

fn code(out: &Output) -> (Option<i32>, String) {
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.code(), text)
}

fn strs(df: &DataFrame, col: &str) -> Vec<String> {
    df.column(col)
        .expect("column")
        .cast(&DataType::String)
        .expect("as text")
        .str()
        .expect("strings")
        .iter()
        .map(|s| s.unwrap_or_default().to_string())
        .collect()
}

fn distinct(df: &DataFrame, col: &str) -> Vec<String> {
    let mut v = strs(df, col);
    v.sort();
    v.dedup();
    v
}

/// Table 1's value of `metric` for `variant`, and its `n`.
fn cell(table1: &DataFrame, variant: &str, metric: &str) -> (Option<f64>, u32) {
    let variants = strs(table1, "variant");
    let metrics = strs(table1, "metric");
    let values = table1.column("value").expect("value").f64().expect("f64");
    let n = table1.column("n").expect("n").u32().expect("u32");
    (0..table1.height())
        .find(|&i| variants[i] == variant && metrics[i] == metric)
        .map(|i| (values.get(i), n.get(i).unwrap_or(0)))
        .unwrap_or_else(|| panic!("no {variant}/{metric} in table1"))
}

/// A model that ends every episode at once.
fn finish() -> Behavior {
    Behavior::ok(tool_call_completion(None, &[("finish", "{}")], 30, 2))
}

#[test]
fn model_episodes_are_judged_aggregated_and_reported_like_the_built_in_agents() {
    let server = ScriptedServer::start(vec![], finish());
    let ws = Workspace::new();
    ws.write("p.yaml", &pipeline(4, 2, 1));

    // No endpoint: the model's stages are disabled, said once each, and its variant is absent
    // from every table (not a column of zeros).
    let out = run(&ws, None, &[]);
    let (status, text) = code(&out);
    assert_eq!(status, Some(0), "{text}");
    assert_eq!(
        text.matches(&format!("{URL_VAR} is not set")).count(),
        1,
        "said once:\n{text}"
    );
    let table1 = ws.table("table.table1", None);
    assert_eq!(
        distinct(&table1, "variant"),
        ["agent=defaults,history=all", "agent=oracle,history=all"]
    );
    assert!(server.requests().is_empty());
    let html_without = std::fs::read_to_string(ws.path().join("out/report.html")).expect("report");
    assert!(!html_without.contains("agent=llm"));

    // With it: 4 tasks × 2 epochs, one request each.
    let out = run(&ws, Some(&server.url), &[]);
    let (status, text) = code(&out);
    assert_eq!(status, Some(0), "{text}");
    assert_eq!(server.requests().len(), 8);
    let table1 = ws.table("table.table1", None);
    assert_eq!(
        distinct(&table1, "variant"),
        [
            "agent=defaults,history=all",
            LLM,
            "agent=oracle,history=all"
        ]
    );
    assert_eq!(cell(&table1, LLM, "success"), (Some(0.0), 4));
    assert_eq!(
        cell(&table1, "agent=oracle,history=all", "success").0,
        Some(1.0)
    );
    let paired = ws.table("table.paired", None);
    assert!(
        strs(&paired, "variant").iter().any(|v| v == LLM),
        "{paired}"
    );
    let pass_k = ws.table("table.pass_k", None);
    let llm_k: Vec<String> = strs(&pass_k, "variant")
        .iter()
        .zip(strs(&pass_k, "k"))
        .filter(|(v, _)| *v == LLM)
        .map(|(_, k)| k)
        .collect();
    assert_eq!(llm_k, ["1", "2"], "pass^k over the model's two epochs");
    let scores = ws.table("judged_llm.scores", None);
    assert_eq!(scores.height(), 8);
    assert!(strs(&scores, "variant").iter().all(|v| v == LLM));
    let episodes = ws.table("episodes_llm.episodes", None);
    assert!(strs(&episodes, "episode_id")
        .iter()
        .all(|id| id.contains(&format!("#{LLM}#"))));

    let html = std::fs::read_to_string(ws.path().join("out/report.html")).expect("report");
    assert!(
        html.contains(LLM),
        "Table 1 and the drill-down name the model"
    );
    assert!(
        html.contains(&format!("{LLM} · epoch 1")),
        "the drill-down shows the model's episodes"
    );

    // Offline, with the server gone and every model-dependent stage forgotten: the recorded
    // requests replay and every table comes out bit-identical.
    let before = replayed_tables(&ws);
    let url = server.url.clone();
    drop(server);
    for stage in [
        "episodes_llm",
        "judged_llm",
        "table",
        "validation",
        "report",
    ] {
        forget_stage(&ws, stage);
    }
    let (status, text) = code(&run(&ws, Some(&url), &["--offline"]));
    assert_eq!(status, Some(0), "{text}");
    for stage in ["episodes_llm", "judged_llm", "table"] {
        assert_executed(&ws, "llm_judged", stage);
    }
    assert_eq!(
        replayed_tables(&ws),
        before,
        "offline replay is bit-identical"
    );
}

/// The Parquet bytes of every table the model's episodes reach, by name.
fn replayed_tables(ws: &Workspace) -> Vec<(String, Vec<u8>)> {
    let targets = [
        "episodes_llm.episodes",
        "episodes_llm.steps",
        "judged_llm.verdicts",
        "judged_llm.scores",
        "table.table1",
        "table.paired",
        "table.pass_k",
        "table.usage",
        "validation.agreement",
    ];
    targets
        .iter()
        .map(|t| {
            let path = ws.table_path(&["show", t, "--path"]);
            (t.to_string(), std::fs::read(path).expect("parquet bytes"))
        })
        .collect()
}

#[test]
fn provider_faults_are_retried_and_exhausted_ones_fail_the_item_not_the_episode() {
    let ok = tool_call_completion(None, &[("finish", "{}")], 30, 2);
    let faults = || {
        vec![
            Behavior::ok(&ok[..ok.len() / 2]),
            Behavior::ok("{\"choices\": []}"),
            Behavior::ok("{\"choices\": [{\"index\": 0, \"finish_reason\": \"stop\"}]}"),
            Behavior::status(502),
        ]
    };
    // Every episode meets four faults before its answer: all retried (max_retries 4).
    let mut script = Vec::new();
    for _ in 0..3 {
        script.extend(faults());
        script.push(Behavior::ok(ok.clone()));
    }
    let server = ScriptedServer::start(script, Behavior::ok(ok.clone()));
    let ws = Workspace::new();
    ws.write("p.yaml", &pipeline(3, 1, 4));
    let (status, text) = code(&run(&ws, Some(&server.url), &["--only", "table"]));
    assert_eq!(status, Some(0), "{text}");
    assert_eq!(server.requests().len(), 15);
    let episodes = ws.table("episodes_llm.episodes", None);
    assert!(
        strs(&episodes, "status").iter().all(|s| s == "ok"),
        "{episodes}"
    );
    let retried = episodes.clone();

    // A fourth task meets only faults: its item fails with a typed row in the errors table, its
    // siblings stay cached, and nothing downstream treats it as a result.
    let broken = ScriptedServer::start(vec![], Behavior::ok("{\"choices\": []}"));
    ws.write("p.yaml", &pipeline(4, 1, 4));
    let (status, text) = code(&run(&ws, Some(&broken.url), &["--only", "table"]));
    assert_eq!(status, Some(1), "{text}");
    assert_eq!(broken.requests().len(), 5, "one item, five attempts");
    let record = ws.last_run("llm_judged");
    let errors = record["errors"].as_array().expect("errors");
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert_eq!(errors[0]["stage"], "episodes_llm");
    assert_eq!(errors[0]["kind"], "transient");
    assert_eq!(
        errors[0]["attempts"], 1,
        "the client retried, the engine did not"
    );
    let message = errors[0]["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("gave up after 5 attempts") && message.contains("no choices"),
        "{message}"
    );
    let shown = ws.cli(&["show", "errors"]);
    assert!(shown.stdout.contains("episodes_llm"), "{}", shown.stdout);

    // Offline, the failed episode is not there to replay: it was never stored.
    let (status, text) = code(&run(
        &ws,
        Some(&broken.url),
        &["--offline", "--only", "table"],
    ));
    assert_eq!(status, Some(2), "{text}");
    assert!(text.contains("without --offline"), "{text}");

    // Once the provider recovers, only the failed item runs.
    drop(broken);
    let (status, text) = code(&run(&ws, Some(&server.url), &["--only", "table"]));
    assert_eq!(status, Some(0), "{text}");
    assert_eq!(server.requests().len(), 16);
    let episodes = ws.table("episodes_llm.episodes", None);
    assert_eq!(episodes.height(), 4);
    assert!(strs(&episodes, "status").iter().all(|s| s == "ok"));
    let kept: Vec<String> = strs(&retried, "episode_id");
    assert!(kept
        .iter()
        .all(|id| strs(&episodes, "episode_id").contains(id)));
}

/// World, `count` tasks, the `llm` agent swept over `models` (name, server URL) as
/// `pipelines/iprefbench.yaml` does it, judged and aggregated.
fn models_pipeline(count: usize, models: &[(&str, &str)]) -> String {
    let head = world_and_candidates(
        "llm_models",
        "resources: { llm_main: 8 }\n",
        &repo("datasets/tasks"),
        count,
        3,
    );
    let entries: Vec<String> = models
        .iter()
        .map(|(name, url)| {
            format!("{{ name: {name}, model: served-{name}, base_url: '{url}', concurrency: 2, prices: {{ prompt_per_mtok: 1.0, completion_per_mtok: 2.0 }} }}")
        })
        .collect();
    let names: Vec<&str> = models.iter().map(|(n, _)| *n).collect();
    format!(
        "{head}  validated:
    kind: validate_tasks
    inputs: [candidates.bundles, world.sources, world.history_events]
    per_item: task_id
  episodes_llm:
    kind: run_episodes
    inputs: [validated.bundles, world.sources, world.history_events]
    per_item: task_id
    concurrency: 4
    resources: [llm_main]
    sweep: {{ model: [{}] }}
    params:
      agent: llm
      history: all
      max_steps: 4
      prompts: '{}'
      llm: {{ model: unused, temperature: 0, max_retries: 1, backoff_ms: 1, timeout_s: 5 }}
      models: [{}]
      model: {}
  judged_llm:
    kind: judge
    inputs: [episodes_llm.episodes, episodes_llm.steps, validated.bundles, world.sources, world.history_events]
    per_item: episode_id
  table:
    kind: aggregate
    gather: true
    inputs: [judged_llm.scores, judged_llm.interaction, judged_llm.verdicts, episodes_llm.episodes]
    params: {{ resamples: 20 }}
",
        names.join(", "),
        repo("datasets/prompts"),
        entries.join(", "),
        names[0]
    )
}

fn llm_variants(table1: &DataFrame) -> Vec<String> {
    distinct(table1, "variant")
}

#[test]
fn models_side_by_side_each_with_its_endpoint_column_and_cost() {
    let a = ScriptedServer::start(vec![], finish());
    let b = ScriptedServer::start(vec![], finish());
    let ws = Workspace::new();
    ws.write(
        "m.yaml",
        &models_pipeline(3, &[("a", &a.url), ("b", &b.url)]),
    );
    ws.run_ok("m.yaml", &[]);
    let served = |s: &ScriptedServer, model: &str| {
        let seen = s.requests();
        assert!(
            seen.iter()
                .all(|r| r.body.contains(&format!("\"model\":\"{model}\""))),
            "every request names the entry's model"
        );
        seen.len()
    };
    assert_eq!((served(&a, "served-a"), served(&b, "served-b")), (3, 3));
    let table1 = ws.table("table.table1", None);
    assert_eq!(
        llm_variants(&table1),
        [
            "agent=llm,model=a,history=all",
            "agent=llm,model=b,history=all"
        ]
    );
    // Table 1's companion: per model and role, tokens and money at the entry's prices.
    let usage = ws.table("table.usage", None);
    let rows: Vec<(String, String, String, String)> = strs(&usage, "variant")
        .into_iter()
        .zip(strs(&usage, "role"))
        .zip(strs(&usage, "prompt_tokens"))
        .zip(strs(&usage, "cost"))
        .map(|(((v, r), p), c)| (v, r, p, c))
        .collect();
    for model in ["a", "b"] {
        let agent = rows
            .iter()
            .find(|(v, r, _, _)| v.contains(&format!("model={model},")) && r == "agent")
            .unwrap_or_else(|| panic!("no agent usage for {model}: {rows:?}"));
        // 3 episodes × 30 prompt + 2 completion tokens at $1 / $2 per million.
        assert_eq!(agent.2, "90");
        let cost: f64 = agent.3.parse().expect("cost");
        assert!((cost - 102e-6).abs() < 1e-12, "{cost}");
    }

    // A third model runs only its own items: the first two models' episodes (and their
    // judgements) are engine cache hits — their keys hold only their own `models` entry — so
    // nothing of theirs executes, not even a replay from the record.
    let c = ScriptedServer::start(vec![], finish());
    ws.write(
        "m.yaml",
        &models_pipeline(3, &[("a", &a.url), ("b", &b.url), ("c", &c.url)]),
    );
    let record = ws.run_ok("m.yaml", &[]);
    assert_eq!(
        (a.requests().len(), b.requests().len(), c.requests().len()),
        (3, 3, 3)
    );
    let s = statuses(&record);
    for stage in ["episodes_llm", "judged_llm"] {
        for (model, status) in [("a", "cached"), ("b", "cached"), ("c", "executed")] {
            assert_eq!(s[&format!("{stage}[model={model}]")], status, "{s:?}");
        }
    }
    assert_eq!(
        summary(&record, "items_executed"),
        6,
        "c's 3 episodes and their 3 judgements"
    );
    let table1 = ws.table("table.table1", None);
    assert_eq!(llm_variants(&table1).len(), 3);

    // Each column carries the entry's name (in the variant) and the provider's model id (the
    // `agent` column, Table 1's `agent` row).
    let agents: Vec<(String, String)> = strs(&table1, "variant")
        .into_iter()
        .zip(strs(&table1, "agent"))
        .collect();
    for model in ["a", "b", "c"] {
        let variant = format!("agent=llm,model={model},history=all");
        assert!(
            agents.contains(&(variant, format!("llm:served-{model}"))),
            "{agents:?}"
        );
    }

    // `--set` pins one model: it alone may run, and the others' cached columns stay in the
    // gathered tables (nothing of theirs runs, nothing is sent).
    let sent = (a.requests().len(), b.requests().len(), c.requests().len());
    let record = ws.run_ok("m.yaml", &["--set", "episodes_llm.model=b"]);
    let s = statuses(&record);
    assert_eq!(s["episodes_llm[model=a]"], "cached", "{s:?}");
    assert_eq!(s["episodes_llm[model=b]"], "cached", "{s:?}");
    assert_eq!(s["table"], "cached", "the same gathered inputs: {s:?}");
    let table1 = ws.table("table.table1", None);
    assert_eq!(llm_variants(&table1).len(), 3, "the other models are kept");
    // A pinned-away model without a complete cached result is left out, and said so.
    ws.write(
        "m.yaml",
        &models_pipeline(3, &[("a", &a.url), ("b", &b.url), ("c", &c.url)])
            .replace("max_steps: 4", "max_steps: 5"),
    );
    let out = ws.cli(&["plan", "m.yaml", "--set", "episodes_llm.model=b"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        out.stdout.contains(
            "off    episodes_llm[model=a] (left out: `--set episodes_llm.model=b` pins the sweep"
        ),
        "{}",
        out.stdout
    );
    assert!(
        out.stdout.contains("miss   episodes_llm[model=b]"),
        "{}",
        out.stdout
    );
    let record = ws.run_ok("m.yaml", &["--set", "episodes_llm.model=b"]);
    let s = statuses(&record);
    assert_eq!(s["episodes_llm[model=a]"], "disabled", "{s:?}");
    assert_eq!(s["judged_llm[model=a]"], "disabled", "{s:?}");
    assert!(s["episodes_llm[model=b]"].starts_with("executed"), "{s:?}");
    let table1 = ws.table("table.table1", None);
    assert_eq!(llm_variants(&table1), ["agent=llm,model=b,history=all"]);
    assert_eq!(
        (a.requests().len(), c.requests().len()),
        (sent.0, sent.2),
        "left-out models send nothing"
    );

    // A name that is not an entry is a located plan error, before anything runs.
    let out = ws.cli(&["run", "m.yaml", "--set", "episodes_llm.model=zzz"]);
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(
        out.stderr.contains("zzz") && out.stderr.contains("models"),
        "{}",
        out.stderr
    );
}
