//! One file per endpoint (its handler); [`super::serve_with`] routes paths to them.

pub mod embed;
pub mod mine;
pub mod openai;
pub mod similarity;
pub mod status;
