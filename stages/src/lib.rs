//! The benchmark domain for prefflow. Today it holds the `world` (apps, persona, history and the
//! simulated phone); actors, judges, metrics and stage kinds join it as they are built.

pub mod world;
