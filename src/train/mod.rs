//! The training engine: typed recipes ([`config`]), AdamW ([`optimizer`]), warm-up and
//! decay ([`schedule`]), the loss of a recipe ([`objective`]), direct or gradient-cached
//! passes ([`grad_cache`]), atomic checkpoints with exact resume ([`checkpoint`]),
//! metrics ([`metrics`]) and the loop itself ([`trainer`]).

pub mod checkpoint;
pub mod config;
pub mod grad_cache;
pub mod metrics;
pub mod multistage;
pub mod objective;
pub mod optimizer;
pub mod schedule;
pub mod trainer;

pub use config::{RecipeOverride, TrainConfig};
pub use trainer::{TrainOptions, TrainSummary, train};
