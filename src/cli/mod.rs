//! Subcommand groups of the `lase` binary that live outside main.rs.

pub mod shard;
