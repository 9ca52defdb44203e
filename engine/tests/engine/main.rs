//! The engine's integration tests, one binary: properties over random
//! command sequences, each dialect end to end, the seeds' worked examples,
//! golden hint texts, the renderings and the graph distance between plans.

mod common;
mod dialects;
mod distance;
mod hints;
mod properties;
mod renderings;
mod seeds;
mod tables;
