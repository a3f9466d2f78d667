//! Margin scoring of candidate pairs (Artetxe & Schwenk 2019, "Margin-based parallel
//! corpus mining with multilingual sentence embeddings"; LASER's mine_bitexts.py).
//!
//! For a candidate pair (x, y) with a = cos(x, y) and
//!     b = (Σ_{z ∈ NN_k(x)} cos(x, z)) / 2k + (Σ_{z ∈ NN_k(y)} cos(y, z)) / 2k,
//! the three margins are
//!     absolute: a        distance: a − b        ratio: a / b.

use std::str::FromStr;

/// How a candidate's cosine is compared with its neighbourhood.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Margin {
    /// a: the plain cosine.
    Absolute,
    /// a − b.
    Distance,
    /// a / b (LASER's default and the one the papers report).
    #[default]
    Ratio,
}

impl Margin {
    /// The margin of cosine `a` given the two neighbourhood means (each the mean of k
    /// cosines, so b = (mean_x + mean_y) / 2).
    pub fn score(self, a: f32, mean_x: f32, mean_y: f32) -> f32 {
        let b = (mean_x + mean_y) / 2.0;
        match self {
            Margin::Absolute => a,
            Margin::Distance => a - b,
            Margin::Ratio => a / b,
        }
    }
}

impl FromStr for Margin {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "absolute" => Ok(Self::Absolute),
            "distance" => Ok(Self::Distance),
            "ratio" => Ok(Self::Ratio),
            other => Err(format!(
                "unknown margin {other:?} (absolute, distance, ratio)"
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn margins_by_hand() {
        // a = 0.8, neighbourhoods average 0.5 and 0.3: b = 0.4.
        assert!((Margin::Absolute.score(0.8, 0.5, 0.3) - 0.8).abs() < 1e-7);
        assert!((Margin::Distance.score(0.8, 0.5, 0.3) - 0.4).abs() < 1e-7);
        assert!((Margin::Ratio.score(0.8, 0.5, 0.3) - 2.0).abs() < 1e-6);
    }
}
