//! The engine's integration tests, one binary: properties over random
//! command sequences, each dialect end to end, the seeds' worked examples,
//! golden hint texts and the renderings.

mod common;
mod dialects;
mod hints;
mod properties;
mod renderings;
mod seeds;
mod tables;
