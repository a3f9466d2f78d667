//! Pooling token states into one sentence vector, as sentence-transformers'
//! `Pooling` module (its `1_Pooling/config.json`, field for field). Several modes may be
//! on at once; their vectors are concatenated in sentence-transformers' order
//! (cls, max, mean, mean_sqrt_len, weightedmean, lasttoken).

use serde::{Deserialize, Serialize};
use tch::{Kind, Tensor};

/// `1_Pooling/config.json`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PoolingConfig {
    pub word_embedding_dimension: usize,
    #[serde(default)]
    pub pooling_mode_cls_token: bool,
    #[serde(default)]
    pub pooling_mode_mean_tokens: bool,
    #[serde(default)]
    pub pooling_mode_max_tokens: bool,
    #[serde(default)]
    pub pooling_mode_mean_sqrt_len_tokens: bool,
    #[serde(default)]
    pub pooling_mode_weightedmean_tokens: bool,
    #[serde(default)]
    pub pooling_mode_lasttoken: bool,
    #[serde(default = "default_true")]
    pub include_prompt: bool,
}

fn default_true() -> bool {
    true
}

/// A single pooling strategy.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PoolingMode {
    Cls,
    Max,
    Mean,
    MeanSqrtLen,
    WeightedMean,
    LastToken,
}

impl std::str::FromStr for PoolingMode {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        Ok(match s {
            "cls" => Self::Cls,
            "max" => Self::Max,
            "mean" => Self::Mean,
            "mean_sqrt_len" => Self::MeanSqrtLen,
            "weightedmean" => Self::WeightedMean,
            "lasttoken" => Self::LastToken,
            other => {
                return Err(format!(
                    "unknown pooling mode {other:?} (cls, max, mean, mean_sqrt_len, weightedmean, lasttoken)"
                ));
            }
        })
    }
}

impl PoolingConfig {
    pub fn single(dim: usize, mode: PoolingMode) -> Self {
        Self {
            word_embedding_dimension: dim,
            pooling_mode_cls_token: mode == PoolingMode::Cls,
            pooling_mode_mean_tokens: mode == PoolingMode::Mean,
            pooling_mode_max_tokens: mode == PoolingMode::Max,
            pooling_mode_mean_sqrt_len_tokens: mode == PoolingMode::MeanSqrtLen,
            pooling_mode_weightedmean_tokens: mode == PoolingMode::WeightedMean,
            pooling_mode_lasttoken: mode == PoolingMode::LastToken,
            include_prompt: true,
        }
    }

    /// Enabled modes in sentence-transformers' concatenation order.
    pub fn modes(&self) -> Vec<PoolingMode> {
        [
            (self.pooling_mode_cls_token, PoolingMode::Cls),
            (self.pooling_mode_max_tokens, PoolingMode::Max),
            (self.pooling_mode_mean_tokens, PoolingMode::Mean),
            (
                self.pooling_mode_mean_sqrt_len_tokens,
                PoolingMode::MeanSqrtLen,
            ),
            (
                self.pooling_mode_weightedmean_tokens,
                PoolingMode::WeightedMean,
            ),
            (self.pooling_mode_lasttoken, PoolingMode::LastToken),
        ]
        .into_iter()
        .filter_map(|(on, m)| on.then_some(m))
        .collect()
    }

    /// Width of the pooled vector.
    pub fn output_dim(&self) -> usize {
        self.word_embedding_dimension * self.modes().len()
    }
}

/// Pools `tokens` [B, S, H] under `attention_mask` [B, S] (1 = real token) into
/// [B, H * modes]. Half-precision token states are pooled in float32; float32 and
/// float64 stay as they are.
pub fn pool(config: &PoolingConfig, tokens: &Tensor, attention_mask: &Tensor) -> Tensor {
    let kind = accumulation_kind(tokens.kind());
    let tokens = tokens.to_kind(kind);
    let mask = attention_mask.to_kind(kind).unsqueeze(-1); // [B, S, 1]
    let pooled: Vec<Tensor> = config
        .modes()
        .into_iter()
        .map(|mode| match mode {
            PoolingMode::Cls => tokens.select(1, 0),
            PoolingMode::Max => {
                let masked = tokens.masked_fill(&mask.eq(0.0), -1e9);
                masked.amax([1].as_slice(), false)
            }
            PoolingMode::Mean | PoolingMode::MeanSqrtLen => {
                let sum = (&tokens * &mask).sum_dim_intlist([1].as_slice(), false, kind);
                let count = mask
                    .sum_dim_intlist([1].as_slice(), false, kind)
                    .clamp_min(1e-9);
                if mode == PoolingMode::Mean {
                    sum / count
                } else {
                    sum / count.sqrt()
                }
            }
            PoolingMode::WeightedMean => {
                let s = tokens.size()[1];
                let positions =
                    Tensor::arange_start(1, s + 1, (kind, tokens.device())).view([1, s, 1]);
                let w = &mask * positions;
                let sum = (&tokens * &w).sum_dim_intlist([1].as_slice(), false, kind);
                sum / w
                    .sum_dim_intlist([1].as_slice(), false, kind)
                    .clamp_min(1e-9)
            }
            PoolingMode::LastToken => {
                // Right padding: the last real token sits at (number of tokens - 1).
                let last = (attention_mask.sum_dim_intlist([1].as_slice(), false, Kind::Int64) - 1)
                    .clamp_min(0);
                let h = tokens.size()[2];
                let index = last.view([-1, 1, 1]).expand([-1, 1, h], false);
                tokens.gather(1, &index, false).squeeze_dim(1)
            }
        })
        .collect();
    if pooled.len() == 1 {
        pooled.into_iter().next().unwrap()
    } else {
        Tensor::cat(&pooled, 1)
    }
}

/// The kind sentence-level arithmetic runs in: at least float32.
pub fn accumulation_kind(kind: Kind) -> Kind {
    match kind {
        Kind::Half | Kind::BFloat16 => Kind::Float,
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn example() -> (Tensor, Tensor) {
        // Two sentences, three slots, width 2; the second sentence has one padding slot.
        let tokens = Tensor::from_slice(&[
            1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0, //
            -1.0, 0.5, 7.0, 1.0, 100.0, 100.0,
        ])
        .view([2, 3, 2]);
        let mask = Tensor::from_slice(&[1i64, 1, 1, 1, 1, 0]).view([2, 3]);
        (tokens, mask)
    }

    fn values(t: &Tensor) -> Vec<f32> {
        Vec::<f32>::try_from(t.flatten(0, -1)).unwrap()
    }

    #[test]
    fn each_mode_ignores_padding() {
        let (tokens, mask) = example();
        let cases = [
            (PoolingMode::Cls, vec![1.0, 2.0, -1.0, 0.5]),
            (PoolingMode::Max, vec![5.0, 6.0, 7.0, 1.0]),
            (PoolingMode::Mean, vec![3.0, 4.0, 3.0, 0.75]),
            (
                PoolingMode::MeanSqrtLen,
                vec![
                    9.0 / 3f32.sqrt(),
                    12.0 / 3f32.sqrt(),
                    6.0 / 2f32.sqrt(),
                    1.5 / 2f32.sqrt(),
                ],
            ),
            // weights 1,2,3 and 1,2
            (
                PoolingMode::WeightedMean,
                vec![22.0 / 6.0, 28.0 / 6.0, 13.0 / 3.0, 2.5 / 3.0],
            ),
            (PoolingMode::LastToken, vec![5.0, 6.0, 7.0, 1.0]),
        ];
        for (mode, want) in cases {
            let got = values(&pool(&PoolingConfig::single(2, mode), &tokens, &mask));
            for (g, w) in got.iter().zip(&want) {
                assert!((g - w).abs() < 1e-5, "{mode:?}: got {got:?}, want {want:?}");
            }
        }
    }

    #[test]
    fn several_modes_concatenate_in_sentence_transformers_order() {
        let (tokens, mask) = example();
        let mut c = PoolingConfig::single(2, PoolingMode::Mean);
        c.pooling_mode_cls_token = true;
        assert_eq!(c.output_dim(), 4);
        let got = values(&pool(&c, &tokens, &mask));
        assert_eq!(got, vec![1.0, 2.0, 3.0, 4.0, -1.0, 0.5, 3.0, 0.75]);
    }
}
