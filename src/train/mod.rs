//! The training engine: typed recipes ([`config`]), AdamW ([`optimizer`]), warm-up and
//! decay ([`schedule`]), the loss of a recipe ([`objective`]), direct or gradient-cached
//! passes ([`grad_cache`]), atomic checkpoints with exact resume ([`checkpoint`]),
//! metrics ([`metrics`]) and the loop itself ([`trainer`]), set up from the recipe's data
//! ([`training_data`]), its first encoder ([`encoder_init`]), the distillation teacher's
//! cached vectors ([`teacher_cache`]) and the dev pairs ([`dev_set`]), joined by `run_setup`.

pub mod checkpoint;
pub mod config;
pub mod dev_set;
pub mod dev_similarity;
pub mod encoder_init;
pub mod grad_cache;
pub mod metrics;
pub mod multistage;
pub mod objective;
pub mod optimizer;
pub mod options;
pub mod outcome;
mod run_setup;
pub mod schedule;
pub mod teacher_cache;
pub mod trainer;
pub mod training_data;

pub use config::{RecipeOverride, TrainConfig};
pub use trainer::{TrainOptions, TrainSummary, Trainer, train};
