//! Integration tests: the real `prefflow` binary on real pipeline files, stores and Parquet.
//!
//! One test crate on purpose: every test binary links polars, and linking is the slow part.

mod bad_input;
mod cluster;
mod code_shape;
mod common;
mod engine_cache;
mod engine_errors;
mod engine_items;
mod engine_kinds;
mod engine_tools;
mod episodes;
mod iprefbench;
mod judge;
mod judge_validation;
mod knowu;
mod knowu_pipeline;
mod llm_budget;
mod llm_client;
mod llm_episodes;
mod llm_judged;
mod llm_local;
mod llm_pipeline;
mod llm_table1;
mod paraphrase_table1;
mod plan_estimate;
mod remote_device;
mod report;
mod report_models;
mod run_signals;
mod store_integrity;
mod store_outage;
mod store_s3;
mod store_sharing;
mod store_team;
mod subsets;
mod taskset;
mod user_model;
mod world_evidence;
mod world_import;
mod world_serve;
