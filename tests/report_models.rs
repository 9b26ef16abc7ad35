//! The report of a comparison of ten models, through the real CLI: ten `llm` variants (each its
//! own scripted endpoint on 127.0.0.1, named apart from its provider model id) beside two
//! built-in agents, judged and aggregated, then the HTML report checked in headless chromium at
//! 1280 px — no horizontal page overflow, Table 1 scrolling in its own box with its first column
//! in place, no chart label outside its drawing, the variant / subset / failures-only filters
//! showing exactly the matching episodes, and an episode page with its failed call marked.
//! Screenshots are written beside the test's build output (their paths are printed). Without
//! chromium the browser part is skipped with a message.

use std::path::{Path, PathBuf};
use std::process::Command;

use prefflow_stages::llm::mock::{tool_call_completion, Behavior, ScriptedServer};
use serde_json::Value;

use crate::common::*;

const MODELS: usize = 10;

/// A model that asks once, makes a call the phone rejects (a note without its title), tells
/// the user, and finishes: every episode has a question, a failed call and an answer.
fn clumsy_model() -> Behavior {
    Behavior::respond(|body| {
        let v: Value = serde_json::from_str(body).unwrap_or_default();
        let turns = v["messages"]
            .as_array()
            .map(|m| m.iter().filter(|m| m["role"] == "assistant").count())
            .unwrap_or(0);
        let call = match turns {
            0 => ("ask_user", r#"{"text": "Which one do you mean?"}"#),
            1 => ("notes__create_note", "{}"),
            2 => ("answer", r#"{"text": "I could not do it."}"#),
            _ => ("finish", "{}"),
        };
        tool_call_completion(None, &[call], 120, 8)
    })
}

fn model_name(i: usize) -> String {
    format!("gpt-4o-mini-2024-07-18-r{i}")
}

fn pipeline(servers: &[ScriptedServer]) -> String {
    // One task per template, in template order: the first 17 reach a perturbation subset
    // (dashbite_coffee), so the report has subsets to filter.
    let head = world_and_candidates("models10", "", &repo("datasets/tasks"), 17, 5);
    let episodes = validated_episodes(
        "{ max_steps: 30 }",
        "{ agent: [oracle, defaults], history: [all] }",
    );
    let entries: Vec<String> = servers
        .iter()
        .enumerate()
        .map(|(i, s)| {
            format!(
                "{{ name: {}, model: lab/{}, base_url: '{}', concurrency: 4 }}",
                model_name(i),
                model_name(i),
                s.url
            )
        })
        .collect();
    let names: Vec<String> = (0..servers.len()).map(model_name).collect();
    format!(
        "{head}{episodes}  judged:
    kind: judge
    inputs: [episodes.episodes, episodes.steps, validated.bundles, world.sources, world.history_events]
    per_item: episode_id
  episodes_llm:
    kind: run_episodes
    inputs: [validated.bundles, world.sources, world.history_events]
    per_item: task_id
    sweep: {{ model: [{names}] }}
    params:
      agent: llm
      history: all
      max_steps: 6
      prompts: '{prompts}'
      llm: {{ model: unused, temperature: 0, max_retries: 1, backoff_ms: 1, timeout_s: 10 }}
      models: [{entries}]
      model: {first}
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
  report:
    kind: report
    gather: true
    inputs: [table.table1, table.usage, table.paired, table.pass_k, table.perturbations,
             table.history_curve, table.failure_labels, episodes.episodes, episodes.steps,
             judged.verdicts, judged.scores, validated.tasks, episodes_llm.episodes,
             episodes_llm.steps, judged_llm.verdicts, judged_llm.scores]
    params: {{ template: '{template}' }}
",
        names = names.join(", "),
        entries = entries.join(", "),
        first = names[0],
        prompts = repo("datasets/prompts"),
        template = repo("datasets/report/report.html.j2"),
    )
}

#[test]
fn ten_models_read_well_at_1280_pixels() {
    let servers: Vec<ScriptedServer> = (0..MODELS)
        .map(|_| ScriptedServer::start(vec![], clumsy_model()))
        .collect();
    let ws = Workspace::new();
    ws.write("p.yaml", &pipeline(&servers));
    ws.run_ok("p.yaml", &[]);
    let html_path = ws.path().join("out/report.html");
    let html = std::fs::read_to_string(&html_path).expect("report");

    // Every model's column carries its name and its provider model id; every episode is listed.
    let table1 = ws.table("table.table1", None);
    let agents = column_texts(&table1, "agent");
    for i in 0..MODELS {
        let name = model_name(i);
        assert!(
            html.contains(&format!("<span class=\"part model\">model={name}</span>")),
            "header of {name}"
        );
        assert!(
            agents.contains(&Some(format!("llm:lab/{name}"))),
            "{agents:?}"
        );
    }
    let episodes = html.matches("<tr class=\"ep ").count();
    let tasks = ws.table("validated.tasks", None).height();
    assert_eq!(episodes, (MODELS + 2) * tasks, "one row per episode");
    assert_eq!(html.matches("<section class=\"epage\"").count(), episodes);
    // The question's reply appears once per question (not again as an observation), and the
    // rejected call is marked failed.
    let asks = html.matches("Which one do you mean?").count();
    assert_eq!(asks, MODELS * tasks, "one question per model episode");
    assert!(html.matches("<li class=\"call failed\">").count() >= MODELS * tasks);
    assert!(!html.contains("<script"), "self-contained, no scripts");
    eprintln!(
        "report of {MODELS} models × {tasks} tasks: {} bytes",
        html.len()
    );

    check_layout(&html_path, &html);
}

/// The checks a browser can make, or a skip message without one.
fn check_layout(html_path: &Path, html: &str) {
    let Some(browser) = ["chromium", "chromium-browser", "google-chrome"]
        .into_iter()
        .find(|b| {
            Command::new("which")
                .arg(b)
                .output()
                .is_ok_and(|o| o.status.success())
        })
    else {
        eprintln!("chromium not installed: skipping the 1280 px layout check of the report");
        return;
    };
    let shots = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("report-10-models");
    std::fs::create_dir_all(&shots).expect("screenshot dir");
    let page = format!("file://{}", html_path.display());
    for (name, url, height) in [
        ("report-1280.png", page.clone(), 3600),
        ("episode-1280.png", format!("{page}#e30"), 900),
    ] {
        let png = shots.join(name);
        let size = format!("--window-size=1280,{height}");
        chromium(
            browser,
            &[&size, &format!("--screenshot={}", png.display()), &url],
        );
        let bytes = std::fs::metadata(&png).map(|m| m.len()).unwrap_or(0);
        assert!(
            bytes > 20_000,
            "{}: {bytes} bytes looks blank",
            png.display()
        );
        eprintln!("screenshot: {}", png.display());
    }
    // The page with a measuring script appended (the report itself has none), its findings
    // dumped into the DOM.
    let probe = html_path.with_file_name("probe.html");
    let measured = html.replace("</body>", &format!("<script>{MEASURE}</script></body>"));
    std::fs::write(&probe, measured).expect("probe page");
    let dom = chromium(
        browser,
        &[
            "--window-size=1280,900",
            "--dump-dom",
            &format!("file://{}", probe.display()),
        ],
    );
    let found = dom
        .split("<pre id=\"layout\">")
        .nth(1)
        .and_then(|rest| rest.split("</pre>").next())
        .unwrap_or_else(|| panic!("no measurements in the dumped DOM"));
    let found = found
        .replace("&quot;", "\"")
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&amp;", "&");
    let m: Value = serde_json::from_str(&found).expect("measurements json");
    eprintln!("layout at 1280 px: {m}");
    assert_eq!(m["error"], Value::Null, "{m}");
    assert!(
        m["pageOverflow"].as_f64().unwrap() <= 0.0,
        "page scrolls sideways: {m}"
    );
    assert_eq!(m["columns"], MODELS + 2 + 1, "{m}");
    assert_eq!(m["boxScrolls"], true, "Table 1 scrolls in its own box: {m}");
    assert!(
        m["stickyOffset"].as_f64().unwrap().abs() < 2.0,
        "first column stays: {m}"
    );
    assert!(
        m["narrowest"].as_f64().unwrap() >= 90.0,
        "a column too narrow to read: {m}"
    );
    assert_eq!(
        m["clipped"],
        Value::Array(vec![]),
        "chart labels outside the drawing: {m}"
    );
    assert_eq!(
        m["cut"],
        Value::Array(vec![]),
        "text cut off in its box: {m}"
    );
    for (shown, expected) in [
        ("failuresOfV3", "expectedFailuresOfV3"),
        ("subset0", "expectedSubset0"),
        ("v11", "expectedV11"),
    ] {
        assert_eq!(m[shown], m[expected], "{shown}: {m}");
    }
    assert!(m["failuresOfV3"].as_u64().unwrap() > 0, "{m}");
    assert!(
        m["subsets"].as_u64().unwrap() >= 2,
        "perturbation subsets to filter: {m}"
    );
    assert!(
        m["subset0"].as_u64().unwrap() < m["all"].as_u64().unwrap(),
        "{m}"
    );
    assert!(
        m["all"].as_u64().unwrap() > m["v11"].as_u64().unwrap(),
        "{m}"
    );
    assert_eq!(m["pageShown"], true, "an episode page opens: {m}");
    assert!(m["pageOverflow2"].as_f64().unwrap() <= 0.0, "{m}");
    assert!(m["failedMarked"].as_u64().unwrap() >= 1, "{m}");
}

/// Runs headless chromium with the flags that work on a closed network; its stdout.
fn chromium(browser: &str, args: &[&str]) -> String {
    let profile = tempfile::tempdir().expect("profile dir");
    let out = Command::new(browser)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--hide-scrollbars",
        ])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .args(args)
        .output()
        .expect("run chromium");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Measures the laid-out page and writes the findings (JSON) into `<pre id="layout">`.
const MEASURE: &str = r#"
(() => {
  const out = {};
  try {
    const root = document.documentElement;
    out.pageOverflow = root.scrollWidth - root.clientWidth;
    const box = document.querySelector('#table1').parentElement;
    out.columns = document.querySelectorAll('#table1 thead th').length;
    out.boxScrolls = box.scrollWidth > box.clientWidth;
    out.narrowest = Math.min(...[...document.querySelectorAll('#table1 thead th')].map(th => th.getBoundingClientRect().width));
    box.scrollLeft = box.scrollWidth;
    const first = document.querySelector('#table1 tbody td');
    out.stickyOffset = first.getBoundingClientRect().left - box.getBoundingClientRect().left - box.clientLeft;
    out.clipped = [];
    for (const svg of document.querySelectorAll('svg.plot')) {
      const vb = svg.viewBox.baseVal;
      for (const t of svg.querySelectorAll('text')) {
        const b = t.getBBox();
        if (b.x < -0.5 || b.y < -0.5 || b.x + b.width > vb.width + 0.5 || b.y + b.height > vb.height + 0.5) {
          out.clipped.push(svg.id + ': ' + t.textContent);
        }
      }
    }
    out.cut = [];
    for (const el of document.querySelectorAll('#table1 th, #table1 td, .legend li, .filters label, #episodes td')) {
      if (el.scrollWidth > el.clientWidth + 1) out.cut.push(el.textContent.slice(0, 60));
    }
    const rows = () => [...document.querySelectorAll('#episodes tr.ep')].filter(r => r.getClientRects().length > 0).length;
    const check = id => { document.getElementById(id).checked = true; };
    out.all = rows();
    check('ff'); check('fv-3');
    out.failuresOfV3 = rows();
    out.expectedFailuresOfV3 = document.querySelectorAll('#episodes tr.ep.fail.v3').length;
    document.getElementById('ff').checked = false;
    check('fv-11');
    out.v11 = rows();
    out.expectedV11 = document.querySelectorAll('#episodes tr.ep.v11').length;
    out.subsets = document.querySelectorAll('input[name=fs]').length - 1;
    check('fv-all'); check('fs-0');
    out.subset0 = rows();
    out.expectedSubset0 = document.querySelectorAll('#episodes tr.ep.s0').length;
    check('fs-all');
    const failed = document.querySelector('li.failed');
    const page = failed.closest('section.epage');
    location.hash = page.id;
    out.pageShown = getComputedStyle(page).display === 'block' && page.getBoundingClientRect().width > 600;
    out.pageOverflow2 = Math.max(page.scrollWidth - page.clientWidth, root.scrollWidth - root.clientWidth);
    out.failedMarked = page.querySelectorAll('li.failed').length;
  } catch (e) {
    out.error = String(e);
  }
  const pre = document.createElement('pre');
  pre.id = 'layout';
  pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
})();
"#;
